"""Special-token tool-call formats (SPEC M5).

Mistral's ``[TOOL_CALLS]`` / ``[ARGS]``, DeepSeek's ``<|tool▁call▁begin|>``
(fullwidth pipes too) and Kimi K2's ``<|tool_call_begin|>``; the arguments after
the tokens are JSON.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

from gg.models.base import ToolCall
from gg.models.parsing._common import (
    _WS,
    _end,
    _excerpt,
    _Names,
    _Scan,
    _segments,
)
from gg.models.parsing._json import _json_scan, _raw_call

# --- Mistral --------------------------------------------------------------------------------

_MI_MARK = re.compile(r"\[TOOL_CALLS\]")
_MI_ARGS = re.compile(r"(?<![\w.\-])[\w.\-]+(?:\[CALL_ID\][\w\-]*)?\[ARGS\]")
_MI_HEAD = re.compile(r"([\w.\-]+)(?:\[CALL_ID\][\w\-]*)?(\[ARGS\])?")
_MI_NOISE = re.compile(r"\[/TOOL_CALLS\]|</s>")
_MI_CLOSE = re.compile(r"\[/TOOL_CALLS\]")
_LIST_AT = re.compile(r"\[\s*[{\]]")


def _parse_mistral(text: str, names: _Names) -> _Scan:
    """``[TOOL_CALLS]`` + one JSON list, or ``[TOOL_CALLS]F{...}`` / ``F[ARGS]{...}`` each.

    Several ``[TOOL_CALLS]`` with a list among them set ``error``: Mistral puts
    all calls in one list.
    """
    marks = [m.span() for m in _MI_MARK.finditer(text)]
    marks = marks or [(m.start(), m.start()) for m in _MI_ARGS.finditer(text)]
    scan, lists = _Scan(spans=[m.span() for m in _MI_NOISE.finditer(text)]), 0
    for start, payload, stop in _segments(marks, len(text)):
        closer = _MI_CLOSE.search(text, payload, stop)
        sub, listed = _mistral_segment(text[payload : closer.start() if closer else stop])
        lists += listed
        scan.add(sub, payload)
        scan.spans.append((start, payload))
    if lists and len(marks) > 1:
        scan.error = (
            f"[TOOL_CALLS] appears {len(marks)} times; a JSON list of calls "
            "must come after a single [TOOL_CALLS]"
        )
    return scan


def _mistral_segment(seg: str) -> tuple[_Scan, bool]:
    """The text after one marker: its scan, and whether it was the list form."""
    head = _MI_HEAD.match(seg)
    if head is not None:
        name, brace = head.group(1), _end(_WS, seg, head.end())
        if seg.startswith("{", brace):
            call, end = _raw_call(name, seg, brace)
            return _Scan(calls=[call], spans=[(0, end)]), False
        if head.group(2) or not seg[head.end() :].strip():
            error = f"the call {name!r} has no arguments (expected {name}{{...}})"
            return _Scan(error=error, spans=[(0, len(seg))]), False
    found = _LIST_AT.search(seg)
    if found is None:
        return _Scan(
            error="[TOOL_CALLS] must be followed by a JSON list of calls or "
            f"NAME{{...}}; it is followed by {_excerpt(seg.strip())}"
        ), False
    scan = _Scan()
    scan.add(_json_scan(seg[found.start() :], "the JSON list after [TOOL_CALLS]"), found.start())
    return scan, True


# --- special tokens: DeepSeek, Kimi K2 ------------------------------------------------------


def _ds(words: str) -> str:
    """A DeepSeek special token pattern (fullwidth or ASCII pipes, ``▁`` between words)."""
    return "<[|\uff5c]" + "\u2581".join(words.split()) + "[|\uff5c]>"


_DS_NOISE = "|".join(
    _ds(words)
    for words in (
        "tool calls begin",
        "tool calls end",
        "tool outputs begin",
        "tool outputs end",
        "tool output begin",
        "tool output end",
        "end of sentence",
    )
)
_DS_TOKENS = tuple(
    re.compile(p)
    for p in (_ds("tool call begin"), _ds("tool sep"), _ds("tool call end"), _DS_NOISE)
)
_KIMI_TOKENS = tuple(
    re.compile(p)
    for p in (
        r"<\|tool_call_begin\|>",
        r"<\|tool_call_argument_begin\|>",
        r"<\|tool_call_end\|>",
        r"<\|tool_calls_section_(?:begin|end)\|>",
    )
)
_FENCED = re.compile(r"```(?:json)?\s*(.*?)\s*(?:```|\Z)", re.S)


def _token_calls(
    text: str, tokens: tuple[re.Pattern[str], ...], make: Callable[[str, str], ToolCall]
) -> _Scan:
    """Calls between ``begin`` and ``end`` tokens, head and arguments split by ``sep``.

    ``tokens`` is ``(begin, sep, end, noise)``; noise tokens alone are taken out
    of content (tool output keeps its text). ``make(head, tail)`` builds a call.
    """
    begin, sep, end, noise = tokens
    scan = _Scan(spans=[m.span() for m in noise.finditer(text)])
    starts = list(begin.finditer(text))
    for i, m in enumerate(starts):
        limit = starts[i + 1].start() if i + 1 < len(starts) else len(text)
        stop = end.search(text, m.end(), limit)
        other = noise.search(text, m.end(), stop.start() if stop else limit)
        body_end = other.start() if other else stop.start() if stop else limit
        body = text[m.end() : body_end]
        split = sep.search(body)
        if split is None:
            scan.error = f"a tool call has no name/arguments separator: {_excerpt(body)}"
            continue
        scan.calls.append(make(body[: split.start()].strip(), body[split.end() :]))
        scan.spans.append((m.start(), stop.end() if stop and not other else body_end))
    return scan


def _ds_call(head: str, tail: str) -> ToolCall:
    r"""DeepSeek V3 ``function<sep>F\n```json{...}```` or V3.1 ``F<sep>{...}``."""
    fence = _FENCED.search(tail)
    if fence is not None and not tail.lstrip().startswith("{"):
        head, tail = tail[: fence.start()].strip(), fence.group(1)
    return _raw_call(head, tail)[0]


def _kimi_call(head: str, tail: str) -> ToolCall:
    """Kimi K2: the head ``functions.F:INDEX`` is the call id; F is the tool."""
    name = re.sub(r":\d+$", "", head.removeprefix("functions."))
    return replace(_raw_call(name, tail)[0], id=head)
