"""A board run in its own process, killed mid-session by the tests: ``python ... REPO``.

One issue, one reviewer; a function model that answers by conversation (so a
continued session is answered as the uninterrupted one was). The implementer
writes, spawns a subagent, runs a command and finishes; the subagent writes,
runs a command and finishes; the reviewer runs a command and approves.
``GG_TEST_SLOW=implementer|subagent|reviewer`` makes that session's command
sleep 2 s, so the test can kill the process while it runs;
``GG_TEST_KILL_ON=TYPE:N`` makes the process SIGKILL itself right after the
N-th stream event of that type is written.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

from board_support import GREET_FIXED

import gg
from gg.board import Board
from gg.testing import FunctionModel, call

SLOW = os.environ.get("GG_TEST_SLOW", "")
KILL_ON = os.environ.get("GG_TEST_KILL_ON", "")
SUBTASK = "Write DOC.md describing greet"


def command(who: str, log: str | None = None) -> gg.Reply:
    pause = 2 if who == SLOW else 0
    out = f" >> {log}" if log else ""
    return call("run_command", command=f"sleep {pause}; echo {who}{out}")


def replies(messages: list[Any]) -> int:
    return sum(1 for m in messages if m.role == "assistant")


async def answer(messages: list[Any], tools: list[gg.ToolSpec]) -> gg.Reply:
    task = next(m.content for m in messages if m.role == "user")
    k = replies(messages)
    if task.startswith("Implement issue"):
        return [
            call("write_file", path="greet.py", content=GREET_FIXED),
            call("spawn", task=SUBTASK),
            command("implementer", "check.log"),
            call("finish", summary="Fixed greet, with its doc."),
        ][min(k, 3)]
    if task == SUBTASK:
        return [
            call("write_file", path="DOC.md", content="greet(name) greets politely.\n"),
            command("subagent", "doc.log"),
            call("finish", summary="DOC.md written."),
        ][min(k, 2)]
    if task.startswith("Review issue"):
        return [command("reviewer"), call("approve")][min(k, 1)]
    return call("finish", summary="Merged.")


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


def main() -> int:
    board = Board(
        Path(sys.argv[1]),
        model=FunctionModel(answer),
        reviewers=1,
        max_rounds=2,
        listeners=[Killer(KILL_ON)],
    )
    if not board.list():
        board.add("Greet politely", body="greet('Ann') must return 'Hello, Ann!'.")
    return board.run(signals=True).exit_code


if __name__ == "__main__":
    sys.exit(main())
