"""One issue through implementer, reviewers and merge agent (SPEC B2-B5, S11, S12).

:class:`IssueFlow` takes an issue from its stored state to ``done`` or
``stuck``, one step per state, each step ending in one store transaction::

    open          create branch gg/issue-N and its worktree          -> implementing (round 1)
    implementing  the implementer (Standard) works in the worktree and finishes under the
                  run's agent-stop hooks (the gate: a failing build blocks its finish);
                  gg commits the worktree on the branch                -> reviewing
    reviewing     each reviewer (Review) ends with approve() or request_changes(items),
                  read off the typed ending only (S11)
                  all approve                                        -> merging
                  changes requested, rounds left                     -> implementing (round+1)
                  changes requested in round max_rounds              -> stuck
    merging       (see :mod:`gg.board.merge`)                        -> done
    any session stopped by a ceiling                                 -> stuck

Crash safety (B5): a step can be cut anywhere and run again. The implementer
of a round whose ``finish`` was recorded is not run again (its files are on
disk; gg commits them). An implementer or reviewer session a killed run left
running is continued from the killed run's stream with :mod:`gg.resume`'s
mechanism (issue 12 item 4): its conversation, ceiling counts and progress
heuristics from its last checkpoint, its subagents too, in the worktree as it
was left (a turn cut off is done again from its start), with a ``run_resumed``
event and a ``session_resumed`` history row. Only when that stream cannot be
verified or holds no checkpoint of it does the implementer's worktree get
reset and a fresh session start. A merge agent always starts its step over
(its merge worktree is rebuilt from the base branch's tip, so an earlier
conversation would speak of files that are no longer there). Recorded verdicts
are kept; missing reviewers run again. After
changes are requested the implementer resumes its conversation, from memory
or, after a restart, from the store. A model failure (no reply at all) or a
run budget leaves the issue in its state for the next run instead of
marking it stuck (:class:`Pause`).
"""

from __future__ import annotations

import asyncio
import stat
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gg
from gg.board.errors import BoardError, IssueMoved
from gg.board.git import Git, branch_name, worktree_path
from gg.board.merge import MergeGuard, merge_issue
from gg.board.prompts import implement_task, review_task, rework_fresh_task, rework_task
from gg.board.store import TERMINAL, Issue, IssueState, SessionKind, Store, Verdict
from gg.board.transcript import dump_messages, resumable
from gg.checkpoint import Earlier, Interrupted
from gg.config import BoardSettings
from gg.errors import UserError
from gg.resume import verified_events
from gg.state import run_dir
from gg.stream import IssueStateChanged

__all__ = [
    "CURRENT",
    "BoardContext",
    "Interruption",
    "IssueFlow",
    "Pause",
    "Progress",
    "SessionSlot",
    "verdict_of",
]

S = IssueState


@dataclass(frozen=True, kw_only=True)
class Progress:
    """What an observer of a board run is told (the progress display).

    Attributes:
        issue: the issue as stored now.
        activity: one line, e.g. ``"implementer s3 · turn 2 · write_file"``.
        event: ``"state"``, ``"session"``, ``"turn"``, ``"gate"`` or ``"paused"``.
    """

    issue: Issue
    activity: str
    event: str


@dataclass(kw_only=True)
class SessionSlot:
    """The session an issue's task is running now; stream events are matched to it."""

    issue: Issue
    label: str
    record: int
    session_id: str | None = None
    turn: int = 0


CURRENT: ContextVar[SessionSlot | None] = ContextVar("gg_board_session", default=None)
"""The running session of the current asyncio task (each issue runs in its own task)."""


class Pause(Exception):
    """The issue keeps its state and is tried again by the next board run."""


