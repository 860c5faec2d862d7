"""A board run in its own process, for the crash tests: ``python board_driver.py REPO``.

Two issues, one reviewer, a function model that answers by session (so a
restarted run answers the same way). ``GG_TEST_SLOW_REVIEW=N:R`` makes the
reviewer of issue N in round R hang, so the test can SIGKILL the process
while that review runs. ``GG_TEST_STORE=postgresql://...`` runs the board on
that PostgreSQL store (issue 17) instead of the workspace's SQLite file.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
from pathlib import Path
from typing import Any

from board_support import FAREWELL, GREET_DOC, GREET_FIXED, job_of

import gg
from gg.board import Board
from gg.board.postgres import PostgresStore
from gg.testing import FunctionModel, call

SLOW = os.environ.get("GG_TEST_SLOW_REVIEW", "")


def implementer(n: int, messages: list[Any]) -> gg.Reply:
    asked = [
        i for i, m in enumerate(messages) if m.role == "user" and "requested changes" in m.content
    ]
    since = messages[asked[-1] :] if asked else messages
    k = sum(1 for m in since if m.role == "assistant")
    if asked:
        return [
            call("write_file", path="greet.py", content=GREET_DOC),
            call("finish", summary="Added the docstring."),
        ][min(k, 1)]
    if n == 1:
        return [
            call("write_file", path="greet.py", content=GREET_FIXED),
            call("finish", summary="Fixed greet."),
        ][min(k, 1)]
    return [
        call("write_file", path="farewell.py", content=FAREWELL),
        call("finish", summary="Added farewell."),
    ][min(k, 1)]


async def answer(messages: list[Any], tools: list[gg.ToolSpec]) -> gg.Reply:
    job, n = job_of(messages)
    if job == "implement":
        return implementer(n, messages)
    if job == "review":
        found = re.search(r"round (\d+)\)", messages[1].content)
        rnd = int(found[1]) if found else 0
        if f"{n}:{rnd}" == SLOW:
            await asyncio.sleep(3600)
        if n == 1 and rnd == 1:
            return call("request_changes", items=["Add a docstring to greet"])
        return call("approve")
    return call("finish", summary="Merged.")


def main() -> int:
    url = os.environ.get("GG_TEST_STORE", "")
    board = Board(
        Path(sys.argv[1]),
        store=PostgresStore(url) if url else None,
        model=FunctionModel(answer),
        reviewers=1,
        max_rounds=2,
        concurrency=int(os.environ.get("GG_TEST_CONCURRENCY", "1")),
    )
    if not board.list():
        board.add("Greet politely", body="greet('Ann') must return 'Hello, Ann!'.")
        board.add("Say farewell")
    return board.run().exit_code


if __name__ == "__main__":
    sys.exit(main())
