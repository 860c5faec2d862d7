"""Zygote.close waits on its descendants' pidfds whatever their numbers (gg.sandbox.zygote)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from gg.sandbox import zygote


def test_await_ended_takes_pidfds_above_fd_setsize() -> None:
    """A gg with over 1024 descriptors open (sessions, sockets) still waits for the processes.

    ``select.select`` refuses any descriptor >= FD_SETSIZE with ``ValueError``, which made
    ``Zygote.close`` raise half-way (its run directory and slot left behind).
    """
    filler = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.3)"])
    try:
        fds = zygote._pidfds([proc.pid])
        assert fds and fds[0] >= 1024
        started = time.monotonic()
        zygote._await_ended(fds, 5.0)
        assert proc.poll() is not None or proc.wait(1) is not None
        assert time.monotonic() - started < 4.0
        for fd in fds:  # closed by _await_ended
            try:
                os.fstat(fd)
            except OSError:
                continue
            raise AssertionError(f"pidfd {fd} left open")
    finally:
        proc.kill()
        proc.wait()
        for fd in filler:
            os.close(fd)
