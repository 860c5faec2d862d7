"""A run with concurrent subagents in its own process, killed by the tests at an event.

``python resume_driver.py WORKSPACE``: the root spawns two subagents at once
(``spawn_all``); each writes its file, the second also runs a command, and each
finishes; the root finishes with their summaries. A function model answers by
conversation, so a resumed session is answered as the uninterrupted one was.
``GG_TEST_KILL_ON=TYPE:N`` SIGKILLs the process right after the N-th stream
event of that type is written.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import gg
from gg.config import settings_from_dict
from gg.testing import FunctionModel, call

TASKS = ["count the apples", "count the pears"]
SETTINGS = {"tools": {"capabilities": ["files", "shell", "agents"]}}


async def answer(messages: list[Any], tools: list[gg.ToolSpec]) -> gg.Reply:
    """The root's and the subagents' replies, by conversation."""
    task = next(m.content for m in messages if m.role == "user")
    k = sum(1 for m in messages if m.role == "assistant")
    if task == TASKS[0]:
        return [
            call("write_file", path="apples.txt", content="3"),
            call("finish", summary="3 apples"),
        ][min(k, 1)]
    if task == TASKS[1]:
        return [
            call("write_file", path="pears.txt", content="5"),
            call("run_command", command="echo counted >> pears.log"),
            call("finish", summary="5 pears"),
        ][min(k, 2)]
    if k == 0:
        return call("spawn_all", tasks=TASKS)
    entries = json.loads(messages[-1].content)
    return call("finish", summary=" and ".join(e["summary"] for e in entries))


class Killer:
    """A stream listener that SIGKILLs this process after the N-th event of a type."""

    def __init__(self, spec: str) -> None:
        kind, _, n = spec.partition(":")
        self.kind, self.left = kind, int(n or 1)

    def __call__(self, event: Any) -> None:
        if self.kind and event.type == self.kind:
            self.left -= 1
            if self.left == 0:
                os.kill(os.getpid(), signal.SIGKILL)


def agent(workspace: Path, kill_on: str = "") -> gg.Agent:
    """The agent of the run (``kill_on``: the event it dies after)."""
    return gg.Agent(
        model=FunctionModel(answer),
        workspace=workspace,
        settings=settings_from_dict(SETTINGS),
        listeners=[Killer(kill_on)],
    )


if __name__ == "__main__":
    result = agent(Path(sys.argv[1]), os.environ.get("GG_TEST_KILL_ON", "")).run("coordinate")
    sys.exit(0 if result.status == "ended" else 1)
