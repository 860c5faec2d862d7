"""gg as a bench subject: the real session loop, a zero-latency function model, one tool.

Each session is a real :meth:`gg.Run.session`: the system prompt, the offered
specs, the tool-calling mode, ceilings, the ending gate, and the stream writer
appending to a real file in a temporary directory, synced at every turn end
with ``fsync = "turn"`` (the default) or left to the OS with ``"never"``.

The model answers ``noop()`` until the session has taken its tool turns, then
``finish(summary)``. It decides from the length of the conversation, so one
model serves every session of the run, interleaved or not.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from gg.config import settings_from_dict
from gg.hooks import Gate
from gg.models.base import Message, Reply, ToolCall, ToolSpec
from gg.run import Run
from gg.testing import FunctionModel
from gg.tools.registry import Registry, tool

__all__ = ["Subject"]

_FIRST = 2
"""Messages before the first reply: the system prompt and the task."""
_PER_TURN = 2
"""Messages one tool turn adds: the reply and the tool result."""


def noop() -> str:
    """Do nothing and say so."""
    return "ok"


def _registry() -> Registry:
    registry = Registry()
    registry.register(tool(noop), capability="bench")
    return registry


def _reply(messages: list[Message], turns: int) -> Reply:
    # Like a provider's reply (and like the peers' fake models), each call has an id.
    call_id = f"call_{len(messages)}"
    if len(messages) < _FIRST + _PER_TURN * turns:
        return Reply(tool_calls=(ToolCall(name="noop", arguments={}, id=call_id),))
    return Reply(tool_calls=(ToolCall(name="finish", arguments={"summary": "done"}, id=call_id),))


class Subject:
    """gg with the stream's ``fsync`` set to ``"turn"`` or ``"never"``.

    Args:
        fsync: the ``[stream] fsync`` setting.
    """

    def __init__(self, *, fsync: str) -> None:
        self.fsync = fsync
        self._tmp = tempfile.TemporaryDirectory(prefix="gg-bench-")
        self._workspace = Path(self._tmp.name)
        self._registry = _registry()

    def _run(self, model: FunctionModel, turns: int) -> Run:
        settings = settings_from_dict(
            {
                "tools": {"capabilities": ["bench"]},
                # the same trivial call every turn, on purpose: no repeated-call ceiling
                "ceilings": {"max_turns": turns + 1, "repeated_calls": 0},
                "stream": {"fsync": self.fsync},
            }
        )
        return Run(
            workspace=self._workspace,
            model=model,
            settings=settings,
            registry=self._registry,
            gate=Gate(),
        )

    def sequential(self, sessions: int, turns: int) -> list[list[float]]:
        """Run ``sessions`` sessions one after another; each model call's time, per session."""
        stamps: list[float] = []

        def respond(messages: list[Message], tools: list[ToolSpec]) -> Reply:
            stamps.append(time.perf_counter())
            return _reply(messages, turns)

        run = self._run(FunctionModel(respond, name="bench"), turns)
        out: list[list[float]] = []

        async def go() -> None:
            for _ in range(sessions):
                result = await run.session("Call noop until told otherwise.")
                _check(result, turns)
                out.append(stamps.copy())
                stamps.clear()

        try:
            asyncio.run(go())
        finally:
            run.end("ended")
        return out

    def concurrent(self, sessions: int, turns: int) -> int:
        """Run ``sessions`` sessions of one run at once (``asyncio.gather``); returns turns taken.

        The model yields to the event loop once per call, as a real model call
        does, so every session is alive until the last ones end.
        """

        async def respond(messages: list[Message], tools: list[ToolSpec]) -> Reply:
            await asyncio.sleep(0)
            return _reply(messages, turns)

        run = self._run(FunctionModel(respond, name="bench"), turns)

        async def go() -> int:
            results = await asyncio.gather(
                *(run.session("Call noop until told otherwise.") for _ in range(sessions))
            )
            for result in results:
                _check(result, turns)
            return sum(r.turns for r in results)

        try:
            return asyncio.run(go())
        finally:
            run.end("ended")

    def close(self) -> None:
        """Remove the temporary workspace and its stream."""
        self._tmp.cleanup()


def _check(result: Any, turns: int) -> None:
    if result.status != "ended" or result.turns != turns + 1:
        raise RuntimeError(f"gg session did not run as scripted: {result!r}")
