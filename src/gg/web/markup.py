r"""HTML built one safe way: every text escaped, every attribute quoted (issue 15 item 3).

Whatever a model, a program, a tool, a hook or a (perhaps forged) stream says is
data. The run page builds its HTML only through :func:`el` and :func:`esc`:

- a :class:`Markup` is HTML made here; anything else put in a page (a ``str``, a
  number) is text: it goes through :func:`gg.terminal.inert` (controls, NUL, bidi
  overrides, invisible format characters and lone surrogates become visible
  escapes such as ``\x00``, ``\u202e``; secrets are ``[redacted]``), is cut at
  :data:`HARD_CAP` characters, then ``html.escape``-d (``& < > " '``);
- attribute values are escaped the same way and always double-quoted; tag and
  attribute names are gg's own literals, checked against a strict pattern;
- long texts are folded by :func:`fold`: a head shown, the rest (up to a cap)
  behind a ``<details>``, beyond the cap only the count of what was cut.

No URL from the data is ever made a link: a ``javascript:`` URL is text like any other.
Adding text to a :class:`Markup` escapes the text too, so ``markup + text`` cannot
smuggle tags in. Free-form values (a call's arguments, settings, ending records,
nested any depth) become bounded JSON text (:func:`json_text`, :func:`as_text`).

Inside :func:`secrets_read_once` (the run page's renderers open one per page or
fragment), the environment's secrets are read once and short texts are escaped once.
"""

from __future__ import annotations

import contextlib
import html
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field

from gg.terminal import inert
from gg.text import cut_marker, secret_values

__all__ = [
    "HARD_CAP",
    "AttrValue",
    "Child",
    "Markup",
    "as_text",
    "el",
    "esc",
    "esc_cut",
    "fold",
    "inert_cut",
    "join",
    "json_text",
    "secrets_read_once",
    "short",
]

HARD_CAP = 200_000
"""The most characters of one text a page shows; the rest is counted, not shown."""

_NAME = re.compile(r"[a-z][a-z0-9-]*\Z")
"""What a tag or attribute name written here looks like."""


class Markup(str):
    """A piece of HTML made by this module: put in a page as it is, never escaped again.

    Adding text to it escapes the text: ``Markup("<b>") + "<i>"`` is ``<b>&lt;i&gt;``.
    """

    __slots__ = ()

    def __add__(self, other: str) -> Markup:
        return Markup(str.__add__(self, esc(other)))

    def __radd__(self, other: str) -> Markup:
        return Markup(str.__add__(esc(other), self))


Child = Markup | str | int | float | None
"""What :func:`el` takes as content: markup, or text to escape (``None`` is left out)."""

AttrValue = str | int | float | bool | None
"""An attribute's value: text (escaped), ``True`` (a bare attribute), ``None``/``False``
(left out)."""


@dataclass(slots=True)
class _Page:
    """What escaping shares while one page is drawn: the secrets, and short texts done."""

    secrets: list[str]
    done: dict[str, Markup] = field(default_factory=dict)


_PAGE: ContextVar[_Page | None] = ContextVar("gg_web_page", default=None)
"""The page being drawn (:func:`secrets_read_once`), or ``None``."""
_REMEMBER = 100
"""Texts up to this long are escaped once per page (labels, ids, class names)."""


@contextlib.contextmanager
def secrets_read_once() -> Iterator[None]:
    """Read the environment's secret values once for everything escaped inside the block.

    A page escapes thousands of texts, and reading the environment for each
    (:func:`gg.text.secret_values`) costs more than all the rest of the escaping; the
    short texts a page repeats (labels, ids) are escaped once in it. Outside such a
    block each :func:`esc` reads the secrets itself; nested blocks reuse the outer one.
    """
    if _PAGE.get() is not None:
        yield
        return
    token = _PAGE.set(_Page(secret_values()))
    try:
        yield
    finally:
        _PAGE.reset(token)


_MARGIN = 4096
"""Characters read past a cut before redacting, beyond the longest secret's length."""


def _secrets() -> list[str]:
    """The secrets of the page being drawn, or read from the environment now."""
    page = _PAGE.get()
    return page.secrets if page is not None else secret_values()


