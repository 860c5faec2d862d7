"""Escaping for the board page and the page layout: every untrusted text goes through :func:`h`.

The board page and the layout are built from small f-strings whose every interpolated
value is either gg's own constant markup, the result of :func:`num` (a store's integer
column, which a non-STRICT SQLite table may hold any value in), or the result of
:func:`h`, which cuts the text
to a bound and hands it to the run page's one escaping path,
:func:`gg.web.markup.esc` (inert as on a terminal, secrets redacted, then
``& < > " '`` escaped), so it is safe in text and in quoted attribute values alike.
"""

from __future__ import annotations

from gg.web.markup import esc, esc_cut

__all__ = ["UNREADABLE", "h", "num"]

UNREADABLE = "[unreadable]"
"""What :func:`num` shows for a value that should be an integer and is not."""


def h(value: object, limit: int | None = None) -> str:
    """``value`` as inert, HTML-escaped text, cut to ``limit`` characters first.

    Args:
        value: anything; ``str(value)`` is escaped (``None`` shows as empty; markup made
            elsewhere is escaped too: this is for text only).
        limit: the most characters kept before escaping (:func:`gg.text.cut`'s marker
            included), or ``None`` for all (up to :data:`gg.web.markup.HARD_CAP`).

    Returns:
        Text safe to place in an element's content or a double- or single-quoted
        attribute: controls, bidi overrides and invisible characters shown as visible
        escapes (:func:`gg.terminal.inert`), secrets ``[redacted]``.
    """
    text = "" if value is None else str(value)  # str() of a Markup is plain text again
    return str(esc(text) if limit is None else esc_cut(text, limit))  # redacted, then cut


def num(value: object) -> str:
    """An integer field of a store or a stream (a number, a round, a reviewer) as HTML.

    A non-STRICT SQLite column holds whatever was written into it: only a real integer
    (or text that is one) is shown as the integer; anything else is :data:`UNREADABLE`,
    never the value itself.

    Args:
        value: what the row held.

    Returns:
        The integer's decimal digits, or ``[unreadable]`` (both plain, safe text).
    """
    if isinstance(value, bool):
        return UNREADABLE
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str) and len(value) < 30 and value.strip().lstrip("-").isdecimal():
        try:
            return str(int(value))
        except ValueError:
            return UNREADABLE
    return UNREADABLE
