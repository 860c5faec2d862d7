"""Programs shown with syntax highlighting, by Pygments, drawn server-side (issue 15 item 2).

A ``submit_program`` program (SPEC M2) is the model's text: it is made inert
(:func:`gg.terminal.inert`) before it is lexed, Pygments escapes every token
(``& < > " '``), and the result is checked to be nothing but Pygments' own
``<span class="...">`` tags around text; anything else (a Pygments bug) falls
back to the plain escaped text. The colours are :data:`CODE_CSS`, scoped to
``.gg-code`` (no external file).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from pygments import highlight as _pygmentize  # type: ignore[import-untyped]
from pygments.formatters.html import HtmlFormatter  # type: ignore[import-untyped]
from pygments.lexers.javascript import JavascriptLexer  # type: ignore[import-untyped]
from pygments.lexers.python import PythonLexer  # type: ignore[import-untyped]

from gg.terminal import inert
from gg.web.markup import Markup, el, esc, inert_cut

__all__ = ["CODE_CSS", "PROGRAM_CAP", "guess_language", "program_html"]

PROGRAM_CAP = 20_000
"""The most characters of a program highlighted and shown; the rest is counted.

The stream keeps 2,000 characters of each call's argument (:func:`gg.stream.excerpt_arguments`),
so only a forged stream holds more; highlighting costs about 40 µs and 25 bytes of
HTML per character."""

_FORMATTER = HtmlFormatter(nowrap=True)
_SCOPE = ".gg-code"
CODE_CSS: str = "\n".join(
    rule
    for rule in HtmlFormatter(style="default").get_style_defs(_SCOPE).splitlines()
    if rule.startswith(_SCOPE)
)
"""Pygments' colours for ``.gg-code`` blocks (its unscoped rules left out)."""

_TAGS = re.compile(r'<span class="[A-Za-z0-9 _-]*">|</span>')
"""The only tags Pygments' HTML formatter writes with ``nowrap``."""

_JS_SIGNS = re.compile(
    r"\bawait\s+gg\.|\b(?:const|let|var)\s+\w|console\.log|requestChanges|=>|;\s*$", re.M
)
"""What tells a JavaScript program from a Python one when the session is not known."""


def guess_language(source: str) -> str:
    """``"javascript"`` when ``source`` looks like JavaScript, else ``"python"``.

    Used only when the session's language arm (``session_started.language``) is not at
    hand (a lone event appended live); it picks colours, nothing else.
    """
    return "javascript" if _JS_SIGNS.search(source[:20_000]) else "python"


def _lexed(source: str, language: str) -> tuple[Markup, ...]:
    """:func:`_lex`, remembered for the last 128 programs of up to 4,000 characters.

    A page and its live appends draw the same programs again; long ones are not kept.
    """
    return _lex_cached(source, language) if len(source) <= 4_000 else _lex(source, language)


def _lex(source: str, language: str) -> tuple[Markup, ...]:
    """``source`` highlighted, one markup per line of it.

    Pygments closes its spans at each line's end, so a line's markup stands alone. The
    plain escaped lines if the output is not as expected.
    """
    lexer = (JavascriptLexer if language == "javascript" else PythonLexer)(stripnl=False)
    clean = inert(source)
    out = str(_pygmentize(clean, lexer, _FORMATTER)).removesuffix("\n")
    if "<" in _TAGS.sub("", out):  # a tag Pygments does not write: show text instead
        return tuple(esc(line) for line in clean.split("\n"))
    return tuple(Markup(line) for line in out.split("\n"))


_lex_cached = functools.lru_cache(maxsize=128)(_lex)


def _block(lines: Sequence[Markup], language: str) -> Markup:
    """One ``<pre class="gg-code">`` of highlighted lines."""
    body = Markup("\n".join(lines))
    return el("pre", {"class": "gg-code", "data-language": language}, body)


def program_html(source: str, language: str, *, lines: int = 40, chars: int = 4000) -> Markup:
    """A program highlighted, folded when long.

    Args:
        source: the program's text (any size: at most :data:`PROGRAM_CAP` characters
            are highlighted, the rest counted).
        language: ``"python"`` or ``"javascript"`` (SPEC M2's arms); any other value
            is highlighted as Python.
        lines: most lines shown unfolded.
        chars: most characters of the program shown unfolded (whole lines).

    Returns:
        ``<div class="program">``: the whole program when short; else its first lines
        and a ``<details class="fold">`` with the rest, highlighted as one program.
    """
    kept, cut_off = inert_cut(source, PROGRAM_CAP)  # redacted whole before any cut
    highlighted = _lexed(kept, language)
    head, used = 0, 0
    for line in kept.split("\n")[:lines]:
        used += len(line) + 1
        if head and used > chars:
            break
        head += 1
    parts = [_block(highlighted[:head], language)]
    rest = highlighted[head:]
    if head == 1 and len(highlighted) == 1 and len(kept) > chars:  # one long line (minified)
        parts = [el("pre", {"class": "gg-code", "data-language": language}, kept[:chars] + "…")]
        summary = el("summary", None, f"show the whole line ({len(kept)} characters)")
        parts.append(el("details", {"class": "fold"}, summary, _block(highlighted, language)))
    elif rest:
        summary = el("summary", None, f"show {len(rest)} more lines of the program")
        parts.append(el("details", {"class": "fold"}, summary, _block(rest, language)))
    if cut_off:
        said = f"… {cut_off} more characters cut (over {PROGRAM_CAP})"
        parts.append(el("p", {"class": "cut"}, said))
    return el("div", {"class": "program"}, *parts)
