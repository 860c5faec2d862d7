"""``gg resume``: continue a run that crashed or was interrupted, from its stream (issue 12 item 4).

The stream is verified against its seal first (issue 9 item 3): a stream
altered or truncated after gg wrote it, or one whose key is not in gg's state
on this machine, is refused; so is a run still being written (a killed run's
children that still hold its lock are given a few seconds to go), a run whose
root session already ended, a board run (``gg board run`` continues those),
and a stream without checkpoints.

From the verified events gg takes: the run's effective settings
(``run_started``), the root session's role, mode and language
(``session_started``), its conversation, rebuilt from its ``checkpoint``
events (:mod:`gg.checkpoint`), its ceiling counts and progress heuristics and
the run's budget spent (tokens, cost, seconds) from the last of them. A new run
(its own id, stream and seal: a sealed stream is never appended to) starts with
a ``run_resumed`` event naming the run it continues, and the root session goes
on from the turn after its last checkpoint: a turn a crash cut off is done again
from its start. Subagents it spawns again there continue their earlier selves
(:class:`gg.checkpoint.Continuations`). A scripted model with the same spec
passes over the replies of every turn a checkpoint recorded, over a crash
loop's runs too (``run_resumed``'s ``passed_over``).

A run is resumed once (:class:`_Claim`): the claim is sealed by the new run's
first checkpoint, so a resume killed before that leaves the run resumable.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gg.agent import Agent, RunResult
from gg.checkpoint import Interrupted, Restored
from gg.config import settings_from_dict
from gg.endings import Role
from gg.errors import UserError
from gg.models.base import Model, UserMessage
from gg.models.scripted import ScriptedModel
from gg.run import Run
from gg.seal import Checker, StreamAltered, Verdict
from gg.session import SessionResult, SessionSpec
from gg.state import open_private, run_dir
from gg.stream import (
    Checkpoint,
    Event,
    IssueStateChanged,
    RunEnded,
    RunResumed,
    RunStarted,
    SessionEnded,
    SessionStarted,
    read_events,
)

__all__ = [
    "ResumePoint",
    "ResumeRefused",
    "load_resume_point",
    "resume_run",
    "verified_events",
]


class ResumeRefused(UserError):
    """The run cannot be resumed.

    ``exit_code``: 3 altered or truncated, 4 unverifiable, 2 otherwise (SPEC O3, issue 9).
    """

    def __init__(self, message: str, *, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass(frozen=True, slots=True, kw_only=True)
class ResumePoint:
    """Where a run goes on from, as its verified stream tells.

    Attributes:
        run_id: the interrupted run's id.
        stream: its stream file.
        started: its ``run_started`` event (settings, workspace).
        session: the root session's ``session_started`` event.
        restored: the root session's conversation and counts.
        budget: the run's ``tokens``, ``cost`` and ``seconds`` spent.
        source: every session of the stream (subagents are continued too).
        passed_over: the script indices a scripted model passes over
            (:meth:`gg.checkpoint.Interrupted.passed_over`, over a crash loop's runs).
    """

    run_id: str
    stream: Path
    started: RunStarted
    session: SessionStarted
    restored: Restored
    budget: dict[str, float]
    source: Interrupted
    passed_over: tuple[int, ...] = ()

    @property
    def replies(self) -> int:
        """How many model replies of the script the continuing run does not ask for again."""
        return len(self.passed_over)


_CHILDREN_GRACE_S = 5.0
"""How long a killed run's children may still hold its stream's lock (the watchdog kills
them; forked sandbox processes share the lock until then)."""


def _writer_gone(events: list[Event]) -> bool:
    """Whether the process that wrote ``events`` (``run_started``'s pid) is gone."""
    first = events[0] if events else None
    if not isinstance(first, RunStarted) or first.pid <= 0 or first.pid == os.getpid():
        return False
    try:
        os.kill(first.pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


def verified_events(path: Path, seal_dir: Path | None = None) -> list[Event]:
    """The stream's events, if its seal holds and its writer is gone.

    A run whose gg process is dead while a child it started still holds the
    stream's lock (a kill a moment ago) is waited for, a few seconds at most.

    Raises:
        ResumeRefused: altered, truncated, unverifiable, or still running.
        UserError: not a gg stream.
    """
    deadline = time.monotonic() + _CHILDREN_GRACE_S
    while True:
        check = Checker(path, seal_dir=seal_dir)
        events: list[Event] = []
        with contextlib.suppress(StreamAltered):
            events.extend(read_events(path, check=check))
        verdict: Verdict = check.finish(check.head_at_start)
        if verdict.kind != "running" or not _writer_gone(events):
            break
        if time.monotonic() > deadline:
            break
        time.sleep(0.1)
    if verdict.kind in ("altered", "truncated"):
        raise ResumeRefused(f"not resumed: {verdict.message()}", exit_code=3)
    if verdict.kind == "unkeyed":
        raise ResumeRefused(f"not resumed: {verdict.message()}", exit_code=4)
    if verdict.kind == "running":
        raise ResumeRefused("not resumed: the run is still going (its gg process holds it)")
    return events[: verdict.trusted]


def _root(events: list[Event]) -> SessionStarted:
    for e in events:
        if isinstance(e, SessionStarted) and e.parent is None:
            return e
    raise ResumeRefused("not resumed: the run never started a session")


def _refuse_ended(events: list[Event], root: str) -> None:
    for e in events:
        if isinstance(e, IssueStateChanged):
            raise ResumeRefused(
                "not resumed: it is a board run; run `gg board run` again, which continues "
                "its interrupted sessions"
            )
        if isinstance(e, RunEnded) and e.status == "ended":
            raise ResumeRefused("not resumed: the run already ended by its ending")
        if isinstance(e, SessionEnded) and e.session_id == root:
            if e.ending is not None:
                call = e.ending.get("call", "an ending")
                raise ResumeRefused(f"not resumed: the run already ended by its ending ({call})")
            why = e.diagnosis or "it stopped"
            raise ResumeRefused(f"not resumed: its session {root} is over ({why})")


def load_resume_point(path: Path, seal_dir: Path | None = None) -> ResumePoint:
    """Read and verify the stream at ``path``; where its run goes on from.

    Args:
        path: the stream file.
        seal_dir: its seal's directory (``None``: found from the stream).

    Raises:
        ResumeRefused: the stream cannot be trusted, or holds nothing to resume.
        UserError: not a gg stream, or a checkpoint that does not read back.
    """
    events = verified_events(path, seal_dir)
    started = events[0]
    if not isinstance(started, RunStarted):
        raise ResumeRefused(f"not resumed: {path} does not start with run_started")
    root = _root(events)
    sid = root.session_id or "s1"
    _refuse_ended(events, sid)
    source = Interrupted.of(events, run_id=started.run_id, stream=path)
    earlier = source.sessions.get(sid)
    if earlier is None:
        raise ResumeRefused("not resumed: the stream has no checkpoint (an older gg wrote it)")
    last = next(e for e in reversed(events) if isinstance(e, Checkpoint) and e.session_id == sid)
    before = next(
        (e.passed_over for e in events if isinstance(e, RunResumed) and e.session_id is None), []
    )
    return ResumePoint(
        run_id=started.run_id,
        stream=path,
        started=started,
        session=root,
        restored=earlier.restored,
        budget=last.budget,
        source=source,
        passed_over=tuple(source.passed_over(before)),
    )


async def _go_on(run: Run, point: ResumePoint) -> SessionResult:
    """Start the root session again from ``point`` in ``run`` (which is new)."""
    restored, s = point.restored, point.session
    sid = s.session_id or "s1"
    run.continuations.bind(sid, point.source, sid)
    event = run.continuations.event(run.run_id, sid)
    run.emit(event.model_copy(update={"session_id": None, "passed_over": [*point.passed_over]}))
    run.budget.tokens += int(point.budget.get("tokens", 0))
    run.budget.cost += float(point.budget.get("cost", 0.0))
    run.budget.started -= float(point.budget.get("seconds", 0.0))
    run.subagents_started += point.source.subagents()
    run.new_session_id()  # the root's id (s1) stays taken: a subagent gets s2 on
    task = next((m.content for m in restored.messages if isinstance(m, UserMessage)), "")
    spec = SessionSpec(
        task=task,
        role=Role(s.role),
        mode=s.mode,
        language="javascript" if s.language == "javascript" else "python",
        workspace=run.workspace,
        session_id=sid,
        restored=restored,
    )
    return await run.start(spec)


RESUMED_MARK = "resumed"
"""The file in a run's gg-private directory that says it was resumed (by which run)."""

_MARK_GRACE_S = 2.0
"""How long a claim waits for a killed resume's lock on the mark to go (its children)."""


class _Claim:
    """The claim of one ``gg resume`` on a run: at most one resume ever continues it.

    The mark is a file in the run's directory of gg's private state (found from the
    verified stream's workspace and run id, never beside a stream path the caller
    gave: a copy of the stream elsewhere must not resume the run a second time). The
    resuming process holds an ``flock`` on it while it runs, and writes the new run's
    id into it once that run's stream holds its first checkpoint of the session; from
    then on the run is resumed (resume the new run instead). A resume killed before
    that leaves an empty mark nobody holds: the next ``gg resume`` takes the run over.
    """

    def __init__(self, point: ResumePoint) -> None:
        self.point = point
        self.fd: int | None = None
        self._done = False

    def take(self) -> None:
        """Claim the run.

        Raises:
            ResumeRefused: it was resumed already, is being resumed now, or its state
                directory cannot be used.
        """
        run_id = self.point.run_id
        try:
            mark = run_dir(Path(self.point.started.workspace), run_id) / RESUMED_MARK
            try:
                fd = open_private(mark, os.O_RDWR, create=True)
            except FileExistsError:
                fd = open_private(mark, os.O_RDWR)
        except (OSError, UserError) as e:
            why = e.strerror if isinstance(e, OSError) else str(e)
            raise ResumeRefused(f"not resumed: cannot mark run {run_id} ({why})") from None
        self.fd = fd
        if not self._lock(fd):
            self.release()
            raise ResumeRefused(f"not resumed: run {run_id} is being resumed now by another gg")
        by = os.pread(fd, 200, 0).decode("utf-8", "replace").strip()
        if by:
            self.release()
            raise ResumeRefused(
                f"not resumed: run {run_id} was resumed already (by run {by}); resume the "
                "run that continued it instead"
            )

    @staticmethod
    def _lock(fd: int) -> bool:
        deadline = time.monotonic() + _MARK_GRACE_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.05)

    def listener(self, session_id: str) -> Callable[[Event], None]:
        """A stream listener of the new run that seals the claim.

        At the new run's first checkpoint of ``session_id``, its run id goes into the
        mark (a failed write leaves the claim open for the next resume).
        """

        def seen(event: Event) -> None:
            if self._done or self.fd is None:
                return
            if isinstance(event, Checkpoint) and event.session_id == session_id:
                with contextlib.suppress(OSError):
                    os.pwrite(self.fd, event.run_id.encode(), 0)
                self._done = True

        return seen

    def release(self) -> None:
        """Let go of the mark (the process's end does it too)."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def resume_run(
    point: ResumePoint,
    *,
    model: str | Model | None = None,
    trust_config: bool = False,
    signals: bool = False,
    listeners: tuple[Any, ...] = (),
) -> RunResult:
    """Continue the run ``point`` describes in a new run; its result.

    Args:
        point: from :func:`load_resume_point`.
        model: another model spec, or a :class:`gg.models.base.Model` (default: the
            interrupted run's spec; a scripted model of it passes over the replies
            the interrupted run was served).
        trust_config: as ``gg run --trust-config``.
        signals: SIGINT/SIGTERM/SIGHUP stop it cleanly (:mod:`gg.signals`).
        listeners: stream listeners (the live view).

    Raises:
        UserError: the settings or the workspace are no longer usable.
    """
    claim = _Claim(point)
    claim.take()
    try:
        settings = settings_from_dict(point.started.settings, source=f"the stream {point.stream}")
        agent = Agent(
            model=model,
            workspace=Path(point.started.workspace),
            settings=settings,
            listeners=(*listeners, claim.listener(point.session.session_id or "s1")),
            trust_config=trust_config,
        )
        same_model = model is None or model == settings.model.spec
        if same_model and isinstance(agent.model, ScriptedModel):
            agent.model.pass_over(point.passed_over)
        return asyncio.run(agent.arun_session(lambda run: _go_on(run, point), signals=signals))
    finally:
        claim.release()
