"""The stream holds a program's call events and writes them together (issue 11).

Held lines are written, in order, by any other event, by a sync, after 50 ms, and a
failed write of them is reported by the next emit; nothing is held without a loop.
"""

from __future__ import annotations

import asyncio
import errno
import json
import os
from pathlib import Path

import pytest

from gg.errors import DiskFull
from gg.stream import ErrorTurn, StreamWriter, ToolCalled, ToolResult


def _call(i: int) -> list[ToolCalled | ToolResult]:
    return [
        ToolCalled(run_id="r", session_id="s1", turn=1, name="noop", arguments={"i": i}),
        ToolResult(run_id="r", session_id="s1", turn=1, name="noop", ok=True, excerpt=f"ok {i}"),
    ]


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_call_events_wait_for_the_next_other_event_in_order(tmp_path: Path) -> None:
    path = tmp_path / "stream.jsonl"
    writer = StreamWriter(path, fsync="never")
    for i in range(3):
        for event in _call(i):
            writer.emit(event)
    assert path.read_bytes() == b""  # held: no write per call
    writer.emit(ErrorTurn(run_id="r", session_id="s1", turn=1, kind="no_program", message="m"))
    kinds = [line["type"] for line in _lines(path)]
    assert kinds == ["tool_call", "tool_result"] * 3 + ["error_turn"]
    assert [line["seq"] for line in _lines(path)] == list(range(1, 8))
    writer.close()


async def test_held_events_are_written_soon_and_by_a_sync(tmp_path: Path) -> None:
    path = tmp_path / "stream.jsonl"
    writer = StreamWriter(path, fsync="turn")
    for event in _call(1):
        writer.emit(event)
    await asyncio.sleep(0.2)  # past the 50 ms hold
    assert len(_lines(path)) == 2
    for event in _call(2):
        writer.emit(event)
    await writer.sync_turn()
    assert len(_lines(path)) == 4
    writer.close()


def test_nothing_is_held_without_an_event_loop(tmp_path: Path) -> None:
    path = tmp_path / "stream.jsonl"
    writer = StreamWriter(path, fsync="never")
    writer.emit(_call(1)[0])
    assert len(_lines(path)) == 1
    writer.close()


async def test_a_failed_write_of_held_events_is_raised_by_the_next_emit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "stream.jsonl"
    writer = StreamWriter(path, fsync="never")
    writer.emit(_call(0)[0])
    writer.flush()
    real_write = os.write

    def full(fd: int, data: bytes) -> int:
        if fd == writer._fd:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", full)
    for event in _call(1):
        writer.emit(event)
    await asyncio.sleep(0.2)  # the timer's write fails
    with pytest.raises(DiskFull):
        writer.emit(_call(2)[0])
    monkeypatch.setattr(os, "write", real_write)
    writer.emit(ErrorTurn(run_id="r", session_id="s1", turn=1, kind="no_program", message="m"))
    lines = _lines(path)
    assert [line["type"] for line in lines] == ["tool_call", "error_turn"]
    assert [line["seq"] for line in lines] == [1, 2]  # the seal rolled back over the lost ones
    writer.close()
