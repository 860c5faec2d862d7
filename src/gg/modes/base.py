"""What a mode is: it turns a model's reply into actions and feedback (SPEC M1, M2).

The session loop is mode-agnostic. Each turn it hands the reply to
:meth:`Mode.act` with a :class:`TurnContext`; the mode runs the calls (or the
program), checks ending calls through :mod:`gg.endings`, emits the events it
owns (built events, :data:`Emit`), closes the turn's declarations with
:func:`close_turn`, and returns a :class:`TurnOutcome`. The gate and the
ceilings stay with the loop.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeAlias

from gg.ceilings import ErrorKind
from gg.endings import Declarations, Ending, Language, Role, TurnClose
from gg.models.base import Message, Reply, ToolSpec
from gg.progress import Progress
from gg.stream import EndingRevoked, EndingSuperseded, Event, EventIds

__all__ = ["Emit", "Mode", "TurnContext", "TurnOutcome", "close_turn"]

Emit: TypeAlias = Callable[[Event], None]
"""Writes one built event on the run's stream (``emit(ToolCalled(**ctx.ids, ...))``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnContext:
    """What a mode knows about the turn it acts on."""

    run_id: str
    session_id: str
    turn: int
    role: Role
    workspace: Path
    emit: Emit
    """Writes a built event on the run's stream."""

    @property
    def ids(self) -> EventIds:
        """The run, session and turn ids this turn's events carry."""
        return EventIds(run_id=self.run_id, session_id=self.session_id, turn=self.turn)


def close_turn(decl: Declarations, *, error: str | None, ids: EventIds, emit: Emit) -> TurnClose:
    """Close a turn's declarations and report it, the same way in both modes (SPEC S8, S9).

    Args:
        decl: the turn's declarations.
        error: why the turn failed after declaring (already cut for the stream), or
            ``None``: a failed turn revokes its declaration.
        ids: the ids the events carry.
        emit: where ``ending_superseded`` (when a declaration was replaced) and
            ``ending_revoked`` (when one was withdrawn) go.

    Returns:
        The :class:`gg.endings.TurnClose`: its ``ending`` is the one to gate.
    """
    closed = decl.close(failed=error is not None)
    if closed.superseded:
        emit(EndingSuperseded(**ids, count=closed.superseded))
    if closed.revoked is not None and error is not None:
        emit(EndingRevoked(**ids, call=closed.revoked.call, error=error))
    return closed


@dataclass(slots=True, kw_only=True)
class TurnOutcome:
    """What came of a reply.

    Attributes:
        messages: feedback to append after the reply (tool results, error feedback).
        error: the error-turn kind (SPEC S5), or ``None`` for a good turn.
        error_message: the feedback given for the error turn.
        ending: the declaration read at the end of the turn (after any
            revocation), to be put through the ending gate; ``None`` if none.
    """

    messages: list[Message] = field(default_factory=list)
    error: ErrorKind | None = None
    error_message: str = ""
    ending: Ending | None = None


class Mode(Protocol):
    """An execution mode. ``name`` is ``"tool-calling"`` or ``"code"``."""

    name: str
    language: Language
    progress: Progress
    """What the session has done so far (:mod:`gg.progress`); checkpoints keep its state."""

    def offered_tools(self) -> list[ToolSpec]:
        """The tools the model is offered each turn (SPEC M1, M2)."""
        ...

    def prompt_part(self) -> str:
        """What the mode adds to the system prompt (never the ending rule itself)."""
        ...

    async def act(self, reply: Reply, ctx: TurnContext) -> TurnOutcome:
        """Act on ``reply``; never raises for anything the model sent."""
        ...

    def describe(self) -> dict[str, Any]:
        """Settings to show on ``session_started`` (e.g. ``{"arm": "all"}``)."""
        ...
