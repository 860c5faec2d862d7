"""The tasks the board hands its sessions (SPEC B2-B4).

Each task opens with a fixed first line (``Implement issue #N``, ``Review
issue #N``, ``Merge issue #N``) that names the session's job; tests and
function models may rely on it. The ending rule itself is never restated
here: the system prompt states it once (SPEC S10).
"""

from __future__ import annotations

from collections.abc import Sequence

from gg.board.store import Issue

__all__ = [
    "implement_task",
    "merge_task",
    "numbered",
    "review_task",
    "rework_fresh_task",
    "rework_task",
]


def numbered(items: Sequence[str]) -> str:
    r"""``1. first\n2. second`` (the requested changes as the implementer gets them)."""
    return "\n".join(f"{i}. {item}" for i, item in enumerate(items, 1))


NO_GIT = (
    "git commands do not work in run_command here (the sandbox holds only this worktree, "
    "not the repository's git data); gg does the git work: commits, diffs and merges."
)
"""Told to every board agent: run_command runs in the sandbox, which has no git metadata."""


def _issue_text(issue: Issue) -> str:
    body = issue.body.strip() or "(no description)"
    return f"Title: {issue.title}\n\n{body}"


def implement_task(issue: Issue, *, branch: str, base: str) -> str:
    """The implementer's first task: the issue, where it works, how its work is handed back."""
    return (
        f"Implement issue #{issue.number}.\n\n{_issue_text(issue)}\n\n"
        f"You work in a git worktree of the repository on branch {branch!r}, made from "
        f"{base!r}. Change the files the issue needs. When the work is done, call "
        "finish(summary) saying what you changed and how you checked it: the run's checks "
        "(agent-stop hooks, e.g. the tests) must pass before it is accepted. gg commits your "
        "changes on the branch; do not commit yourself. Reviewers then read the change. " + NO_GIT
    )


def rework_task(items: Sequence[str], *, round: int, max_rounds: int) -> str:
    """What a resumed implementer is told after a review requested changes (SPEC B3)."""
    return (
        f"The reviewers requested changes (review round {round - 1} of {max_rounds}). "
        f"Address each one:\n\n{numbered(items)}\n\n"
        "Then call finish(summary) again, saying what you changed for each item."
    )


def rework_fresh_task(
    issue: Issue, items: Sequence[str], *, branch: str, base: str, round: int, max_rounds: int
) -> str:
    """The implementer's task after a review when its earlier conversation is not at hand."""
    return (
        f"{implement_task(issue, branch=branch, base=base)}\n\n"
        f"Your earlier work on this issue is already committed on {branch!r}. "
        f"{rework_task(items, round=round, max_rounds=max_rounds)}"
    )


def review_task(
    issue: Issue,
    *,
    branch: str,
    base: str,
    summary: str,
    diff: str,
    reviewer: int,
    reviewers: int,
    round: int,
) -> str:
    """A reviewer's task: the issue, the implementer's summary and the diff (SPEC B3)."""
    return (
        f"Review issue #{issue.number} (reviewer {reviewer} of {reviewers}, round {round}).\n\n"
        f"{_issue_text(issue)}\n\n"
        f"The implementer's summary:\n{summary.strip() or '(none)'}\n\n"
        f"The change on {branch!r} against {base!r}:\n```diff\n{diff}\n```\n\n"
        "The workspace is a read-only view of the branch: read files and run the tests if "
        "you like; anything you change there is thrown away. Give your verdict with "
        "approve() when the change does what the issue asks, or request_changes(items) "
        "with each change the implementer must make as one item. " + NO_GIT
    )


def merge_task(
    issue: Issue, *, branch: str, base: str, conflicted: Sequence[str], summary: str
) -> str:
    """The merge agent's task: finish the merge gg started (SPEC B4)."""
    if conflicted:
        state = (
            "The merge has conflicts in these files:\n"
            + "\n".join(f"- {path}" for path in conflicted)
            + "\n\nResolve each: read it, then write it back without the conflict markers "
            "(<<<<<<<, =======, >>>>>>>), keeping what both sides meant to do."
        )
    else:
        state = (
            "The merge applied without conflicts. Check that the merged result is "
            "consistent (the run's checks run on it before your finish is accepted)."
        )
    return (
        f"Merge issue #{issue.number}.\n\n{_issue_text(issue)}\n\n"
        f"The reviewers approved branch {branch!r}; its summary: {summary.strip() or '(none)'}"
        f"\n\ngg has started `git merge --no-ff --no-commit {branch}` into {base!r} in this "
        f"worktree. {state}\n\nDo not commit, abort or reset the merge: gg commits it after "
        "your finish(summary) is accepted. Call finish(summary) saying how you merged. " + NO_GIT
    )
