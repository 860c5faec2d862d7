"""Tool calls written in plain model text (SPEC M5).

For models or servers that do not parse calls themselves. :func:`parse_tool_calls`
returns the prose, the calls (ids ``call_0``, ``call_1``... unless the format
carries one) and, when the text looks like a call that cannot be read, an
``error`` for the model's feedback (the session's ``bad_arguments`` error turn,
SPEC S5). It never raises on any text. Formats (``"auto"``: :func:`detect_format`):

- ``hermes`` / ``qwen`` / ``glm``: ``<tool_call>...</tool_call>`` (closing tag optional)
  holding JSON (object(s) or a list), Qwen3-Coder ``<function=F><parameter=K>V``
  or GLM ``F<arg_key>K</arg_key><arg_value>V</arg_value>``; also unwrapped, and
  GLM's plain ``F key=value ...`` when F is offered.
- ``mistral``: ``[TOOL_CALLS]`` + one JSON list, ``[TOOL_CALLS]F{...}`` per call, or
  ``F[ARGS]{...}``. ``granite``: ``<|tool_call|>`` + JSON (3.1's ``<tool_call>`` as hermes).
- ``llama3_json``: bare ``{"name", "parameters"|"arguments"}`` objects anywhere;
  ``json``: a bare JSON list of calls or a fenced ``json`` block of them.
- ``llama3_python_tag``: ``<|python_tag|>`` + JSON or ``tool.call(k=v)``;
  ``pythonic``: a reply that is ``[f(a=1), g(b="x")]`` (or in ``<|python_start|>``).
- ``deepseek`` (``<|tool▁call▁begin|>``, fullwidth pipes too), ``kimi_k2``
  (``functions.F:0``, kept as the id), ``gemma`` (FunctionGemma / Gemma 4
  ``call:F{k:v}``, strings in ``<escape>`` or ``<|"|>``), ``minimax``
  (``<invoke name="F">``), ``longcat`` (GLM's form, ``longcat_`` tags).

Rules for all formats:

- ``content`` is the text without the calls and the format's tokens, stripped;
  with ``llama3_json`` it is ``""`` once a call is read (Llama 3's prompt contract:
  a calling reply holds nothing else). ``<think>...</think>`` is never read for calls.
- A call whose name was read but whose arguments are no JSON object (cut off,
  invalid, a list) has ``arguments`` = the raw text and ``parse_error``. A JSON
  string holding an object (double-encoded) is decoded.
- Call-like text yielding no name (broken JSON around it, a marker followed by
  nothing readable) sets ``error``, and then ``tool_calls`` is empty. A cut-off
  call is taken out of ``content``; invalid text whose end cannot be told stays.
- Untyped values (XML-like and ``k=v`` forms, Gemma scalars) are JSON when they
  parse (``12`` -> 12, ``"x"`` -> x), else a Python literal if they start with
  ``[{(``, else text. (No schema is consulted: ``"12"`` for a string parameter is 12.)
"""

from __future__ import annotations

import ast
import json
import re
import shlex
from collections.abc import Callable, Collection
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypeAlias, get_args

from gg.errors import UserError
from gg.models.base import ToolCall

__all__ = ["ParsedText", "TextFormat", "detect_format", "parse_tool_calls"]

TextFormat: TypeAlias = Literal[
    "auto", "hermes", "mistral", "llama3_json", "llama3_python_tag", "qwen", "granite",
    "pythonic", "json", "deepseek", "kimi_k2", "gemma", "glm", "minimax", "longcat",
]
"""A text tool-call format; ``"auto"`` detects it per reply."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ParsedText:
    """A reply's text split into prose and tool calls (SPEC M5)."""

    content: str
    """The prose left once the calls are taken out, stripped."""
    tool_calls: tuple[ToolCall, ...]
    """The calls, in order; empty whenever ``error`` is set."""
    error: str | None = None
    """Set when the text looks like a call but cannot be read: what was wrong."""


_Names: TypeAlias = frozenset[str] | None
_Span: TypeAlias = tuple[int, int]


class _Broken(ValueError):
    """Text that should be a call, or its arguments, but is not; ``cut``: it ends too soon."""

    def __init__(self, reason: str, *, cut: bool = False) -> None:
        super().__init__(reason)
        self.reason, self.cut = reason, cut


