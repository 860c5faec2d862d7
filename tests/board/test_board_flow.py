"""One issue end to end through the board with the scripted model (SPEC B1-B4, S11, S12)."""

from __future__ import annotations

from pathlib import Path

from board_support import GREET_DOC, GREET_FIXED, TEST_GREET_MORE, git, show

import gg
from gg.board import Board, IssueState
from gg.testing import ScriptedModel, call


def test_one_issue_end_to_end(repo: Path) -> None:
    model = ScriptedModel(
        [
            # implementer, round 1: the first finish is blocked by the tests (they fail)
            call("finish", summary="Nothing to change, I think."),
            call("write_file", path="greet.py", content=GREET_FIXED),
            call("finish", summary="greet now says 'Hello, NAME!'; the tests pass."),
            # reviewer A requests two changes (a blank item is dropped); reviewer B approves
            call(
                "request_changes", items=["Add a docstring to greet", "   ", "Test an empty name"]
            ),
            call("approve"),
            # the implementer resumes its session and addresses them
            call("write_file", path="greet.py", content=GREET_DOC),
            call("write_file", path="test_greet.py", content=TEST_GREET_MORE),
            call("finish", summary="Added the docstring and a test for an empty name."),
            call("approve"),
            call("approve"),
            # the merge agent
            call("finish", summary="Merged cleanly; tests pass on the merge."),
        ]
    )
    board = Board(repo, model=model, reviewers=2, concurrency=1)
    issue = board.add("Greet politely", body="greet('Ann') must return 'Hello, Ann!'.")
    assert issue.number == 1 and issue.state is IssueState.OPEN

    result = board.run()

    model.assert_complete()
    assert result.status == "ended" and result.exit_code == 0, result.diagnosis
    done = board.show(1)
    assert done.issue.state is IssueState.DONE and done.issue.round == 2
    # the base branch has the change, through a merge commit gg recorded
    assert show(repo, "main", "greet.py") == GREET_DOC.strip()
    assert show(repo, "main", "test_greet.py") == TEST_GREET_MORE.strip()
    sha = done.issue.merge_sha
    assert sha and git(repo, "rev-parse", "main") == sha
    parents = git(repo, "rev-list", "--parents", "-n1", sha).split()[1:]
    assert len(parents) == 2 and git(repo, "rev-parse", "gg/issue-1") == parents[1]
    # the workspace's checkout of main followed, and is clean
    assert (repo / "greet.py").read_text() == GREET_DOC
    assert git(repo, "status", "--porcelain") == ""
    # states went through two rounds
    states = [h.to_state for h in done.history if h.to_state]
    assert states == [
        IssueState.OPEN,
        IssueState.IMPLEMENTING,
        IssueState.REVIEWING,
        IssueState.IMPLEMENTING,
        IssueState.REVIEWING,
        IssueState.MERGING,
        IssueState.DONE,
    ]
    # verdicts read off the typed endings, with their items (the blank one dropped)
    verdicts = [(v.round, v.reviewer, v.call, v.items) for v in done.verdicts]
    assert verdicts == [
        (1, 1, "request_changes", ("Add a docstring to greet", "Test an empty name")),
        (1, 2, "approve", ()),
        (2, 1, "approve", ()),
        (2, 2, "approve", ()),
    ]
    # the implementer resumed its own session, with the items as a numbered list
    impl = [s for s in done.sessions if s.kind == "implementer"]
    assert [s.round for s in impl] == [1, 2] and impl[0].session_id == impl[1].session_id
    resumed_convo = model.calls[5][0]
    assert resumed_convo[1].content.startswith("Implement issue #1.")
    assert "1. Add a docstring to greet\n2. Test an empty name" in resumed_convo[-1].content
    # the reviewers got the diff and the implementer's summary; the merge agent finished
    review_task = model.calls[3][0][1].content
    assert review_task.startswith("Review issue #1") and '+    return f"Hello' in review_task
    assert "greet now says" in review_task
    assert "finish" not in model.calls[3][1] and "approve" in model.calls[3][1]
    merge = [s for s in done.sessions if s.kind == "merge"]
    assert merge[0].ending == {
        "call": "finish",
        "summary": "Merged cleanly; tests pass on the merge.",
    }
    # the first finish was blocked by the tests, on the stream
    events = list(gg.read_events(result.stream))
    blocked = [e for e in events if e.type == "gate_blocked"]
    assert len(blocked) == 1 and "FAILED" in blocked[0].reason
    assert events[-1].type == "run_ended" and events[-1].exit_code == 0
    # the issue's worktrees are gone, its branch stays
    assert not (repo / ".gg" / "worktrees" / "issue-1").exists()
    assert git(repo, "branch", "--list", "gg/issue-1")


def test_verdict_is_read_from_the_ending_not_the_prose(repo: Path) -> None:
    approved_prose = gg.Reply(
        text="Approved! This looks great, ship it.",
        tool_calls=(
            gg.ToolCall(name="request_changes", arguments={"items": ["Handle a None name"]}),
        ),
    )
    model = ScriptedModel(
        [
            call("write_file", path="greet.py", content=GREET_FIXED),
            call("finish", summary="Fixed greet."),
            approved_prose,
        ]
    )
    board = Board(repo, model=model, reviewers=1, max_rounds=1)
    board.add("Greet politely")
    result = board.run()
    model.assert_complete()
    issue = board.show(1)
    assert [(v.call, v.items) for v in issue.verdicts] == [
        ("request_changes", ("Handle a None name",))
    ]
    assert issue.issue.state is IssueState.STUCK and result.exit_code == 1
    assert "still requested changes after 1 round" in (issue.issue.diagnosis or "")
    assert "Handle a None name" in (issue.issue.diagnosis or "")
    assert show(repo, "main", "greet.py") != GREET_FIXED.strip()  # nothing merged
