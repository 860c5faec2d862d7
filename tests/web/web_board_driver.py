"""A scripted board in its own process, for the browser tests: ``python web_board_driver.py R``.

Three issues, one reviewer, a function model that answers by session:

- #1 is fixed, gets a request for changes in round 1 (its item carries HTML), then is
  approved and merged;
- #2 has a hostile title and a hostile summary (HTML and script) and is approved at once;
- #3's implementer never calls a tool, so a ceiling stops it: the issue is stuck, with
  a diagnosis.

``GG_WEB_DELAY=S`` makes every model reply wait S seconds first, so a test can watch the
page follow the run while it goes on.
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
from gg.testing import FunctionModel, call, text

DELAY = float(os.environ.get("GG_WEB_DELAY", "0") or 0)
HOSTILE = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=1">'
"""Markup that would set ``window.__pwned`` if a page ran it instead of showing it."""
ITEM = f"Add a docstring to greet {HOSTILE}"
HOSTILE_TITLE = 'Say farewell <img src=x onerror="window.__pwned=1">'
HOSTILE_SUMMARY = f"Added farewell. {HOSTILE}"


def implementer(n: int, messages: list[Any]) -> gg.Reply:
    asked = [
        i for i, m in enumerate(messages) if m.role == "user" and "requested changes" in m.content
    ]
    since = messages[asked[-1] :] if asked else messages
    k = min(sum(1 for m in since if m.role == "assistant"), 1)
    if n == 3:
        return text("I will think about it some more.")
    if asked:
        return [
            call("write_file", path="greet.py", content=GREET_DOC),
            call("finish", summary="Added the docstring."),
        ][k]
    if n == 1:
        return [
            call("write_file", path="greet.py", content=GREET_FIXED),
            call("finish", summary="Fixed greet."),
        ][k]
    return [
        call("write_file", path="farewell.py", content=FAREWELL),
        call("finish", summary=HOSTILE_SUMMARY),
    ][k]


async def answer(messages: list[Any], tools: list[gg.ToolSpec]) -> gg.Reply:
    if DELAY:
        await asyncio.sleep(DELAY)
    job, n = job_of(messages)
    if job == "implement":
        return implementer(n, messages)
    if job == "review":
        found = re.search(r"round (\d+)\)", messages[1].content)
        if n == 1 and found and found[1] == "1":
            return call("request_changes", items=[ITEM])
        return call("approve")
    return call("finish", summary="Merged.")


def main() -> int:
    board = Board(
        Path(sys.argv[1]),
        model=FunctionModel(answer),
        reviewers=1,
        max_rounds=2,
        concurrency=1,  # one issue after another: #2 starts from #1's merge
        ceilings={"max_turns": 4, "consecutive_errors": 2},
    )
    if not board.list():
        board.add("Greet politely", body="greet('Ann') must return 'Hello, Ann!'.")
        board.add(HOSTILE_TITLE)
        board.add("Never done")
    return board.run().exit_code


if __name__ == "__main__":
    sys.exit(main())