@dataclass(slots=True)
class _Scan:
    """What a format's parser found; ``spans`` (start, end) are taken out of content."""

    calls: list[ToolCall] = field(default_factory=list)
    spans: list[_Span] = field(default_factory=list)
    error: str | None = None
    drop_content: bool = False

    def add(self, other: _Scan, offset: int) -> None:
        """Merge ``other``, found in a slice of the text starting at ``offset``."""
        self.calls.extend(other.calls)
        self.spans.extend((start + offset, end + offset) for start, end in other.spans)
        self.error = self.error or other.error


# --- public ------------------------------------------------------------------------------


def parse_tool_calls(
    text: str | None, *, format: TextFormat = "auto", tool_names: Collection[str] | None = None
) -> ParsedText:
    """Split a reply's text into prose and tool calls (SPEC M5, S5).

    Args:
        text: the reply text; ``None`` or blank reads as no content and no call.
        format: the model's format, or ``"auto"`` to detect it per reply.
        tool_names: the offered tools' names. It changes markerless JSON only:
            a call-shaped object or list naming a tool not offered sets
            ``error`` (neither run nor passed off as prose); ``{"name": X}``
            without arguments is a call to X with ``{}`` if X is offered, else
            data. GLM's plain ``X key=value`` is read only if X is offered.
            After an explicit marker (``<tool_call>``, ``[TOOL_CALLS]``...) any
            name is returned; the session reports unknown tools.

    Returns:
        The prose, the calls and ``error``. Markerless JSON whose first object
        with a ``"name"`` is not a call is data: the text is all prose.

    Raises:
        gg.errors.UserError: ``format`` is not a known format (never for any text).
    """
    if format != "auto" and format not in _PARSERS:
        raise UserError(f"unknown tool-call format {format!r}; known: {', '.join(_FORMATS)}")
    if text is None or not text.strip():
        return ParsedText(content="", tool_calls=())
    names = _names(tool_names)
    try:
        masked = _mask_thinking(text)
        chosen = detect_format(masked, tool_names=names) if format == "auto" else format
        scan = _Scan() if chosen is None else _PARSERS[chosen](masked, names)
    except Exception as exc:  # last guard: a parser bug must not crash a session
        return ParsedText(content=text.strip(), tool_calls=(), error=(
            f"gg could not read the tool calls in this reply ({type(exc).__name__}: {exc})"))
    return _result(text, scan)


def detect_format(text: str, *, tool_names: Collection[str] | None = None) -> TextFormat | None:
    """Guess a reply's tool-call format (SPEC M5).

    The earliest marker outside ``<think>`` wins (``<tool_call>``, ``[TOOL_CALLS]``,
    special tokens...); with none, a call-shaped bare JSON object is
    ``llama3_json``, a list or fenced block ``json``; last, GLM's plain
    ``NAME key=value`` when NAME is in ``tool_names``.

    Args:
        text: the reply text.
        tool_names: the offered tools' names, if known.

    Returns:
        The format, or ``None`` when nothing in the text looks like a call.
    """
    text = _mask_thinking(text)
    found = [(m.start(), i, fmt) for i, (fmt, pattern) in enumerate(_MARKERS)
             if (m := pattern.search(text)) is not None]
    if found:
        start, _, fmt = min(found)
        after = text[start + len("<tool_call>"):] if fmt == "hermes" else ""
        return "qwen" if _QWEN_BODY.match(after) else "glm" if _GLM_BODY.match(after) else fmt
    call = _CALL_AT.search(text)
    if call is not None:
        return "json" if call.group(1) or call.group(2) else "llama3_json"
    names = _names(tool_names)
    return "glm" if names and _plain_kv(text, names).calls else None


# --- shared helpers ----------------------------------------------------------------------

_DECODER = json.JSONDecoder()
_NOTHING: Any = object()
_WS = re.compile(r"\s*")
_GAP = re.compile(r"[\s,;\]}]*")
_TRAIL = re.compile(r"(?:\s*[;\]}])*")
_NAME = re.compile(r"[\w.\-]+")
_QWEN_BODY = re.compile(r"\s*<function=")
_GLM_BODY = re.compile(r"\s*[\w.\-]+\s*<arg_key>")


def _end(pattern: re.Pattern[str], text: str, pos: int) -> int:
    """Where ``pattern`` (one that matches empty text too) stops matching from ``pos``."""
    found = pattern.match(text, pos)
    return found.end() if found else pos


