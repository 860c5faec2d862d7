"""Resuming a board: pauses, idempotent merges and commits, the run lock, the bound (B5)."""

from __future__ import annotations

import asyncio
import fcntl
import os
from pathlib import Path
from typing import Any

import pytest
from board_support import GREET_FIXED, gg_toml, git, job_of, make_repo, replies_so_far, show

import gg
from gg.board import Board, IssueState
from gg.state import workspace_state
from gg.testing import FunctionModel, ScriptedModel, call

S = IssueState


def test_a_model_failure_pauses_the_issue_and_the_next_run_goes_on(repo: Path) -> None:
    board = Board(
        repo, model=ScriptedModel([call("write_file", path="greet.py", content=GREET_FIXED)])
    )
    board.add("Greet politely")
    first = board.run()
    issue = board.show(1).issue
    assert first.exit_code == 1 and issue.state is S.IMPLEMENTING  # not stuck: not its fault
    assert "no more replies" in (issue.diagnosis or "")
    assert "#1 implementing" in (first.diagnosis or "")

    model = ScriptedModel(
        [
            call("write_file", path="greet.py", content=GREET_FIXED),
            call("finish", summary="Fixed."),
            call("approve"),
            call("finish", summary="Merged."),
        ]
    )
    second = Board(repo, model=model).run()
    model.assert_complete()
    assert second.exit_code == 0 and board.show(1).issue.state is S.DONE
    # the half-done session of the first run restarted as a fresh one
    assert model.calls[0][0][1].content.startswith("Implement issue #1.")


def test_a_recorded_merge_is_never_merged_twice(repo: Path) -> None:
    board = Board(
        repo,
        model=ScriptedModel(
            [
                call("write_file", path="greet.py", content=GREET_FIXED),
                call("finish", summary="Fixed."),
                call("approve"),
                call("finish", summary="Merged."),
            ]
        ),
    )
    board.add("Greet politely")
    assert board.run().exit_code == 0
    sha = board.show(1).issue.merge_sha
    # as if gg was killed after moving main but before recording it: back to merging
    board.store.transition(1, event="test", to=S.MERGING, merge_sha=None)
    again = Board(repo, model=ScriptedModel([]))  # no merge agent may run
    result = again.run()
    assert result.exit_code == 0, result.diagnosis
    assert again.show(1).issue.merge_sha == sha and git(repo, "rev-parse", "main") == sha
    assert len(git(repo, "rev-list", "--merges", "main").split()) == 1


def test_a_finish_recorded_before_a_crash_is_committed_not_redone(repo: Path) -> None:
    board = Board(repo)
    board.add("Greet politely")
    worktree = repo / ".gg" / "worktrees" / "issue-1"
    git(repo, "worktree", "add", "-q", "-b", "gg/issue-1", str(worktree), "main")
    (worktree / "greet.py").write_text(GREET_FIXED)  # the implementer's work, uncommitted
    store = board.store
    store.transition(1, event="started", to=S.IMPLEMENTING, round=1, branch="gg/issue-1")
    rec = store.start_session(1, kind="implementer", round=1, reviewer=None, run_id="old")
    store.end_session(rec, status="ended", ending={"call": "finish", "summary": "Fixed greet."})
    model = ScriptedModel([call("approve"), call("finish", summary="Merged.")])
    result = Board(repo, model=model).run()
    model.assert_complete()
    assert result.exit_code == 0, result.diagnosis
    assert show(repo, "main", "greet.py") == GREET_FIXED.strip()
    assert "Fixed greet." in git(repo, "log", "-1", "--format=%B", "gg/issue-1")


