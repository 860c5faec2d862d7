"""Ray dispatch on a local Ray cluster (issue 17): board runners as Ray tasks in their own clones.

Each dispatched run is ``ray_case.py`` in a network namespace that has only the loopback
interface, so no test traffic can leave the machine (Ray listens on every interface it
sees); PostgreSQL is reached there through its Unix socket.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import ray_model
import typer
from board_support import GREET_FIXED, TEST_GREET, gg_toml, git, make_repo
from typer.testing import CliRunner

from gg.board import Board, IssueState, SqliteStore
from gg.board.cli import board_app
from gg.board.postgres import PostgresStore
from gg.board.sqlite import default_path
from gg.board.store import Store
from gg.testing import FunctionModel
from pgcluster import PgCluster, wait_for

HERE = Path(__file__).parent
S = IssueState
FILES = {"greet.py": GREET_FIXED, "test_greet.py": TEST_GREET, "shared.py": ray_model.SHARED}


def board_state(repo: Path, store: Store) -> dict[str, object]:
    issues = store.issues()
    return {
        "tree": git(repo, "rev-parse", "main^{tree}"),
        "states": [(i.number, i.state, i.round) for i in issues],
        "verdicts": [
            (i.number, v.round, v.call, v.items) for i in issues for v in store.verdicts(i.number)
        ],
    }


@pytest.fixture(scope="module")
def on_sqlite(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """The five issues on SQLite in one process, two at a time (#1 and #2 conflict)."""
    repo = make_repo(tmp_path_factory.mktemp("ref") / "repo", files=FILES)
    with Board(
        repo, model=FunctionModel(ray_model.answer), reviewers=1, max_rounds=2, concurrency=2
    ) as board:
        for title in ray_model.TITLES:
            board.add(title)
        result = board.run()
        assert result.status == "ended", result.diagnosis
    store = SqliteStore(default_path(repo))
    state = board_state(repo, store)
    store.close()
    assert (repo / "shared.py").read_text() == ray_model.RESOLVED
    return state


def ray_board(tmp_path: Path, pg: PgCluster, pg_url: str) -> tuple[Path, Path, Path]:
    """A bare remote, the driver's clone, a config outside it naming the board; five issues."""
    seed = make_repo(tmp_path / "seed", files=FILES)
    origin = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(origin))
    workspace = tmp_path / "driver"
    git(tmp_path, "clone", "-q", str(origin), str(workspace))
    toml = tmp_path / "driver.toml"  # outside the repository: its tree stays the reference's
    toml.write_text(gg_toml(extra=f'\n[board]\nstore = "{pg.socket_url(pg_url)}"\n'))
    store = PostgresStore(pg_url)
    for title in ray_model.TITLES:
        store.add_issue(title)
    store.close()
    return origin, workspace, toml


def run_case(tmp_path: Path, workspace: Path, toml: Path, **env: str) -> subprocess.Popen[bytes]:
    """``ray_case.py`` in a network namespace with only loopback (``unshare --net``)."""
    command = ["unshare", "--net", "--", "sh", "-c", 'ip link set lo up && exec "$@"', "sh"]
    command += [sys.executable, str(HERE / "ray_case.py"), str(workspace), str(toml)]
    return subprocess.Popen(
        [*command, str(tmp_path / "out.json")],
        env={**os.environ, **env},
        start_new_session=True,  # its own process group: the driver and its Ray cluster
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def check_dispatched(
    tmp_path: Path,
    origin: Path,
    workspace: Path,
    pg_url: str,
    on_sqlite: dict[str, object],
    *,
    killed: bool = False,
) -> dict[int, list[str]]:
    """The end state is the reference's; returns each issue's claiming runners.

    ``killed``: a worker died, so the index holds its retry's run only, not the dead
    attempt's (whose stream stayed on that worker).
    """
    out = json.loads((tmp_path / "out.json").read_text())
    store = PostgresStore(pg_url)
    assert out["exit_code"] == 0, [(i.number, i.state, i.diagnosis) for i in store.issues()]
    assert board_state(workspace, store) == on_sqlite
    assert git(origin, "rev-parse", "main") == git(workspace, "rev-parse", "main")
    runners: dict[int, list[str]] = {}
    for issue in store.issues():
        history = store.detail(issue.number).history
        runners[issue.number] = [h.detail["runner"] for h in history if h.event == "claimed"]
        assert git(origin, "cat-file", "-t", issue.merge_sha or "") == "commit"
        assert not [s for s in store.detail(issue.number).sessions if s.status == "running"]
    store.close()
    index_path = Path(out["index"])
    index = json.loads(index_path.read_text())
    assert [w["slot"] for w in index["workers"]] == [1, 2]
    indexed = sorted(n for w in index["workers"] for n in w["issues"])
    assert set(indexed) <= {1, 2, 3, 4, 5} and len(set(indexed)) == len(indexed)
    assert killed or indexed == [1, 2, 3, 4, 5]
    assert killed or 4 in indexed
    for worker in index["workers"]:
        lines = (index_path.parent / worker["stream"]).read_text().splitlines()
        events = [json.loads(line)["type"] for line in lines]
        assert events[0] == "run_started" and events[-1] == "run_ended"
    return runners


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


def test_a_ray_worker_killed_mid_issue_is_retried_to_the_same_end(
    tmp_path: Path, pg: PgCluster, pg_url: str, on_sqlite: dict[str, object]
) -> None:
    origin, workspace, toml = ray_board(tmp_path, pg, pg_url)
    hang = tmp_path / "hang"
    hang.mkdir()
    proc = run_case(tmp_path, workspace, toml, GG_TEST_HANG=str(hang))
    wait_for(lambda: (hang / "pid").exists() or proc.poll() is not None, 300)
    assert proc.poll() is None, proc.communicate()[1].decode()[-3000:]
    os.kill(int((hang / "pid").read_text()), signal.SIGKILL)  # the worker running #4
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err.decode()[-3000:]
    runners = check_dispatched(tmp_path, origin, workspace, pg_url, on_sqlite, killed=True)
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
    assert proc.poll() is None, proc.communicate()[1].decode()[-3000:]
    os.killpg(proc.pid, signal.SIGKILL)  # the driver, its local Ray cluster and its workers
    proc.wait(timeout=30)
    assert any(i.state is not S.DONE for i in store.issues())
    store.close()
    again = run_case(tmp_path, workspace, toml)
    _, err = again.communicate(timeout=600)
    assert again.returncode == 0, err.decode()[-3000:]
    runners = check_dispatched(tmp_path, origin, workspace, pg_url, on_sqlite, killed=True)
    assert set(r for rs in runners.values() for r in rs) <= {"ray-worker-1", "ray-worker-2"}