def _names(tool_names: Collection[str] | None) -> _Names:
    """The offered names as a set of strings (``None`` stays ``None``)."""
    return None if tool_names is None else frozenset(n for n in tool_names if isinstance(n, str))


def _mask_thinking(text: str) -> str:
    """``text`` with each ``<think>...</think>`` (or a leading ``...</think>``) blanked out."""
    pieces, pos = [], 0
    while (close := text.find("</think>", pos)) >= 0:
        end = close + len("</think>")
        start = text.find("<think>", pos, close)
        start = start if start >= 0 else 0 if pos == 0 else end  # a stray </think> stays
        pieces += [text[pos:start], " " * (end - start)]
        pos = end
    return "".join([*pieces, text[pos:]])


def _result(text: str, scan: _Scan) -> ParsedText:
    """The public result: spans cut from content, ids made up, no calls on error."""
    pieces, pos = [], 0
    for start, end in sorted(scan.spans):
        pieces.append(text[pos:max(pos, start)])
        pos = max(pos, end)
    content = "".join([*pieces, text[pos:]]).strip()
    if scan.error is not None:
        return ParsedText(content=content, tool_calls=(), error=scan.error)
    calls = tuple(c if c.id else replace(c, id=f"call_{i}") for i, c in enumerate(scan.calls))
    return ParsedText(content="" if scan.drop_content and calls else content, tool_calls=calls)


def _excerpt(text: str, limit: int = 160) -> str:
    """``text`` quoted, shortened to ``limit`` characters."""
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


def _loads(text: str) -> Any:
    """``text`` decoded as JSON, or ``_NOTHING``."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return _NOTHING


def _decode_json(text: str, pos: int) -> tuple[Any, int]:
    """One JSON value at ``pos`` and the index after it.

    A list of objects that lacks only its ``]`` at the end of the text is taken.

    Raises:
        _Broken: the JSON is cut off (``cut=True``) or invalid.
    """
    try:
        return _DECODER.raw_decode(text, pos)
    except json.JSONDecodeError as exc:
        bad = exc
    except (ValueError, RecursionError) as exc:
        raise _Broken(f"not readable JSON ({exc}): {_excerpt(text[pos:pos + 200])}") from None
    cut = _end(_WS, text, bad.pos) == len(text) or bad.msg.startswith("Unterminated string")
    if cut and text.startswith("[", pos):
        value = _loads(text[pos:].rstrip() + "]")
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            return value, len(text)
    if cut:
        raise _Broken(f"cut off before the end: {_excerpt(text[pos:pos + 200])}", cut=True)
    raise _Broken(f"not valid JSON ({bad.msg} at character {bad.pos - pos}): "
                  f"{_excerpt(text[pos:pos + 200])}")


def _make_call(name: str, args: Any) -> ToolCall:
    """A call from decoded arguments: a dict, a JSON string holding one, else raw."""
    if args is None or (isinstance(args, str) and not args.strip()):
        return ToolCall(name=name, arguments={})
    decoded = _loads(args) if isinstance(args, str) else args
    if isinstance(decoded, dict):
        return ToolCall(name=name, arguments=decoded)
    raw = args if isinstance(args, str) else json.dumps(args)
    return ToolCall(name=name, arguments=raw, parse_error=(
        f"the arguments of {name!r} must be a JSON object, got {_excerpt(raw)}"))


def _call_from_obj(obj: Any, *, bare_name_ok: bool) -> ToolCall | None:
    """A call from ``{"name", "arguments"|"parameters"}`` or OpenAI's ``{"function": {...}}``."""
    if not isinstance(obj, dict):
        return None
    if isinstance(obj.get("function"), dict):
        obj = obj["function"]
    name = obj.get("name", obj.get("function"))
    if not isinstance(name, str) or not name.strip():
        return None
    for key in ("arguments", "parameters"):
        if key in obj:
            return _make_call(name.strip(), obj[key])
    return ToolCall(name=name.strip(), arguments={}) if bare_name_ok else None


