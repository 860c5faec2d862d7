"""The board's tracker: stream events turned into each issue's progress line (SPEC B1, O2).

A :class:`Tracker` is a stream listener of a board run. Each issue's session
runs in its own asyncio task, whose :data:`gg.board.workflow.CURRENT` slot says
which issue and session it is; the tracker notes the session's stream id when
it starts and tells the board's observers what it does: each turn and its
calls, each gate block, each error turn. Events of other sessions (a
subagent's) are not the issue's. It never stops a session: a failing observer
is ignored.
"""

from __future__ import annotations

import contextlib
from typing import Protocol, assert_never

from gg.board.store import Store
from gg.board.workflow import CURRENT, Progress, SessionSlot
from gg.stream import (
    CeilingTripped,
    Checkpoint,
    EndingDeclared,
    EndingRefused,
    EndingRevoked,
    EndingSuperseded,
    ErrorTurn,
    Event,
    GateBlocked,
    GatePassed,
    IssueStateChanged,
    RetryEvent,
    RunEnded,
    RunResumed,
    RunStarted,
    SessionEnded,
    SessionStarted,
    ToolCalled,
    ToolResult,
    TurnEvent,
)

__all__ = ["Observed", "Tracker", "activity"]


class Observed(Protocol):
    """What the tracker reports to: the board's store and its observers."""

    @property
    def store(self) -> Store:
        """Where a session's stream id is noted."""
        ...

    def notify(self, progress: Progress) -> None:
        """Tell the board's observers."""
        ...


def activity(event: Event, slot: SessionSlot) -> str | None:
    """The progress line ``event`` gives the issue in ``slot``, or ``None`` for none.

    Args:
        event: a stream event of the slot's session (the caller matched its id).
        slot: the issue's running session; its ``turn`` is moved on by a ``turn`` event.

    Returns:
        ``"implementer s3 · turn 2 · write_file"`` and the like for a turn, a gate block
        or an error turn; ``None`` for every other event.
    """
    head = f"{slot.label} {slot.session_id}"
    match event:
        case TurnEvent():
            slot.turn = event.turn or slot.turn
            return f"{head} · turn {slot.turn} · {', '.join(event.calls) or 'no call'}"
        case GateBlocked():
            return f"{head} · gate blocked by {event.hook}"
        case ErrorTurn():
            return f"{head} · error turn ({event.kind})"
        case RetryEvent():
            return f"{head} · {event.provider} retry after attempt {event.attempt}"
        case (
            RunStarted()
            | SessionStarted()
            | ToolCalled()
            | ToolResult()
            | EndingDeclared()
            | EndingRefused()
            | EndingSuperseded()
            | EndingRevoked()
            | GatePassed()
            | CeilingTripped()
            | SessionEnded()
            | RunEnded()
            | Checkpoint()
            | RunResumed()
            | IssueStateChanged()
        ):
            return None
        case _:
            assert_never(event)


class Tracker:
    """A stream listener that tells a board's observers what each issue's session does.

    Args:
        board: the board whose store notes session ids and whose observers are told.
    """

    def __init__(self, board: Observed) -> None:
        self.board = board

    def __call__(self, event: Event) -> None:
        """Take one stream event (a :data:`gg.stream.Listener`); never raises."""
        slot = CURRENT.get()
        if slot is None:
            return
        with contextlib.suppress(Exception):  # the display never stops a session
            if isinstance(event, SessionStarted) and slot.session_id is None:
                slot.session_id = event.session_id
                if event.session_id is not None:
                    self.board.store.session_started(slot.record, event.session_id)
                return
            if event.session_id != slot.session_id:
                return  # a subagent's event
            line = activity(event, slot)
            if line is not None:
                self.board.notify(Progress(issue=slot.issue, activity=line, event="turn"))
