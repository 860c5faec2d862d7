"""scripts/watched, which runs scripts/test's pytest: a session of its own, a limit, signals.

Real processes: the script runs a small Python program in place of pytest.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

WATCHED = Path(__file__).resolve().parents[1] / "scripts" / "watched"

# Stands in for pytest: says where it is, registers SIGUSR1 as tests/conftest.py does, waits.
PROGRAM = """
import faulthandler, os, signal, sys, time
stacks = open(os.path.join(os.environ["GG_TEST_STACKS"], f"{os.getpid()}.txt"), "w")
faulthandler.register(signal.SIGUSR1, file=stacks, all_threads=True)
print(os.getpid(), os.environ["GG_TEST_STACKS"], flush=True)
time.sleep(float(sys.argv[1]))
sys.exit(int(sys.argv[2]))
"""


def _start(tmp_path: Path, seconds: float, code: int, limit: int) -> subprocess.Popen[str]:
    env = {**os.environ, "GG_TEST_LIMIT": str(limit)}
    program = tmp_path / "program.py"
    program.write_text(PROGRAM)
    argv = [str(WATCHED), sys.executable, str(program), str(seconds), str(code)]
    # a group of its own, as a shell's foreground job is: a Ctrl-C reaches the whole group
    return subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][0] != "Z"


def _sleeps(limit: int) -> list[int]:
    """The pids of ``sleep LIMIT`` processes (the watchdog's first sleep)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argv[:2] == [b"sleep", str(limit).encode()]:
                found.append(int(entry.name))
    return found


def test_its_status_is_the_commands_and_nothing_outlives_it(tmp_path: Path) -> None:
    for code in (0, 3):
        proc = _start(tmp_path, 0.1, code, limit=4321)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == code, err
        pid, stacks = out.split()
        assert not Path(stacks).exists()  # its temp dir went
        deadline = time.monotonic() + 5
        while _sleeps(4321) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _sleeps(4321) == []  # the watchdog's sleep went with the watchdog


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGHUP, signal.SIGTERM])
def test_a_signal_to_its_group_stops_the_command(tmp_path: Path, sig: signal.Signals) -> None:
    """A Ctrl-C (INT to the terminal's foreground group), a closed terminal (HUP), a TERM:
    the command, in a session of its own, gets it too and ends; so does the script."""
    proc = _start(tmp_path, 60, 0, limit=4322)
    assert proc.stdout is not None
    pid = int(proc.stdout.readline().split()[0])
    try:
        os.killpg(proc.pid, sig)
        proc.wait(timeout=15)
        assert proc.returncode != 0
        assert not _alive(pid)
    finally:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
        proc.kill()
        proc.communicate()


def test_past_its_limit_the_stacks_are_printed_and_the_command_stopped(tmp_path: Path) -> None:
    proc = _start(tmp_path, 120, 0, limit=1)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode != 0
    assert "outlived its 1 s" in err
    assert "--- pytest process" in err and "program.py" in err, err  # its stack
    assert not _alive(int(out.split()[0]))
