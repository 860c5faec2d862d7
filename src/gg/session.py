"""The turn loop: one session from its first turn to its ending (SPEC S1, S5, S6, S12).

A session ends in exactly two ways (S1): an ending declared in a turn passes
the ending gate, or a ceiling (or a model failure) stops it. A text reply, a
program that returns, or a model saying "done" never ends it.

Each turn: ask the model (every reply passes :func:`gg.models.boundary.clean_reply`
first, whatever the provider, and the conversation sent passes
:func:`gg.models.boundary.clean_messages`); hand the reply to the mode, which runs calls or the
program and checks endings; record error turns; put a declared ending
through the gate (agent-stop hooks); check ceilings; sync the stream.

The loop knows the run only through a :class:`SessionEnv` (the model, the
stream, the gate, the ceilings and budget) and the session through one
:class:`SessionSpec`; :class:`gg.Run` builds both, the mode and the system
prompt, so this module imports nothing of :mod:`gg.run`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from gg.ceilings import Budget, Ceilings, Diagnosis, SessionCeilings
from gg.checkpoint import Restored, make_checkpoint, restore_counts
from gg.endings import Ending, Language, OutputType, Role, ending_from_record
from gg.errors import ModelError, ScriptExhausted
from gg.hooks import Gate, HookPlace
from gg.models.base import (
    AssistantMessage,
    Message,
    Model,
    Reply,
    SystemMessage,
    UserMessage,
    retries_reported,
)
from gg.models.boundary import clean_messages, clean_reply
from gg.modes.base import Mode, TurnContext, TurnOutcome
from gg.stream import (
    CeilingTripped,
    ErrorTurn,
    Event,
    EventIds,
    GateBlocked,
    GatePassed,
    RetryEvent,
    SessionEnded,
    SessionStarted,
    StreamWriter,
    TurnEvent,
    excerpt,
)
from gg.text import cut

__all__ = ["SessionEnv", "SessionResult", "SessionSpec", "run_session"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionEnv:
    """What the turn loop gets of its run: shared by every session of one run (SPEC §1).

    Attributes:
        run_id: the run's id.
        model: the model every session asks.
        stream: the run's stream writer.
        gate: the ending gate (agent-stop hooks, SPEC H1).
        hook_place: where the gate's command hooks run (the run's sandbox, its snapshot).
        ceilings: the per-session ceilings (SPEC S12).
        budget: the run's shared token and cost budget.
    """

    run_id: str
    model: Model
    stream: StreamWriter
    gate: Gate
    hook_place: HookPlace
    ceilings: Ceilings
    budget: Budget


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


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionSpec:
    """One session, described once.

    :meth:`gg.Run.session` builds it, and the mode, the system prompt and the loop all
    read it.

    Attributes:
        task: the user's task, the session's first (or, resumed, next) user message.
        role: decides the ending group (SPEC S2).
        mode: ``"tool-calling"`` or ``"code"`` (SPEC M1, M2).
        language: the language arm, ``"python"`` or ``"javascript"``.
        workspace: the session's own workspace (absolute, resolved): the run's, or an
            issue's worktree.
        session_id: its id in the run's stream (the resumed session's when resuming).
        parent: the spawning session's id (a subagent, SPEC T2), else ``None``.
        resume: an earlier result of the same session to continue (the board's
            implementer after a review, B3).
        depth: 0 for a root session; a subagent's is its parent's + 1 (SPEC T2).
        instructions: text the caller adds at the end of the system prompt.
    """

    task: str
    role: Role
    mode: str
    language: Language
    workspace: Path
    session_id: str
    parent: str | None = None
    resume: SessionResult | None = None
    depth: int = 0
    instructions: str = ""
    restored: Restored | None = None
    """The session's state rebuilt from a stream's checkpoints (``gg resume``, issue 12):
    it goes on from there, with no new message."""
    output: OutputType | None = None
    """The type the session's ``finish`` must carry as ``output`` (issue 14 item 4)."""


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
        return f"{name}({cut(' '.join(arguments.split()), 80)})"
    if name == "submit_program" and isinstance(arguments.get("program"), str):
        return f"program: {cut(' '.join(arguments['program'].split()), 120)}"
    args = ", ".join(cut(f"{k}={v!r}", 60) for k, v in arguments.items())
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

    def __init__(self, env: SessionEnv, spec: SessionSpec, *, mode: Mode, prompt: str) -> None:
        self.env = env
        self.spec = spec
        self.workspace = spec.workspace
        self.role = spec.role
        self.mode = mode
        self.session_id = spec.session_id
        self.ceilings = SessionCeilings(env.ceilings)
        self.blocked_total = 0
        self.turn = 0
        self.cleaned = 0
        """Messages before this index had their lone surrogates replaced (issue 9 F4)."""
        task = UserMessage(content=spec.task)
        if spec.resume is not None:
            self.messages: list[Message] = [*spec.resume.messages, task]
        else:
            self.messages = [SystemMessage(content=prompt), task]
        if spec.restored is not None:  # gg resume: go on where the stream's checkpoint left
            self.messages, self.turn = list(spec.restored.messages), spec.restored.turn
            self.blocked_total = restore_counts(self.ceilings, spec.restored.counts)
            if "progress" in spec.restored.counts:  # an older stream's: they start afresh
                mode.progress.restore(spec.restored.counts["progress"])
        self.saved = 0
        """Messages already recorded by this stream's checkpoints."""

    @property
    def ids(self) -> EventIds:
        """The ids this session's events carry now (no turn before the first)."""
        return EventIds(run_id=self.env.run_id, session_id=self.session_id, turn=self.turn or None)

    def emit(self, event: Event) -> None:
        """Write ``event`` on the run's stream."""
        self.env.stream.emit(event)

    def checkpoint(self) -> None:
        """Record what resuming needs: the new messages, the counts (:mod:`gg.checkpoint`)."""
        new = self.messages[self.saved :]
        env = self.env
        self.emit(
            make_checkpoint(
                self.ids,
                new,
                ceilings=self.ceilings,
                blocked_total=self.blocked_total,
                budget=env.budget,
                progress=self.mode.progress.state(),
            )
        )
        self.saved = len(self.messages)

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
        await self.env.stream.sync_turn()
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

    async def replay(self, over: SessionEnded) -> SessionResult:
        """End as the earlier session this one continues ended; nothing is run again.

        A subagent that ended before its parent's turn was cut off (issue 12 item 4):
        the same ending, or the same stop and diagnosis, on this run's stream.
        """
        ending = None if over.ending is None else ending_from_record(over.ending)
        diagnosis = None
        if ending is None:
            diagnosis = Diagnosis(ceiling=over.ceiling, message=over.diagnosis or "it stopped")
        self.turn = over.turns
        return await self.result(ending, diagnosis)

    async def ask(self) -> Reply | Diagnosis:
        tools = self.mode.offered_tools()
        clean_messages(self.messages, self.cleaned)  # issue 9 F4: what goes to the model
        self.cleaned = len(self.messages)
        started = time.perf_counter()
        try:
            with retries_reported(lambda notice: self.emit(RetryEvent.of(self.ids, notice))):
                reply = await self.env.model.respond(self.messages, tools)
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
        self.env.budget.add(tokens=u.input_tokens + u.output_tokens, cost=u.cost)
        self.messages.append(AssistantMessage(content=reply.text, tool_calls=reply.tool_calls))
        if self.cleaned == len(self.messages) - 1:
            self.cleaned += 1  # made from the cleaned reply: nothing to clean again
        return reply

    async def gate(self, ending: Ending) -> bool | Diagnosis:
        """Put ``ending`` through the gate.

        True passed, False blocked (the session goes on), a :class:`Diagnosis` when a
        hook answered ``continue: false`` (a stop by the hook, not an ending: SPEC S1,
        S6).
        """
        event = self.env.gate.event(
            ending, role=self.role, session_id=self.session_id, workspace=self.workspace,
            blocked_before=self.blocked_total, messages=self.messages, place=self.env.hook_place,
            subagent=self.spec.depth > 0,
        )  # fmt: skip
        result = await self.env.gate.check(event, place=self.env.hook_place)
        block = result.blocking
        if result.passed or block is None:
            self.ceilings.record_gate(blocked=False)
            self.emit(GatePassed(**self.ids, call=ending.call, hooks=len(result.outcomes)))
            return True
        hook, reason = block.hook, block.reason
        failed = block.status == "failed"  # the one classification (gg.hooks, SPEC H1)
        if block.status == "stopped":
            said = f"the agent-stop hook {hook!r} stopped the run (continue: false): {reason}"
            self.emit(GateBlocked(**self.ids, hook=hook, reason=excerpt(said, 2000)))
            return Diagnosis(ceiling=None, message=said)
        self.blocked_total += 1
        self.ceilings.record_gate(
            blocked=True,
            hook=hook,
            reason=reason,
            failed=failed,
            script_changed=block.script_changed,
        )
        self.emit(GateBlocked(**self.ids, hook=hook, reason=excerpt(reason, 2000), failed=failed))
        context = f"More context from the hooks:\n{result.context}\n" if result.context else ""
        self.messages.append(
            UserMessage(
                content=(
                    f"Your {ending.call} was blocked by the agent-stop hook {hook!r}; "
                    f"the session goes on. The hook's reason:\n{reason}\n{context}"
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
    env: SessionEnv, spec: SessionSpec, *, mode: Mode, prompt: str
) -> SessionResult:
    """Drive one session to its ending or to a ceiling (SPEC S1).

    Args:
        env: what the session gets of its run (model, stream, gate, ceilings, budget).
        spec: the session: task, role, workspace, id, parent, what it resumes.
        mode: the execution mode, already built for this spec.
        prompt: the whole system prompt (:func:`gg.prompts.session_prompt`); unused
            when ``spec.resume`` continues a conversation that has one.

    Returns:
        The :class:`SessionResult`. Never raises for anything a model sends.
    """
    loop = _Loop(env, spec, mode=mode, prompt=prompt)
    role, task, parent, resume = spec.role, spec.task, spec.parent, spec.resume
    run = env  # the run's parts, as the loop sees them
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
            resumed=resume is not None or spec.restored is not None,
        )
    )
    loop.checkpoint()
    if spec.restored is not None and spec.restored.over is not None:
        return await loop.replay(spec.restored.over)  # it had ended before the crash
    try:  # max_seconds is a hard wall-clock bound, inside a turn too (issue 12 item 2)
        async with asyncio.timeout(env.budget.seconds_left()) as bound:
            return await _turns(loop, mode)
    except TimeoutError:
        if not bound.expired():
            raise
    diagnosis = env.budget.out_of_time()  # the model call, tools and hooks were cancelled
    loop.emit(CeilingTripped(**loop.ids, ceiling="budget", diagnosis=diagnosis.message))
    return await loop.result(None, diagnosis)


async def _turns(loop: _Loop, mode: Mode) -> SessionResult:
    """The session's turns, from the first to its ending or a ceiling (SPEC S1)."""
    role, ws, run = loop.role, loop.workspace, loop.env
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
        gated = False if outcome.ending is None else await loop.gate(outcome.ending)
        if isinstance(gated, Diagnosis):
            return await loop.result(None, gated)  # a hook's continue: false (a stop)
        if gated and outcome.ending is not None:
            return await loop.result(outcome.ending, None)
        diagnosis = loop.ceilings.check() or run.budget.check()
        if diagnosis is not None:
            if diagnosis.ceiling is not None:  # a ceiling's and the budget's always name it
                ceiling, message = diagnosis.ceiling, diagnosis.message
                loop.emit(CeilingTripped(**loop.ids, ceiling=ceiling, diagnosis=message))
            return await loop.result(None, diagnosis)
        loop.checkpoint()
        await run.stream.sync_turn()
