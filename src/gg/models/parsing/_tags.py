"""Tag tool-call formats (SPEC M5).

``<tool_call>`` regions holding JSON, Qwen3-Coder's ``<function=F>`` or GLM's
``F<arg_key>``; Granite's ``<|tool_call|>``; MiniMax's ``<invoke name="F">``;
LongCat's ``longcat_`` tags; GLM's plain ``F key=value``.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable

from gg.models.base import ToolCall
from gg.models.parsing._common import (
    _WS,
    _end,
    _excerpt,
    _Names,
    _Scan,
    _segments,
    _typed,
)
from gg.models.parsing._json import _DECODER, _json_scan

# --- <tool_call> and XML-like forms: Hermes, Qwen, GLM, Granite, MiniMax, LongCat ----------

_NAME = re.compile(r"[\w.\-]+")
_QWEN_FN = re.compile(r"<function=([^>\n]*)>(.*?)(</function>|\Z)", re.S)
_QWEN_PARAM = re.compile(r"<parameter=([^>\n]*)>(.*?)(</parameter>|\Z)", re.S)
_MM_FN = re.compile(r'<invoke name="([^"]*)">(.*?)(</invoke>|\Z)', re.S)
_MM_PARAM = re.compile(r'<parameter name="([^"]*)">(.*?)(</parameter>|\Z)', re.S)
_MM_NOISE = re.compile(r"</?minimax:tool_call>")


def _wrapped(
    text: str, open_tag: str, close_tag: str, body: Callable[[str], _Scan]
) -> _Scan | None:
    """Each ``open_tag ... close_tag`` body parsed by ``body``; ``None`` if there is none.

    Without its close tag a body ends at the next open tag or the end; then
    only the open tag and what ``body`` read are taken out of content. Tags
    inside the strings of a JSON body do not count.
    """
    if open_tag not in text:
        return None
    scan, pos, close = _Scan(), 0, 0
    while (start := text.find(open_tag, pos)) >= 0:
        inner = start + len(open_tag)
        close = text.find(close_tag, inner) if 0 <= close < inner else close
        body_end = _json_through(text, inner, close) if close >= 0 else inner
        close = text.find(close_tag, body_end) if body_end > close >= 0 else close
        again = text.find(open_tag, body_end)
        closed = close >= 0 and (again < 0 or close < again)
        stop = close if closed else again if again >= 0 else len(text)
        sub = body(text[inner:stop])
        if not sub.calls and sub.error is None:
            sub.error = f"{open_tag} holds no tool call: {_excerpt(text[inner:stop].strip())}"
        scan.add(sub, inner)
        scan.spans.append((start, stop + len(close_tag)) if closed else (start, inner))
        pos = stop + len(close_tag) if closed else stop
    return scan


def _json_through(text: str, inner: int, close: int) -> int:
    """Where the JSON body starting at ``inner`` ends when a string in it holds the tag.

    The tag is the one at ``close`` (the body cut there leaves a string open). When no
    string holds it: ``inner``.
    """
    start = _end(_WS, text, inner)
    if not text.startswith(("{", "["), start):
        return inner
    try:
        _DECODER.raw_decode(text[start:close])
        return inner
    except json.JSONDecodeError as exc:
        if not exc.msg.startswith("Unterminated string"):
            return inner
    except (ValueError, RecursionError):
        return inner
    try:
        return max(inner, _DECODER.raw_decode(text, start)[1])
    except (ValueError, RecursionError):
        return inner


def _tag_body(body: str) -> _Scan:
    """One ``<tool_call>`` body: JSON, Qwen3-Coder ``<function=``, or GLM ``F<arg_key>``."""
    word = body.strip()
    if word.startswith(("{", "[")):
        return _json_scan(body, "the JSON in <tool_call>")
    if "<function=" in body:
        return _xml_calls(body, _QWEN_FN, _QWEN_PARAM)
    if "<arg_key>" in body or _NAME.fullmatch(word):
        return _kv_scan(body, "")
    return _Scan(
        error="<tool_call> must hold a JSON call, <function=NAME>... or "
        f"NAME<arg_key>...; it holds {_excerpt(word)}"
    )


def _parse_tagged(text: str, names: _Names) -> _Scan:
    """Hermes / Qwen / GLM: ``<tool_call>`` regions, else the unwrapped forms."""
    scan = _wrapped(text, "<tool_call>", "</tool_call>", _tag_body)
    if scan is not None:
        return scan
    if "<function=" in text:
        return _xml_calls(text, _QWEN_FN, _QWEN_PARAM)
    return _kv_scan(text, "") if "<arg_key>" in text else _plain_kv(text, names)


def _xml_calls(
    text: str, fn: re.Pattern[str], param: re.Pattern[str], noise: re.Pattern[str] | None = None
) -> _Scan:
    """``<function=F><parameter=K>V</parameter>`` calls (Qwen3-Coder; MiniMax's ``<invoke>``).

    A function cut off inside a value is a call with ``parse_error``; ``noise``
    (wrapper tags) is taken out of content.
    """
    scan = _Scan(spans=[m.span() for m in noise.finditer(text)] if noise else [])
    for m in fn.finditer(text):
        name, body, closed = m.group(1).strip(), m.group(2), bool(m.group(3))
        args = {p.group(1).strip(): _typed(p.group(2)) for p in param.finditer(body)}
        if not name:
            scan.error = f"a call has no function name: {_excerpt(m.group())}"
        elif not closed and args and not body.rstrip().endswith("</parameter>"):
            scan.calls.append(
                ToolCall(
                    name=name,
                    arguments=body.strip(),
                    parse_error=(f"the arguments of {name!r} are cut off inside a parameter value"),
                )
            )
        else:
            scan.calls.append(ToolCall(name=name, arguments=args))
        scan.spans.append(m.span())
    return scan


def _kv_scan(body: str, prefix: str) -> _Scan:
    """One GLM-style call: ``F<{prefix}arg_key>K</...><{prefix}arg_value>V</...>``."""
    key_tag = f"<{prefix}arg_key>"
    name = body.split(key_tag, 1)[0].strip()
    if not _NAME.fullmatch(name):
        return _Scan(error=f"expected a tool name before {key_tag}, got {_excerpt(name)}")
    pair = re.compile(
        rf"{key_tag}(.*?)</{prefix}arg_key>\s*"
        rf"<{prefix}arg_value>(.*?)(</{prefix}arg_value>|\Z)",
        re.S,
    )
    args, cut = {}, False
    for p in pair.finditer(body):
        args[p.group(1).strip()] = _typed(p.group(2))
        cut = cut or not p.group(3)
    call = (
        ToolCall(name=name, arguments=args)
        if not cut
        else ToolCall(
            name=name,
            arguments=body.strip(),
            parse_error=f"the arguments of {name!r} are cut off inside a value",
        )
    )
    return _Scan(calls=[call], spans=[(0, len(body))])


def _plain_kv(text: str, names: _Names) -> _Scan:
    """GLM's plain ``F key=value ...`` reply, read only when F is offered."""
    name, _, rest = text.strip().partition(" ")
    if not names or name not in names or "=" not in rest:
        return _Scan()
    try:
        pairs = [token.partition("=") for token in shlex.split(rest)]
    except ValueError:
        return _Scan()
    if any(not key or not eq for key, eq, _ in pairs):
        return _Scan()
    args = {key: _typed(value) for key, _, value in pairs}
    return _Scan(calls=[ToolCall(name=name, arguments=args)], spans=[(0, len(text))])


def _parse_granite(text: str, names: _Names) -> _Scan:
    """Granite 3.0 ``<|tool_call|>`` + JSON; else the ``<tool_call>`` forms (Granite 3.1)."""
    marks = [m.span() for m in re.finditer(re.escape("<|tool_call|>"), text)]
    if not marks:
        return _parse_tagged(text, names)
    scan = _Scan()
    for start, payload, stop in _segments(marks, len(text)):
        scan.add(_json_scan(text[payload:stop], "the JSON after <|tool_call|>"), payload)
        scan.spans.append((start, payload))
    return scan


def _parse_longcat(text: str, names: _Names) -> _Scan:
    """LongCat: GLM's form with ``longcat_`` tags, in ``<longcat_tool_call>``."""
    scan = _wrapped(
        text, "<longcat_tool_call>", "</longcat_tool_call>", lambda body: _kv_scan(body, "longcat_")
    )
    if scan is not None:
        return scan
    return _kv_scan(text, "longcat_") if "<longcat_arg_key>" in text else _Scan()
