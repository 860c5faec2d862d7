"""Signals end a real ``gg run`` cleanly, and nothing gg started outlives it (issue 12 item 3).

Each test starts a real ``gg run`` subprocess whose hook or host command is a
real ``sleep`` carrying a unique marker argument, waits until that sleep is
running, signals gg, then scans /proc: no process with the marker may survive.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from gg.shell import run_shell, scrubbed_env, spawn_shell
from gg.state import state_path
from support import alive_with, ended_output, write_script

GG = [sys.executable, "-m", "gg"]


def _marker() -> str:
    """A unique argument for ``sleep`` (GNU sleep sums its arguments: 0.NNN adds < 1 s)."""
    return "0." + "".join(str(secrets.randbelow(10)) for _ in range(12))


def _wait_for(marker: str, proc: subprocess.Popen[Any], seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if alive_with(marker):
            return
        if proc.poll() is not None:
            raise AssertionError(f"gg ended before the sleep started: {ended_output(proc)}")
        time.sleep(0.05)
    proc.kill()
    raise AssertionError("the marked sleep never started")


def _none_survive(marker: str, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while (left := alive_with(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in left:  # clean up before failing
        os.kill(pid, signal.SIGKILL)
    assert not left, f"processes of the killed gg survived it: {left}"


def _setup(workspace: Path, tmp_path: Path, where: str, marker: str) -> list[str]:
    """The ``gg run`` command line: a sleeping hook (sandboxed or trusted on the host) or a
    sleeping host-mode command, each with a background sleep beside it."""
    sleep = f"sleep 300 {marker} & sleep 300 {marker}"
    if where.startswith("hook"):
        trusted = "trusted = true\n" if where == "hook-host" else ""
        (workspace / "gg.toml").write_text(
            f"[[hooks.agent_stop]]\ncommand = {json.dumps(sleep)}\n{trusted}"
        )
        replies = [{"tool_calls": [{"name": "finish", "arguments": {"summary": "x"}}]}]
    else:
        (workspace / "gg.toml").write_text('[sandbox]\ncommands = "host"\n')
        call = {"name": "run_command", "arguments": {"command": sleep, "timeout_s": 600}}
        replies = [{"tool_calls": [call]}]
    script = write_script(tmp_path / "r.json", replies)
    return [
        *GG, "run", "t", "-w", str(workspace), "--model", f"scripted:{script}", "--json",
        "--trust-config",
    ]  # fmt: skip


def _stream(workspace: Path) -> list[dict[str, Any]]:
    (stream,) = (state_path(workspace) / "runs").glob("*/stream.jsonl")
    return [json.loads(line) for line in stream.read_text().splitlines()]


@pytest.mark.parametrize(
    ("sig", "code", "where"),
    [
        (signal.SIGTERM, 143, "hook"),
        (signal.SIGTERM, 143, "hook-host"),
        (signal.SIGTERM, 143, "command"),
        (signal.SIGHUP, 129, "hook"),
        (signal.SIGHUP, 129, "command"),
        (signal.SIGINT, 130, "command"),
    ],
)
def test_a_signal_ends_the_run_cleanly_and_kills_its_children(
    workspace: Path, tmp_path: Path, sig: signal.Signals, code: int, where: str
) -> None:
    marker = _marker()
    argv = _setup(workspace, tmp_path, where, marker)
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for(marker, proc)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    result = json.loads(out)
    assert result["status"] == "stopped" and result["ending"] is None
    assert sig.name in result["diagnosis"]
    last = _stream(workspace)[-1]
    assert last["type"] == "run_ended" and last["exit_code"] == code
    assert sig.name in last["diagnosis"]
    assert "Traceback" not in err
    _none_survive(marker)


@pytest.mark.parametrize("where", ["hook", "hook-host", "command"])
def test_sigkill_of_gg_leaves_no_child_running(workspace: Path, tmp_path: Path, where: str) -> None:
    marker = _marker()
    argv = _setup(workspace, tmp_path, where, marker)
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _wait_for(marker, proc)
    proc.send_signal(signal.SIGKILL)  # gg gets no chance to clean up
    proc.wait(timeout=30)
    _none_survive(marker)
    assert _stream(workspace)[-1]["type"] != "run_ended"  # a real crash: nothing written


def test_a_cancel_while_a_command_starts_leaves_nothing_behind(tmp_path: Path) -> None:
    """A signal (or a deadline) that lands while a shell command is being started still
    kills it: the start is finished, then its group killed."""
    marker = _marker()

    async def slow_spawn(
        command: str, *, cwd: Path, env: Mapping[str, str], stdin: bool
    ) -> asyncio.subprocess.Process:
        proc = await spawn_shell(command, cwd=cwd, env=env, stdin=stdin)
        await asyncio.sleep(1)  # the process runs; its start has not returned yet
        return proc

    async def go() -> None:
        task = asyncio.create_task(
            run_shell(
                f"sleep 300 {marker}",
                cwd=tmp_path,
                env=scrubbed_env(),
                timeout_s=600,
                capture_limit=1000,
                spawn=slow_spawn,
            )
        )
        await asyncio.sleep(0.5)
        assert alive_with(marker)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, 10)

    asyncio.run(go())
    _none_survive(marker, seconds=2)
