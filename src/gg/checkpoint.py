"""Checkpoints: what the stream records so a session can be resumed exactly (issue 12 item 4).

The turn loop writes a ``checkpoint`` event (:class:`gg.stream.Checkpoint`)
when a session starts and at the end of each of its turns: the messages the
conversation gained since the session's previous checkpoint (the whole
conversation, system prompt and task included, over all of them), the
session's ceiling counts, and the run's budget spent so far. The stream's seal
covers them like every event; ``gg resume`` (:mod:`gg.resume`) rebuilds the
conversation from them with :func:`message_from_record` and the counts with
:func:`restore_counts`.

The counts include the mode's progress heuristics (``progress``:
:meth:`gg.progress.Progress.state`), so a resumed session counts repeated calls
and gives the ending reminder as the uninterrupted one would have.

A turn cut off by a crash or a signal has no checkpoint: resuming redoes it
from its start (its declarations were per turn and die with it, SPEC S8).

Continuing (``gg resume``, a board run): :class:`Interrupted` reads every
session of an interrupted run's verified stream (:class:`Earlier`), and a new
run's :class:`Continuations` binds its sessions to them: the root (or a board
session) explicitly, a subagent when its parent, continued, spawns it again
with the same task. A session that had ended is replayed as it ended; one
that had not goes on from its last checkpoint. Only the replies of turns no
checkpoint recorded are asked for again (:meth:`Interrupted.kept_replies`).
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from gg.ceilings import Budget, SessionCeilings
from gg.errors import UserError
from gg.models.base import AssistantMessage, Message, SystemMessage, ToolMessage, UserMessage
from gg.stream import (
    Checkpoint,
    Event,
    EventIds,
    RunResumed,
    SessionEnded,
    SessionStarted,
    TurnEvent,
    excerpt,
    excerpt_arguments,
)

__all__ = [
    "Continuations",
    "Earlier",
    "Interrupted",
    "Restored",
    "budget_record",
    "make_checkpoint",
    "message_from_record",
    "message_record",
    "restore_counts",
]

_MESSAGE: TypeAdapter[Message] = TypeAdapter(Message)


@dataclass(frozen=True, slots=True, kw_only=True)
class Restored:
    """A session's state rebuilt from its checkpoints, to go on from.

    Attributes:
        messages: the whole conversation so far, system prompt first.
        turn: the last turn that completed (the next one is ``turn + 1``).
        counts: the session's ceiling counts (:func:`counts_record`'s form).
    """

    messages: tuple[Message, ...]
    turn: int
    counts: dict[str, Any]
    over: SessionEnded | None = None
    """How the session ended, when it had: it is replayed as it ended, not run again."""


_FIELDS = {
    kind: tuple(f.name for f in dataclasses.fields(kind))
    for kind in (SystemMessage, UserMessage, AssistantMessage, ToolMessage)
}
"""Each message type's fields, in order (a record is built per message, every turn)."""
_CONTENT_CAP = 50_000
"""Characters of one message's text a checkpoint keeps (the stream stays bounded)."""


def message_record(message: Message) -> dict[str, Any]:
    """``message`` as a JSON object (``role`` tags it; tool calls as objects).

    Bounded like every stream event: text past :data:`_CONTENT_CAP` characters and
    call arguments past :func:`gg.stream.excerpt_arguments`' caps are cut (with a
    marker), so a resumed conversation is exact up to those bounds.
    """
    record: dict[str, Any] = {f: getattr(message, f) for f in _FIELDS[type(message)]}
    record["content"] = excerpt(message.content, _CONTENT_CAP)
    if isinstance(message, AssistantMessage):  # the calls, each a new object (bounded)
        record["tool_calls"] = [
            {"name": c.name, "arguments": excerpt_arguments(c.arguments), "id": c.id,
             "parse_error": c.parse_error}
            for c in message.tool_calls
        ]  # fmt: skip
    return record


def message_from_record(record: object) -> Message:
    """The message :func:`message_record` wrote.

    Raises:
        UserError: ``record`` is not a message of a known role and shape.
    """
    if not isinstance(record, dict) or record.get("role") not in (
        "system",
        "user",
        "assistant",
        "tool",
    ):
        raise UserError(f"a checkpoint holds something that is not a message: {record!r:.80}")
    try:
        return _MESSAGE.validate_python(record)
    except ValidationError as e:
        raise UserError(f"a checkpoint holds a malformed message: {e.errors()[0]['msg']}") from None


