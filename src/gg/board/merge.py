"""The merge step: the merge agent merges an approved branch into the base branch (SPEC B4).

One merge at a time (an :class:`asyncio.Lock` shared by the run's issues),
in the merge worktree ``.gg/worktrees/merge``, detached at the base branch's
tip:

1. Already merged? If the branch's tip is already in the base branch (a run
   killed after the merge, before recording it), the issue is ``done`` with
   the merge commit found there. Nothing is ever merged twice.
2. gg starts ``git merge --no-ff --no-commit gg/issue-N``.
3. The merge agent (Standard role) runs in the merge worktree with the list
   of conflicted files, if any, and ends with ``finish(summary)``. Its
   finish goes through the run's agent-stop hooks (so the merged result must
   pass the build) and through :class:`MergeGuard`, a hook of the board that
   blocks while a conflicted file still holds conflict markers, or when the
   merge was aborted.
4. **Decision: gg commits the merge**, not the agent: the agent only writes
   resolved files (its shell may be sandboxed away from the repository's
   ``.git``); after its finish passes, gg stages everything and commits with
   ``Merge gg/issue-N: #N title`` and the summary. A merge commit the agent
   made itself is accepted too, if it contains the branch.
5. gg moves the base branch to the merge commit, only if the base branch
   has not moved (``git merge --ff-only`` where it is checked out, else
   ``git update-ref`` with the old value), then checks with git that the
   commit is on the base branch, and records its sha: ``done``.

A merge agent stopped by a ceiling makes the issue ``stuck``; the merge
worktree is reset. A killed run leaves the issue ``merging``; the next run
starts the step over (step 1 first).
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any, Literal, Protocol

import gg
from gg.board.errors import BoardError, WorktreeChanged
from gg.board.git import Git, conflict_markers, worktree_path
from gg.board.prompts import merge_task
from gg.board.store import Issue, IssueState

__all__ = ["MergeFlow", "MergeGuard", "merge_issue"]


class MergeGuard:
    """An agent-stop hook for merge agents: no finish while the merge is unresolved.

    Bound to the run's gate for every Standard session; it passes at once for
    any session that is not working in an armed merge worktree.
    """

    def __init__(self, git: Git) -> None:
        self.git = git
        self._armed: dict[Path, tuple[str, tuple[str, ...]]] = {}

    def arm(self, worktree: Path, tip: str, conflicted: list[str]) -> None:
        """Guard merges in ``worktree`` of the branch at ``tip`` with ``conflicted`` files."""
        self._armed[worktree.resolve()] = (tip, tuple(conflicted))

    def disarm(self, worktree: Path) -> None:
        """Stop guarding ``worktree``."""
        self._armed.pop(worktree.resolve(), None)

    def hook(self) -> gg.CallableHook:
        """This guard as a callable hook for Standard sessions."""
        return gg.CallableHook(
            fn=self.check, name="gg board: merge resolved", roles=(gg.Role.STANDARD,), timeout_s=60
        )

    async def check(self, event: gg.StopEvent) -> str | None:
        """``None`` to pass; a reason to block (handed back to the merge agent)."""
        worktree = Path(event.workspace).resolve()
        armed = self._armed.get(worktree)
        if armed is None:
            return None
        try:
            return await self._check(worktree, *armed)
        except WorktreeChanged:
            return None  # the commit refuses the worktree, naming the change

    async def _check(self, worktree: Path, tip: str, conflicted: tuple[str, ...]) -> str | None:
        if await self.git.ref("MERGE_HEAD", worktree=worktree):
            unresolved = set(conflicted) | set(await self.git.unmerged(worktree))
            left = sorted(f for f in unresolved if conflict_markers(worktree, f))
            if left:
                return (
                    "These files still have conflict markers: "
                    + ", ".join(left)
                    + ". Write each one back without <<<<<<<, ======= and >>>>>>> lines, "
                    "keeping what both sides meant, then finish again."
                )
            return None
        head = await self.git.ref("HEAD", worktree=worktree)
        if head is None or not await self.git.is_ancestor(tip, head):
            return (
                "The merge is no longer in progress (it was aborted or reset), so the branch "
                "is not merged. Run `git merge --no-ff --no-commit` on the branch again, "
                "resolve it, then finish."
            )
        return None


class MergeParts(Protocol):
    """What the merge step uses of a board run's shared parts (``BoardContext``)."""

    git: Git
    workspace: Path
    merge_lock: asyncio.Lock
    guard: MergeGuard


