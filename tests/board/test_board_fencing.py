"""A runner that lost an issue changes nothing of it (issue 17): claims fence state changes.

A worker whose lease ran out while it worked (a stalled machine, a starved event loop)
may still reach its next step after another runner took the issue over. Its state
change is refused before anything is pushed (:class:`RemoteStore` renews its claim
first), and a step whose expected state is gone stops without marking the issue
``stuck`` (:class:`gg.board.errors.IssueMoved`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from board_support import GREET_FIXED, git, job_of, make_repo, replies_so_far

import gg
from gg.board import Board, IssueState, SqliteStore
from gg.board.errors import IssueMoved
from gg.board.postgres import PostgresStore
from gg.board.raydispatch import RemoteStore
from gg.board.sqlite import default_path
from gg.testing import FunctionModel, call

S = IssueState


def test_a_runner_without_the_claim_pushes_and_records_nothing(tmp_path: Path, pg_url: str) -> None:
    seed = make_repo(tmp_path / "seed")
    origin = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(origin))
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    git(clone, "checkout", "-q", "-b", "gg/issue-1")
    (clone / "one.py").write_text("ONE = 1\n")
    git(clone, "add", "one.py")
    git(clone, "commit", "-q", "-m", "one")
    inner = PostgresStore(pg_url)
    inner.add_issue("one")
    assert inner.claim_next("B", lease_s=60) is not None  # B took #1 over
    inner.transition(1, event="started", to=S.IMPLEMENTING, expect={S.OPEN})
    late = RemoteStore(inner, clone=clone, remote=str(origin), base="main", runner="A")
    with pytest.raises(IssueMoved, match="no longer A's"):
        late.transition(1, event="implemented", to=S.REVIEWING, expect={S.IMPLEMENTING})
    assert git(origin, "branch", "--list", "gg/issue-1") == ""  # nothing pushed
    assert inner.issue(1).state is S.IMPLEMENTING  # nothing recorded
    late.transition(1, event="paused", diagnosis="x")  # no change of state: not fenced
    holder = RemoteStore(inner, clone=clone, remote=str(origin), base="main", runner="B")
    holder.transition(1, event="implemented", to=S.REVIEWING, expect={S.IMPLEMENTING})
    assert git(origin, "rev-parse", "gg/issue-1") == git(clone, "rev-parse", "gg/issue-1")
    assert inner.issue(1).state is S.REVIEWING
    inner.close()


def test_a_step_whose_state_moved_away_stops_without_marking_it_stuck(repo: Path) -> None:
    store = SqliteStore(default_path(repo))

    async def answer(messages: list[Any], tools: list[gg.ToolSpec]) -> gg.Reply:
        job, n = job_of(messages)
        if job == "implement" and replies_so_far(messages) == 0:
            # meanwhile another runner finished this round and sent #1 to review
            store.transition(1, event="implemented", to=S.REVIEWING, expect={S.IMPLEMENTING})
            return call("write_file", path="greet.py", content=GREET_FIXED)
        if job == "implement":
            return call("finish", summary="Late.")
        return call("approve") if job == "review" else call("finish", summary="Merged.")

    with Board(repo, store=store, model=FunctionModel(answer), reviewers=1) as board:
        board.add("Greet politely")
        result = board.run()
        events = [h.event for h in board.store.detail(1).history]
    assert "stuck" not in events and events[-2:] == ["implemented", "session_ended"]
    assert result.status == "stopped" and result.issues[0].state is S.REVIEWING
    assert result.issues[0].diagnosis is None


def test_a_session_stopped_after_its_issue_moved_on_does_not_mark_it_stuck(repo: Path) -> None:
    store = SqliteStore(default_path(repo))

    async def answer(messages: list[Any], tools: list[gg.ToolSpec]) -> gg.Reply:
        if replies_so_far(messages) == 0:  # another runner moved #1 on meanwhile
            store.transition(1, event="implemented", to=S.REVIEWING, expect={S.IMPLEMENTING})
        return call("finish", summary="Not fixed.")  # the gate blocks it: a ceiling stops it

    with Board(
        repo, store=store, model=FunctionModel(answer), reviewers=1, ceilings={"gate_blocks": 2}
    ) as board:
        board.add("Greet politely")
        result = board.run()
        events = [h.event for h in board.store.detail(1).history]
    assert "stuck" not in events and result.issues[0].state is S.REVIEWING
