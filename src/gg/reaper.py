"""No child outlives gg: process groups killed on any exit, SIGKILL included (issue 12 item 3).

Every process gg starts for a run (agent-stop hooks, host-mode commands, the
sandbox's processes) runs in a process group of its own. gg kills that group
when the process ends, times out or is cancelled; that covers every exit gg
lives through (an ending, a ceiling, Ctrl-C, SIGTERM, SIGHUP, a full disk).

For the exits gg does not live through (SIGKILL, a crash of the interpreter),
:func:`watch` hands each group to a **watchdog**: a tiny process started
once, in its own session, that reads gg's registrations on a pipe. When the
pipe's write end closes, which the kernel does whenever gg's process ends,
however it ends, the watchdog SIGKILLs every group still registered and
exits. The pipe is close-on-exec, so no child of gg holds it open.

:func:`die_with_parent` runs in the child between fork and exec
(``preexec_fn``). First, the child registers its own group with the watchdog
(started beforehand by :func:`ready`), so no SIGKILL of gg can fall between
the start and the registration: before, gg registered a group once the
child's start returned, and a gg killed in that window left the command
running (a CI run caught it). Second belt: it sets ``PR_SET_PDEATHSIG`` so
the direct child gets SIGKILL when the thread that forked it ends. gg forks its children from
the event loop's thread, which lives as long as gg. The sandbox's bubblewrap
also gets ``--die-with-parent`` (:mod:`gg.sandbox.launch`).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable

__all__ = ["die_with_parent", "forget", "ready", "watch", "watchdog_pid"]

_PR_SET_PDEATHSIG = 1

_WATCHDOG = r"""
import os, signal, sys
for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGPIPE):
    signal.signal(s, signal.SIG_IGN)
groups = set()
for line in sys.stdin.buffer:
    op, _, pid = line.strip().partition(b" ")
    if pid.isdigit():
        (groups.add if op == b"+" else groups.discard)(int(pid))
for g in groups:
    try:
        os.killpg(g, signal.SIGKILL)
    except OSError:
        pass
"""
"""The watchdog's program: register ``+ PGID``, forget ``- PGID``; on EOF kill the rest."""

_lock = threading.Lock()
_proc: subprocess.Popen[bytes] | None = None
_owner = 0
"""The pid that started :data:`_proc` (a forked copy of gg must not write to it)."""
_fd = -1
"""The write end of :data:`_proc`'s pipe, for a child's own registration (-1: none)."""
_spawner = 0
"""The pid that last called :func:`ready`: the parent :func:`die_with_parent` expects."""


def _libc_prctl() -> Callable[..., int] | None:
    try:
        fn: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return fn


_PRCTL = _libc_prctl()


def die_with_parent() -> None:
    """In a child before exec: register its group with the watchdog; die with its parent.

    First ``prctl(PR_SET_PDEATHSIG, SIGKILL)`` (a no-op where ``prctl`` is missing); a
    parent gone before that (the child was re-parented) makes the child exit at once,
    so nothing runs after a gg killed at its fork. Then the group (the child leads it:
    ``start_new_session``) is written to the watchdog's pipe, when :func:`ready` started
    one in the parent, with SIGPIPE held off (a dead watchdog is an ignored ``EPIPE``,
    not the child's death). It takes no lock: another thread of gg may hold one at the
    fork (issue 12 item 3).
    """
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    parent, fd = _spawner, _fd
    if parent and os.getppid() != parent:
        os._exit(137)  # gg died before the death signal was set: it can no longer fire
    if fd < 0 or _owner != parent or os.getpgid(0) != os.getpid():
        return
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGPIPE})
    try:
        with contextlib.suppress(OSError):  # one short write: atomic
            os.write(fd, b"+ %d\n" % os.getpid())
        if signal.SIGPIPE in signal.sigpending():
            signal.sigtimedwait({signal.SIGPIPE}, 0)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def _start() -> subprocess.Popen[bytes] | None:
    """Start the watchdog (in its own session, cwd ``/``, isolated Python)."""
    try:
        return subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _WATCHDOG],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            cwd="/",
            env={},
        )
    except OSError:
        return None


def _send(line: bytes, *, start: bool) -> None:
    global _proc, _owner, _fd
    with _lock:
        if _proc is not None and (_owner != os.getpid() or _proc.poll() is not None):
            _fd = -1  # first: dropping _proc closes the fd this names
            _proc = None  # a fork of gg, or the watchdog died: start afresh
        if _proc is None:
            if not start:
                return
            _proc, _owner = _start(), os.getpid()
            _fd = _proc.stdin.fileno() if _proc is not None and _proc.stdin is not None else -1
        if _proc is None or _proc.stdin is None or not line:
            return
        try:
            _proc.stdin.write(line)
            _proc.stdin.flush()
        except OSError:
            _fd = -1
            _proc = None


def ready() -> None:
    """Start the watchdog now, if none runs (issue 12 item 3).

    Call it before starting a child whose ``preexec_fn`` is :func:`die_with_parent`,
    so that the child registers its own group. Never raises: where no watchdog can be
    started, the child registers nothing, and only its death signal is left.
    """
    global _spawner
    _send(b"", start=True)
    _spawner = os.getpid()


def watch(pgid: int) -> None:
    """Have the process group ``pgid`` killed if gg's process ends before :func:`forget`.

    Args:
        pgid: a process group gg made (a child started with ``start_new_session``).
    """
    _send(b"+ %d\n" % pgid, start=True)


def forget(pgid: int) -> None:
    """The group ``pgid`` is gone (gg killed or reaped it): the watchdog lets it be."""
    _send(b"- %d\n" % pgid, start=False)


def watchdog_pid() -> int | None:
    """The watchdog's pid while one runs for this process (tests), else ``None``."""
    with _lock:
        if _proc is None or _owner != os.getpid() or _proc.poll() is not None:
            return None
        return _proc.pid


def _close_at_exit() -> None:
    """At interpreter exit: close the pipe, so the watchdog kills what is left and ends."""
    global _fd
    _fd = -1
    with contextlib.suppress(Exception):
        if _proc is not None and _owner == os.getpid() and _proc.stdin is not None:
            _proc.stdin.close()


atexit.register(_close_at_exit)