def _json_scan(text: str, where: str) -> _Scan:
    """JSON calls (objects or lists; ``,``/``;``/space between) from the start of ``text``.

    ``where`` names the place in errors. Stray ``]`` / ``}`` after a value are
    skipped; what follows the last value is left alone.
    """
    calls, pos = [], _end(_WS, text, 0)
    try:
        while pos < len(text) and text[pos] in "{[":
            value, pos = _decode_json(text, pos)
            for item in value if isinstance(value, list) else [value]:
                call = _call_from_obj(item, bare_name_ok=True)
                if call is None:
                    raise _Broken('JSON but not a call (a call is {"name": ..., "arguments": '
                                  f"{{...}}}}): {_excerpt(json.dumps(item, ensure_ascii=False))}")
                calls.append(call)
            pos = _end(_GAP, text, pos)
    except _Broken as exc:
        return _broken(exc, where, 0, len(text))
    if not calls:
        return _Scan(error=f"{where} holds no call: {_excerpt(text.strip())}")
    return _Scan(calls=calls, spans=[(0, pos)])


def _broken(exc: _Broken, where: str, start: int, end: int) -> _Scan:
    """An error scan; a cut-off call (it runs to ``end``) is taken out of content."""
    return _Scan(error=f"{where} is {exc.reason}", spans=[(start, end)] if exc.cut else [])


def _raw_call(name: str, text: str, pos: int = 0) -> tuple[ToolCall, int]:
    """A call whose JSON arguments start at ``pos``, and the index after them.

    Unreadable arguments give the raw rest of ``text`` with ``parse_error``.
    """
    pos = _end(_WS, text, pos)
    try:
        value, end = _decode_json(text, pos)
    except _Broken as exc:
        error = f"the arguments of {name!r} are {exc.reason}"
        return ToolCall(name=name, arguments=text[pos:].strip(), parse_error=error), len(text)
    return _make_call(name, value), end


def _literal(node: ast.AST) -> Any:
    """A Python literal as JSON data; raises ValueError/TypeError if it is neither."""
    return json.loads(json.dumps(ast.literal_eval(node)))


def _typed(raw: str) -> Any:
    """An untyped text value: JSON if it parses, else a Python literal, else the text."""
    text = raw.removeprefix("\n").removesuffix("\n")
    word = text.strip()
    value = _loads(word) if word else _NOTHING
    if value is _NOTHING and word[:1] in ("[", "{", "("):
        try:
            value = _literal(ast.parse(word, mode="eval").body)
        except (SyntaxError, ValueError, TypeError, RecursionError, MemoryError):
            value = _NOTHING
    return text if value is _NOTHING else value


def _segments(marks: list[_Span], end: int) -> list[tuple[int, int, int]]:
    """``(marker start, payload start, payload end)`` for markers splitting a text."""
    stops = [start for start, _ in marks[1:]] + [end] if marks else []
    return [(start, payload, stop) for (start, payload), stop in zip(marks, stops, strict=True)]


# --- <tool_call> and XML-like forms: Hermes, Qwen, GLM, Granite, MiniMax, LongCat ----------

_QWEN_FN = re.compile(r"<function=([^>\n]*)>(.*?)(</function>|\Z)", re.S)
_QWEN_PARAM = re.compile(r"<parameter=([^>\n]*)>(.*?)(</parameter>|\Z)", re.S)
_MM_FN = re.compile(r'<invoke name="([^"]*)">(.*?)(</invoke>|\Z)', re.S)
_MM_PARAM = re.compile(r'<parameter name="([^"]*)">(.*?)(</parameter>|\Z)', re.S)
_MM_NOISE = re.compile(r"</?minimax:tool_call>")


def _wrapped(text: str, open_tag: str, close_tag: str,
             body: Callable[[str], _Scan]) -> _Scan | None:
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
    """Where a JSON body starting at ``inner`` ends if a string in it holds the tag at
    ``close`` (the body cut there leaves a string open); else ``inner``."""
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
    return _Scan(error="<tool_call> must hold a JSON call, <function=NAME>... or "
                       f"NAME<arg_key>...; it holds {_excerpt(word)}")


def _parse_tagged(text: str, names: _Names) -> _Scan:
    """Hermes / Qwen / GLM: ``<tool_call>`` regions, else the unwrapped forms."""
    scan = _wrapped(text, "<tool_call>", "</tool_call>", _tag_body)
    if scan is not None:
        return scan
    if "<function=" in text:
        return _xml_calls(text, _QWEN_FN, _QWEN_PARAM)
    return _kv_scan(text, "") if "<arg_key>" in text else _plain_kv(text, names)