def inert_cut(text: str, cap: int, secrets: list[str] | None = None) -> tuple[str, int]:
    """``text`` made inert with its secrets redacted *before* it is cut to ``cap``.

    Redacting the pieces of a cut text would miss a secret that straddles the cut; so
    the text is redacted over a window reaching past ``cap`` by more than the longest
    secret, then cut: no part of a secret at the cut is ever kept.

    Args:
        text: any text (10 MB is fine: only a window past ``cap`` is read).
        cap: the most characters kept (of the inert text).
        secrets: the values to redact (default: the page's, or the environment's).

    Returns:
        ``(kept, more)``: the inert, redacted text of at most ``cap`` characters (safe
        to cut or split further), and about how many characters were left out.
    """
    found = _secrets() if secrets is None else secrets
    longest = len(found[0]) if found else 0
    reach = cap + longest + _MARGIN
    while True:
        window = text[:reach]
        clean = inert(window, found)
        beyond = len(text) - len(window)
        if not beyond or len(clean) >= cap + longest:  # a secret cut by the window: past cap
            break
        reach *= 2
    if beyond:
        clean = clean[: len(clean) - longest]
    if len(clean) <= cap:
        return clean, beyond
    return clean[:cap], beyond + len(clean) - cap


def _html(clean: str) -> Markup:
    """Text already made inert (:func:`inert_cut`) HTML-escaped."""
    return Markup(html.escape(clean, quote=True))


def _escaped(text: str, secrets: list[str] | None) -> Markup:
    """``text`` made inert (secrets redacted), then cut at :data:`HARD_CAP`, HTML-escaped."""
    clean, more = inert_cut(text, HARD_CAP, secrets)
    return _html(f"{clean}[… {more} more characters cut]" if more else clean)


def esc_cut(value: object, limit: int) -> Markup:
    """``value`` as escaped text, redacted whole first, then cut to ``limit`` characters.

    Args:
        value: any value (``str()`` of it; ``None`` is empty).
        limit: the most characters kept, :func:`gg.text.cut`'s marker included.

    Returns:
        Markup of the inert, redacted, cut text (no part of a secret at the cut).
    """
    text = "" if value is None else str(value)
    clean, more = inert_cut(text, max(limit, 0))
    if not more:
        return _html(clean)
    total = len(clean) + more
    keep = max(limit - len(cut_marker(total)) - 2, 0)  # as gg.text.cut: head, marker
    marker = cut_marker(total - keep)
    return _html(f"{clean[:keep]} {marker}" if keep else marker)


def esc(value: Child) -> Markup:
    """``value`` as HTML: a :class:`Markup` unchanged, anything else escaped text.

    Args:
        value: markup made here, or text from anywhere (numbers are shown as text);
            ``None`` gives empty markup.

    Returns:
        Markup that shows the text exactly as characters: made inert
        (:func:`gg.terminal.inert`: secrets redacted too), cut at :data:`HARD_CAP`,
        ``& < > " '`` escaped.
    """
    if isinstance(value, Markup):
        return value
    if value is None:
        return Markup("")
    text = str(value)
    page = _PAGE.get()
    if page is None:
        return _escaped(text, None)
    if len(text) > _REMEMBER:
        return _escaped(text, page.secrets)
    done = page.done.get(text)
    if done is None:
        done = page.done[text] = _escaped(text, page.secrets)
    return done


def join(parts: Iterable[Child]) -> Markup:
    """The concatenation of ``parts``, each through :func:`esc`."""
    return Markup("".join(esc(p) for p in parts))


def _attrs(attrs: Mapping[str, AttrValue]) -> str:
    """`` name="value"`` pairs, escaped; ``None`` and ``False`` left out.

    Raises:
        ValueError: a name is not a plain lower-case name (a bug here, not data).
    """
    out = []
    for name, value in attrs.items():
        if not _NAME.match(name):
            raise ValueError(f"not an attribute name: {name!r}")
        if value is None or value is False:
            continue
        out.append(f" {name}" if value is True else f' {name}="{esc(str(value))}"')
    return "".join(out)


_VOID = frozenset({"br", "hr", "img", "input", "meta", "link", "wbr"})


def el(tag: str, attrs: Mapping[str, AttrValue] | None = None, /, *children: Child) -> Markup:
    """One HTML element, its attributes escaped and quoted, its content escaped.

    ``el("p", {"class": "x"}, "text", el("b", None, "bold"))``.

    Args:
        tag: a tag name written here (``div``, ``svg``, ``circle``...).
        attrs: attributes; values are escaped and double-quoted.
        children: content, each through :func:`esc`.

    Raises:
        ValueError: ``tag`` is not a plain lower-case name.
    """
    if not _NAME.match(tag):
        raise ValueError(f"not a tag name: {tag!r}")
    head = f"<{tag}{_attrs(attrs or {})}>"
    if tag in _VOID:
        return Markup(head)
    return Markup(f"{head}{join(children)}</{tag}>")


