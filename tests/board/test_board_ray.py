"""Ray dispatch on a local Ray cluster on 127.0.0.1 (issue 17): runners as tasks, own clones."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import ray
import ray_model
from board_support import GREET_FIXED, TEST_GREET, gg_toml, git, make_repo

from gg.board import Board, IssueState, SqliteStore
from gg.board.postgres import PostgresStore
from gg.board.raydispatch import dispatch
from gg.board.sqlite import default_path
from gg.board.store import Store
from gg.testing import FunctionModel

HERE = Path(__file__).parent
S = IssueState
FILES = {"greet.py": GREET_FIXED, "test_greet.py": TEST_GREET, "shared.py": ray_model.SHARED}


@pytest.fixture(scope="module")
def local_ray(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A Ray cluster of this machine, every address 127.0.0.1, two worker CPUs."""
    state = tmp_path_factory.mktemp("ray-state")
    env = {
        "PYTHONPATH": f"{HERE}:{HERE.parent}:{HERE.parents[1] / 'src'}",
        "GG_STATE_HOME": str(state),
        "GG_TEST_PAUSE_S": "1.0",
    }
    ray.init(
        num_cpus=2,
        _node_ip_address="127.0.0.1",
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": env},
    )
    try:
        yield
    finally:
        ray.shutdown()


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


def test_a_board_on_ray_with_two_workers_ends_as_in_one_process(
    tmp_path: Path, pg_url: str, local_ray: None, on_sqlite: dict[str, object]
) -> None:
    seed = make_repo(tmp_path / "seed", files=FILES)
    origin = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(origin))
    workspace = tmp_path / "driver"
    git(tmp_path, "clone", "-q", str(origin), str(workspace))
    driver_toml = tmp_path / "driver.toml"  # outside the repository: its tree stays the same
    driver_toml.write_text(gg_toml(extra=f'\n[board]\nstore = "{pg_url}"\n'))
    store = PostgresStore(pg_url)
    for title in ray_model.TITLES:
        store.add_issue(title)
    board = Board(
        workspace,
        config=driver_toml,
        model=FunctionModel(ray_model.answer),
        reviewers=1,
        max_rounds=2,
    )
    result = dispatch(board, address="local", workers=2, lease_s=10)
    board.close()
    assert result.exit_code == 0, [(i.number, i.state, i.diagnosis) for i in result.issues]
    state = board_state(workspace, store)
    assert state == on_sqlite
    assert git(origin, "rev-parse", "main") == git(workspace, "rev-parse", "main")
    runners = {}
    for issue in store.issues():
        claims = [h for h in store.detail(issue.number).history if h.event == "claimed"]
        assert len(claims) == 1  # each issue claimed once
        runners[issue.number] = claims[0].detail["runner"]
        assert git(origin, "cat-file", "-t", issue.merge_sha or "") == "commit"
    store.close()
    assert set(runners.values()) == {"ray-worker-1", "ray-worker-2"}
    index = json.loads(result.index.read_text())
    assert [w["slot"] for w in index["workers"]] == [1, 2]
    taken = sorted(n for w in index["workers"] for n in w["issues"])
    assert taken == [1, 2, 3, 4, 5]
    for worker in index["workers"]:
        lines = (result.index.parent / worker["stream"]).read_text().splitlines()
        events = [json.loads(line)["type"] for line in lines]
        assert events[0] == "run_started" and events[-1] == "run_ended"