def _xml_calls(text: str, fn: re.Pattern[str], param: re.Pattern[str],
               noise: re.Pattern[str] | None = None) -> _Scan:
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
            scan.calls.append(ToolCall(name=name, arguments=body.strip(), parse_error=(
                f"the arguments of {name!r} are cut off inside a parameter value")))
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
    pair = re.compile(rf"{key_tag}(.*?)</{prefix}arg_key>\s*"
                      rf"<{prefix}arg_value>(.*?)(</{prefix}arg_value>|\Z)", re.S)
    args, cut = {}, False
    for p in pair.finditer(body):
        args[p.group(1).strip()] = _typed(p.group(2))
        cut = cut or not p.group(3)
    call = ToolCall(name=name, arguments=args) if not cut else ToolCall(
        name=name, arguments=body.strip(),
        parse_error=f"the arguments of {name!r} are cut off inside a value")
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
    scan = _wrapped(text, "<longcat_tool_call>", "</longcat_tool_call>",
                    lambda body: _kv_scan(body, "longcat_"))
    if scan is not None:
        return scan
    return _kv_scan(text, "longcat_") if "<longcat_arg_key>" in text else _Scan()


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
        sub, listed = _mistral_segment(text[payload:closer.start() if closer else stop])
        lists += listed
        scan.add(sub, payload)
        scan.spans.append((start, payload))
    if lists and len(marks) > 1:
        scan.error = (f"[TOOL_CALLS] appears {len(marks)} times; a JSON list of calls "
                      "must come after a single [TOOL_CALLS]")
    return scan


def _mistral_segment(seg: str) -> tuple[_Scan, bool]:
    """The text after one marker: its scan, and whether it was the list form."""
    head = _MI_HEAD.match(seg)
    if head is not None:
        name, brace = head.group(1), _end(_WS, seg, head.end())
        if seg.startswith("{", brace):
            call, end = _raw_call(name, seg, brace)
            return _Scan(calls=[call], spans=[(0, end)]), False
        if head.group(2) or not seg[head.end():].strip():
            error = f"the call {name!r} has no arguments (expected {name}{{...}})"
            return _Scan(error=error, spans=[(0, len(seg))]), False
    found = _LIST_AT.search(seg)
    if found is None:
        return _Scan(error="[TOOL_CALLS] must be followed by a JSON list of calls or "
                           f"NAME{{...}}; it is followed by {_excerpt(seg.strip())}"), False
    scan = _Scan()
    scan.add(_json_scan(seg[found.start():], "the JSON list after [TOOL_CALLS]"), found.start())
    return scan, True


# --- bare JSON: Llama 3 JSON, xLAM lists, fenced blocks -------------------------------------

_JSON_AT = re.compile(r'(```(?:json)?\s*)?(?:\[\s*)?\{\s*"')
_CALL_AT = re.compile(
    r'(```(?:json)?\s*)?(\[\s*)?\{\s*"(?:name|function|arguments|parameters)"\s*:')
_FENCE_END = re.compile(r"\s*```")
_MAX_JSON_STARTS = 1000


def _parse_json(text: str, names: _Names, *, llama: bool = False) -> _Scan:
    """Bare JSON calls anywhere in the text: objects, lists, ```json blocks.

    The first object with a ``"name"`` decides: not a call, the JSON is data
    and the text prose. A call-shaped start that does not decode, or a call
    naming a tool outside ``names``, sets ``error``. At most ``_MAX_JSON_STARTS``
    places are tried (each failed decode costs json O(position)).
    """
    scan, pos, tries = _Scan(drop_content=llama), 0, 0
    while (m := _JSON_AT.search(text, pos)) is not None and tries < _MAX_JSON_STARTS:
        start, tries = (m.end(1) if m.group(1) else m.start()), tries + 1
        try:
            value, end = _decode_json(text, start)
        except _Broken as exc:
            if _CALL_AT.match(text, m.start()) is None:
                pos = start + 1
                continue
            return _broken(exc, "the JSON tool call", start, len(text))
        calls, named = _bare_calls(value, names)
        if not calls and named and not scan.calls:
            return _Scan()
        unknown = sorted({c.name for c in calls if names is not None and c.name not in names})
        if unknown:
            offered = ", ".join(sorted(names or ())[:30]) or "none"
            return _Scan(error=f"{', '.join(map(repr, unknown))} not among the offered tools "
                               f"({offered})", spans=[(m.start(), end)])
        if calls:
            fence = _FENCE_END.match(text, end) if m.group(1) else None
            end = _end(_TRAIL, text, fence.end() if fence else end)
            scan.calls.extend(calls)
            scan.spans.append((m.start(), end))
        pos = end
    return scan


