"""A board store written by an adversary: any value in any column is shown as text.

SQLite tables are not STRICT and :mod:`gg.board.rows` does not coerce, so an integer
column (an issue's number or round, a reviewer) can hold markup; the board page must
show it as text (integers as ``[unreadable]``), never as HTML.
"""

from __future__ import annotations

import ast
import sqlite3
from pathlib import Path

import pytest

import gg.web
from gg.board.sqlite import SqliteStore
from gg.board.store import Verdict
from gg.state import state_path
from gg.web.boardview import BoardReader, board_html
from gg.web.escape import UNREADABLE, num
from gg.web.pages import board_fragment

HOSTILE = '<meta http-equiv="refresh" content="0;url=http://evil.test/"><zz onx=1>'
HOSTILE_JSON = '"<zz onx=1>"'

_COLUMNS = {
    "issues": (
        "number",
        "title",
        "body",
        "round",
        "branch",
        "summary",
        "diagnosis",
        "merge_sha",
        "created_at",
        "updated_at",
    ),
    "sessions": (
        "round",
        "reviewer",
        "run_id",
        "session_id",
        "diagnosis",
        "started_at",
        "ended_at",
        "ending",
    ),
    "verdicts": ("round", "reviewer", "at"),
    "verdict_items": ("text", "position"),
    "history": ("at", "event", "detail"),
}
_JSON = {("sessions", "ending"), ("history", "detail")}


def _board(ws: Path) -> Path:
    path = state_path(ws) / "board.sqlite3"
    path.parent.mkdir(parents=True, exist_ok=True)
    store = SqliteStore(path)
    store.add_issue("first", "a body")
    record = store.start_session(1, kind="reviewer", round=1, reviewer=2, run_id="r-1")
    store.session_started(record, "sess-1")
    store.end_session(
        record,
        status="ended",
        diagnosis="why",
        verdict=Verdict(round=1, reviewer=2, call="request_changes", items=("fix it",)),
    )
    store.close()
    return path


@pytest.mark.parametrize(
    ("table", "column"), [(t, c) for t, cols in _COLUMNS.items() for c in cols]
)
@pytest.mark.parametrize("kind", ["text", "blob"])
def test_hostile_values_in_any_column_render_as_text(
    tmp_path: Path, table: str, column: str, kind: str
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    path = _board(ws)
    value: object = HOSTILE_JSON if (table, column) in _JSON else HOSTILE
    if kind == "blob":
        value = str(value).encode()
    with sqlite3.connect(path) as db:
        assert db.execute(f"UPDATE {table} SET {column} = ?", (value,)).rowcount >= 1
    reader = BoardReader(ws)
    try:
        snapshot = reader.snapshot()
    finally:
        reader.close()
    html = board_fragment(snapshot, [])
    assert '<section class="board">' in html or 'class="error"' in html
    assert "<meta" not in html and "<zz" not in html, html
    if kind == "text" and column in ("number", "round", "reviewer"):
        assert board_html(snapshot).count("&lt;zz") + html.count(UNREADABLE) >= 1


def test_an_integer_column_shows_its_integer_or_says_it_is_unreadable() -> None:
    assert num(3) == "3" and num("12") == "12" and num(-1) == "-1"
    for bad in (HOSTILE, "3 onx=1", True, 2.5, b"1", None, "9" * 40):
        assert num(bad) == UNREADABLE


def _raw_interpolations(path: Path) -> list[str]:
    """Values put straight into an HTML f-string (not through a call such as ``h``)."""
    tree = ast.parse(path.read_text())
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.JoinedStr):
            continue
        literal = "".join(str(part.value) for part in node.values if isinstance(part, ast.Constant))
        if "<" not in literal and '="' not in literal:
            continue  # not HTML
        for part in node.values:
            if isinstance(part, ast.FormattedValue) and not isinstance(
                part.value, ast.Call | ast.Name
            ):
                found.append(f"{path.name}:{part.lineno}: {ast.unparse(part.value)}")
    return found


def test_no_field_is_interpolated_into_html_without_the_escaping_path() -> None:
    # a record's field (i.number, s.events...) goes through h() or num(); a local name
    # holds markup built the same way
    web = Path(gg.web.__file__).parent
    raw = [hit for name in ("boardview.py", "pages.py") for hit in _raw_interpolations(web / name)]
    assert raw == []
