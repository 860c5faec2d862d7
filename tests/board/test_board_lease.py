"""A runner's claims are renewed from a thread of its own (issue 17, lease renewal).

Real SQLite store files, real git repositories, a function model. A model that
blocks the event loop for longer than the lease must not lose its claims; a claim
another runner took over still stops that issue's work; the renewal thread never
outlives the run, whether it returns or raises.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from board_driver import implementer
from board_support import job_of, make_repo, run_losing_the_claim

import gg
from gg.board import Board, IssueState, SqliteStore
from gg.board.errors import BoardError
from gg.board.sqlite import default_path
from gg.board.store import Issue, now_iso
from gg.testing import FunctionModel, call

S = IssueState
THREAD = "gg-board-lease["


def renewal_threads() -> list[str]:
    """The names of the lease renewal threads alive in this process."""
    return [t.name for t in threading.enumerate() if t.name.startswith(THREAD)]


def reply(messages: list[Any]) -> gg.Reply:
    """The answer of a session that goes straight through: fix, approve, merge."""
    job, n = job_of(messages)
    if job == "implement":
        return implementer(n, messages)
    if job == "review":
        return call("approve")
    return call("finish", summary="Merged.")


def test_a_model_that_blocks_the_loop_past_the_lease_keeps_its_claim(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    seen: list[tuple[list[int], Issue | None]] = []

    def answer(messages: list[Any], tools: list[gg.ToolSpec]) -> gg.Reply:
        if job_of(messages)[0] == "implement" and not seen:
            other = SqliteStore(default_path(repo))  # a second handle: another runner's
            try:
                for _ in range(6):  # the event loop blocked for 3 s: three leases
                    time.sleep(0.5)
                    live = other.claimed_elsewhere("elsewhere")  # held by a live runner
                    seen.append((live, other.claim_next("elsewhere", lease_s=60)))
            finally:
                other.close()
        return reply(messages)

    board = Board(repo, model=FunctionModel(answer), reviewers=1, concurrency=1)
    board.claim_lease_s, board.claim_poll_s = 1.0, 0.1
    board.add("Greet politely")
    result = board.run()
    # all through the block #1 was held, live, by this runner: no other could take it
    assert seen == [([1], None)] * 6
    assert result.status == "ended", result.diagnosis
    issue = board.store.issue(1)
    assert issue.state is S.DONE and issue.merge_sha
    assert renewal_threads() == []
    board.close()


def test_a_claim_taken_over_while_working_stops_that_issue(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    said: list[tuple[str, str]] = []
    alive: list[list[str]] = []

    async def answer(messages: list[Any], tools: list[gg.ToolSpec]) -> gg.Reply:
        if not alive:  # another runner took #1 over (as if this one's lease had run out)
            alive.append(renewal_threads())
            with sqlite3.connect(default_path(repo)) as db:
                db.execute(
                    "UPDATE issues SET claimed_by = 'elsewhere', claimed_until = ? "
                    "WHERE number = 1",
                    (now_iso(after=3),),
                )
            await asyncio.sleep(30)  # still working when the renewal finds out
        return reply(messages)

    def progress(text: str) -> None:
        said.append((threading.current_thread().name, text))

    board = Board(repo, model=FunctionModel(answer), reviewers=1, concurrency=1, progress=progress)
    run_losing_the_claim(board)
    assert alive == [[f"{THREAD}{board.runner}]"]]  # the renewal ran in its thread
    stop = "issue #1: lost its claim to another runner; stopping it"
    assert (threading.current_thread().name, stop) in said  # acted on the loop's thread
    assert renewal_threads() == []
    board.close()


class FailingRenewal(SqliteStore):
    """The real SQLite store, whose renewal raises ``error`` (a fault injected)."""

    def __init__(self, path: Path, error: Exception) -> None:
        super().__init__(path)
        self.error = error
        self.renewals = 0

    def renew(self, runner: str, *, lease_s: float) -> set[int]:
        """Raise ``error`` instead of renewing."""
        self.renewals += 1
        raise self.error


def test_a_renewal_that_breaks_stops_the_run_with_its_error(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    store = FailingRenewal(default_path(repo), LookupError("renewal defect"))

    async def answer(messages: list[Any], tools: list[gg.ToolSpec]) -> gg.Reply:
        await asyncio.sleep(30)  # working when the renewal breaks
        return reply(messages)

    board = Board(repo, store=store, model=FunctionModel(answer), reviewers=1, concurrency=1)
    board.claim_lease_s, board.claim_poll_s = 0.3, 0.1
    board.add("Greet politely")
    started = time.monotonic()
    with pytest.raises(LookupError, match="renewal defect") as caught:
        board.run()
    assert time.monotonic() - started < 20  # the sleeping session was stopped
    assert any("lease renewal thread" in note for note in caught.value.__notes__)
    assert store.renewals == 1  # the thread ended at the defect
    assert renewal_threads() == []
    assert store.claimed_elsewhere("elsewhere") == []  # this runner's claims released
    assert store.issue(1).state is not S.DONE
    board.close()


def test_a_renewal_the_store_refuses_is_skipped(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    error = BoardError("the store is busy", code="store", operation="renew the claims")
    store = FailingRenewal(default_path(repo), error)

    async def answer(messages: list[Any], tools: list[gg.ToolSpec]) -> gg.Reply:
        if job_of(messages)[0] == "implement" and store.renewals < 3:
            await asyncio.sleep(1.0)  # a few renewals fail while the issue is worked on
        return reply(messages)

    board = Board(repo, store=store, model=FunctionModel(answer), reviewers=1, concurrency=1)
    board.claim_lease_s, board.claim_poll_s = 0.3, 0.1
    board.add("Greet politely")
    result = board.run()
    assert store.renewals >= 3  # the thread went on renewing after each refusal
    assert result.status == "ended", result.diagnosis
    assert store.issue(1).state is S.DONE
    assert renewal_threads() == []
    board.close()
