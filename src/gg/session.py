"""The turn loop: one session from its first turn to its ending (SPEC S1, S5, S6, S12).

A session ends in exactly two ways (S1): an ending declared in a turn passes
the ending gate, or a ceiling (or a model failure) stops it. A text reply, a
program that returns, or a model saying "done" never ends it.

Each turn: ask the model (every reply passes :func:`gg.models.boundary.clean_reply`
first, whatever the provider, and the conversation sent passes
:func:`gg.models.boundary.clean_messages`); hand the reply to the mode, which runs calls or the
program and checks endings; record error turns; put a declared ending
through the gate (agent-stop hooks); check ceilings; sync the stream.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from gg.ceilings import Diagnosis, SessionCeilings
from gg.endings import Ending, Role
from gg.errors import ModelError, ScriptExhausted
from gg.hooks import StopEvent
from gg.models.base import AssistantMessage, Message, Reply, SystemMessage, UserMessage
from gg.models.boundary import clean_messages, clean_reply
from gg.modes.base import Mode, TurnContext, TurnOutcome
from gg.prompts import system_prompt
from gg.stream import (
    CeilingTripped,
    ErrorTurn,
    Event,
    EventIds,
    GateBlocked,
    GatePassed,
    SessionEnded,
    SessionStarted,
    TurnEvent,
    excerpt,
)

if TYPE_CHECKING:
    from gg.run import Run

__all__ = ["SessionResult", "run_session"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionResult:
    """How a session ended.

    Attributes:
        session_id: the session's id in the run's stream.
        role: its role.
        status: ``"ended"`` (by an ending that passed the gate) or ``"stopped"``.
        ending: the typed ending when ended; ``None`` when stopped (never invented).
        diagnosis: why it stopped (SPEC S6), ``None`` when ended.
        turns: how many turns it took.
    """

    session_id: str
    role: Role
    status: Literal["ended", "stopped"]
    ending: Ending | None
    diagnosis: Diagnosis | None
    turns: int
    workspace: Path
    """The workspace the session worked in."""
    messages: list[Message] = dataclasses.field(default_factory=list, repr=False)
    """The conversation, for resuming the session (see :func:`run_session`)."""


def _with_ids(reply: Reply, turn: int) -> Reply:
    if all(c.id for c in reply.tool_calls):
        return reply
    calls = tuple(
        c if c.id else dataclasses.replace(c, id=f"call_{turn}_{i}")
        for i, c in enumerate(reply.tool_calls)
    )
    return dataclasses.replace(reply, tool_calls=calls)


def _call_excerpt(name: str, arguments: dict[str, Any] | str) -> str:
    if isinstance(arguments, str):
        return f"{name}({' '.join(arguments.split())[:60]})"
    if name == "submit_program" and isinstance(arguments.get("program"), str):
        return f"program: {' '.join(arguments['program'].split())[:100]}"
    args = ", ".join(f"{k}={v!r}"[:40] for k, v in arguments.items())
    return f"{name}({args})"


def _reply_excerpt(reply: Reply) -> str:
    """What an operator needs to recognise a reply in a diagnosis (SPEC S6)."""
    calls = "; ".join(_call_excerpt(c.name, c.arguments) for c in reply.tool_calls)
    text = " ".join(reply.text.split())
    if text and calls:
        return f"{text[:80]} → {calls}"[:200]
    return (text or calls)[:200] or "(empty reply)"


class _Loop:
    """The state of one running session; :func:`run_session` drives it."""

    def __init__(
        self,
        run: Run,
        *,
        task: str,
        role: Role,
        mode: Mode,
        parent: str | None,
        extra_prompt: str,
        workspace: Path,
        resume: SessionResult | None,
        session_id: str | None,
    ) -> None:
        self.run = run
        self.workspace = workspace
        self.role = role
        self.mode = mode
        self.parent = parent
        self.task = task
        self.session_id = session_id or (resume.session_id if resume else run.new_session_id())
        self.ceilings = SessionCeilings(run.ceilings)
        self.blocked_total = 0
        self.turn = 0
        self.cleaned = 0
        """Messages before this index had their lone surrogates replaced (issue 9 F4)."""
        if resume is not None:
            self.messages: list[Message] = [*resume.messages, UserMessage(content=task)]
        else:
            prompt = system_prompt(
                role,
                mode=mode.name,
                language=mode.language,
                mode_part=mode.prompt_part(),
                extra=extra_prompt,
            )
            self.messages = [SystemMessage(content=prompt), UserMessage(content=task)]

    @property
    def ids(self) -> EventIds:
        """The ids this session's events carry now (no turn before the first)."""
        return EventIds(run_id=self.run.run_id, session_id=self.session_id, turn=self.turn or None)

    def emit(self, event: Event) -> None:
        """Write ``event`` on the run's stream."""
        self.run.stream.emit(event)

    async def result(self, ending: Ending | None, diagnosis: Diagnosis | None) -> SessionResult:
        self.emit(
            SessionEnded(
                **self.ids,
                ending=None if ending is None else ending.record(),
                ceiling=diagnosis.ceiling if diagnosis else None,
                diagnosis=diagnosis.message if diagnosis else None,
                turns=self.turn,
            )
        )
        await self.run.stream.sync_turn()
        return SessionResult(
            session_id=self.session_id,
            role=self.role,
            status="ended" if ending else "stopped",
            ending=ending,
            diagnosis=diagnosis,
            turns=self.turn,
            workspace=self.workspace,
            messages=self.messages,
        )

    async def ask(self) -> Reply | Diagnosis:
        tools = self.mode.offered_tools()
        clean_messages(self.messages, self.cleaned)  # issue 9 F4: what goes to the model
        self.cleaned = len(self.messages)
        started = time.perf_counter()
        try:
            reply = await self.run.model.respond(self.messages, tools)
        except ScriptExhausted as e:
            return Diagnosis(ceiling=None, message=f"{e}; the run stops here.")
        except ModelError as e:
            return Diagnosis(ceiling=None, message=f"the model ({e.provider}) failed: {e}")
        reply = _with_ids(clean_reply(reply), self.turn)  # the model boundary (issue 9 F4)
        u = reply.usage
        self.emit(
            TurnEvent(
                **self.ids,
                text=excerpt(reply.text, 500),
                calls=[c.name for c in reply.tool_calls],
                usage=u,
                seconds=round(time.perf_counter() - started, 6),
            )
        )
        self.run.budget.add(tokens=u.input_tokens + u.output_tokens, cost=u.cost)
        self.messages.append(AssistantMessage(content=reply.text, tool_calls=reply.tool_calls))
        if self.cleaned == len(self.messages) - 1:
            self.cleaned += 1  # made from the cleaned reply: nothing to clean again
        return reply

    async def gate(self, ending: Ending) -> bool:
        event = StopEvent.for_ending(
            ending,
            role=self.role,
            session_id=self.session_id,
            workspace=self.workspace,
            blocked_before=self.blocked_total,
        )
        result = await self.run.gate.check(event, place=self.run.hook_place())
        block = result.blocking
        if result.passed or block is None:
            self.ceilings.record_gate(blocked=False)
            self.emit(GatePassed(**self.ids, call=ending.call, hooks=len(result.outcomes)))
            return True
        hook, reason = block.hook, block.reason
        failed = block.status == "failed"  # the one classification (gg.hooks, SPEC H1)
        self.blocked_total += 1
        self.ceilings.record_gate(
            blocked=True,
            hook=hook,
            reason=reason,
            failed=failed,
            script_changed=block.script_changed,
        )
        self.emit(GateBlocked(**self.ids, hook=hook, reason=excerpt(reason, 2000), failed=failed))
        self.messages.append(
            UserMessage(
                content=(
                    f"Your {ending.call} was blocked by the agent-stop hook {hook!r}; "
                    f"the session goes on. The hook's reason:\n{reason}\n"
                    "Fix the problem, then declare again."
                )
            )
        )
        return False

    def record(self, reply: Reply, outcome: TurnOutcome) -> None:
        self.messages.extend(outcome.messages)
        if outcome.error is not None:
            message = excerpt(outcome.error_message, 1000)
            self.emit(ErrorTurn(**self.ids, kind=outcome.error, message=message))
        self.ceilings.record_turn(outcome.error, _reply_excerpt(reply))


