"""What a mode is: it turns a model's reply into actions and feedback (SPEC M1, M2).

The session loop is mode-agnostic. Each turn it hands the reply to
:meth:`Mode.act` with a :class:`TurnContext`; the mode runs the calls (or the
program), checks ending calls through :mod:`gg.endings`, emits the events it
owns, and returns a :class:`TurnOutcome`. The gate and the ceilings stay with
the loop.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from gg.ceilings import ErrorKind
from gg.endings import Ending, Language, Role
from gg.models.base import Message, Reply, ToolSpec

__all__ = ["Emit", "Mode", "TurnContext", "TurnOutcome"]

Emit = Callable[..., None]
"""``emit(EventClass, **fields)``: write one event with the turn's ids filled in."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnContext:
    """What a mode knows about the turn it acts on."""

    run_id: str
    session_id: str
    turn: int
    role: Role
    workspace: Path
    emit: Emit
    """Writes an event; the run, session and turn ids are filled in."""


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