def _counts_record(
    ceilings: SessionCeilings, blocked_total: int, progress: dict[str, Any] | None
) -> dict[str, Any]:
    out: dict[str, Any] = {"blocked_total": blocked_total}
    if progress is not None:
        out["progress"] = progress
    for name in _counted(type(ceilings)):
        value = getattr(ceilings, name)
        out[name] = list(value) if isinstance(value, deque | tuple) else value
    return out


def _counted(kind: type[SessionCeilings]) -> tuple[str, ...]:
    """The fields of a session's ceilings a checkpoint keeps (reply excerpts are repr()s)."""
    if kind not in _COUNTED:
        skip = ("ceilings", "_replies")
        _COUNTED[kind] = tuple(f.name for f in dataclasses.fields(kind) if f.name not in skip)
    return _COUNTED[kind]


_COUNTED: dict[type[SessionCeilings], tuple[str, ...]] = {}


def restore_counts(ceilings: SessionCeilings, counts: dict[str, Any]) -> int:
    """Put checkpointed ``counts`` back into a fresh ``ceilings``; returns ``blocked_total``.

    Raises:
        UserError: a count of the wrong type.
    """
    try:
        for f in dataclasses.fields(ceilings):
            if f.name == "ceilings" or f.name not in counts:
                continue
            value, current = counts[f.name], getattr(ceilings, f.name)
            if isinstance(current, deque):
                current.extend(value)
            elif f.name == "_last_block":
                setattr(ceilings, f.name, None if value is None else tuple(value))
            else:
                setattr(ceilings, f.name, value)
        return int(counts.get("blocked_total", 0))
    except (TypeError, ValueError) as e:
        raise UserError(f"a checkpoint holds malformed ceiling counts: {e}") from None


def budget_record(budget: Budget) -> dict[str, float]:
    """The run's spending so far: ``tokens``, ``cost``, ``seconds``."""
    return {  # floats, as the event's field holds them
        "tokens": float(budget.tokens),
        "cost": float(budget.cost),
        "seconds": float(round(budget.seconds(), 3)),
    }


def make_checkpoint(
    ids: EventIds,
    messages: Sequence[Message],
    *,
    ceilings: SessionCeilings,
    blocked_total: int,
    budget: Budget,
    progress: dict[str, Any] | None = None,
) -> Checkpoint:
    """The ``checkpoint`` event for ``messages`` (those new since the last one).

    Args:
        ids: the session's ids now.
        messages: the messages to record.
        ceilings: the session's counts.
        blocked_total: endings the gate blocked in this session so far.
        budget: the run's budget.
        progress: the mode's :meth:`gg.progress.Progress.state` (kept in ``counts``
            as ``progress``, so a resumed session counts repeats on).
    """
    return Checkpoint.of(
        ids,
        [message_record(m) for m in messages],
        _counts_record(ceilings, blocked_total, progress),
        budget_record(budget),
    )


# -- the sessions of an interrupted stream, for a run that continues them ------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Earlier:
    """One session of an interrupted run, as its stream's checkpoints left it.

    Attributes:
        session_id: its id in that stream.
        parent: its spawning session's id there (a subagent), else ``None``.
        started: its ``session_started`` event (role, mode, language).
        restored: its conversation and counts at its last checkpoint, and its
            ``session_ended`` when it had ended (:attr:`Restored.over`).
    """

    session_id: str
    parent: str | None
    started: SessionStarted
    restored: Restored

    @property
    def task(self) -> str:
        """Its task: the first user message of its conversation ("" if none)."""
        return next((m.content for m in self.restored.messages if m.role == "user"), "")