async def run_session(
    run: Run,
    *,
    task: str,
    role: Role,
    mode: Mode,
    parent: str | None = None,
    extra_prompt: str = "",
    workspace: Path | None = None,
    resume: SessionResult | None = None,
    session_id: str | None = None,
) -> SessionResult:
    """Drive one session to its ending or to a ceiling (SPEC S1).

    Args:
        run: the run the session belongs to (stream, gate, ceilings, budget, model).
        task: the user's task, the session's first user message.
        role: decides the ending group (SPEC S2).
        mode: the execution mode, already built for this role.
        parent: the spawning session's id, for subagents.
        extra_prompt: text appended to the system prompt.
        workspace: the session's own workspace (e.g. an issue's worktree);
            default: the run's.
        resume: an earlier result of the same session to continue: its
            conversation goes on with ``task`` as the next user message, under
            the same session id (the board's implementer after a review, B3).
        session_id: the id to use (default: the resumed one, or the run's next).

    Returns:
        The :class:`SessionResult`. Never raises for anything a model sends.
    """
    ws = workspace or run.workspace
    loop = _Loop(
        run,
        task=task,
        role=role,
        mode=mode,
        parent=parent,
        extra_prompt=extra_prompt,
        workspace=ws,
        resume=resume,
        session_id=session_id,
    )
    loop.emit(
        SessionStarted(
            **loop.ids,
            role=role.value,
            mode=mode.name,
            language=mode.language,
            arm=str(mode.describe().get("arm", "")),
            model=run.model.name,
            parent=parent,
            task=excerpt(task, 500),
            resumed=resume is not None,
        )
    )
    while True:
        loop.turn += 1
        reply = await loop.ask()
        if isinstance(reply, Diagnosis):
            loop.turn -= 1  # no reply: the turn never happened
            return await loop.result(None, reply)
        ctx = TurnContext(
            run_id=run.run_id,
            session_id=loop.session_id,
            turn=loop.turn,
            role=role,
            workspace=ws,
            emit=loop.emit,
        )
        outcome = await mode.act(reply, ctx)
        loop.record(reply, outcome)
        if outcome.ending is not None and await loop.gate(outcome.ending):
            return await loop.result(outcome.ending, None)
        diagnosis = loop.ceilings.check() or run.budget.check()
        if diagnosis is not None:
            if diagnosis.ceiling is not None:  # a ceiling's and the budget's always name it
                ceiling, message = diagnosis.ceiling, diagnosis.message
                loop.emit(CeilingTripped(**loop.ids, ceiling=ceiling, diagnosis=message))
            return await loop.result(None, diagnosis)
        await run.stream.sync_turn()
