"""The PostgreSQL store on a real throwaway server (issue 17): schema, claims, lost connections."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

import gg
from gg.board import BoardError, IssueState, SqliteStore, open_store
from gg.board.postgres import (
    PG_MIGRATIONS,
    PostgresStore,
    StoreLost,
    safe_url,
    split_board_url,
    without_secrets,
)
from gg.board.sqlite import MIGRATIONS
from gg.board.store import Store
from pgcluster import PgCluster

S = IssueState
FAST = (0.05, 0.1, 0.2)


@pytest.fixture
def store(pg_url: str) -> Iterator[PostgresStore]:
    s = PostgresStore(pg_url, retry_delays=FAST)
    yield s
    s.close()


def test_the_schema_is_the_sqlite_one_migrated_once(pg_url: str) -> None:
    assert len(PG_MIGRATIONS) == len(MIGRATIONS) == 2
    stores: list[PostgresStore] = []
    errors: list[BaseException] = []

    def open_one() -> None:
        try:
            stores.append(PostgresStore(pg_url))
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=open_one) for _ in range(6)]  # a fresh database at once
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(stores) == 6
    assert {s.schema_version for s in stores} == {2}
    with psycopg.connect(pg_url) as conn:
        versions = conn.execute("SELECT version FROM schema_version ORDER BY version").fetchall()
        columns = {
            r[0]
            for r in conn.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = 'issues'"
            )
        }
    assert versions == [(1,), (2,)]
    assert {"claimed_by", "claimed_until", "merge_sha", "round"} <= columns
    for s in stores:
        s.close()


def test_a_newer_schema_is_refused(pg_url: str) -> None:
    PostgresStore(pg_url).close()
    with psycopg.connect(pg_url) as conn:
        conn.execute("INSERT INTO schema_version (version) VALUES (99)")
    with pytest.raises(BoardError, match="schema version 99, newer") as info:
        PostgresStore(pg_url)
    assert info.value.code == "store"


def test_boards_share_a_database_by_name(pg_url: str) -> None:
    one = PostgresStore(pg_url + "?board=alpha")
    two = PostgresStore(pg_url + "?board=beta")
    one.add_issue("in alpha")
    two.add_issue("in beta")
    two.add_issue("beta again")
    assert [i.title for i in one.issues()] == ["in alpha"]
    assert [(i.number, i.title) for i in two.issues()] == [(1, "in beta"), (2, "beta again")]
    assert one.board_name == "alpha"
    one.close()
    two.close()


def test_store_selection_by_url(pg_url: str, tmp_path: Path) -> None:
    store = open_store(pg_url, tmp_path)
    assert isinstance(store, PostgresStore)
    store.close()
    with pytest.raises(gg.UserError, match="unknown store 'postgres:nothing'"):
        open_store("postgres:nothing", tmp_path)
    assert safe_url("postgresql://u:secret@h:5/db") == "postgresql://u:***@h:5/db"


def _claims(store: Store, runner: str) -> list[int]:
    got: list[int] = []
    while (issue := store.claim_next(runner, lease_s=60, skip=got)) is not None:
        got.append(issue.number)
    return got


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_claims_leases_and_takeover(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = request.getfixturevalue("pg_url") if backend == "postgres" else ""
    store: Store = PostgresStore(url) if url else SqliteStore(tmp_path / "b.sqlite3")
    for title in ["a", "b", "c", "d"]:
        store.add_issue(title)
    store.transition(4, event="stuck", to=S.STUCK)
    first = store.claim_next("A", lease_s=60)
    assert first is not None and first.number == 1
    assert store.claim_next("B", lease_s=60, skip={2}).number == 3  # type: ignore[union-attr]
    assert store.claimed_elsewhere("B") == [1] and store.claimed_elsewhere("A") == [3]
    assert store.claim_next("A", lease_s=60, skip={1}).number == 2  # type: ignore[union-attr]
    assert store.claim_next("C", lease_s=60) is None  # all held, #4 is stuck
    again = store.claim_next("A", lease_s=60)  # a restarted A takes its own claims back
    assert again is not None and again.number == 1
    store.start_session(3, kind="implementer", round=1, reviewer=None, run_id="rB")
    store.start_session(2, kind="implementer", round=1, reviewer=None, run_id="rA")
    assert store.abandon_running("A") == 1  # B's live session of #3 is left alone
    assert store.renew("B", lease_s=-1) == {3}  # B's lease runs out...
    taken = store.claim_next("A", lease_s=60, skip={1, 2})
    assert taken is not None and taken.number == 3  # ...and A takes #3 over
    assert store.renew("B", lease_s=60) == set()  # B sees it lost its claim
    # the takeover itself abandoned B's session of #3: no record of it stays running
    assert [s.status for s in store.detail(3).sessions] == ["abandoned"]
    assert [h.event for h in store.detail(3).history][-2:] == ["claimed", "session_abandoned"]
    assert store.abandon_running("A") == 0
    store.release("A", 1)
    assert store.claimed_elsewhere("B") == [2, 3]
    store.release("A")
    assert store.claimed_elsewhere("B") == []
    claimed = [h.detail for h in store.detail(3).history if h.event == "claimed"]
    assert claimed == [{"runner": "B"}, {"runner": "A"}]
    store.close()


def test_many_runners_claim_each_issue_exactly_once(pg_url: str) -> None:
    seed = PostgresStore(pg_url)
    for n in range(40):
        seed.add_issue(f"issue {n}")
    got: dict[str, list[int]] = {}
    barrier = threading.Barrier(8)

    def runner(name: str) -> None:
        store = PostgresStore(pg_url)
        barrier.wait()
        got[name] = _claims(store, name)
        store.close()

    threads = [threading.Thread(target=runner, args=(f"r{i}",)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    every = [n for numbers in got.values() for n in numbers]
    assert sorted(every) == list(range(1, 41))  # none twice, none lost
    assert sum(1 for numbers in got.values() if numbers) >= 2
    history = [h for n in range(1, 41) for h in seed.detail(n).history if h.event == "claimed"]
    assert len(history) == 40
    seed.close()


def test_a_terminated_connection_is_retried_once_per_change(
    store: PostgresStore, pg: PgCluster
) -> None:
    store.add_issue("one")
    pid = store.backend_pid
    assert pid is not None and pg.terminate(pid)
    issue = store.transition(1, event="started", to=S.IMPLEMENTING, expect={S.OPEN}, round=1)
    assert issue.state is S.IMPLEMENTING and store.backend_pid != pid
    events = [h.event for h in store.detail(1).history]
    assert events == ["added", "started"]  # applied once


def test_a_connection_cut_before_commit_is_not_applied_twice(
    store: PostgresStore, pg: PgCluster
) -> None:
    store.add_issue("one")
    calls: list[int] = []

    def change(cur: object) -> None:
        calls.append(1)
        cur.execute(  # type: ignore[attr-defined]
            "INSERT INTO history (issue_id, at, event, detail) "
            "SELECT id, 'now', 'probe', '{}' FROM issues"
        )
        if len(calls) == 1:  # the server drops us with the insert done, not committed
            pg.terminate(store.backend_pid or 0)

    store._do(change, "probe")
    assert len(calls) == 2
    assert [h.event for h in store.detail(1).history].count("probe") == 1


def test_a_server_that_is_gone_stops_with_a_diagnosis(tmp_path: Path) -> None:
    cluster = PgCluster().init()
    try:
        url = cluster.url().replace("gg@", "gg:hunter2@")
        store = PostgresStore(url, retry_delays=FAST)
        store.add_issue("one")
        cluster.kill()
        with pytest.raises(StoreLost) as info:
            store.issue(1)
        text = str(info.value)
        assert "lost the PostgreSQL board store" in text and "4 tries" in text
        assert "hunter2" not in text and "***" in text
        assert info.value.retryable and info.value.code == "store"
        with pytest.raises(StoreLost):  # later calls fail at once with the same diagnosis
            store.issues()
        store.close()
        cluster.start()
        again = PostgresStore(url)
        assert [i.title for i in again.issues()] == ["one"]  # nothing committed was lost
        again.close()
    finally:
        cluster.stop()


def test_without_the_extra_the_store_names_it(monkeypatch: pytest.MonkeyPatch, pg_url: str) -> None:
    import gg.board.postgres as module

    monkeypatch.setattr(module, "psycopg", None)
    with pytest.raises(
        gg.UserError, match=r"needs the 'postgres' extra \(pip install 'gg-agent\[postgres\]'\)"
    ):
        PostgresStore(pg_url)


def test_passwords_are_masked_wherever_libpq_reads_them() -> None:
    """The user:password part, a password= parameter, and libpq's own quoting of either."""
    assert safe_url("postgresql://u:pw@h:5/db") == "postgresql://u:***@h:5/db"
    assert "S3CR3T" not in safe_url("postgresql://u@h/db?password=S3CR3T&board=x")
    bad = "postgresql://u:hunter2%zzSECRET@127.0.0.1/db"
    text = without_secrets('invalid percent-encoded token: "hunter2%zzSECRET"', bad)
    assert "hunter2" not in text and "SECRET" not in text
    assert "S3CR3T" not in without_secrets("for S3CR3T", "postgresql://u@h/db?password=S3CR3T")


