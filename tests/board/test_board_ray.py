"""Ray dispatch on a local Ray cluster (issue 17): board runners as Ray tasks in their own clones.

Each dispatched run is ``ray_case.py`` in a loopback-only network namespace
(:mod:`ray_support`). The kill points at every step are in ``test_board_ray_kills.py``.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
import typer
from board_support import gg_toml
from ray_support import check_dispatched, conflicts, ray_board, reference, run_case
from typer.testing import CliRunner

from gg.board import IssueState
from gg.board.cli import board_app
from gg.board.postgres import PostgresStore
from pgcluster import PgCluster, wait_for
from support import ended_output

S = IssueState


@pytest.fixture(scope="module")
def on_sqlite(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """The five issues on SQLite in one process, two at a time (#1 and #2 conflict)."""
    return reference(tmp_path_factory.mktemp("ref"))


def test_a_board_on_ray_with_two_workers_ends_as_in_one_process(
    tmp_path: Path, pg: PgCluster, pg_url: str, on_sqlite: dict[str, object]
) -> None:
    origin, workspace, toml = ray_board(tmp_path, pg, pg_url)
    proc = run_case(tmp_path, workspace, toml)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err.decode()[-3000:]
    runners = check_dispatched(tmp_path, origin, workspace, pg_url, on_sqlite)
    assert all(len(r) == 1 for r in runners.values())  # each issue claimed once
    assert {r[0] for r in runners.values()} == {"ray-worker-1", "ray-worker-2"}
    store = PostgresStore(pg_url)
    found = conflicts(store)
    store.close()
    assert sorted(found.values()) == [[], ["shared.py"]]  # #1 and #2 met, and were resolved


def test_a_ray_worker_killed_mid_issue_is_retried_to_the_same_end(
    tmp_path: Path, pg: PgCluster, pg_url: str, on_sqlite: dict[str, object]
) -> None:
    origin, workspace, toml = ray_board(tmp_path, pg, pg_url)
    hang = tmp_path / "hang"
    hang.mkdir()
    proc = run_case(tmp_path, workspace, toml, GG_TEST_HANG=str(hang))
    wait_for(lambda: (hang / "pid").exists() or proc.poll() is not None, 300)
    assert proc.poll() is None, ended_output(proc)
    os.kill(int((hang / "pid").read_text()), signal.SIGKILL)  # the worker running #4
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err.decode()[-3000:]
    runners = check_dispatched(tmp_path, origin, workspace, pg_url, on_sqlite, killed={4})
    assert len(runners[4]) == 2 and len(set(runners[4])) == 1  # the retry reclaimed it
    index = json.loads(Path(json.loads((tmp_path / "out.json").read_text())["index"]).read_text())
    assert 4 in [n for w in index["workers"] for n in w["issues"]]  # the retry's run finished it
    assert all(len(r) == 1 for n, r in runners.items() if n != 4)
    store = PostgresStore(pg_url)
    abandoned = [s for s in store.detail(4).sessions if s.status == "abandoned"]
    store.close()
    assert [(s.kind, s.round) for s in abandoned] == [("implementer", 1)]


def test_the_cli_refuses_ray_without_a_shared_store_or_remote(
    repo: Path, tmp_path: Path, pg_url: str
) -> None:
    runner = CliRunner()
    done = runner.invoke(app, ["board", "run", "--ray", "local", "-w", str(repo)])
    assert done.exit_code == 2 and "must be PostgreSQL" in " ".join(done.stderr.split())
    toml = tmp_path / "pg.toml"
    toml.write_text(gg_toml(extra=f'\n[board]\nstore = "{pg_url}"\n'))
    done = runner.invoke(
        app, ["board", "run", "--ray", "local", "-w", str(repo), "--config", str(toml)]
    )
    assert done.exit_code == 2 and "no remote 'origin'" in done.stderr


app = typer.Typer()
app.add_typer(board_app, name="board")


@app.callback()
def _root() -> None:
    """The gg command, as far as these tests need it."""


def test_the_driver_killed_mid_run_then_run_again_ends_the_same(
    tmp_path: Path, pg: PgCluster, pg_url: str, on_sqlite: dict[str, object]
) -> None:
    origin, workspace, toml = ray_board(tmp_path, pg, pg_url)
    proc = run_case(tmp_path, workspace, toml)
    store = PostgresStore(pg_url)

    def midway() -> bool:  # one issue merged, others still going
        states = [i.state for i in store.issues()]
        return proc.poll() is not None or (S.DONE in states and S.OPEN not in states[:3])

    wait_for(midway, 300)
    assert proc.poll() is None, ended_output(proc)
    os.killpg(proc.pid, signal.SIGKILL)  # the driver, its local Ray cluster and its workers
    proc.wait(timeout=30)
    assert any(i.state is not S.DONE for i in store.issues())
    store.close()
    again = run_case(tmp_path, workspace, toml)
    _, err = again.communicate(timeout=600)
    assert again.returncode == 0, err.decode()[-3000:]
    runners = check_dispatched(tmp_path, origin, workspace, pg_url, on_sqlite, killed=True)
    assert set(r for rs in runners.values() for r in rs) <= {"ray-worker-1", "ray-worker-2"}
