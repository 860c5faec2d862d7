"""The stores: migrations, transactions with history, verdicts, crash bookkeeping (B1).

The protocol tests run on both backends: SQLite and a real PostgreSQL server (issue 17).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import gg
from gg.board import BoardError, IssueState, SqliteStore, Verdict
from gg.board.postgres import PostgresStore
from gg.board.sqlite import MIGRATIONS
from gg.board.store import Store
from gg.board.transcript import dump_messages, load_messages, resumable
from gg.models.base import AssistantMessage, Message, SystemMessage, ToolMessage, UserMessage

S = IssueState
MakeStore = Callable[[], Store]


@pytest.fixture(params=["sqlite", "postgres"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MakeStore]:
    """A factory of stores on one fresh board: SQLite in tmp_path, or a new PostgreSQL database."""
    opened: list[Store] = []
    url = request.getfixturevalue("pg").new_database() if request.param == "postgres" else ""

    def make() -> Store:
        store: Store = PostgresStore(url) if url else SqliteStore(tmp_path / "b.sqlite3")
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()


def test_fresh_file_is_migrated_once_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / ".gg" / "board.sqlite3"
    store = SqliteStore(path)
    assert store.schema_version == len(MIGRATIONS) == 2
    store.add_issue("one")
    store.close()
    again = SqliteStore(path)  # reopening runs nothing again and keeps the data
    assert again.schema_version == 2 and [i.title for i in again.issues()] == ["one"]
    again.close()
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert con.execute("SELECT COUNT(*) FROM schema_version").fetchone()[0] == 2


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "b.sqlite3"
    SqliteStore(path).close()
    con = sqlite3.connect(path)
    con.execute("INSERT INTO schema_version (version) VALUES (99)")
    con.commit()
    con.close()
    with pytest.raises(BoardError, match="schema version 99, newer") as info:
        SqliteStore(path)
    assert info.value.code == "store" and not info.value.retryable


def test_not_a_database_is_a_board_error(tmp_path: Path) -> None:
    path = tmp_path / "b.sqlite3"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(BoardError, match="cannot use the board store"):
        SqliteStore(path)


def test_transitions_append_history_and_check_the_state(
    make_store: MakeStore, tmp_path: Path
) -> None:
    store = make_store()
    first = store.add_issue("one", "body")
    second = store.add_issue("two")
    assert (first.number, second.number) == (1, 2) and first.state is S.OPEN
    issue = store.transition(
        1, event="started", to=S.IMPLEMENTING, expect={S.OPEN}, round=1, branch="gg/issue-1"
    )
    assert issue.state is S.IMPLEMENTING and issue.round == 1 and issue.branch == "gg/issue-1"
    with pytest.raises(BoardError, match="is 'implementing', expected one of"):
        store.transition(1, event="started", to=S.IMPLEMENTING, expect={S.OPEN}, round=9)
    assert store.issue(1).round == 1  # nothing changed
    with pytest.raises(BoardError, match="unknown issue field"):
        store.transition(1, event="x", title="nope")
    with pytest.raises(gg.UserError, match="no issue #5"):
        store.issue(5)
    history = store.detail(1).history
    assert [(h.event, h.from_state, h.to_state) for h in history] == [
        ("added", None, S.OPEN),
        ("started", S.OPEN, S.IMPLEMENTING),
    ]
    assert history[1].detail == {"round": 1, "branch": "gg/issue-1"}


def test_sessions_verdicts_and_abandoned_sessions(make_store: MakeStore, tmp_path: Path) -> None:
    store = make_store()
    store.add_issue("one")
    rec = store.start_session(1, kind="reviewer", round=1, reviewer=1, run_id="r1")
    store.session_started(rec, "s4")
    verdict = Verdict(round=1, reviewer=1, call="request_changes", items=("a", "b"))
    store.end_session(
        rec,
        status="ended",
        ending={"call": "request_changes", "items": ["a", "b"]},
        verdict=verdict,
    )
    store.end_session(rec, status="ended", verdict=verdict)  # recorded once only
    assert [(v.call, v.items, v.session) for v in store.verdicts(1)] == [
        ("request_changes", ("a", "b"), rec)
    ]
    assert store.verdicts(1, round=2) == []
    hanging = store.start_session(1, kind="implementer", round=2, reviewer=None, run_id="r1")
    assert store.abandon_running() == 1 and store.abandon_running() == 0
    detail = store.detail(1)
    assert [(s.id, s.status, s.session_id) for s in detail.sessions] == [
        (rec, "ended", "s4"),
        (hanging, "abandoned", None),
    ]
    assert [h.event for h in detail.history].count("verdict") == 1
    assert detail.history[-1].event == "session_abandoned"


def test_an_implementer_conversation_round_trips(make_store: MakeStore, tmp_path: Path) -> None:
    store = make_store()
    store.add_issue("one")
    messages: list[Message] = [
        SystemMessage(content="sys"),
        UserMessage(content="Implement issue #1."),
        AssistantMessage(
            content="",
            tool_calls=(
                gg.ToolCall(name="write_file", arguments={"path": "a", "content": "b"}, id="c1"),
            ),
        ),
        ToolMessage(call_id="c1", name="write_file", content="wrote a"),
    ]
    rec = store.start_session(1, kind="implementer", round=1, reviewer=None, run_id="r")
    assert store.conversation(1) is None
    store.end_session(rec, status="ended", messages=dump_messages(messages))
    text = store.conversation(1)
    assert text is not None and load_messages(text) == messages
    result = resumable(text, session_id="s9", workspace=tmp_path, summary="did it")
    assert result.ending == gg.Finish(summary="did it") and result.messages == messages
    with pytest.raises(ValueError, match="not a stored conversation"):
        load_messages('[{"role": "nobody"}]')
