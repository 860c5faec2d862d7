"""Shared parts of the Ray board tests (issue 17): the reference run, a dispatched board, checks.

A dispatched run is ``ray_case.py`` in a network namespace that has only the loopback
interface (``unshare --net``), so no test traffic can leave the machine whatever
addresses Ray binds; PostgreSQL is reached there through its Unix socket.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import ray_model
from board_support import GREET_FIXED, TEST_GREET, gg_toml, git, make_repo

from gg.board import Board, SqliteStore
from gg.board.postgres import PostgresStore
from gg.board.sqlite import default_path
from gg.board.store import Store
from gg.seal import verify
from gg.testing import FunctionModel
from pgcluster import PgCluster

HERE = Path(__file__).parent
FILES = {"greet.py": GREET_FIXED, "test_greet.py": TEST_GREET, "shared.py": ray_model.SHARED}


def board_state(repo: Path, store: Store) -> dict[str, object]:
    """What two runs of the same board must agree on.

    The base branch's tree; every issue's state, round and summary; every verdict; and
    every issue's state changes in order (``(from, to)``: claims, pauses and session
    records left out, as they differ when a run was killed).
    """
    issues = store.issues()
    return {
        "tree": git(repo, "rev-parse", "main^{tree}"),
        "states": [(i.number, i.state, i.round, i.summary) for i in issues],
        "verdicts": [
            (i.number, v.round, v.call, v.items) for i in issues for v in store.verdicts(i.number)
        ],
        "transitions": {
            i.number: [
                (h.from_state, h.to_state)
                for h in store.detail(i.number).history
                if h.to_state is not None and h.to_state != h.from_state
            ]
            for i in issues
        },
    }


def reference(root: Path) -> dict[str, object]:
    """The five issues on SQLite in one process, two at a time (#1 and #2 conflict)."""
    repo = make_repo(root / "repo", files=FILES)
    with Board(
        repo, model=FunctionModel(ray_model.answer), reviewers=1, max_rounds=2, concurrency=2
    ) as board:
        for title in ray_model.TITLES:
            board.add(title)
        result = board.run()
        assert result.status == "ended", result.diagnosis
    store = SqliteStore(default_path(repo))
    state = board_state(repo, store)
    assert conflicts(store) == {1: [], 2: ["shared.py"]} or conflicts(store) == {
        1: ["shared.py"],
        2: [],
    }
    store.close()
    assert (repo / "shared.py").read_text() == ray_model.RESOLVED
    rounds = {n: r for n, _, r, _ in state["states"]}  # type: ignore[attr-defined]
    assert rounds == {1: 1, 2: 1, 3: 2, 4: 1, 5: 1}  # #3 had its changes requested
    return state


def conflicts(store: Store) -> dict[int, list[str]]:
    """The files each merge of #1 and #2 found conflicted (the second of them conflicts)."""
    return {
        n: [f for h in store.detail(n).history if h.event == "merged"
            for f in h.detail.get("conflicted", [])]
        for n in (1, 2)
    }  # fmt: skip


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
    reference: dict[str, object],
    *,
    killed: bool | set[int] = False,
) -> dict[int, list[str]]:
    """The end state is the reference's; returns each issue's claiming runners.

    Checks the base branch's tree (the driver's checkout and the remote's), every issue's
    state, round, summary, verdicts and state changes, no session left running, each
    issue held by one runner only (a killed worker's retry reclaims under the same key),
    and the dispatch's merged stream (one sealed record, every issue's end on it).

    ``killed``: a worker died (``True``: one of the five issues'; a set: these issues'
    workers), so the index holds its retry's run only, not the dead attempt's (whose
    stream stayed on that worker), and such an issue may have been claimed again after
    its worker died; every other issue is claimed exactly once.
    """
    hit = {1, 2, 3, 4, 5} if killed is True else set(killed or ())
    out = json.loads((tmp_path / "out.json").read_text())
    store = PostgresStore(pg_url)
    assert out["exit_code"] == 0, [(i.number, i.state, i.diagnosis) for i in store.issues()]
    state = board_state(workspace, store)
    for key, want in reference.items():
        assert state[key] == want, (key, state[key], want)
    assert git(origin, "rev-parse", "main") == git(workspace, "rev-parse", "main")
    runners: dict[int, list[str]] = {}
    for issue in store.issues():
        history = store.detail(issue.number).history
        runners[issue.number] = [h.detail["runner"] for h in history if h.event == "claimed"]
        if issue.number not in hit:
            assert len(runners[issue.number]) == 1, (issue.number, runners[issue.number])
        assert git(origin, "cat-file", "-t", issue.merge_sha or "") == "commit"
        running = [s for s in store.detail(issue.number).sessions if s.status == "running"]
        assert not running, (issue.number, running)
        assert [h.event for h in history].count("merged") == 1  # never merged twice
    store.close()
    check_index(Path(out["index"]), killed=bool(killed))
    return runners


def check_index(index_path: Path, *, killed: bool) -> list[dict[str, object]]:
    """The index and the merged stream of a dispatch; the merged stream's events."""
    index = json.loads(index_path.read_text())
    lost = [int(line.split()[1].rstrip(":")) for line in index["lost"]]
    assert sorted([w["slot"] for w in index["workers"]] + lost) == [1, 2]
    assert all(w["verdict"] == "intact" for w in index["workers"]), index["workers"]
    indexed = sorted(n for w in index["workers"] for n in w["issues"])
    assert set(indexed) <= {1, 2, 3, 4, 5} and len(set(indexed)) == len(indexed)
    assert killed or indexed == [1, 2, 3, 4, 5]
    merged = index_path.parent / "stream.jsonl"
    assert verify(merged, seal_dir=merged.parent).kind == "intact"
    events = [json.loads(line) for line in merged.read_text().splitlines()]
    types = [e["type"] for e in events]
    assert types[0] == "run_started" and types[-1] == "run_ended"
    assert types.count("run_started") == 1 and types.count("run_ended") == 1
    assert events[-1]["status"] == "ended", events[-1]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert {e["run_id"] for e in events} == {index["dispatch_id"]}
    sessions = {e["session_id"] for e in events if e.get("session_id")}
    assert (sessions or killed) and all(s.split(".")[0] in ("w1", "w2") for s in sessions)
    done = [e["issue"] for e in events if e["type"] == "issue_state" and e["state"] == "done"]
    assert killed or sorted(done) == [1, 2, 3, 4, 5]
    for worker in index["workers"]:  # each part's events all there, in the part's order
        part = index_path.parent / str(worker["part"]) / "stream.jsonl"
        assert verify(part, seal_dir=part.parent).kind == "intact"
        own = [json.loads(line) for line in part.read_text().splitlines()][1:-1]
        assert len(own) == int(worker["events"]) - 2
        slot = f"w{worker['slot']}."
        keys = [(e["type"], e["at"], slot + e["session_id"] if e.get("session_id") else None)
                for e in own]  # fmt: skip
        it = iter((e["type"], e["at"], e.get("session_id")) for e in events)
        assert all(key in it for key in keys), f"worker {worker['slot']}: out of order"
    assert len(events) == 2 + sum(int(w["events"]) - 2 for w in index["workers"])
    return events
