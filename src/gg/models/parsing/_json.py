"""JSON tool calls (SPEC M5).

The shared JSON scanning every JSON-carrying format uses, and the markerless
formats ``llama3_json`` and ``json`` (bare objects, xLAM-style lists, fenced
``json`` blocks).
"""

from __future__ import annotations

import json
import re
from typing import Any

from gg.models.base import ToolCall
from gg.models.parsing._common import (
    _WS,
    _Broken,
    _broken,
    _end,
    _excerpt,
    _loads,
    _Names,
    _Scan,
)

_DECODER = json.JSONDecoder()
_GAP = re.compile(r"[\s,;\]}]*")
_TRAIL = re.compile(r"(?:\s*[;\]}])*")


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
        raise _Broken(f"not readable JSON ({exc}): {_excerpt(text[pos : pos + 200])}") from None
    cut = _end(_WS, text, bad.pos) == len(text) or bad.msg.startswith("Unterminated string")
    if cut and text.startswith("[", pos):
        value = _loads(text[pos:].rstrip() + "]")
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            return value, len(text)
    if cut:
        raise _Broken(f"cut off before the end: {_excerpt(text[pos : pos + 200])}", cut=True)
    raise _Broken(
        f"not valid JSON ({bad.msg} at character {bad.pos - pos}): "
        f"{_excerpt(text[pos : pos + 200])}"
    )


def _make_call(name: str, args: Any) -> ToolCall:
    """A call from decoded arguments: a dict, a JSON string holding one, else raw."""
    if args is None or (isinstance(args, str) and not args.strip()):
        return ToolCall(name=name, arguments={})
    decoded = _loads(args) if isinstance(args, str) else args
    if isinstance(decoded, dict):
        return ToolCall(name=name, arguments=decoded)
    raw = args if isinstance(args, str) else json.dumps(args)
    return ToolCall(
        name=name,
        arguments=raw,
        parse_error=(f"the arguments of {name!r} must be a JSON object, got {_excerpt(raw)}"),
    )


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
                    raise _Broken(
                        'JSON but not a call (a call is {"name": ..., "arguments": '
                        f"{{...}}}}): {_excerpt(json.dumps(item, ensure_ascii=False))}"
                    )
                calls.append(call)
            pos = _end(_GAP, text, pos)
    except _Broken as exc:
        return _broken(exc, where, 0, len(text))
    if not calls:
        return _Scan(error=f"{where} holds no call: {_excerpt(text.strip())}")
    return _Scan(calls=calls, spans=[(0, pos)])


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


# --- bare JSON: Llama 3 JSON, xLAM lists, fenced blocks -------------------------------------

_JSON_AT = re.compile(r'(```(?:json)?\s*)?(?:\[\s*)?\{\s*"')
_CALL_AT = re.compile(
    r'(```(?:json)?\s*)?(\[\s*)?\{\s*"(?:name|function|arguments|parameters)"\s*:'
)
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
            return _Scan(
                error=f"{', '.join(map(repr, unknown))} not among the offered tools ({offered})",
                spans=[(m.start(), end)],
            )
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
