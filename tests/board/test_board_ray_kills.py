"""SIGKILL at named points of a Ray-dispatched board run (issue 17), then the same end state.

Every case dispatches the five issues of :mod:`ray_model` (two conflicting, one with
changes requested) on a local Ray cluster with two workers, and one process SIGKILLs
itself at a named point (:func:`ray_model.probe`: ``GG_TEST_CRASH``):

- a worker, at every step of an issue: while implementing, after the implementer's
  finish is recorded (nothing committed), after the commit (not pushed), after the
  push (the store not told), while reviewing, after a verdict, while merging, after the
  merge commit (not pushed to the base), after the push to the base (the issue still
  ``merging``). Ray retries the task; the same run ends with the reference's state.
- the driver and everything with it: before any task starts, while tasks are in flight
  (a merge agent at work), after every task returned (the checkout not pulled, the
  streams not merged). ``gg board run`` again, with Ray or without it (the same
  workers in one process), ends with the reference's state.

"The reference's state": the base branch's tree (the driver's and the remote's), every
issue's state, round, summary, verdicts and state changes in order, as the same board
on SQLite in one process ends; each issue held by one runner key only, merged once, no
session left running; one merged, sealed stream of the finishing dispatch.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from ray_support import check_dispatched, ray_board, reference, run_case

from gg.board import IssueState
from gg.board.postgres import PostgresStore
from gg.board.raydispatch import POINTS
from pgcluster import PgCluster

S = IssueState


@pytest.fixture(scope="module")
def on_sqlite(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """The reference: the five issues on SQLite in one process."""
    return reference(tmp_path_factory.mktemp("ref"))


def crash(tmp_path: Path, specs: tuple[str, ...]) -> dict[str, str]:
    """The environment of a run that SIGKILLs at each of ``specs`` (``POINT:N:WHO[:K]``)."""
    folder = tmp_path / "crash"
    folder.mkdir(exist_ok=True)
    for spec in specs:
        point = spec.split(":")[0]
        assert point in (*POINTS, "implementing", "reviewing", "merging"), point
    return {"GG_TEST_CRASH": ",".join(specs), "GG_TEST_CRASH_DIR": str(folder)}


def kills(tmp_path: Path, specs: tuple[str, ...]) -> None:
    """Every kill point of ``specs`` was reached, and killed."""
    for i, spec in enumerate(specs):
        marker = (tmp_path / "crash" / f"killed-{i}").read_text()
        assert marker.startswith(":".join(spec.split(":")[:3]) + " "), (spec, marker)


WORKER_POINTS = [
    # #1's finish recorded (its retry's fresh clone lacks the files); #3's request for
    # changes recorded, still reviewing
    ("implementer_ended:1:worker", "reviewer_ended:3:worker"),
    # #3's second round committed in the clone, not pushed; #4's merge commit in the
    # clone, not on the remote
    ("branch_committed:3:worker:2", "base_merged:4:worker"),
    # #2's branch on the remote, the store still says implementing; a reviewer at work
    ("branch_pushed:2:worker", "reviewing:5:worker"),
    # a merge agent at work; #1's merge on the remote's base, the store says merging
    ("merging:2:worker", "base_pushed:1:worker"),
]


@pytest.mark.parametrize("specs", WORKER_POINTS, ids=lambda specs: "+".join(specs))
def test_a_worker_killed_at_a_point_is_retried_to_the_same_end(
    tmp_path: Path,
    pg: PgCluster,
    pg_url: str,
    on_sqlite: dict[str, object],
    specs: tuple[str, ...],
) -> None:
    origin, workspace, toml = ray_board(tmp_path, pg, pg_url)
    proc = run_case(tmp_path, workspace, toml, **crash(tmp_path, specs))
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err.decode()[-3000:]
    kills(tmp_path, specs)
    hit = {int(spec.split(":")[1]) for spec in specs}
    runners = check_dispatched(tmp_path, origin, workspace, pg_url, on_sqlite, killed=hit)
    for number in hit:
        assert len(runners[number]) >= 2  # the dead attempt's claim, and its retry's


def test_a_worker_lost_for_good_has_its_issue_taken_over_by_the_other(
    tmp_path: Path, pg: PgCluster, pg_url: str, on_sqlite: dict[str, object]
) -> None:
    origin, workspace, toml = ray_board(tmp_path, pg, pg_url)
    env = crash(tmp_path, ("implementing:4:worker",))
    proc = run_case(tmp_path, workspace, toml, GG_TEST_RETRIES="0", **env)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err.decode()[-3000:]
    kills(tmp_path, ("implementing:4:worker",))
    runners = check_dispatched(tmp_path, origin, workspace, pg_url, on_sqlite, killed={4})
    assert len(runners[4]) == 2 and len(set(runners[4])) == 2  # the other worker took it
    out = json.loads((tmp_path / "out.json").read_text())
    index = json.loads(Path(out["index"]).read_text())
    assert len(index["lost"]) == 1 and "WorkerCrashedError" in index["lost"][0], index["lost"]
    assert len(index["workers"]) == 1  # the survivor's run; the dead one shipped nothing
    store = PostgresStore(pg_url)
    sessions = store.detail(4).sessions
    store.close()
    assert [s.status for s in sessions if s.kind == "implementer"] == ["abandoned", "ended"]


DRIVER_POINTS = [
    ("dispatching:0:all", "ray"),  # Ray up, no task started
    ("merging:1:all", "inline"),  # the driver killed while a merge agent works
    ("base_merged:2:all", "ray"),  # ... while a merge commit is not pushed yet
    ("workers_done:0:all", "inline"),  # every issue done, the checkout not pulled
]


@pytest.mark.parametrize(("spec", "again"), DRIVER_POINTS)
def test_the_driver_killed_at_a_point_then_run_again_ends_the_same(
    tmp_path: Path,
    pg: PgCluster,
    pg_url: str,
    on_sqlite: dict[str, object],
    spec: str,
    again: str,
) -> None:
    origin, workspace, toml = ray_board(tmp_path, pg, pg_url)
    proc = run_case(tmp_path, workspace, toml, **crash(tmp_path, (spec,)))
    proc.communicate(timeout=600)
    assert proc.returncode == -9, proc.returncode  # SIGKILLed at the point
    kills(tmp_path, (spec,))
    assert not (tmp_path / "out.json").exists()
    if not spec.startswith(("dispatching", "workers_done")):
        # a Ray task of the dead driver may still be at work until Ray ends the job: as
        # an operator would, run again once its claims can have lapsed (10 s lease), so
        # the run again either sees its work done or takes its issue over
        time.sleep(12)
    store = PostgresStore(pg_url)
    states = [i.state for i in store.issues()]
    store.close()
    if spec.startswith("workers_done"):
        assert states == [S.DONE] * 5  # the run again only pulls and merges the streams
    else:
        assert states != [S.DONE] * 5
    rerun = run_case(tmp_path, workspace, toml, GG_TEST_INLINE="1" if again == "inline" else "0")
    _, err = rerun.communicate(timeout=600)
    assert rerun.returncode == 0, err.decode()[-3000:]
    check_dispatched(tmp_path, origin, workspace, pg_url, on_sqlite, killed={1, 2, 3, 4, 5})