def as_text(value: object, limit: int = 300) -> str:
    """A value of a (perhaps forged) stream's free-form field as one short line of text.

    A string as it is; anything else (a number, a list, an object nested thousands deep)
    as bounded JSON text (:func:`json_text`), never through ``str()``, which recurses.
    """
    if isinstance(value, str):
        return short(value, limit)
    return short(json_text(value, depth=4, items=20, budget=limit * 2), limit)


def short(text: str, limit: int = 300) -> str:
    """``text`` on one line (white space runs made one space), cut to ``limit`` characters."""
    flat = " ".join(inert_cut(text, limit * 4)[0].split())  # redacted before any cut
    return flat if len(flat) <= limit else flat[:limit] + "…"


def _head(text: str, lines: int, chars: int) -> str:
    """The first ``lines`` lines of ``text``, at most ``chars`` characters."""
    end = -1
    for _ in range(lines):
        end = text.find("\n", end + 1, chars)
        if end < 0:
            return text[:chars]
    return text[: end + 1]


def fold(
    text: str, *, lines: int = 20, chars: int = 2000, cap: int = HARD_CAP, cls: str = "out"
) -> Markup:
    """A long text folded: its head in a ``<pre>``, the rest behind a ``<details>``.

    Args:
        text: any text (a tool's output, a reply, a diagnosis); 10 MB is fine: only
            ``cap`` characters of it are ever looked at beyond their count.
        lines: most lines shown unfolded.
        chars: most characters shown unfolded.
        cap: most characters shown at all; beyond, a ``p.cut`` says how many were cut.
        cls: the ``<pre>``'s class.

    Returns:
        ``<pre>`` (+ ``<details class="fold">`` with the rest) (+ ``<p class="cut">``).
    """
    kept, cut_off = inert_cut(text, cap)  # redacted whole, then split: no secret straddles
    head = _head(kept, lines, chars)
    rest = kept[len(head) :]
    out = el("pre", {"class": cls}, _html(head))
    if rest:
        more = rest.count("\n") + (0 if rest.endswith("\n") else 1)
        label = f"show {more} more line{'' if more == 1 else 's'} ({len(rest)} characters)"
        out += el(
            "details",
            {"class": "fold"},
            el("summary", None, label),
            el("pre", {"class": cls}, _html(rest)),
        )
    if cut_off:
        out += el("p", {"class": "cut"}, f"… {cut_off} more characters cut (over {cap})")
    return Markup(out)


def _scalar(value: object) -> str:
    """A JSON scalar as JSON text; a number too long to write is said to be."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):  # a value JSON cannot hold; an int past Python's digit cap
        return '"[a value that cannot be shown]"'


def json_text(value: object, *, depth: int = 12, items: int = 100, budget: int = 50_000) -> str:
    """``value`` (a call's arguments) as indented JSON text, bounded.

    Args:
        value: parsed JSON (dicts, lists, scalars), perhaps nested thousands deep.
        depth: deeper containers are shown as ``[… nested deeper]``.
        items: most items shown per list or object (the count of the rest is said).
        budget: roughly the most characters written; the rest is ``…``.
    """
    out: list[str] = []
    left = [budget]

    def put(text: str) -> bool:
        out.append(text)
        left[0] -= len(text)
        return left[0] > 0

    def walk(v: object, level: int, pad: str) -> bool:
        if not isinstance(v, dict | list | tuple):
            return put(_scalar(v))
        if level >= depth:
            return put('"[… nested deeper]"')
        pairs = list(v.items())[:items] if isinstance(v, dict) else list(enumerate(v[:items]))
        more = len(v) - len(pairs)
        opening, closing = ("{", "}") if isinstance(v, dict) else ("[", "]")
        if not put(opening):
            return False
        for i, (key, item) in enumerate(pairs):
            key_text = f"{_scalar(str(key))}: " if isinstance(v, dict) else ""
            if not (put(f"\n{pad}  {key_text}") and walk(item, level + 1, pad + "  ")):
                return False
            put("," if i < len(pairs) - 1 or more else "")
        if more and not put(f'\n{pad}  "[… {more} more]"'):
            return False
        return put(f"\n{pad}{closing}" if pairs or more else closing)

    if not walk(value, 0, ""):
        out.append(" …")
    return "".join(out)
