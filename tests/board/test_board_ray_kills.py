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


def crash(tmp_path: Path, spec: str) -> dict[str, str]:
    """The environment of a run that SIGKILLs at ``spec`` (``POINT:N:WHO[:K]``)."""
    folder = tmp_path / "crash"
    folder.mkdir(exist_ok=True)
    point = spec.split(":")[0]
    assert point in (*POINTS, "implementing", "reviewing", "merging"), point
    return {"GG_TEST_CRASH": spec, "GG_TEST_CRASH_DIR": str(folder)}


WORKER_POINTS = [
    "implementer_ended:1:worker",  # #1's finish recorded; the retry's fresh clone lacks it
    "branch_committed:3:worker:2",  # #3's second round committed in the clone, not pushed
    "branch_pushed:2:worker",  # #2's branch on the remote; the store says implementing
    "reviewing:5:worker",
    "reviewer_ended:3:worker",  # #3's request for changes recorded, still reviewing
    "merging:2:worker",  # a merge agent at work (of a conflicting issue, when second)
    "base_merged:4:worker",  # #4's merge commit in the clone, not on the remote
    "base_pushed:1:worker",  # #1's merge on the remote's base; the store says merging
]


@pytest.mark.parametrize("spec", WORKER_POINTS)
def test_a_worker_killed_at_a_point_is_retried_to_the_same_end(
    tmp_path: Path, pg: PgCluster, pg_url: str, on_sqlite: dict[str, object], spec: str
) -> None:
    origin, workspace, toml = ray_board(tmp_path, pg, pg_url)
    proc = run_case(tmp_path, workspace, toml, **crash(tmp_path, spec))
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err.decode()[-3000:]
    killed = (tmp_path / "crash" / "killed").read_text()
    assert killed.startswith(spec.rsplit(":", 1)[0] if spec.count(":") == 3 else spec), killed
    check_dispatched(tmp_path, origin, workspace, pg_url, on_sqlite, killed=True)
    number = int(spec.split(":")[1])
    store = PostgresStore(pg_url)
    claims = [h for h in store.detail(number).history if h.event == "claimed"]
    store.close()
    assert len(claims) == 2  # the dead attempt's claim, and its retry's


DRIVER_POINTS = [
    ("dispatching:0:all", "ray"),
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
    proc = run_case(tmp_path, workspace, toml, **crash(tmp_path, spec))
    proc.communicate(timeout=600)
    assert proc.returncode == -9, proc.returncode  # SIGKILLed at the point
    assert (tmp_path / "crash" / "killed").read_text().startswith(spec)
    assert not (tmp_path / "out.json").exists()
    store = PostgresStore(pg_url)
    states = [i.state for i in store.issues()]
    store.close()
    if spec.startswith("workers_done"):
        assert states == [S.DONE] * 5  # the rerun only pulls and records
    else:
        assert S.DONE not in states or states != [S.DONE] * 5
    rerun = run_case(tmp_path, workspace, toml, GG_TEST_INLINE="1" if again == "inline" else "0")
    _, err = rerun.communicate(timeout=600)
    assert rerun.returncode == 0, err.decode()[-3000:]
    check_dispatched(tmp_path, origin, workspace, pg_url, on_sqlite, killed=True)
