"""smolagents as a bench subject: a ``ToolCallingAgent`` with a canned model, one tool.

The canned model answers with one ``noop`` tool call per step until the run
has taken its tool turns, then calls ``final_answer``, which ends the run.
Logging is off. smolagents runs are synchronous and an agent holds one run's
memory, so concurrent runs are one agent each, advanced in turn as
generators (``agent.run(task, stream=True)``): every run stays alive until the
last ones end, in one thread, as gathered coroutines do.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from smolagents import ToolCallingAgent, tool
from smolagents.models import (
    ChatMessage,
    ChatMessageToolCall,
    ChatMessageToolCallFunction,
    MessageRole,
    Model,
)
from smolagents.monitoring import LogLevel

__all__ = ["Subject"]

_TASK = "Call noop until told otherwise."


@tool
def noop() -> str:
    """Do nothing and say so."""
    return "ok"


class CannedModel(Model):
    """Calls ``noop`` ``turns`` times, then ``final_answer``; records each call's time.

    Args:
        turns: tool turns per run.
        stamps: where to append ``time.perf_counter()`` at each call, or ``None``.
    """

    def __init__(self, turns: int, stamps: list[float] | None = None) -> None:
        super().__init__(model_id="canned")
        self.turns = turns
        self.stamps = stamps
        self.served = 0

    def generate(
        self,
        messages: list[Any],
        stop_sequences: list[str] | None = None,
        response_format: dict[str, str] | None = None,
        tools_to_call_from: list[Any] | None = None,
        **kwargs: Any,
    ) -> ChatMessage:
        """The next canned reply: one tool call."""
        if self.stamps is not None:
            self.stamps.append(time.perf_counter())
        self.served += 1
        if self.served <= self.turns:
            name, arguments = "noop", {}
        else:
            name, arguments = "final_answer", {"answer": "done"}
        function = ChatMessageToolCallFunction(name=name, arguments=arguments)
        call = ChatMessageToolCall(id=f"call_{self.served}", type="function", function=function)
        return ChatMessage(role=MessageRole.ASSISTANT, content="", tool_calls=[call])


def _agent(model: CannedModel, turns: int) -> ToolCallingAgent:
    return ToolCallingAgent(
        tools=[noop], model=model, max_steps=turns + 2, verbosity_level=LogLevel.OFF
    )


def _check(output: Any, model: CannedModel, turns: int) -> None:
    if output != "done" or model.served != turns + 1:
        raise RuntimeError(
            f"smolagents run did not go as scripted: {output!r}, {model.served} calls"
        )


class Subject:
    """smolagents' tool-calling loop with a zero-latency canned model."""

    def sequential(self, sessions: int, turns: int) -> list[list[float]]:
        """Run ``sessions`` runs one after another (one agent, reset per run)."""
        stamps: list[float] = []
        model = CannedModel(turns, stamps)
        agent = _agent(model, turns)
        out: list[list[float]] = []
        for _ in range(sessions):
            model.served = 0
            _check(agent.run(_TASK), model, turns)
            out.append(stamps.copy())
            stamps.clear()
        return out

    def concurrent(self, sessions: int, turns: int) -> int:
        """Run ``sessions`` runs at once, interleaved; returns turns taken."""
        agents = [_agent(CannedModel(turns), turns) for _ in range(sessions)]
        live: list[tuple[int, Iterator[Any]]] = [
            (i, a.run(_TASK, stream=True)) for i, a in enumerate(agents)
        ]
        last: list[Any] = [None] * sessions
        while live:
            still: list[tuple[int, Iterator[Any]]] = []
            for i, run in live:
                try:
                    last[i] = next(run)
                except StopIteration:
                    continue
                still.append((i, run))
            live = still
        for agent, final in zip(agents, last, strict=True):
            _check(getattr(final, "output", final), agent.model, turns)
        return sum(agent.model.served for agent in agents)

    def close(self) -> None:
        """Nothing to clean up."""
