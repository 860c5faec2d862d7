"""The stream's turn-end fsync: durable before a turn goes on, shared by concurrent sessions."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from gg.stream import StreamWriter, ToolResult


def _event(i: int) -> ToolResult:
    return ToolResult(run_id="r", session_id=f"s{i}", turn=1, name="noop", ok=True, excerpt="ok")


async def test_each_turn_waits_for_an_fsync_of_its_own_events(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "stream.jsonl"
    synced_sizes: list[int] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        size = os.fstat(fd).st_size
        real_fsync(fd)
        synced_sizes.append(size)

    monkeypatch.setattr(os, "fsync", fsync)
    writer = StreamWriter(path, fsync="turn")

    async def session(i: int) -> None:
        for _ in range(3):
            writer.emit(_event(i))
            mine = path.stat().st_size
            await writer.sync_turn()
            assert synced_sizes and max(synced_sizes) >= mine

    await asyncio.gather(*(session(i) for i in range(50)))
    assert 0 < len(synced_sizes) < 150  # group commit: fewer fsyncs than turns
    writer.close()


async def test_never_does_not_fsync(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    monkeypatch.setattr(os, "fsync", calls.append)
    writer = StreamWriter(tmp_path / "stream.jsonl", fsync="never")
    writer.emit(_event(1))
    await writer.sync_turn()
    writer.close()
    assert calls == []