@dataclass(kw_only=True)
class BoardContext:
    """What every issue of one board run shares."""

    run: gg.Run
    store: Store
    git: Git
    settings: BoardSettings
    workspace: Path
    notify: Callable[[Progress], None]
    guard: MergeGuard
    """The merge agents' agent-stop hook, bound to the run's gate."""
    merge_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    conversations: dict[int, gg.SessionResult] = field(default_factory=dict)
    halt: str | None = None
    """Set when the run must take no further steps (its budget is spent)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Interruption:
    """An issue's session a killed board run left running, to continue (issue 12 item 4).

    Attributes:
        source: the killed run's verified stream.
        earlier: the session in it.
        record: its store record (``abandoned``).
    """

    source: Interrupted
    earlier: Earlier
    record: int


def verdict_of(ending: gg.Ending | None, *, round: int, reviewer: int) -> Verdict | None:
    """The verdict a reviewer's typed ending carries (SPEC S11); never read from prose.

    Returns:
        ``approve`` for :class:`gg.Approve`, ``request_changes`` with its items for
        :class:`gg.RequestChanges`, ``None`` for anything else.
    """
    if isinstance(ending, gg.Approve):
        return Verdict(round=round, reviewer=reviewer, call="approve")
    if isinstance(ending, gg.RequestChanges):
        return Verdict(
            round=round, reviewer=reviewer, call="request_changes", items=tuple(ending.items)
        )
    return None


def _inode(path: Path) -> int | None:
    """The inode of directory ``path`` (no link followed), ``None`` when there is none."""
    try:
        st = path.lstat()
    except OSError:
        return None
    return st.st_ino if stat.S_ISDIR(st.st_mode) else None


def _commit_message(issue: Issue, summary: str) -> str:
    text = summary.strip() or f"Work on issue #{issue.number}"
    subject = text.splitlines()[0][:72]
    return f"{subject}\n\n{text}\n\nIssue #{issue.number}: {issue.title}"


class IssueFlow:
    """Drives one issue from its stored state to ``done`` or ``stuck``.

    Args:
        ctx: the board run's shared parts.
        number: the issue's number.
    """

    def __init__(self, ctx: BoardContext, number: int) -> None:
        self.ctx = ctx
        self.number = number
        self.branch = branch_name(number)
        self.worktree = worktree_path(ctx.workspace, f"issue-{number}")
        self.view = worktree_path(ctx.workspace, f"issue-{number}-review")
        self.step: IssueState | None = None
        """The state the step being taken started from (a ``stuck`` expects it)."""

    @property
    def base(self) -> str:
        """The base branch."""
        return self.ctx.settings.base_branch

    async def drive(self) -> Issue:
        """Take steps until the issue is done, stuck or paused; returns it as stored."""
        issue = self.ctx.store.issue(self.number)
        while issue.state not in TERMINAL and self.ctx.halt is None:
            self.step = issue.state
            try:
                if issue.state is S.OPEN:
                    issue = await self.start(issue)
                elif issue.state is S.IMPLEMENTING:
                    issue = await self.implement(issue)
                elif issue.state is S.REVIEWING:
                    issue = await self.review(issue)
                else:
                    issue = await merge_issue(self, issue)
            except Pause as p:
                return self.pause(str(p))
            except IssueMoved as e:
                return self.moved(e)
            except BoardError as e:
                if e.retryable:
                    return self.pause(str(e))
                try:
                    issue = self.stuck(str(e))
                except IssueMoved as moved:
                    return self.moved(moved)
        return issue

    def moved(self, error: IssueMoved) -> Issue:
        """Another runner has the issue now (issue 17): write nothing more; it as stored."""
        issue = self.ctx.store.issue(self.number)
        self.ctx.notify(Progress(issue=issue, activity=f"left: {error}", event="paused"))
        return issue

    # -- store helpers ---------------------------------------------------------------------

    def transition(
        self,
        *,
        event: str,
        to: IssueState | None = None,
        expect: set[IssueState] | None = None,
        detail: dict[str, Any] | None = None,
        **fields: Any,
    ) -> Issue:
        """Store a transition of this issue and tell the observers.

        Moving on to any state but ``stuck`` clears an earlier pause's diagnosis.
        """
        if to is not None and to is not S.STUCK:
            fields.setdefault("diagnosis", None)
        issue = self.ctx.store.transition(
            self.number, event=event, to=to, expect=expect, detail=detail, **fields
        )
        self.announce(issue, event)
        self.ctx.notify(Progress(issue=issue, activity=event.replace("_", " "), event="state"))
        return issue

    def announce(self, issue: Issue, event: str) -> None:
        """Put a stored transition on the run's stream: an ``issue_state`` event (issue 12)."""
        run = self.ctx.run
        if run.stream.closed:
            return
        run.emit(
            IssueStateChanged(
                run_id=run.run_id,
                issue=issue.number,
                event=event,
                state=issue.state.value,
                round=issue.round,
                diagnosis=issue.diagnosis if event in ("stuck", "paused") else None,
            )
        )

    def stuck(self, diagnosis: str) -> Issue:
        """Mark the issue ``stuck`` with ``diagnosis``, if it is still in this step's state.

        Raises:
            IssueMoved: it is not (another runner moved it on meanwhile).
        """
        expect = None if self.step is None else {self.step}
        return self.transition(event="stuck", to=S.STUCK, expect=expect, diagnosis=diagnosis)

    def pause(self, reason: str) -> Issue:
        """Leave the issue in its state for the next run; record why."""
        issue = self.ctx.store.transition(self.number, event="paused", diagnosis=reason)
        self.announce(issue, "paused")
        self.ctx.notify(Progress(issue=issue, activity=f"paused: {reason}", event="paused"))
        return issue

    def stopped(self, result: gg.SessionResult, label: str) -> Issue:
        """A session stopped without an ending: stuck on a ceiling, else pause (B5)."""
        d = result.diagnosis
        text = f"the {label} ({result.session_id}) was stopped: {d.message if d else '?'}"
        if d is None or d.ceiling is None:
            raise Pause(text)
        if d.ceiling == "budget":
            self.ctx.halt = text
            raise Pause(text)
        return self.stuck(text)

    # -- sessions --------------------------------------------------------------------------

    async def session(
        self,
        issue: Issue,
        *,
        kind: SessionKind,
        label: str,
        task: str,
        workspace: Path,
        reviewer: int | None = None,
        resume: gg.SessionResult | None = None,
        continued: Interruption | None = None,
    ) -> tuple[gg.SessionResult, Verdict | None]:
        """Run one session of the run for this issue and record it (and a verdict).

        ``continued``: the session goes on from a killed run's (:meth:`interrupted`).

        Returns:
            The session's result and, for a reviewer that ended, its verdict.
        """
        ctx = self.ctx
        role = gg.Role.REVIEW if kind == "reviewer" else gg.Role.STANDARD
        record = ctx.store.start_session(
            self.number, kind=kind, round=issue.round, reviewer=reviewer, run_id=ctx.run.run_id
        )
        ctx.notify(Progress(issue=issue, activity=f"{label}: starting", event="session"))
        token = CURRENT.set(SessionSlot(issue=issue, label=label, record=record))
        try:
            sid = None if continued is None else self._continue(continued, record)
            result = await ctx.run.session(
                task, role=role, workspace=workspace, resume=resume, session_id=sid,
                restored=None if continued is None else continued.earlier.restored,
            )  # fmt: skip
        finally:
            CURRENT.reset(token)
        verdict = None
        if kind == "reviewer" and result.status == "ended":
            verdict = verdict_of(result.ending, round=issue.round, reviewer=reviewer or 1)
        ending = None if result.ending is None else result.ending.record()
        keep = kind == "implementer" and result.status == "ended"
        ctx.store.end_session(
            record,
            status=result.status,
            ending=ending,
            diagnosis=str(result.diagnosis) if result.diagnosis else None,
            messages=dump_messages(result.messages) if keep else None,
            verdict=verdict,
        )
        how = ending["call"] if ending else "stopped"
        ctx.notify(
            Progress(issue=issue, activity=f"{label} {result.session_id}: {how}", event="session")
        )
        return result, verdict

    def interrupted(
        self, kind: SessionKind, round: int, reviewer: int | None = None
    ) -> Interruption | None:
        """The session of this step a killed run left running, if it can be continued.

        The step's last session records that are ``abandoned`` are tried, newest
        first (a run killed while it began to continue one left a record with no
        checkpoint yet): the first whose run's stream verifies against its seal
        (:func:`gg.resume.verified_events`) and holds a checkpoint of it. ``None``
        when there is none (the step starts its session afresh; the observers are
        told why).
        """
        same = [
            s
            for s in self.ctx.store.detail(self.number).sessions
            if s.kind == kind and s.round == round and s.reviewer == reviewer
        ]
        why = None
        for last in reversed(same):
            if last.status != "abandoned":
                break
            if last.session_id is None:
                continue
            try:
                path = run_dir(self.ctx.workspace, last.run_id) / "stream.jsonl"
                events = verified_events(path)
                source = Interrupted.of(events, run_id=last.run_id, stream=path)
            except (UserError, OSError) as e:
                why = f"cannot continue its {kind} session of run {last.run_id}: {e}"
                continue
            earlier = source.sessions.get(last.session_id)
            if earlier is not None:
                return Interruption(source=source, earlier=earlier, record=last.id)
            why = f"run {last.run_id} has no checkpoint of its {kind} session"
        if why is not None:
            self._fresh(why)
        return None

    def _fresh(self, why: str) -> None:
        """Tell the observers an interrupted session starts again, and why."""
        issue = self.ctx.store.issue(self.number)
        self.ctx.notify(Progress(issue=issue, activity=f"{why}; it starts again", event="session"))

    def _continue(self, continued: Interruption, record: int) -> str:
        """Bind a new session of the run to ``continued``; its id.

        Writes the ``run_resumed`` event and the issue's ``session_resumed`` history row.
        """
        run, earlier, source = self.ctx.run, continued.earlier, continued.source
        sid = run.new_session_id()
        run.continuations.bind(sid, source, earlier.session_id)
        run.subagents_started += source.subagents(under=earlier.session_id)
        run.emit(run.continuations.event(run.run_id, sid))
        self.ctx.store.transition(
            self.number,
            event="session_resumed",
            detail={
                "record": record,
                "from_record": continued.record,
                "from_run": source.run_id,
                "from_session": earlier.session_id,
                "turns": earlier.restored.turn,
            },
        )
        return sid

    # -- steps -----------------------------------------------------------------------------

    async def start(self, issue: Issue) -> Issue:
        """``open``: make the branch and its worktree from the base branch.

        Raises:
            BoardError: the branch already exists with commits the base branch lacks
                (left by something else: gg will not build on it).
        """
        git = self.ctx.git
        if await git.ref(f"refs/heads/{self.branch}") and not await git.is_ancestor(
            f"refs/heads/{self.branch}", f"refs/heads/{self.base}"
        ):
            raise BoardError(
                f"branch {self.branch!r} already exists with commits not on {self.base!r}; "
                "it is not this board's: delete or rename it (git branch -D, and on the "
                "remote too when the board ran on Ray), then gg board retry "
                f"{issue.number}",
                code="git",
                operation=f"create {self.branch}",
            )
        await self._catch_up(issue)
        await git.branch_worktree(self.worktree, self.branch, self.base)
        return self.transition(
            event="started",
            to=S.IMPLEMENTING,
            expect={S.OPEN},
            round=issue.round + 1,
            branch=self.branch,
            detail={"base": await git.rev(f"refs/heads/{self.branch}")},
        )

    async def start_point(self) -> str:
        """Where the issue's branch starts when it must be made again (issue 17).

        The base commit its last start recorded, so that a branch made again in
        another clone (a worker that died before pushing it) starts where the first
        one did, whatever was merged since; the base branch when none is recorded.
        """
        for entry in reversed(self.ctx.store.detail(self.number).history):
            if entry.event == "started":
                base = entry.detail.get("base")
                if isinstance(base, str) and await self.ctx.git.ref(base):
                    return base
                break
        return self.base

    async def _catch_up(self, issue: Issue) -> None:
        """A reopened issue's merged branch moves to the base branch before work starts.

        Only a branch whose every commit is on the base branch is moved (checked
        by the caller), so nothing is lost; its old worktree goes first.
        """
        git = self.ctx.git
        old = await git.ref(f"refs/heads/{self.branch}")
        base = await git.rev(f"refs/heads/{self.base}")
        if old is None or old == base:
            return
        await git.remove_worktree(self.worktree)
        await git.run("update-ref", f"refs/heads/{self.branch}", base, old)

    def go_round(self, issue: Issue) -> int:
        """The issue's round counted from its last start (1-based).

        A reopened issue's rounds go on numbering, but ``board.max_rounds`` counts this
        go's only.
        """
        for entry in reversed(self.ctx.store.detail(self.number).history):
            if entry.event == "started":
                first = entry.detail.get("round", 1)
                return issue.round - (first if isinstance(first, int) else 1) + 1
        return issue.round

    def _finished_this_round(self, issue: Issue) -> str | None:
        """The summary of this round's implementer finish if one was recorded (crash-resume)."""
        for s in reversed(self.ctx.store.detail(self.number).sessions):
            if s.kind == "implementer" and s.round == issue.round and s.status == "ended":
                return str((s.ending or {}).get("summary", ""))
        return None

    async def _committed_this_round(self) -> bool:
        """Whether the branch holds a commit of this round (a killed run made it, or pushed it).

        Its tip is then neither on the base branch nor the commit the last round's
        ``implemented`` recorded.
        """
        git = self.ctx.git
        tip = await git.ref(f"refs/heads/{self.branch}")
        if tip is None or await git.is_ancestor(tip, f"refs/heads/{self.base}"):
            return False
        done = [h for h in self.ctx.store.detail(self.number).history if h.event == "implemented"]
        return not done or done[-1].detail.get("commit") != tip

    async def implement(self, issue: Issue) -> Issue:
        """``implementing``: the implementer finishes under the gate; gg commits (B2)."""
        git = self.ctx.git
        before = _inode(self.worktree)
        await git.branch_worktree(self.worktree, self.branch, await self.start_point())
        kept = before is not None and _inode(self.worktree) == before  # not made again
        summary = self._finished_this_round(issue)
        if summary is not None and not kept and not await self._committed_this_round():
            summary = None  # its files went with the old worktree (another machine's clone)
        if summary is None:
            continued = self.interrupted("implementer", issue.round) if kept else None
            if continued is None:  # a half-done session restarts cleanly
                await git.reset_clean(self.worktree)
            result = await self._implementer(issue, continued)
            if not isinstance(result.ending, gg.Finish):
                return self.stopped(result, "implementer")
            self.ctx.conversations[self.number] = result
            summary = result.ending.summary
        sha = await git.commit_all(self.worktree, _commit_message(issue, summary))
        return self.transition(
            event="implemented",
            to=S.REVIEWING,
            expect={S.IMPLEMENTING},
            summary=summary,
            detail={"commit": sha},
        )

    async def _implementer(
        self, issue: Issue, continued: Interruption | None = None
    ) -> gg.SessionResult:
        label = f"implementer (round {issue.round})"
        go = self.go_round(issue)
        if go <= 1:
            task = implement_task(issue, branch=self.branch, base=self.base)
            result, _ = await self.session(
                issue, kind="implementer", label=label, task=task, workspace=self.worktree,
                continued=continued,
            )  # fmt: skip
            return result
        items = self.requested(issue.round - 1)
        rounds = self.ctx.settings.max_rounds
        previous = self._previous(issue)
        if previous is None:
            task = rework_fresh_task(
                issue,
                items,
                branch=self.branch,
                base=self.base,
                round=go,
                max_rounds=rounds,
            )
        else:
            task = rework_task(items, round=go, max_rounds=rounds)
        result, _ = await self.session(
            issue,
            kind="implementer",
            label=label,
            task=task,
            workspace=self.worktree,
            resume=previous,
            continued=continued,
        )
        return result

    def _previous(self, issue: Issue) -> gg.SessionResult | None:
        """The implementer's last ended session: from memory, else from the store."""
        if self.number in self.ctx.conversations:
            return self.ctx.conversations[self.number]
        text = self.ctx.store.conversation(self.number)
        if text is None:
            return None
        try:
            return resumable(
                text,
                session_id=self.ctx.run.new_session_id(),
                workspace=self.worktree,
                summary=issue.summary or "(earlier work)",
            )
        except ValueError:
            return None

    def requested(self, round: int) -> list[str]:
        """Every change requested in ``round``, reviewer by reviewer, duplicates dropped."""
        items: list[str] = []
        for v in self.ctx.store.verdicts(self.number, round):
            items += [i for i in v.items if i not in items]
        return items

    async def review(self, issue: Issue) -> Issue:
        """``reviewing``: every reviewer's verdict, read off its ending (B3, S11)."""
        git, reviewers = self.ctx.git, self.ctx.settings.reviewers
        tip = await git.rev(f"refs/heads/{self.branch}")
        diff = await git.diff(self.base, self.branch)
        have = {v.reviewer: v for v in self.ctx.store.verdicts(self.number, issue.round)}
        for i in range(1, reviewers + 1):
            if i in have:
                continue  # recorded before a crash
            await git.detached_worktree(self.view, tip)
            task = review_task(
                issue,
                branch=self.branch,
                base=self.base,
                summary=issue.summary or "",
                diff=diff,
                reviewer=i,
                reviewers=reviewers,
                round=issue.round,
            )
            label = f"reviewer {i}/{reviewers} (round {issue.round})"
            result, verdict = await self.session(
                issue, kind="reviewer", label=label, task=task, workspace=self.view, reviewer=i,
                continued=self.interrupted("reviewer", issue.round, i),
            )  # fmt: skip
            if verdict is None:
                return self.stopped(result, label)
            have[i] = verdict
        return self._after_review(issue, [have[i] for i in sorted(have)])

    def _after_review(self, issue: Issue, verdicts: list[Verdict]) -> Issue:
        changes = [v for v in verdicts if v.call == "request_changes"]
        expect = {S.REVIEWING}
        if not changes:
            return self.transition(event="approved", to=S.MERGING, expect=expect)
        items = self.requested(issue.round)
        go = self.go_round(issue)
        if go >= self.ctx.settings.max_rounds:
            listed = "; ".join(f"{n}. {t}" for n, t in enumerate(items, 1))
            return self.transition(
                event="stuck",
                to=S.STUCK,
                expect=expect,
                diagnosis=(
                    f"the reviewers still requested changes after {go} "
                    f"round(s) (board.max_rounds = {self.ctx.settings.max_rounds}): "
                    f"{listed}"
                ),
            )
        return self.transition(
            event="changes_requested",
            to=S.IMPLEMENTING,
            expect=expect,
            round=issue.round + 1,
            detail={"items": items},
        )
