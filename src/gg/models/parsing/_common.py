"""What every tool-call format parser shares (SPEC M5).

The scan result, the broken-text error, and small text helpers (untyped values,
markers, excerpts).

Internal to :mod:`gg.models.parsing`; no name here is public.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from gg.models.base import ToolCall
from gg.text import cut

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


_NOTHING: Any = object()
_MAX_LITERAL_CHARS = 100_000
"""The longest untyped value read as a Python literal (``ast`` is costly on hostile text)."""
_WS = re.compile(r"\s*")


def _end(pattern: re.Pattern[str], text: str, pos: int) -> int:
    """Where ``pattern`` (one that matches empty text too) stops matching from ``pos``."""
    found = pattern.match(text, pos)
    return found.end() if found else pos


def _excerpt(text: str, limit: int = 160) -> str:
    """``text`` quoted, shortened to ``limit`` characters."""
    return repr(cut(text, limit))


def _loads(text: str) -> Any:
    """``text`` decoded as JSON, or ``_NOTHING``."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return _NOTHING


def _broken(exc: _Broken, where: str, start: int, end: int) -> _Scan:
    """An error scan; a cut-off call (it runs to ``end``) is taken out of content."""
    return _Scan(error=f"{where} is {exc.reason}", spans=[(start, end)] if exc.cut else [])


def _literal(node: ast.AST) -> Any:
    """A Python literal as JSON data; raises ValueError/TypeError if it is neither."""
    return json.loads(json.dumps(ast.literal_eval(node)))


def _typed(raw: str) -> Any:
    """An untyped text value: JSON if it parses, else a Python literal, else the text."""
    text = raw.removeprefix("\n").removesuffix("\n")
    word = text.strip()
    value = _loads(word) if word else _NOTHING
    if value is _NOTHING and word[:1] in ("[", "{", "(") and len(word) <= _MAX_LITERAL_CHARS:
        try:
            value = _literal(ast.parse(word, mode="eval").body)
        except (SyntaxError, ValueError, TypeError, RecursionError, MemoryError):
            value = _NOTHING
    return text if value is _NOTHING else value


def _segments(marks: list[_Span], end: int) -> list[tuple[int, int, int]]:
    """``(marker start, payload start, payload end)`` for markers splitting a text."""
    stops = [start for start, _ in marks[1:]] + [end] if marks else []
    return [(start, payload, stop) for (start, payload), stop in zip(marks, stops, strict=True)]