@dataclass(frozen=True, slots=True, kw_only=True)
class Interrupted:
    """What an interrupted run's verified stream holds for the runs that continue it.

    Attributes:
        run_id: the interrupted run's id.
        stream: its stream file.
        sessions: its sessions with at least one checkpoint, by id, in start order.
        served: ``(session id, turn)`` of each model reply it was served, in order.
    """

    run_id: str
    stream: Path
    sessions: dict[str, Earlier]
    served: tuple[tuple[str, int], ...]

    @classmethod
    def of(cls, events: Sequence[Event], *, run_id: str, stream: Path) -> Interrupted:
        """Read the sessions out of a stream's (verified) ``events``.

        Raises:
            UserError: a checkpoint holds something that is not a message or count.
        """
        started: dict[str, SessionStarted] = {}
        messages: dict[str, list[Message]] = {}
        last: dict[str, Checkpoint] = {}
        ended: dict[str, SessionEnded] = {}
        served: list[tuple[str, int]] = []
        for e in events:
            sid = e.session_id
            if sid is None:
                continue
            if isinstance(e, SessionStarted):
                started.setdefault(sid, e)
            elif isinstance(e, Checkpoint) and sid in started:
                messages.setdefault(sid, []).extend(message_from_record(m) for m in e.messages)
                last[sid] = e
            elif isinstance(e, SessionEnded):
                ended[sid] = e
            elif isinstance(e, TurnEvent):
                served.append((sid, e.turn or 0))
        sessions = {
            sid: Earlier(
                session_id=sid,
                parent=s.parent,
                started=s,
                restored=Restored(
                    messages=tuple(messages[sid]),
                    turn=last[sid].turn or 0,
                    counts=last[sid].counts,
                    over=ended.get(sid),
                ),
            )
            for sid, s in started.items()
            if sid in last and messages.get(sid)
        }
        return cls(run_id=run_id, stream=stream, sessions=sessions, served=tuple(served))

    def kept_replies(self) -> list[int]:
        """The indices (from 0) of the replies a continuing run does not ask for again.

        Those of turns a checkpoint recorded, and every reply of a session that
        ended (it is replayed as it ended); the others (a turn a crash cut off) are
        asked for again, in the order they were first served.
        """
        out = []
        for i, (sid, turn) in enumerate(self.served):
            earlier = self.sessions.get(sid)
            if earlier is not None and (
                earlier.restored.over is not None or turn <= earlier.restored.turn
            ):
                out.append(i)
        return out

    def passed_over(self, before: Sequence[int] = ()) -> list[int]:
        """The script indices a scripted model continuing this run passes over.

        Args:
            before: those the run this one continued had passed over (its root
                ``run_resumed`` event's ``passed_over``): this run was served the
                others, in order.

        Returns:
            ``before`` and the script index of each of :meth:`kept_replies`, sorted.
        """
        skipped, kept = set(before), set(self.kept_replies())
        out, index, served = set(skipped), 0, 0
        while served < len(self.served):
            if index not in skipped:
                if served in kept:
                    out.add(index)
                served += 1
            index += 1
        return sorted(out)

    def subagents(self, under: str | None = None) -> int:
        """How many subagents it started: all, or those below session ``under``."""
        if under is None:
            return sum(1 for e in self.sessions.values() if e.parent is not None)
        children = [e.session_id for e in self.sessions.values() if e.parent == under]
        return len(children) + sum(self.subagents(c) for c in children)


@dataclass(slots=True)
class Continuations:
    """The earlier sessions a run goes on with (``gg resume``, a board run; issue 12 item 4).

    A session of the new run is *bound* to the earlier session it continues
    (:meth:`bind`); a subagent that a bound session spawns with the same task as
    one its earlier self had spawned, and not yet taken, continues that one
    (:meth:`claim`): from its last checkpoint, or replayed as it ended. So a turn
    cut off while subagents ran, done again, does not do their work twice.
    """

    _bound: dict[str, tuple[Interrupted, str]] = field(default_factory=dict)
    _taken: set[tuple[str, str]] = field(default_factory=set)

    def bind(self, session_id: str, source: Interrupted, earlier: str) -> None:
        """Session ``session_id`` of this run continues ``earlier`` of ``source``."""
        self._bound[session_id] = (source, earlier)
        self._taken.add((source.run_id, earlier))

    def claim(self, *, parent: str | None, task: str, session_id: str) -> Earlier | None:
        """The earlier subagent the new subagent ``session_id`` continues, if any (bound).

        Args:
            parent: the new subagent's parent session id in this run.
            task: its task.
            session_id: its id in this run.

        Returns:
            The earlier session (first not taken, in start order, of the parent's
            earlier self, with the same task), or ``None``: it starts afresh.
        """
        if parent is None or parent not in self._bound:
            return None
        source, earlier_parent = self._bound[parent]
        want = excerpt(task, _CONTENT_CAP)
        for e in source.sessions.values():
            key = (source.run_id, e.session_id)
            if e.parent == earlier_parent and key not in self._taken and e.task == want:
                self.bind(session_id, source, e.session_id)
                return e
        return None

    def event(self, run_id: str, session_id: str) -> RunResumed:
        """The ``run_resumed`` event of bound session ``session_id``.

        Raises:
            KeyError: it is not bound.
        """
        source, earlier = self._bound[session_id]
        restored = source.sessions[earlier].restored
        return RunResumed(
            run_id=run_id,
            session_id=session_id,
            from_run=source.run_id,
            from_stream=str(source.stream),
            resumed_session=earlier,
            turns=restored.turn,
            messages=len(restored.messages),
        )