def test_a_call_waiting_on_a_lock_held_elsewhere_fails_in_bounded_time(pg_url: str) -> None:
    """Another connection holds the issues' rows: a renewal (the lease thread's call) fails
    with a BoardError naming the wait, within the statement timeout, not after a retry
    schedule or never; once the lock is let go the same store works again."""
    store = PostgresStore(pg_url, retry_delays=FAST, statement_timeout_s=0.5)
    try:
        store.add_issue("one")
        assert store.claim_next("A", lease_s=60) is not None
        with psycopg.connect(pg_url) as holder:
            holder.execute("LOCK TABLE issues IN ACCESS EXCLUSIVE MODE")  # held until commit
            started = time.monotonic()
            with pytest.raises(BoardError, match=r"did not renew the claims within 0\.5 s"):
                store.renew("A", lease_s=60)
            took = time.monotonic() - started
            holder.rollback()
        assert took < 5, took
        assert store.renew("A", lease_s=60) == {1}
    finally:
        store.close()


def test_the_urls_own_server_options_are_kept(pg_url: str) -> None:
    """A URL's ``options`` (here the schema the board lives in, and a statement timeout of
    its own) reach the server: the store's bounds do not replace them, they fill in."""
    spaced = "postgresql://h/db?options=-ca%3D1%20-cb%3D2&board=x&sslmode=a+b"
    assert split_board_url(spaced) == (
        "postgresql://h/db?options=-ca%3D1%20-cb%3D2&sslmode=a+b",
        "x",
    )
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute("CREATE SCHEMA mine")
    url = pg_url + "?options=-csearch_path%3Dmine%20-cstatement_timeout%3D7s"
    store = PostgresStore(url, retry_delays=FAST, statement_timeout_s=0.5)
    try:
        store.add_issue("one")
        conn = psycopg.connect(url)
        with conn:
            tables = conn.execute(
                "SELECT table_schema FROM information_schema.tables WHERE table_name = 'issues'"
            ).fetchall()
        assert tables == [("mine",)]
        got = store._do(
            lambda cur: cur.execute(
                "SELECT current_setting('statement_timeout'), current_setting('lock_timeout')"
            ).fetchone(),
            "read the timeouts",
        )
        assert got == ("7s", "500ms")  # the URL's own, and the store's where none was given
    finally:
        store.close()