def _bare_calls(value: Any, names: _Names) -> tuple[list[ToolCall], bool]:
    """Calls in a bare JSON value (every item a call, else none) and whether one is named."""
    items = value if isinstance(value, list) else [value]
    named = any(isinstance(i, dict) and ("name" in i or "function" in i) for i in items)
    calls = []
    for item in items:
        name = item.get("name") if isinstance(item, dict) else None
        offered = names is not None and isinstance(name, str) and name in names
        call = _call_from_obj(item, bare_name_ok=offered)
        if call is None:
            return [], named
        calls.append(call)
    return calls, named


# --- Python-style calls: pythonic lists, <|python_tag|> -------------------------------------

_PY_WRAP = re.compile(r"<\|python_start\|>(.*?)(?:<\|python_end\|>|\Z)", re.S)
_PY_LIST = re.compile(r"\[\s*[A-Za-z_][\w.]*\(")
_PY_TAG = re.compile(
    r"<\|python_tag\|>(.*?)(?:<\|eom_id\|>|<\|eot_id\|>|(?=<\|python_tag\|>)|\Z)", re.S)


def _parse_pythonic(text: str, names: _Names) -> _Scan:
    """``[f(a=1), g(b="x")]``: in ``<|python_start|>``, else first ``[F(`` to last ``]``."""
    wrap = _PY_WRAP.search(text)
    first = _PY_LIST.search(text)
    if wrap is None and first is None:
        return _Scan()
    scan = _Scan(spans=[wrap.span()] if wrap else [])
    start, end = wrap.span(1) if wrap else (first.start() if first else 0, text.rfind("]") + 1)
    end = end if end > start else len(text)
    scan.add(_python_scan(text[start:end], "eval"), start)
    return scan


def _parse_python_tag(text: str, names: _Names) -> _Scan:
    """Llama 3.1 ``<|python_tag|>`` + JSON calls or ``tool.call(k=v)`` statements."""
    scan = _Scan()
    for m in _PY_TAG.finditer(text):
        body = m.group(1)
        sub = (_json_scan(body, "the JSON after <|python_tag|>")
               if body.lstrip().startswith(("{", "[")) else _python_scan(body, "exec"))
        sub.calls = [replace(c, name=c.name.removesuffix(".call")) for c in sub.calls]
        scan.add(sub, m.start(1))
        scan.spans.append(m.span())
    return scan


def _python_scan(source: str, mode: Literal["eval", "exec"]) -> _Scan:
    """Calls in Python syntax: a list of calls (``eval``) or call statements (``exec``)."""
    try:
        tree = ast.parse(source.strip(), mode=mode)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        reason = getattr(exc, "msg", None) or str(exc) or type(exc).__name__
        return _Scan(error=f"the Python-style tool calls are not valid Python ({reason}): "
                           f"{_excerpt(source.strip())}")
    nodes: list[ast.AST] = []
    if isinstance(tree, ast.Expression):
        nodes = list(tree.body.elts) if isinstance(tree.body, ast.List) else [tree.body]
    elif isinstance(tree, ast.Module):
        nodes = [s.value if isinstance(s, ast.Expr) else s for s in tree.body]
    if not nodes:
        return _Scan(error=f"the Python-style tool calls hold no call: {_excerpt(source)}")
    try:
        return _Scan(calls=[_py_call(node) for node in nodes], spans=[(0, len(source))])
    except _Broken as exc:
        return _Scan(error=f"the Python-style tool calls hold {exc.reason}")


def _py_call(node: ast.AST) -> ToolCall:
    """One ``F(key=literal, ...)`` call (F may be dotted); other arguments: ``parse_error``.

    Raises:
        _Broken: the node is not a call of a name.
    """
    func = node.func if isinstance(node, ast.Call) else None
    parts: list[str] = []
    while isinstance(func, ast.Attribute):
        parts.insert(0, func.attr)
        func = func.value
    if not isinstance(node, ast.Call) or not isinstance(func, ast.Name):
        raise _Broken(f"something that is not a tool call: {_excerpt(ast.unparse(node))}")
    name = ".".join([func.id, *parts])
    try:
        if node.args or any(k.arg is None for k in node.keywords):
            raise ValueError("only name=value arguments are allowed")
        args = {str(k.arg): _literal(k.value) for k in node.keywords}
    except (ValueError, TypeError, SyntaxError, RecursionError) as exc:
        return ToolCall(name=name, arguments=ast.unparse(node), parse_error=(
            f"the arguments of {name!r} are not literal name=value pairs ({exc})"))
    return ToolCall(name=name, arguments=args)


