"""One of several board runners on one PostgreSQL board: ``python pg_driver.py REPO URL``.

Every issue ``#N`` is implemented by writing ``issue_N.py`` (after a pause of
``GG_TEST_PAUSE_S`` seconds, so that runners overlap), approved by its one
reviewer and merged. Prints nothing; the exit code is the board run's.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

from board_support import job_of, replies_so_far

import gg
from gg.board import Board
from gg.board.postgres import PostgresStore
from gg.testing import FunctionModel, call

PAUSE_S = float(os.environ.get("GG_TEST_PAUSE_S", "0.5"))


async def answer(messages: list[Any], tools: list[gg.ToolSpec]) -> gg.Reply:
    job, n = job_of(messages)
    if job == "implement":
        if replies_so_far(messages) == 0:
            await asyncio.sleep(PAUSE_S)
            return call("write_file", path=f"issue_{n}.py", content=f"N = {n}\n")
        return call("finish", summary=f"Wrote issue_{n}.py.")
    if job == "review":
        return call("approve")
    return call("finish", summary="Merged.")


def main() -> int:
    board = Board(
        Path(sys.argv[1]),
        store=PostgresStore(sys.argv[2]),
        model=FunctionModel(answer),
        reviewers=1,
        concurrency=int(os.environ.get("GG_TEST_CONCURRENCY", "1")),
    )
    board.claim_poll_s = 0.2
    with board:
        result = board.run()
        if result.diagnosis:
            print(result.diagnosis, file=sys.stderr)
        return result.exit_code


if __name__ == "__main__":
    sys.exit(main())
