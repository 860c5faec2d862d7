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
- Bounded (issue 9 F4): a text longer than :data:`MAX_TEXT_CHARS`, Python-style
  calls longer than 100,000 characters (``ast`` of hostile text costs memory), and
  anything a parser cannot read without ``RecursionError``/``MemoryError`` (deep
  nesting) set ``error``. Values JSON-decoded here are checked again, for depth,
  numbers and valid Unicode, by :func:`gg.models.boundary.clean_reply`.
- Untyped values (XML-like and ``k=v`` forms, Gemma scalars) are JSON when they
  parse (``12`` -> 12, ``"x"`` -> x), else a Python literal if they start with
  ``[{(``, else text. (No schema is consulted: ``"12"`` for a string parameter is 12.)

This package holds the public API and the format dispatch; the parsers live in
``_json`` (shared JSON scanning; ``llama3_json``, ``json``), ``_tags`` (hermes,
qwen, glm, granite, minimax, longcat), ``_tokens`` (mistral, deepseek, kimi_k2)
and ``_python`` (pythonic, llama3_python_tag, gemma), on ``_common``'s helpers.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, replace
from typing import Literal, TypeAlias, get_args

from gg.errors import UserError
from gg.models.base import ToolCall
from gg.models.parsing._common import _Names, _Scan
from gg.models.parsing._json import _CALL_AT, _parse_json
from gg.models.parsing._python import _parse_gemma, _parse_python_tag, _parse_pythonic
from gg.models.parsing._tags import (
    _MM_FN,
    _MM_NOISE,
    _MM_PARAM,
    _parse_granite,
    _parse_longcat,
    _parse_tagged,
    _plain_kv,
    _xml_calls,
)
from gg.models.parsing._tokens import (
    _DS_NOISE,
    _DS_TOKENS,
    _KIMI_TOKENS,
    _ds,
    _ds_call,
    _kimi_call,
    _parse_mistral,
    _token_calls,
)

__all__ = ["MAX_TEXT_CHARS", "ParsedText", "TextFormat", "detect_format", "parse_tool_calls"]

MAX_TEXT_CHARS = 1_000_000
"""The longest reply text read for calls; a longer one is an ``error`` (hostile input,
issue 9 F4). Python-style calls are read only up to ``_python._MAX_PYTHON_CHARS``."""

TextFormat: TypeAlias = Literal[
    "auto",
    "hermes",
    "mistral",
    "llama3_json",
    "llama3_python_tag",
    "qwen",
    "granite",
    "pythonic",
    "json",
    "deepseek",
    "kimi_k2",
    "gemma",
    "glm",
    "minimax",
    "longcat",
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
    if len(text) > MAX_TEXT_CHARS:
        return ParsedText(
            content=text.strip(),
            tool_calls=(),
            error=(
                f"the reply is {len(text)} characters long; gg reads tool calls in replies of at "
                f"most {MAX_TEXT_CHARS}"
            ),
        )
    names = _names(tool_names)
    try:
        masked = _mask_thinking(text)
        chosen = detect_format(masked, tool_names=names) if format == "auto" else format
        scan = _Scan() if chosen is None else _PARSERS[chosen](masked, names)
    except Exception as exc:  # last guard: a parser bug must not crash a session
        return ParsedText(
            content=text.strip(),
            tool_calls=(),
            error=(f"gg could not read the tool calls in this reply ({type(exc).__name__}: {exc})"),
        )
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
    found = [
        (m.start(), i, fmt)
        for i, (fmt, pattern) in enumerate(_MARKERS)
        if (m := pattern.search(text)) is not None
    ]
    if found:
        start, _, fmt = min(found)
        after = text[start + len("<tool_call>") :] if fmt == "hermes" else ""
        return "qwen" if _QWEN_BODY.match(after) else "glm" if _GLM_BODY.match(after) else fmt
    call = _CALL_AT.search(text)
    if call is not None:
        return "json" if call.group(1) or call.group(2) else "llama3_json"
    names = _names(tool_names)
    return "glm" if names and _plain_kv(text, names).calls else None


# --- helpers -----------------------------------------------------------------------------

_QWEN_BODY = re.compile(r"\s*<function=")
_GLM_BODY = re.compile(r"\s*[\w.\-]+\s*<arg_key>")


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
        pieces.append(text[pos : max(pos, start)])
        pos = max(pos, end)
    content = "".join([*pieces, text[pos:]]).strip()
    if scan.error is not None:
        return ParsedText(content=content, tool_calls=(), error=scan.error)
    calls = tuple(c if c.id else replace(c, id=f"call_{i}") for i, c in enumerate(scan.calls))
    return ParsedText(content="" if scan.drop_content and calls else content, tool_calls=calls)


# --- dispatch -------------------------------------------------------------------------------

_PARSERS: dict[str, Callable[[str, _Names], _Scan]] = {
    "hermes": _parse_tagged,
    "qwen": _parse_tagged,
    "glm": _parse_tagged,
    "granite": _parse_granite,
    "mistral": _parse_mistral,
    "json": _parse_json,
    "llama3_json": lambda text, names: _parse_json(text, names, llama=True),
    "llama3_python_tag": _parse_python_tag,
    "pythonic": _parse_pythonic,
    "deepseek": lambda text, _: _token_calls(text, _DS_TOKENS, _ds_call),
    "kimi_k2": lambda text, _: _token_calls(text, _KIMI_TOKENS, _kimi_call),
    "gemma": _parse_gemma,
    "longcat": _parse_longcat,
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
