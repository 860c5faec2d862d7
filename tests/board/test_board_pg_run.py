"""Board runs on a real PostgreSQL server (issue 17): same end as SQLite, many runners, faults."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest
import typer
from board_driver import answer as driver_answer
from board_support import GREET_FIXED, TEST_GREET, gg_toml, git, make_repo, run_losing_the_claim
from typer.testing import CliRunner

import gg
from gg.board import Board, IssueState, SqliteStore
from gg.board.cli import board_app
from gg.board.postgres import PostgresStore, StoreLost
from gg.board.sqlite import default_path
from gg.board.store import IssueDetail, Store
from gg.testing import FunctionModel
from pgcluster import PgCluster, wait_for
from support import ended_output, write_script

HERE = Path(__file__).parent
S = IssueState


def drive(repo: Path, url: str = "", *, slow: str = "") -> subprocess.Popen[bytes]:
    """``board_driver.py`` on ``repo``: the PostgreSQL store at ``url``, else SQLite."""
    env = {**os.environ, "GG_TEST_SLOW_REVIEW": slow, "GG_TEST_STORE": url}
    return subprocess.Popen(
        [sys.executable, str(HERE / "board_driver.py"), str(repo)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def final_state(repo: Path, store: Store) -> dict[str, object]:
    issues = store.issues()
    return {
        "tree": git(repo, "rev-parse", "main^{tree}"),
        "states": [(i.number, i.state, i.round, i.summary) for i in issues],
        "merges": len(git(repo, "rev-list", "--merges", "main").split()),
        "verdicts": [
            (i.number, v.round, v.call, v.items) for i in issues for v in store.verdicts(i.number)
        ],
    }


def history(detail: IssueDetail) -> list[tuple[str, object, object]]:
    """An issue's history without times, runners or record ids (they differ run to run)."""
    return [(h.event, h.from_state, h.to_state) for h in detail.history]


