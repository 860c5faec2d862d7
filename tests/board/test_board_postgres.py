"""The PostgreSQL store on a real throwaway server (issue 17): schema, claims, lost connections."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

import gg
from gg.board import BoardError, IssueState, SqliteStore, open_store
from gg.board.postgres import PG_MIGRATIONS, PostgresStore, StoreLost, safe_url, without_secrets
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
