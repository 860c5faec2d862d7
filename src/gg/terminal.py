r"""Operator output is inert (issue 9, Build item 8; SPEC O2).

Whatever a model, a program, a tool, a hook, an issue or a file name says is
data. Before any of it reaches the operator's terminal it goes through
:func:`inert`, which replaces every character a terminal could act on, or that
could hide or reorder text, by a visible escape in Python's ``repr`` notation
(``\x1b``, ``\r``, ``\x9b``, ``\u202e``, ``\ud800``):

- C0 controls except newline and tab (a CR LF pair becomes a newline; a lone
  CR, which would overwrite the line, is shown as ``\r``), DEL, and the C1
  controls U+0080-U+009F (the 8-bit CSI, OSC, DCS, ST ...). With ESC, BEL and
  the C1 introducers and terminators gone, no escape sequence (CSI, OSC with a
  BEL or ST terminator, DCS, APC, PM, SOS) can start or end: its remaining
  characters print as plain text, so the operator sees the attempt.
- Format characters (Unicode category Cf): bidi embeddings, overrides and
  isolates (U+202A-U+202E, U+2066-U+2069), marks (U+200E, U+200F, U+061C),
  zero-width space and word joiners, U+FEFF, interlinear annotations, tags;
  the line and paragraph separators U+2028/U+2029; lone surrogates. In
  short: every character of the categories Cc, Cf, Cs, Zl and Zp but tab
  and newline.

Ordinary text is left alone: accents, CJK, emoji (with their variation
selectors and skin tones). Two exceptions keep real scripts and emoji whole:
a zero-width joiner or non-joiner (U+200D, U+200C) between two visible
non-ASCII characters (emoji ZWJ sequences, Persian, Indic), and the tag
characters of a subdivision flag (U+1F3F4, tags, U+E007F). Every character
for which ``str.isprintable()`` holds passes unchanged.

Rich never reads such text as markup: :func:`inert_text` and :func:`line`
build :class:`rich.text.Text` objects (no markup, no ``:emoji:`` codes), and
every print site in gg uses them. :func:`inert_json` serialises ``--json``
output as pure JSON with the same characters as ``\u`` escapes, so the
raw text round-trips through ``json.loads`` and the terminal sees none of it.
The stream itself keeps the raw text.

Secrets: :func:`inert` also redacts (:func:`gg.text.redact`: the values of
secret-looking environment variables and credential-shaped text), so no
view (the live view, ``gg show``, ``gg board list|show``, diagnoses) shows a
key even when a tool printed one or an issue title holds one (issue 12 item 8).
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable
from typing import Any

from rich.text import Text

from gg.text import redact

__all__ = ["inert", "inert_json", "inert_text", "line"]

_CANDIDATES = (
    (0x00AD, 0x00AD),
    (0x0600, 0x0605),
    (0x061C, 0x061C),
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x180E, 0x180E),
    (0x200B, 0x200F),
    (0x2028, 0x202E),
    (0x2060, 0x206F),
    (0xFEFF, 0xFEFF),
    (0xFFF0, 0xFFFB),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x1343F),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)
"""Where Unicode puts its format characters and separators (Cf, Zl, Zp)."""


def _format_class() -> str:
    """The format characters and separators of this Python's Unicode version, as a class."""
    codes = [
        c
        for lo, hi in _CANDIDATES
        for c in range(lo, hi + 1)
        if unicodedata.category(chr(c)) in ("Cf", "Zl", "Zp")
    ]
    ranges: list[list[int]] = []
    for c in codes:
        if ranges and ranges[-1][1] == c - 1:
            ranges[-1][1] = c
        else:
            ranges.append([c, c])
    return "".join(chr(lo) if lo == hi else f"{chr(lo)}-{chr(hi)}" for lo, hi in ranges)


_HIDDEN = "\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff" + _format_class()
"""Every code point :func:`inert` escapes (a regex character class): C0 but tab and
newline, DEL, C1, surrogates, and every format character and separator (Cf, Zl, Zp)."""

_VISIBLE = f"[^\\x00-\\x7f\\s{_HIDDEN}]"
"""One visible non-ASCII character: a joiner between two of them is kept."""

_PATTERN = re.compile(
    "(\r\n)"
    "|(\U0001f3f4[\U000e0020-\U000e007e]+\U000e007f)"
    f"|((?<={_VISIBLE})[\u200c\u200d](?={_VISIBLE}))"
    f"|[{_HIDDEN}]"
)
_JSON_UNSAFE = re.compile(f"[{_HIDDEN}]")


def _escape(char: str) -> str:
    if char == "\r":
        return "\\r"
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _replace(match: re.Match[str]) -> str:
    if match.group(1):
        return "\n"
    if match.group(2) or match.group(3):
        return match.group(0)
    return _escape(match.group(0))


def inert(text: str, secrets: Iterable[str] | None = None) -> str:
    r"""``text`` made safe to write to a terminal (issue 9 item 8).

    Args:
        text: any string, e.g. a model reply, program output, a file name,
            an issue title; lone surrogates allowed.
        secrets: the secret values to redact (:func:`gg.text.redact`); default: read
            from the environment on each call (a page of thousands of texts passes
            them once, :mod:`gg.web.markup`).

    Returns:
        The same string with each control, escape-sequence introducer or
        terminator, bidi control, invisible format character, line or
        paragraph separator and lone surrogate replaced by its visible
        escape (``\x1b``, ``\r``, ``\u202e``...); CR LF becomes LF.
        Newline and tab are kept. Printable text is returned unchanged.
        The result encodes as UTF-8 (no surrogates) and contains no
        character a terminal acts on besides newline and tab. Secrets are
        ``[redacted]`` first (:func:`gg.text.redact`, issue 12 item 8).
    """
    return _PATTERN.sub(_replace, redact(text, secrets))


def inert_text(text: str, style: str = "") -> Text:
    """``Text(inert(text), style=style)``: untrusted text for rich, never read as markup.

    Args:
        text: untrusted text.
        style: a rich style written by gg (not by the agent), e.g. ``"dim"``.
    """
    return Text(inert(text), style=style)


def line(*parts: str | tuple[str, str]) -> Text:
    """One rich line from parts, each made inert; ``(text, style)`` parts get a style.

    ``line(("✗ error turn", "red"), " ", message)``: the styles are gg's own,
    every text (gg's literals included) goes through :func:`inert`, and no
    part is ever parsed as markup or ``:emoji:`` codes (issue 9 item 8).
    """
    out = Text()
    for part in parts:
        if isinstance(part, tuple):
            out.append(inert(part[0]), style=part[1])
        else:
            out.append(inert(part))
    return out


def _json_escape(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def inert_json(obj: Any) -> str:
    r"""``obj`` as one line of JSON that is safe on a terminal (``--json``, issue 9 item 8).

    Like ``json.dumps(obj, ensure_ascii=False)`` (readable accents, CJK,
    emoji), but every character :func:`inert` would escape (C0, DEL, C1,
    bidi and other format characters, U+2028/U+2029, lone surrogates) is
    written as a JSON ``\uXXXX`` escape (a surrogate pair beyond the BMP),
    so ``json.loads`` gives back exactly ``obj``'s strings.

    Raises:
        TypeError: ``obj`` holds something JSON cannot represent.
        ValueError: ``obj`` is circular (as ``json.dumps``).
    """
    return _JSON_UNSAFE.sub(_json_escape, json.dumps(obj, ensure_ascii=False))
