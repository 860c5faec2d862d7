"""A child registers its own group with gg's watchdog before it runs (issue 12 item 3).

gg used to register a command's group once its start had returned; a gg killed in
between left the command running (``test_signals.py`` caught it once in CI). Here
the window is made as wide as can be: the command is started by
:func:`gg.shell.spawn_shell`, which never registers it, and gg's process then ends
at once (``os._exit``: as a SIGKILL, nothing of gg's runs). Only the child's own
registration, written before its exec, can get it killed.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

from support import alive_with

_GG = r"""
import asyncio, os, sys
from pathlib import Path
from gg.shell import scrubbed_env, spawn_shell
marker, cwd = sys.argv[1], Path(sys.argv[2])

def running():
    count = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            count += marker.encode() in open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        except OSError:
            pass
    return count

async def go():
    await spawn_shell(f"sleep 300 {marker} & sleep 300 {marker}", cwd=cwd, env=scrubbed_env(),
                      stdin=False)
    while running() < 2:
        await asyncio.sleep(0.01)

asyncio.run(go())
os._exit(0)
"""


def test_a_command_started_but_not_yet_registered_dies_with_gg(tmp_path: Path) -> None:
    marker = "0." + "".join(str(secrets.randbelow(10)) for _ in range(12))
    gg = subprocess.run([sys.executable, "-c", _GG, marker, str(tmp_path)], timeout=60)
    assert gg.returncode == 0
    deadline = time.monotonic() + 10
    while (left := alive_with(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, f"the command outlived gg: {left}"