@pytest.fixture(scope="module")
def on_sqlite(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """The driver's board run once, uninterrupted, on SQLite in one process."""
    repo = make_repo(tmp_path_factory.mktemp("sqlite") / "repo")
    proc = drive(repo)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode()[-2000:]
    store = SqliteStore(default_path(repo))
    state = final_state(repo, store)
    state["history"] = [history(store.detail(n)) for n in (1, 2)]
    store.close()
    assert [s[:3] for s in state["states"]] == [(1, S.DONE, 2), (2, S.DONE, 1)]  # type: ignore[attr-defined]
    return state


def test_a_board_on_postgres_ends_as_on_sqlite(
    tmp_path: Path, pg_url: str, on_sqlite: dict[str, object]
) -> None:
    repo = make_repo(tmp_path / "repo")
    proc = drive(repo, pg_url)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode()[-2000:]
    assert not default_path(repo).exists()  # nothing went to the SQLite file
    store = PostgresStore(pg_url)
    state = final_state(repo, store)
    state["history"] = [history(store.detail(n)) for n in (1, 2)]
    store.close()
    assert state == on_sqlite


def _running_review(url: str, number: int, round: int) -> bool:
    with psycopg.connect(url) as conn:
        try:
            row = conn.execute(
                "SELECT COUNT(*) FROM sessions s JOIN issues i ON s.issue_id = i.id "
                "WHERE i.number = %s AND s.kind = 'reviewer' AND s.round = %s "
                "AND s.status = 'running' AND s.session_id IS NOT NULL",
                (number, round),
            ).fetchone()
        except psycopg.errors.UndefinedTable:
            return False
    return bool(row and row[0])


@pytest.mark.parametrize("round", [1, 2])
def test_sigkill_mid_review_on_postgres_then_resume(
    tmp_path: Path, pg_url: str, on_sqlite: dict[str, object], round: int
) -> None:
    repo = make_repo(tmp_path / "repo")
    proc = drive(repo, pg_url, slow=f"1:{round}")
    wait_for(lambda: proc.poll() is not None or _running_review(pg_url, 1, round), 60)
    assert proc.poll() is None, ended_output(proc, 2000)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    again = drive(repo, pg_url)
    _, err = again.communicate(timeout=120)
    assert again.returncode == 0, err.decode()[-2000:]
    store = PostgresStore(pg_url)
    state = final_state(repo, store)
    sessions = store.detail(1).sessions
    claims = [h for n in (1, 2) for h in store.detail(n).history if h.event == "claimed"]
    store.close()
    assert state == {k: v for k, v in on_sqlite.items() if k != "history"}
    assert [(s.kind, s.round) for s in sessions if s.status == "abandoned"] == [("reviewer", round)]
    assert not [s for s in sessions if s.status == "running"]
    assert len({h.detail["runner"] for h in claims}) == 1  # the restart reclaimed its own
    assert git(repo, "status", "--porcelain") == ""


def test_two_runners_on_one_board_claim_disjoint_issues(tmp_path: Path, pg_url: str) -> None:
    first = make_repo(tmp_path / "a", files={"greet.py": GREET_FIXED, "test_greet.py": TEST_GREET})
    second = tmp_path / "b"
    git(tmp_path, "clone", "-q", str(first), str(second))
    store = PostgresStore(pg_url)
    for n in range(1, 7):
        store.add_issue(f"Write issue_{n}.py")
    env = {**os.environ, "GG_TEST_PAUSE_S": "0.4"}
    procs = [
        subprocess.Popen(
            [sys.executable, str(HERE / "pg_driver.py"), str(repo), pg_url],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for repo in (first, second)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err.decode()[-2000:]
    issues = store.issues()
    assert [i.state for i in issues] == [S.DONE] * 6
    owners: dict[int, str] = {}
    for issue in issues:
        claims = [
            h.detail["runner"] for h in store.detail(issue.number).history if h.event == "claimed"
        ]
        assert len(claims) == 1, (issue.number, claims)  # claimed exactly once
        owners[issue.number] = claims[0]
    store.close()
    assert len(set(owners.values())) == 2  # both runners worked
    for issue in issues:  # each merge is in the clone whose runner claimed the issue
        mine = [r for r in (first, second) if (r / f"issue_{issue.number}.py").exists()]
        assert len(mine) == 1 and git(mine[0], "rev-parse", "main") != ""
        assert git(mine[0], "cat-file", "-t", issue.merge_sha or "") == "commit"


def _model(hook: Any) -> FunctionModel:
    """The driver's model; ``hook(messages)`` runs before each reply."""

    async def answer(messages: list[Any], tools: list[gg.ToolSpec]) -> gg.Reply:
        hook(messages)
        return await driver_answer(messages, tools)

    return FunctionModel(answer)


def test_a_terminated_connection_mid_run_is_retried(
    tmp_path: Path, pg: PgCluster, pg_url: str, on_sqlite: dict[str, object]
) -> None:
    repo = make_repo(tmp_path / "repo")
    store = PostgresStore(pg_url)
    cut: list[int] = []

    def terminate(messages: list[Any]) -> None:
        pid = store.backend_pid  # a new connection since the last cut: cut it too
        if len(cut) < 3 and pid is not None and pid not in cut:
            cut.append(pid)
            assert pg.terminate(pid)

    board = Board(
        repo, store=store, model=_model(terminate), reviewers=1, max_rounds=2, concurrency=1
    )
    board.add("Greet politely", body="greet('Ann') must return 'Hello, Ann!'.")
    board.add("Say farewell")
    result = board.run()
    assert result.status == "ended", result.diagnosis
    assert len(set(cut)) == 3
    state = final_state(repo, store)
    state["history"] = [history(store.detail(n)) for n in (1, 2)]
    board.close()
    assert state == on_sqlite  # every change applied once


def test_a_lost_server_stops_the_run_and_the_next_run_finishes(
    tmp_path: Path, on_sqlite: dict[str, object]
) -> None:
    cluster = PgCluster().init()
    try:
        url = cluster.url()
        repo = make_repo(tmp_path / "repo")
        killed: list[bool] = []

        def kill(messages: list[Any]) -> None:
            if not killed and "Review issue #1" in str(messages[1].content):
                killed.append(True)
                cluster.kill()

        store = PostgresStore(url, retry_delays=(0.05, 0.1))
        board = Board(
            repo, store=store, model=_model(kill), reviewers=1, max_rounds=2, concurrency=1
        )
        board.add("Greet politely", body="greet('Ann') must return 'Hello, Ann!'.")
        board.add("Say farewell")
        with pytest.raises(StoreLost, match="lost the PostgreSQL board store"):
            board.run()
        board.close()
        cluster.start()
        again = Board(
            repo,
            store=PostgresStore(url),
            model=_model(lambda m: None),
            reviewers=1,
            max_rounds=2,
            concurrency=1,
        )
        result = again.run()
        assert result.status == "ended", result.diagnosis
        state = final_state(repo, again.store)
        sessions = [s for n in (1, 2) for s in again.store.detail(n).sessions]
        again.close()
        assert {k: state[k] for k in ("tree", "merges", "verdicts")} == {
            k: on_sqlite[k] for k in ("tree", "merges", "verdicts")
        }
        assert not [s for s in sessions if s.status == "running"]
    finally:
        cluster.stop()


def _sessions(d: IssueDetail) -> list[tuple[object, ...]]:
    return [(s.kind, s.round, s.status, s.session_id, s.ending, s.started_at) for s in d.sessions]


app = typer.Typer()
app.add_typer(board_app, name="board")


@app.callback()
def _root() -> None:
    """The gg command, as far as these tests need it."""


def test_migrate_copies_a_sqlite_board_into_postgres(tmp_path: Path, pg_url: str) -> None:
    repo = make_repo(tmp_path / "repo")
    proc = drive(repo)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode()[-2000:]
    runner = CliRunner()
    done = runner.invoke(app, ["board", "migrate", "--to", pg_url, "-w", str(repo)])
    assert done.exit_code == 0, done.stderr
    assert "copied 2 issue(s)" in done.stdout and "[board] store" in done.stdout
    old, new = SqliteStore(default_path(repo)), PostgresStore(pg_url)
    for n in (1, 2):
        a, b = old.detail(n), new.detail(n)
        assert a.issue == b.issue and a.history == b.history
        assert [v.items for v in a.verdicts] == [v.items for v in b.verdicts]
        assert _sessions(a) == _sessions(b)
        assert old.conversation(n) == new.conversation(n)
    assert new.schema_version == old.schema_version
    old.close()
    new.close()
    again = runner.invoke(app, ["board", "migrate", "--to", pg_url, "-w", str(repo)])
    assert again.exit_code == 2 and "already has 2 issue(s)" in again.stderr
    bad = runner.invoke(app, ["board", "migrate", "--to", "sqlite:x", "-w", str(repo)])
    assert bad.exit_code == 2 and "not a postgresql:// URI" in bad.stderr
    # the migrated board runs on: a reopened issue is taken from PostgreSQL
    (repo / "gg.toml").write_text(
        (repo / "gg.toml").read_text() + f'\n[board]\nstore = "{pg_url}"\n'
    )
    with Board(repo) as board, pytest.raises(gg.ConfigError, match="--trust-config"):
        board.list()  # the changed gg.toml newly names a server: the trust rule
    with Board(repo, trust_config=True) as board:  # the operator's own change, accepted
        assert isinstance(board.store, PostgresStore) and len(board.list()) == 2


def test_the_cli_runs_a_board_whose_store_is_a_postgresql_url(tmp_path: Path, pg_url: str) -> None:
    toml = gg_toml(extra=f'\n[board]\nstore = "{pg_url}?board=team"\n')
    repo = make_repo(tmp_path / "repo", toml=toml)
    runner = CliRunner()
    added = runner.invoke(app, ["board", "add", "Greet politely", "-w", str(repo)])
    assert added.exit_code == 0, added.stderr
    script = write_script(
        tmp_path / "replies.json",
        [
            {
                "tool_calls": [
                    {
                        "name": "write_file",
                        "arguments": {"path": "greet.py", "content": GREET_FIXED},
                    }
                ]
            },
            {"tool_calls": [{"name": "finish", "arguments": {"summary": "Fixed greet."}}]},
            {"tool_calls": [{"name": "approve", "arguments": {}}]},
            {"tool_calls": [{"name": "finish", "arguments": {"summary": "Merged."}}]},
        ],
    )
    ran = runner.invoke(
        app, ["board", "run", "-w", str(repo), "--model", f"scripted:{script}", "--json"]
    )
    assert ran.exit_code == 0, ran.stderr
    assert json.loads(ran.stdout)["status"] == "ended"
    shown = runner.invoke(app, ["board", "show", "1", "-w", str(repo), "--json"])
    detail = json.loads(shown.stdout)
    assert detail["state"] == "done" and [s["kind"] for s in detail["sessions"]] == [
        "implementer",
        "reviewer",
        "merge",
    ]
    assert not default_path(repo).exists()  # the board lives in PostgreSQL, board 'team'
    store = PostgresStore(pg_url + "?board=team")
    assert [i.state for i in store.issues()] == [S.DONE]
    store.close()


def test_an_unreachable_server_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here once closed
    url = f"postgresql://gg:hunter2@127.0.0.1:{port}/db"
    repo = make_repo(tmp_path / "repo", toml=gg_toml(extra=f'\n[board]\nstore = "{url}"\n'))
    done = CliRunner().invoke(app, ["board", "list", "-w", str(repo)])
    assert done.exit_code == 2
    text = " ".join(done.stderr.split())
    assert "board.store: cannot open" in text and "cannot reach the PostgreSQL board store" in text
    assert "3 tries over 0.7s" in text  # never reached: the short open budget, not 7.7 s
    assert "hunter2" not in text


def test_a_runner_that_loses_its_claim_stops_that_issue(tmp_path: Path, pg_url: str) -> None:
    repo = make_repo(tmp_path / "repo")
    store = PostgresStore(pg_url)
    stolen: list[bool] = []

    async def answer(messages: list[Any], tools: list[gg.ToolSpec]) -> gg.Reply:
        if not stolen:  # another runner took #1 over (as if this one's lease had run out)
            stolen.append(True)
            with psycopg.connect(pg_url, autocommit=True) as conn:
                conn.execute(
                    "UPDATE issues SET claimed_by = 'elsewhere', claimed_until = "
                    "to_char((now() + interval '3 seconds') AT TIME ZONE 'UTC', "
                    '\'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"\') WHERE number = 1'
                )
            await asyncio.sleep(30)  # still working when the heartbeat finds out
        return await driver_answer(messages, tools)

    board = Board(repo, store=store, model=FunctionModel(answer), reviewers=1, concurrency=1)
    run_losing_the_claim(board)
    board.close()