# --- special tokens: DeepSeek, Kimi K2 ------------------------------------------------------


def _ds(words: str) -> str:
    """A DeepSeek special token pattern (fullwidth or ASCII pipes, ``▁`` between words)."""
    return "<[|\uff5c]" + "\u2581".join(words.split()) + "[|\uff5c]>"


_DS_NOISE = "|".join(_ds(words) for words in (
    "tool calls begin", "tool calls end", "tool outputs begin", "tool outputs end",
    "tool output begin", "tool output end", "end of sentence"))
_DS_TOKENS = tuple(re.compile(p) for p in (
    _ds("tool call begin"), _ds("tool sep"), _ds("tool call end"), _DS_NOISE))
_KIMI_TOKENS = tuple(re.compile(p) for p in (
    r"<\|tool_call_begin\|>", r"<\|tool_call_argument_begin\|>", r"<\|tool_call_end\|>",
    r"<\|tool_calls_section_(?:begin|end)\|>"))
_FENCED = re.compile(r"```(?:json)?\s*(.*?)\s*(?:```|\Z)", re.S)


def _token_calls(text: str, tokens: tuple[re.Pattern[str], ...],
                 make: Callable[[str, str], ToolCall]) -> _Scan:
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
        body = text[m.end():body_end]
        split = sep.search(body)
        if split is None:
            scan.error = f"a tool call has no name/arguments separator: {_excerpt(body)}"
            continue
        scan.calls.append(make(body[:split.start()].strip(), body[split.end():]))
        scan.spans.append((m.start(), stop.end() if stop and not other else body_end))
    return scan


def _ds_call(head: str, tail: str) -> ToolCall:
    """DeepSeek V3 ``function<sep>F\\n```json{...}```` or V3.1 ``F<sep>{...}``."""
    fence = _FENCED.search(tail)
    if fence is not None and not tail.lstrip().startswith("{"):
        head, tail = tail[:fence.start()].strip(), fence.group(1)
    return _raw_call(head, tail)[0]


def _kimi_call(head: str, tail: str) -> ToolCall:
    """Kimi K2: the head ``functions.F:INDEX`` is the call id; F is the tool."""
    name = re.sub(r":\d+$", "", head.removeprefix("functions."))
    return replace(_raw_call(name, tail)[0], id=head)


# --- Gemma: FunctionGemma, Gemma 4 ----------------------------------------------------------

_GEMMA_CALL = re.compile(r"call:([\w.\-]+)\{")
_GEMMA_NOISE = re.compile(r"<start_function_call>|<end_function_call>|<\|tool_call>|<tool_call\|>")
_GEMMA_QUOTES = ('<|"|>', "<escape>")
_GEMMA_KEY = re.compile(r'\s*(?:<\|"\|>(.*?)<\|"\|>|<escape>(.*?)<escape>|([^:{}\[\],<]+?))\s*:',
                        re.S)
_GEMMA_SCALAR = re.compile(r"[^,}\]]*")


def _parse_gemma(text: str, names: _Names) -> _Scan:
    """``call:F{key:value,...}``; a call whose arguments do not read has ``parse_error``."""
    scan, pos = _Scan(spans=[m.span() for m in _GEMMA_NOISE.finditer(text)]), 0
    while (m := _GEMMA_CALL.search(text, pos)) is not None:
        name = m.group(1)
        try:
            args, end = _gemma_value(text, m.end() - 1, 0)
            call = ToolCall(name=name, arguments=args)
        except _Broken as exc:
            stop = _GEMMA_NOISE.search(text, m.end())
            end = stop.start() if stop else len(text)
            call = ToolCall(name=name, arguments=text[m.end() - 1:end],
                            parse_error=f"the arguments of {name!r} are {exc.reason}")
        scan.calls.append(call)
        scan.spans.append((m.start(), end))
        pos = max(end, m.end())
    return scan