def test_a_call_to_a_server_process_that_stopped_answering_ends(pg_url: str) -> None:
    """The connection's server process is frozen (SIGSTOP: as on a disk that never
    returns): its kernel still acknowledges every packet, and its statement_timeout never
    fires. The call's wait is cut on the client's side, and the retry, on a new
    connection, renews."""
    store = PostgresStore(pg_url, retry_delays=FAST, statement_timeout_s=0.5)
    frozen = None
    try:
        store.add_issue("one")
        assert store.claim_next("A", lease_s=60) is not None
        frozen = store.backend_pid
        assert frozen is not None
        os.kill(frozen, signal.SIGSTOP)
        started = time.monotonic()
        assert store.renew("A", lease_s=60) == {1}
        assert time.monotonic() - started < 10
        assert store.backend_pid != frozen
    finally:
        if frozen is not None:
            os.kill(frozen, signal.SIGCONT)
        store.close()


def test_a_long_answer_that_keeps_coming_is_not_cut(pg_url: str) -> None:
    """The client's bound is on a server silent past its own timeout, not on a long call:
    an ``executemany`` whose rows take 2 s in all (each far within the timeout, each
    answer large enough that the server sends it at once) ends."""
    store = PostgresStore(pg_url, retry_delays=(), statement_timeout_s=0.2)
    try:

        def slow(cur: psycopg.Cursor[Any]) -> int:
            cur.execute("CREATE TEMP TABLE t (n INTEGER)")
            rows = [(n,) for n in range(40)]
            sql = "INSERT INTO t SELECT %s FROM pg_sleep(0.05) RETURNING repeat('x', 9000)"
            cur.executemany(sql, rows, returning=True)
            row = cur.execute("SELECT COUNT(*) FROM t").fetchone()
            assert row is not None
            return int(row[0])

        pid = store.backend_pid
        started = time.monotonic()
        assert store._do(slow, "insert slowly") == 40
        assert time.monotonic() - started > 1.4  # past the client's bound (2 x 0.2 + 1 s)
        assert store.backend_pid == pid  # on the same connection: not cut, not retried
    finally:
        store.close()


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan")])
def test_a_statement_timeout_that_is_not_positive_is_refused(pg_url: str, bad: float) -> None:
    """0 would become a 1 ms bound on every statement (or none, for NaN): said at once."""
    with pytest.raises(ValueError, match="statement_timeout_s must be more than 0"):
        PostgresStore(pg_url, statement_timeout_s=bad)