def test_a_second_run_on_the_same_board_is_refused(repo: Path) -> None:
    board = Board(repo, model=ScriptedModel([]))
    fd = os.open(workspace_state(repo) / "board.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        with pytest.raises(gg.UserError, match="another `gg board run` is running"):
            board.run()
    finally:
        os.close(fd)


def test_a_reviewer_stopped_by_a_ceiling_makes_the_issue_stuck(repo: Path) -> None:
    model = ScriptedModel(
        [
            call("write_file", path="greet.py", content=GREET_FIXED),
            call("finish", summary="Fixed."),
            call("list_dir"),
            call("list_dir"),
        ]
    )
    board = Board(repo, model=model, ceilings={"max_turns": 2})
    board.add("Greet politely")
    result = board.run()
    issue = board.show(1).issue
    assert issue.state is S.STUCK and result.exit_code == 1
    assert (issue.diagnosis or "").startswith("the reviewer 1/1 (round 1) (s2) was stopped:")
    assert "2 turns" in (issue.diagnosis or "")


def test_issues_run_concurrently_up_to_the_bound(tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "repo", files={f"f{i}.txt": "x\n" for i in range(1, 5)}, toml=gg_toml(hook=False)
    )
    active: set[int] = set()
    peak: list[int] = []

    async def answer(messages: list[Any], tools: list[gg.ToolSpec]) -> gg.Reply:
        job, n = job_of(messages)
        if job == "implement" and replies_so_far(messages) == 0:
            active.add(n)
            peak.append(len(active))
            await asyncio.sleep(0.05)
            return call("write_file", path=f"f{n}.txt", content=f"issue {n}\n")
        if job == "implement":
            return call("finish", summary=f"edited f{n}.txt")
        if job == "review":
            return call("approve")
        active.discard(n)
        return call("finish", summary="merged")

    board = Board(repo, model=FunctionModel(answer), concurrency=2)
    for i in range(1, 5):
        board.add(f"Edit f{i}.txt")
    result = board.run()
    assert result.exit_code == 0, result.diagnosis
    assert max(peak) == 2
    assert [show(repo, "main", f"f{i}.txt") for i in range(1, 5)] == [
        f"issue {i}" for i in range(1, 5)
    ]


def test_a_stale_git_lock_of_a_killed_run_is_cleared(repo: Path) -> None:
    board = Board(
        repo, model=ScriptedModel([call("write_file", path="greet.py", content=GREET_FIXED)])
    )
    board.add("Greet politely")
    board.run()  # paused in implementing: its worktree exists
    lock = repo / ".git" / "worktrees" / "issue-1" / "index.lock"
    lock.write_text("")  # as a git killed with SIGKILL leaves it
    model = ScriptedModel(
        [
            call("write_file", path="greet.py", content=GREET_FIXED),
            call("finish", summary="Fixed."),
            call("approve"),
            call("finish", summary="Merged."),
        ]
    )
    result = Board(repo, model=model).run()
    assert result.exit_code == 0, result.diagnosis
    assert not lock.exists()


def test_a_foreign_branch_with_the_issue_name_is_not_built_on(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "gg/issue-1")
    (repo / "other.txt").write_text("not the board's\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "someone else's work")
    git(repo, "checkout", "-q", "main")
    board = Board(repo, model=ScriptedModel([]))
    board.add("Greet politely")
    result = board.run()
    issue = board.show(1).issue
    assert issue.state is S.STUCK and result.exit_code == 1
    assert "already exists with commits not on 'main'" in (issue.diagnosis or "")
    assert (issue.diagnosis or "").endswith("then gg board retry 1")  # what really works
    git(repo, "branch", "-D", "gg/issue-1")
    assert board.retry(1).state is S.OPEN  # and the next run starts it afresh


def test_after_a_restart_the_implementer_resumes_its_stored_conversation(repo: Path) -> None:
    first = ScriptedModel(
        [
            call("write_file", path="greet.py", content=GREET_FIXED),
            call("finish", summary="Fixed greet."),
            call("request_changes", items=["Add a docstring"]),
        ]
    )  # then the script runs out as the implementer starts round 2
    board = Board(repo, model=first, max_rounds=2)
    board.add("Greet politely")
    board.run()
    assert board.show(1).issue.state is S.IMPLEMENTING and board.show(1).issue.round == 2

    second = ScriptedModel(
        [
            call("finish", summary="Added the docstring."),
            call("approve"),
            call("finish", summary="Merged."),
        ]
    )
    result = Board(repo, model=second, max_rounds=2).run()  # a new run: nothing in memory
    second.assert_complete()
    assert result.exit_code == 0, result.diagnosis
    convo = second.calls[0][0]
    assert [m.role for m in convo[:3]] == ["system", "user", "assistant"]
    assert convo[1].content.startswith("Implement issue #1.")
    assert any(m.role == "tool" for m in convo)  # the first run's tool results are there
    assert convo[-1].content.startswith("The reviewers requested changes (review round 1 of 2)")
    assert "1. Add a docstring" in convo[-1].content
    assert (repo / ".gg" / ".gitignore").read_text().strip().endswith("*")
    assert git(repo, "status", "--porcelain") == ""