def _gemma_value(text: str, pos: int, depth: int) -> tuple[Any, int]:
    """One Gemma value at ``pos`` (object, list, quoted string, or scalar read as JSON).

    Raises:
        _Broken: cut off, too deep, or not ``key:value`` pairs.
    """
    pos = _end(_WS, text, pos)
    quote = next((q for q in _GEMMA_QUOTES if text.startswith(q, pos)), None)
    if quote is not None:
        close = text.find(quote, pos + len(quote))
        if close < 0:
            raise _Broken("cut off inside a string", cut=True)
        return text[pos + len(quote):close], close + len(quote)
    if text.startswith(("{", "["), pos):
        if depth > 100:
            raise _Broken("nested too deeply to read")
        return _gemma_items(text, pos, depth)
    scalar = _GEMMA_SCALAR.match(text, pos)
    word = scalar.group().strip() if scalar else ""
    if not scalar or not word:
        raise _Broken(f"missing a value at {_excerpt(text[pos:pos + 40])}", cut=pos >= len(text))
    value = _loads(word)
    return (word if value is _NOTHING else value), scalar.end()


def _gemma_items(text: str, pos: int, depth: int) -> tuple[Any, int]:
    """The Gemma object (a dict) or list opening at ``pos``, and the index after it."""
    close = "}" if text[pos] == "{" else "]"
    items: list[Any] = []
    pos += 1
    while True:
        pos = _end(_WS, text, pos)
        if pos >= len(text):
            raise _Broken(f"cut off before the closing {close}", cut=True)
        if text[pos] == close:
            return (dict(items) if close == "}" else items), pos + 1
        key = _GEMMA_KEY.match(text, pos) if close == "}" else None
        if close == "}" and key is None:
            raise _Broken(f"not key:value pairs at {_excerpt(text[pos:pos + 40])}")
        value, pos = _gemma_value(text, key.end() if key else pos, depth + 1)
        items.append((next(g for g in key.groups() if g is not None).strip(), value)
                     if key else value)
        pos = _end(_WS, text, pos)
        pos += text.startswith(",", pos)


# --- dispatch -------------------------------------------------------------------------------

_PARSERS: dict[str, Callable[[str, _Names], _Scan]] = {
    "hermes": _parse_tagged, "qwen": _parse_tagged, "glm": _parse_tagged,
    "granite": _parse_granite, "mistral": _parse_mistral, "json": _parse_json,
    "llama3_json": lambda text, names: _parse_json(text, names, llama=True),
    "llama3_python_tag": _parse_python_tag, "pythonic": _parse_pythonic,
    "deepseek": lambda text, _: _token_calls(text, _DS_TOKENS, _ds_call),
    "kimi_k2": lambda text, _: _token_calls(text, _KIMI_TOKENS, _kimi_call),
    "gemma": _parse_gemma, "longcat": _parse_longcat,
    "minimax": lambda text, _: _xml_calls(text, _MM_FN, _MM_PARAM, _MM_NOISE),
}
_FORMATS: tuple[str, ...] = get_args(TextFormat)
assert set(_FORMATS) == {"auto", *_PARSERS}, "every TextFormat needs a parser"

_MARKERS: tuple[tuple[TextFormat, re.Pattern[str]], ...] = (
    ("deepseek", re.compile(_ds("tool call begin") + "|" + _DS_NOISE)),
    ("kimi_k2", re.compile(r"<\|tool_call(?:s_section)?_begin\|>")),
    ("llama3_python_tag", re.compile(r"<\|python_tag\|>")),
    ("pythonic", re.compile(r"<\|python_start\|>|\A\s*\[\s*[A-Za-z_][\w.]*\(")),
    ("mistral", re.compile(r"\[TOOL_CALLS\]|\[ARGS\]")),
    ("granite", re.compile(r"<\|tool_call\|>")),
    ("gemma", re.compile(r"<start_function_call>|<\|tool_call>|\A\s*call:[\w.\-]+\{")),
    ("longcat", re.compile(r"<longcat_(?:tool_call|arg_key)>")),
    ("minimax", re.compile(r'<minimax:tool_call>|<invoke name="')),
    ("glm", re.compile(r"<arg_key>")),
    ("qwen", re.compile(r"<function=")),
    ("hermes", re.compile(r"<tool_call>")),
)
