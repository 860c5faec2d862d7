"""pydantic-ai as a bench subject: an ``Agent`` driven by its ``FunctionModel``, one tool.

The model function answers with one ``noop`` tool call per step until the run
has taken its tool turns, then with text, which ends the run (the agent's
output type is ``str``). It decides from the length of the message history
(one request and one response per step), so one agent serves every run,
sequential or gathered. The request limit is lifted for long runs.
"""

from __future__ import annotations

import asyncio
import time

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import UsageLimits

__all__ = ["Subject"]

_LIMITS = UsageLimits(request_limit=None)
_TASK = "Call noop until told otherwise."


def _reply(messages: list[ModelMessage], turns: int) -> ModelResponse:
    if len(messages) // 2 < turns:
        return ModelResponse(parts=[ToolCallPart(tool_name="noop", args={})])
    return ModelResponse(parts=[TextPart("done")])


def _agent(model: FunctionModel) -> Agent[None, str]:
    agent: Agent[None, str] = Agent(model, instructions="You are benchmarked.")

    @agent.tool_plain
    def noop() -> str:
        """Do nothing and say so."""
        return "ok"

    return agent


def _check(output: str, calls: int, turns: int) -> None:
    if output != "done" or calls != turns + 1:
        raise RuntimeError(f"pydantic-ai run did not go as scripted: {output!r}, {calls} calls")


class Subject:
    """pydantic-ai's agent loop with a zero-latency ``FunctionModel``."""

    def sequential(self, sessions: int, turns: int) -> list[list[float]]:
        """Run ``sessions`` runs one after another; each model call's time, per run."""
        stamps: list[float] = []

        def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            stamps.append(time.perf_counter())
            return _reply(messages, turns)

        agent = _agent(FunctionModel(respond))
        out: list[list[float]] = []

        async def go() -> None:
            for _ in range(sessions):
                result = await agent.run(_TASK, usage_limits=_LIMITS)
                _check(result.output, len(stamps), turns)
                out.append(stamps.copy())
                stamps.clear()

        asyncio.run(go())
        return out

    def concurrent(self, sessions: int, turns: int) -> int:
        """Run ``sessions`` runs of one agent at once (``asyncio.gather``); returns turns taken."""

        async def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            await asyncio.sleep(0)
            return _reply(messages, turns)

        agent = _agent(FunctionModel(respond))

        async def go() -> int:
            results = await asyncio.gather(
                *(agent.run(_TASK, usage_limits=_LIMITS) for _ in range(sessions))
            )
            for result in results:
                _check(result.output, len(result.all_messages()) // 2, turns)
            return sessions * (turns + 1)

        return asyncio.run(go())

    def close(self) -> None:
        """Nothing to clean up."""
