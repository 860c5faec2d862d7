"""The shell runner: one command through ``/bin/sh``, bounded in time and output (SPEC M3, H1).

Shared by the ``run_command`` built-in when commands run on the host
(``[sandbox] commands = "host"``), by trusted and sandbox-less agent-stop
hooks (:mod:`gg.hooks`), and, for its result type, by the sandbox's own
shell (:meth:`gg.sandbox.Sandbox.run_shell`): every shell command gg runs
ends as one :class:`ShellResult`.

:func:`run_shell` runs the command in its own process group with a scrubbed
environment (:func:`scrubbed_env`), feeds it optional stdin, keeps the head
and tail of each of stdout and stderr, and kills the whole group when the
command exits, times out or the caller is cancelled.

What this module does not promise: isolation. On the host, a command runs
with the user's rights (the callers wrap it in :func:`gg.guard.host_command`
as root); the sandbox is what confines it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from gg import reaper
from gg.text import cut_marker

__all__ = [
    "ShellResult",
    "Spawn",
    "drop_pipes",
    "exited",
    "run_shell",
    "scrubbed_env",
    "spawn_shell",
]

_ENV_KEEP = frozenset(
    {"PATH", "HOME", "LANG", "LANGUAGE", "TERM", "TZ", "USER", "LOGNAME", "SHELL",
     "TMPDIR", "TEMP", "TMP", "COLUMNS", "LINES"}
)  # fmt: skip


def scrubbed_env(pass_env: tuple[str, ...] = ()) -> dict[str, str]:
    """The environment a command gets: gg's, minus everything not on a short allowlist.

    Kept: ``PATH``, ``HOME``, ``LANG``, ``LC_*``, ``TERM``, ``TZ``, ``USER``,
    ``SHELL``, temp-dir variables and the like; never API keys or other
    secrets (SPEC M3, C3).

    Args:
        pass_env: further variable names to pass through (a hook's explicit opt-in).
    """
    keep = _ENV_KEEP.union(pass_env)
    return {k: v for k, v in os.environ.items() if k in keep or k.startswith("LC_")}


class Spawn(Protocol):
    """Starts a shell command as a process; swap it to run commands elsewhere (a sandbox)."""

    async def __call__(
        self, command: str, *, cwd: Path, env: Mapping[str, str], stdin: bool
    ) -> asyncio.subprocess.Process:
        """Start ``command`` with pipes for stdout and stderr (and stdin when asked)."""
        ...


async def spawn_shell(
    command: str, *, cwd: Path, env: Mapping[str, str], stdin: bool
) -> asyncio.subprocess.Process:
    """Start ``command`` through ``/bin/sh`` in its own session (so its group can be killed).

    Raises:
        OSError: the process could not start (e.g. ``cwd`` is missing).
    """
    reaper.ready()  # the child registers its own group (gg.reaper)
    return await asyncio.create_subprocess_shell(
        command,
        cwd=cwd,
        env=dict(env),
        stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
        preexec_fn=reaper.die_with_parent,  # issue 12: dies with gg, SIGKILL included
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class ShellResult:
    """How one shell command went, on the host or in the sandbox.

    On the host by :func:`run_shell`, in the sandbox by :meth:`gg.sandbox.Sandbox.run_shell`;
    used by ``run_command`` and agent-stop hooks (SPEC T1, H1).
    """

    exit_code: int | None
    """Its exit status; negative (``-9``) when a signal (or gg, past a cap) killed it;
    ``None`` when its timeout killed it."""
    output: str
    """Standard output; stdout and stderr interleaved when :attr:`stderr` is ``None``.
    Past the capture limit, the head and the tail with a cut marker (:mod:`gg.text`)."""
    stderr: str | None = None
    """Standard error, kept apart (same capping); ``None`` when interleaved into ``output``."""
    timed_out: bool
    """True when the timeout killed it (and everything it started)."""
    seconds: float
    """Wall time from start to exit, in seconds."""
    limit: str | None = None
    """The sandbox limit that stopped it (``"write_bytes"``, ``"write_files"``, ``"wall"``
    on a timeout), else ``None``. Always ``None`` on the host."""


class _Capture:
    """Keeps the head and tail of a byte stream, up to ``limit`` bytes in all."""

    def __init__(self, limit: int) -> None:
        self.head, self.tail, self.total = bytearray(), bytearray(), 0
        self.head_limit, self.tail_limit = limit - limit // 2, limit // 2

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk and self.tail_limit:
            self.tail += chunk
            del self.tail[: max(len(self.tail) - self.tail_limit, 0)]

    def text(self) -> str:
        cut = self.total - len(self.head) - len(self.tail)
        mid = f"\n{cut_marker(cut, 'bytes')}\n" if cut else ""
        return self.head.decode("utf-8", "replace") + mid + self.tail.decode("utf-8", "replace")


async def _pump(stream: asyncio.StreamReader | None, capture: _Capture) -> None:
    if stream is None:
        return
    while chunk := await stream.read(65_536):
        capture.add(chunk)


async def _feed(proc: asyncio.subprocess.Process, data: bytes) -> None:
    if proc.stdin is None:
        return
    try:
        proc.stdin.write(data)
        await proc.stdin.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass  # the command does not read its stdin: fine
    finally:
        proc.stdin.close()


async def exited(proc: asyncio.subprocess.Process) -> None:
    """Return once ``proc`` has exited, even while a grandchild holds its pipes open.

    Python 3.11's ``Process.wait()`` also waits for every pipe to close, so
    this polls the exit status (backing off from 1 ms to 50 ms) beside it. Never
    raises; bound it with ``asyncio.wait_for`` (a process that never exits).
    """
    waiter = asyncio.ensure_future(proc.wait())
    delay = 0.001
    try:
        while proc.returncode is None and not waiter.done():
            await asyncio.wait({waiter}, timeout=delay)
            delay = min(delay * 2, 0.05)
    finally:
        waiter.cancel()


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


async def run_shell(
    command: str,
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout_s: float,
    stdin: bytes | None = None,
    capture_limit: int,
    spawn: Spawn = spawn_shell,
) -> ShellResult:
    """Run a shell command to its end or its timeout, then kill what it left running.

    The command runs in its own process group. When it exits, or its timeout
    passes, or the caller is cancelled, the whole group is killed (background
    jobs do not outlive it), and pipes still held open by an escaped
    grandchild are abandoned after a short grace, never waited on.

    Args:
        command: a ``/bin/sh`` command line.
        cwd: its working directory.
        env: its whole environment (see :func:`scrubbed_env`).
        timeout_s: wall-time limit in seconds.
        stdin: bytes written to its standard input, or ``None`` for no input.
        capture_limit: bytes kept of each of stdout and stderr (head and tail).
        spawn: how to start the process.

    Returns:
        A :class:`ShellResult`.

    Raises:
        OSError: the process could not be started.
    """
    start = time.monotonic()
    proc = await _started(spawn(command, cwd=cwd, env=env, stdin=stdin is not None))
    out, err = _Capture(capture_limit), _Capture(capture_limit)
    tasks = [
        asyncio.create_task(_pump(proc.stdout, out)),
        asyncio.create_task(_pump(proc.stderr, err)),
    ]
    if stdin is not None:
        tasks.append(asyncio.create_task(_feed(proc, stdin)))
    timed_out = False
    try:
        await asyncio.wait_for(exited(proc), timeout_s)
    except TimeoutError:
        timed_out = True
    finally:
        _kill_group(proc)
        await _settle(proc, tasks)
        reaper.forget(proc.pid)
    return ShellResult(
        exit_code=None if timed_out else proc.returncode,
        output=out.text(),
        stderr=err.text(),
        timed_out=timed_out,
        seconds=time.monotonic() - start,
    )


async def _started(
    spawning: Awaitable[asyncio.subprocess.Process],
) -> asyncio.subprocess.Process:
    """The started process, its group handed to :mod:`gg.reaper` (killed even if gg is).

    A cancellation while it starts (a signal, a deadline) waits for the start to
    finish, then kills the new group before it goes on: never a process left behind.
    """
    task = asyncio.ensure_future(spawning)
    try:
        proc = await asyncio.shield(task)
    except asyncio.CancelledError:
        with contextlib.suppress(OSError, TimeoutError):
            proc = await task
            _kill_group(proc)
            await asyncio.wait_for(exited(proc), 5)
            reaper.forget(proc.pid)  # it registered itself (gg.reaper.die_with_parent)
        raise
    reaper.watch(proc.pid)
    return proc


async def _settle(proc: asyncio.subprocess.Process, tasks: list[asyncio.Task[None]]) -> None:
    """Reap the killed process; give the pipe readers a short grace, then drop them."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(exited(proc), 5)
    _, pending = await asyncio.wait(tasks, timeout=0.5)
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.wait(pending)
        drop_pipes(proc)


def drop_pipes(proc: asyncio.subprocess.Process) -> None:
    """Close gg's ends of ``proc``'s pipes (it was killed), whoever else still holds them.

    Otherwise the event loop keeps them for as long as a process it left (``setsid``)
    holds the other ends. Idempotent; never raises.
    """
    transport = getattr(proc, "_transport", None)  # no public way to drop held pipes
    if transport is not None:
        transport.close()