class MergeFlow(Protocol):
    """What the merge step uses of an issue's flow (``gg.board.workflow.IssueFlow``).

    A protocol, so that this module does not import the workflow that imports it.
    """

    branch: str
    worktree: Path
    """The issue's implementer worktree."""
    view: Path
    """The issue's reviewers' worktree."""

    @property
    def ctx(self) -> MergeParts:
        """The board run's shared parts."""

    @property
    def base(self) -> str:
        """The base branch."""

    def transition(
        self,
        *,
        event: str,
        to: IssueState | None = None,
        expect: set[IssueState] | None = None,
        detail: dict[str, Any] | None = None,
        **fields: Any,
    ) -> Issue:
        """Store a transition of the issue and tell the observers; the issue as stored."""

    async def session(
        self, issue: Issue, *, kind: Literal["merge"], label: str, task: str, workspace: Path
    ) -> tuple[gg.SessionResult, object]:
        """Run one session for the issue and record it; its result (and no verdict)."""

    def stopped(self, result: gg.SessionResult, label: str) -> Issue:
        """A session stopped without an ending: the issue stuck, or raise a pause."""


async def _already_merged(flow: MergeFlow, tip: str) -> Issue | None:
    git = flow.ctx.git
    base_ref = f"refs/heads/{flow.base}"
    if not await git.is_ancestor(tip, base_ref):
        return None
    sha = await git.merge_commit_of(base_ref, tip)
    what = "already merged" if sha else "nothing to merge: no commits beyond the base branch"
    return flow.transition(
        event="merged",
        to=IssueState.DONE,
        expect={IssueState.MERGING},
        merge_sha=sha,
        detail={"note": what},
    )


async def merge_issue(flow: MergeFlow, issue: Issue) -> Issue:
    """``merging`` -> ``done`` (or ``stuck``): the merge step, under the merge lock (B4)."""
    ctx = flow.ctx
    async with ctx.merge_lock:
        tip = await ctx.git.rev(f"refs/heads/{flow.branch}")
        done = await _already_merged(flow, tip)
        if done is not None:
            await _cleanup(flow)
            return done
        worktree = worktree_path(ctx.workspace, "merge")
        base_sha = await ctx.git.rev(f"refs/heads/{flow.base}")
        await ctx.git.detached_worktree(worktree, base_sha, discard_changed=True)
        try:
            merged = await _merge_in(flow, issue, worktree, tip, base_sha)
        except WorktreeChanged:
            # the merge worktree is shared by every issue: the next one gets a fresh one
            await ctx.git.remove_worktree(worktree)
            raise
        if isinstance(merged, Issue):
            return merged
        sha, conflicted = merged
        await ctx.git.advance(flow.base, sha, base_sha)
        if not await ctx.git.is_ancestor(sha, f"refs/heads/{flow.base}"):
            raise BoardError(
                f"the merge commit {sha} is not on {flow.base!r}",
                code="merge",
                operation="verify",
                retryable=True,
            )
        done = flow.transition(
            event="merged",
            to=IssueState.DONE,
            expect={IssueState.MERGING},
            merge_sha=sha,
            diagnosis=None,
            detail={"conflicted": conflicted},
        )
    await _cleanup(flow)
    return done


async def _merge_in(
    flow: MergeFlow, issue: Issue, worktree: Path, tip: str, base_sha: str
) -> Issue | tuple[str, list[str]]:
    """Start the merge, run the merge agent, commit.

    Returns:
        The merge commit and the files that conflicted, or the issue as stored
        when the merge agent was stopped.
    """
    ctx = flow.ctx
    conflicted = await ctx.git.start_merge(worktree, flow.branch)
    task = merge_task(
        issue,
        branch=flow.branch,
        base=flow.base,
        conflicted=conflicted,
        summary=issue.summary or "",
    )
    ctx.guard.arm(worktree, tip, conflicted)
    try:
        result, _ = await flow.session(
            issue, kind="merge", label="merge agent", task=task, workspace=worktree
        )
    finally:
        ctx.guard.disarm(worktree)
    if not isinstance(result.ending, gg.Finish):
        await ctx.git.reset_clean(worktree)
        return flow.stopped(result, "merge agent")
    return await _commit(flow, issue, worktree, result.ending.summary, tip, base_sha), conflicted


async def _commit(
    flow: MergeFlow, issue: Issue, worktree: Path, summary: str, tip: str, base_sha: str
) -> str:
    """Commit the merge the agent finished; the merge commit's sha (checked with git)."""
    git = flow.ctx.git
    message = f"Merge {flow.branch}: #{issue.number} {issue.title}\n\n{summary.strip()}"
    if await git.ref("MERGE_HEAD", worktree=worktree):
        left = [f for f in await git.unmerged(worktree) if conflict_markers(worktree, f)]
        if left:
            raise BoardError(
                f"conflict markers left in {left!r}", code="merge", operation="commit merge"
            )
        await git.commit_all(worktree, message)
    sha = await git.rev("HEAD", worktree=worktree)
    if (
        not (await git.is_ancestor(tip, sha) and await git.is_ancestor(base_sha, sha))
        or sha == base_sha
    ):
        raise BoardError(
            f"the merge agent left no merge of {flow.branch!r} in the merge worktree",
            code="merge",
            operation="commit merge",
        )
    return sha


async def _cleanup(flow: MergeFlow) -> None:
    """Remove a done issue's worktrees (the branch stays). Best effort."""
    for path in (flow.worktree, flow.view):
        with contextlib.suppress(BoardError, OSError):
            await flow.ctx.git.remove_worktree(path)
