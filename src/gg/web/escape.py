"""Escaping for the web pages: every untrusted text goes through :func:`h` (issue 15 item 3).

Pages are built from small f-strings whose every interpolated value is either gg's own
constant markup or the result of :func:`h` (HTML-escaped, quotes included, so it is safe
in text and in quoted attribute values alike) and cut to a bound by :func:`clip`.
"""

from __future__ import annotations

import html

from gg.terminal import inert
from gg.text import cut

__all__ = ["clip", "h"]


def h(value: object, limit: int | None = None) -> str:
    """``value`` as inert, HTML-escaped text, cut to ``limit`` characters first.

    Inert as in :func:`gg.terminal.inert` (controls, bidi overrides and invisible
    characters made visible escapes, secrets redacted), then ``& < > " '`` escaped.

    Args:
        value: anything; ``str(value)`` is escaped (``None`` shows as empty).
        limit: the most characters kept before escaping (:func:`gg.text.cut`'s marker
            included), or ``None`` for all.

    Returns:
        Text safe to place in an element's content or a quoted attribute.
    """
    text = "" if value is None else str(value)
    return html.escape(inert(clip(text, limit) if limit is not None else text), quote=True)


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters with gg's cut marker (not escaped)."""
    return cut(text, limit)
