"""A git command past its timeout ends the call, even while a process that left git's
group still holds git's output pipes (Python 3.11's ``Process.wait()`` also waits for
every pipe to close: after the kill, an unbounded wait there never returned)."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import pytest

from gg.board.errors import BoardError
from gg.board.git import Git


async def test_a_timed_out_command_ends_though_an_escaped_child_holds_its_pipes(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git = Git(repo, timeout_s=0.5)
    pid_file = tmp_path / "holder.pid"
    script = f"setsid sh -c 'echo $$ > {pid_file}; exec sleep 120' & sleep 120"
    started = time.monotonic()
    try:
        with pytest.raises(BoardError, match="did not finish"):
            await asyncio.wait_for(
                git._exec(["sh", "-c", script], cwd=repo, env=dict(os.environ), check=True,
                          op="git slow"),
                20,
            )  # fmt: skip
        assert time.monotonic() - started < 15
    finally:
        if pid_file.exists():
            os.kill(int(pid_file.read_text()), signal.SIGKILL)


async def test_a_cancelled_command_lets_go_of_pipes_an_escaped_child_holds(
    tmp_path: Path,
) -> None:
    """Cancelled (the run stopping) while a process that left git's group holds git's
    pipes: gg's ends are closed at once, not kept by the loop as long as the holder lives."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git = Git(repo, timeout_s=60)
    pid_file = tmp_path / "holder.pid"
    script = f"setsid sh -c 'echo $$ > {pid_file}; exec sleep 120' & sleep 120"
    before = set(os.listdir("/proc/self/fd"))
    try:
        call = git._exec(["sh", "-c", script], cwd=repo, env=dict(os.environ), check=True,
                         op="git slow")  # fmt: skip
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(call, 1.0)
        await asyncio.sleep(0.2)  # the killed sh is reaped meanwhile
        assert pid_file.exists()
        assert set(os.listdir("/proc/self/fd")) - before == set()
    finally:
        if pid_file.exists():
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
