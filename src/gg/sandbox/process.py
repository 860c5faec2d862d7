"""Start one sandboxed process and watch it to the end: output, membrane, clock, cleanup.

The process's stdout and stderr share one pipe (interleaved, as written).
Program mode keeps the first ``output_bytes`` and kills the program past
them; shell mode keeps the head and the tail and kills only far past the cap.
The wall clock excludes time the membrane's handler spends on a call. When
anything ends the run (exit, limit, violation), the whole tree is killed:
bubblewrap and the ``unshare`` layer by their pid namespace; the ``rlimit``
layer by ``boot.py``'s reaper, a child subreaper outside the program's
confinement that kills every descendant (``setsid`` and double-fork escapes
included) when gg sends it SIGTERM or the program's process ends; and (when
gg is root) the ``unshare`` and ``rlimit`` layers also by ``kill(-1)`` as the
slot uid (see :mod:`gg.sandbox.accounts`). Then gg kills the process group.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from gg.reaper import forget as forget_group
from gg.reaper import watch as watch_group
from gg.sandbox.launch import Plan
from gg.sandbox.membrane import Membrane
from gg.sandbox.pipes import PipeReader, PipeWriter
from gg.sandbox.writes import POLL_S, WriteCap

__all__ = ["Child", "Outcome", "Started", "start", "supervise", "watch"]

_GRACE_S = 2.0
_REAPER_GRACE_S = 12.0  # boot.py's reaper gives up after 10 s
_CHUNK = 65536
_SHELL_KILL_FACTOR = 100


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    """What happened to one process."""

    returncode: int | None
    """Exit status as :mod:`subprocess` reports it (negative: killed by that signal)."""
    output: str
    """stdout+stderr, decoded (invalid UTF-8 replaced), cut with a marker when too long."""
    stopped: str | None
    """Why gg stopped it: ``"wall"``, ``"output"``, ``"membrane"``, ``"write_bytes"``,
    ``"write_files"`` (the write cap, :mod:`gg.sandbox.writes`); ``None`` if it ended itself."""
    seconds: float
    """Wall seconds from start to exit, time spent in SDK calls included (unlike the
    ``wall_s`` limit, which counts the program's own time only)."""


class _Output:
    def __init__(self, cap: int, *, keep_tail: bool) -> None:
        self.cap, self.keep_tail = cap, keep_tail
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.cap - len(self.head) if not self.keep_tail else self.cap // 2 - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if self.keep_tail and chunk:
            self.tail = (self.tail + chunk)[-(self.cap - self.cap // 2) :]

    @property
    def over(self) -> bool:
        return self.total > self.cap

    def text(self) -> str:
        head = self.head.decode("utf-8", "replace")
        if not self.over:
            return head + self.tail.decode("utf-8", "replace")
        if not self.keep_tail:
            return head + f"\n[gg: output cut at {self.cap} bytes]\n"
        cut = self.total - len(self.head) - len(self.tail)
        marker = f"\n[gg: output cut: {cut} of {self.total} bytes not shown]\n"
        return head + marker + self.tail.decode("utf-8", "replace")


class Child(Protocol):
    """A running sandboxed process gg watches.

    Either a :class:`subprocess.Popen` of its own, or a program forked by a warm zygote
    (:mod:`gg.sandbox.zygote`).
    """

    def poll(self) -> int | None:
        """Its exit status if it has ended (as :mod:`subprocess` reports it), else ``None``."""

    async def wait(self) -> None:
        """Return when it has ended."""

    async def stop(self) -> None:
        """Kill it and everything it started; return when it has ended (or been given up)."""


class _Watch:
    """The tasks watching one process; the first to call :meth:`stop` ends the run."""

    def __init__(self, child: Child, membrane: Membrane, wall_s: float) -> None:
        self.child, self.membrane, self.wall_s = child, membrane, wall_s
        self.started = time.monotonic()
        self.done: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()

    def stop(self, reason: str | None) -> None:
        if not self.done.done():
            self.done.set_result(reason)

    def program_seconds(self) -> float:
        m = self.membrane
        busy = m.handler_seconds + (
            time.monotonic() - m.handler_started if m.handler_started else 0
        )
        return time.monotonic() - self.started - busy

    async def clock(self) -> None:
        while True:
            if not self.membrane.idle.is_set():
                await self.membrane.idle.wait()
                continue
            left = self.wall_s - self.program_seconds()
            if left <= 0:
                self.stop("wall")
                return
            await asyncio.sleep(min(left, 1.0) + 0.005)

    async def read_output(self, reader: PipeReader, out: _Output, kill_at: int) -> None:
        """Read to EOF; past ``kill_at`` bytes ask for a stop, and keep draining (discarding)."""
        while chunk := await reader.read(_CHUNK):
            if out.total <= kill_at:
                out.add(chunk)
                if out.total > kill_at:
                    self.stop("output")

    async def serve(self, reader: PipeReader, writer: PipeWriter | None) -> None:
        try:
            await self.membrane.serve(reader, writer)
        except BaseException:
            self.stop("error")  # the handler raised: end the program, then re-raise
            raise
        if self.membrane.violation:
            self.stop("membrane")

    async def writes(self, cap: WriteCap) -> None:
        """Poll the write cap's cheap trigger; on it, check (off the loop) and stop if passed."""
        while True:
            await asyncio.sleep(POLL_S)
            if cap.triggered() and (passed := await asyncio.to_thread(cap.check)):
                self.stop(passed)
                return

    async def wait_exit(self) -> None:
        """Wait for the process itself to end (not its pipes), then reap it."""
        await self.child.wait()
        self.stop(None)


async def _exited(proc: subprocess.Popen[bytes]) -> int:
    loop = asyncio.get_running_loop()
    try:
        pidfd: int | None = os.pidfd_open(proc.pid)
    except (OSError, AttributeError):
        pidfd = None  # already reaped, or no pidfd here: poll
    if pidfd is not None:
        ready: asyncio.Future[None] = loop.create_future()

        def readable() -> None:
            if not ready.done():
                ready.set_result(None)

        loop.add_reader(pidfd, readable)
        try:
            await ready
        finally:
            loop.remove_reader(pidfd)
            os.close(pidfd)
    while (code := proc.poll()) is None:
        await asyncio.sleep(0.02)
    return code


def _spawn(plan: Plan, child_fds: list[int], out_write: int) -> subprocess.Popen[bytes]:
    try:
        proc = subprocess.Popen(
            plan.argv,
            stdin=subprocess.DEVNULL if plan.stdin is None else plan.stdin,
            stdout=out_write,
            stderr=out_write,
            env=plan.env,
            pass_fds=plan.pass_fds,
            start_new_session=True,
            user=plan.user,
            group=plan.group,
            extra_groups=[] if plan.user is not None else None,
            cwd="/",
        )
        watch_group(proc.pid)  # its group is killed even if gg is (issue 12 item 3)
        return proc
    finally:
        for fd in [*child_fds, *plan.fds, out_write]:
            with contextlib.suppress(OSError):
                os.close(fd)


def _kill(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()


async def _finish(task: asyncio.Task[None], timeout: float) -> None:
    """Let ``task`` end within ``timeout`` seconds, else cancel it; its outcome stays on it."""
    if task.done():
        return
    if timeout > 0:
        with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(task), timeout)
    if not task.done():
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


@dataclass(slots=True)
class Started:
    """A sandboxed process gg has started but not yet watched (see :func:`start`)."""

    child: Child
    """The running process."""
    fds: tuple[int, int, int | None]
    """gg's ends ``(output_read, requests_read, answers_write or None)``; :func:`watch`
    closes them, or :meth:`discard` does."""
    started: float
    """``time.monotonic()`` when it was started."""

    def discard(self) -> None:
        """Kill it (its whole group) and close gg's ends, without watching it (blocking).

        For a process that never got its program (a warm spare given up): nothing of a
        program ran in it. Under bubblewrap, its inner process leads a Unix session of its
        own (``--new-session``) and dies with bubblewrap by its death signal, which it sets
        only once it has started: killed earlier, it lives on until it reads the end of
        its answer pipe, which closing gg's ends here gives it (``runner.js`` then
        exits).
        """
        child = self.child
        if isinstance(child, _PopenChild):
            _kill(child.proc)
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.proc.wait(timeout=_GRACE_S)
            forget_group(child.proc.pid)
        for fd in self.fds:
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)


def start(plan: Plan, *, pipes: tuple[int, int | None, list[int]]) -> Started:
    """Start ``plan`` with a fresh output pipe; the first half of :func:`supervise`.

    Args:
        plan: what to start.
        pipes: gg's ends ``(requests_read_fd, answers_write_fd or None, child_ends)``;
            the child's ends are closed here once it has started (gg's on failure).

    Returns:
        The :class:`Started` process, to give to :func:`watch` (now or later: a warm
        spare waits for its program, issue 11).

    Raises:
        OSError: it could not be started.
    """
    req_fd, ans_fd, child_fds = pipes
    started = time.monotonic()
    out_read, out_write = os.pipe()
    try:
        proc = _spawn(plan, child_fds, out_write)
    except BaseException:
        for fd in (out_read, req_fd, ans_fd):
            if fd is not None:
                os.close(fd)
        raise
    return Started(_PopenChild(proc, reaper=plan.reaper), (out_read, req_fd, ans_fd), started)


async def supervise(
    plan: Plan,
    *,
    membrane: Membrane,
    pipes: tuple[int, int | None, list[int]],
    wall_s: float,
    output_bytes: int,
    shell: bool = False,
    sweep: Callable[[], None] | None = None,
    writes: WriteCap | None = None,
) -> Outcome:
    """Run ``plan`` to its end under the wall clock, the output cap and the membrane.

    :func:`start`, then :func:`watch`.

    Args:
        plan: what to start.
        membrane: serves the request pipe (and answers on the answer pipe).
        pipes: gg's ends ``(requests_read_fd, answers_write_fd or None, child_ends)``;
            the child's ends are closed here once it has started.
        wall_s: wall-clock seconds, not counting handler time.
        output_bytes: the output cap.
        shell: keep head and tail, and kill only at 100x the cap.
        sweep: called (in a thread) after the process ends, to kill stragglers.
        writes: the write cap to watch (checked once more after the end).

    Returns:
        The :class:`Outcome`. Exceptions raised by the membrane's handler propagate,
        after the process tree has been killed.
    """
    begun = start(plan, pipes=pipes)
    return await watch(
        begun.child, membrane=membrane, fds=begun.fds, started=begun.started, wall_s=wall_s,
        output_bytes=output_bytes, shell=shell, sweep=sweep, writes=writes,
    )  # fmt: skip


async def watch(
    child: Child,
    *,
    membrane: Membrane,
    fds: tuple[int, int, int | None],
    started: float,
    wall_s: float,
    output_bytes: int,
    shell: bool = False,
    sweep: Callable[[], None] | None = None,
    writes: WriteCap | None = None,
    go: Callable[[], Awaitable[None]] | None = None,
) -> Outcome:
    """Watch a started ``child`` to its end (see :func:`supervise`, whose arguments these are).

    Args:
        child: the running process.
        membrane: serves the request pipe.
        fds: gg's ends ``(output_read, requests_read, answers_write or None)``; closed here.
        started: ``time.monotonic()`` when it was started.
        wall_s: wall-clock seconds, not counting handler time.
        output_bytes: the output cap.
        shell: keep head and tail, and kill only at 100x the cap.
        sweep: called (in a thread) after the process ends, to kill stragglers.
        writes: the write cap to watch.
        go: lets a waiting process run, once all that watches it is in place (a woken
            process on a busy core waits for its waker to sleep). Its errors propagate.

    Returns:
        The :class:`Outcome`; the handler's exceptions propagate after the tree was killed.
    """
    out_read, req_fd, ans_fd = fds
    streams = _Streams.open(out_read, req_fd, ans_fd, membrane.message_bytes + 1)
    watcher = _Watch(child, membrane, wall_s)
    out = _Output(output_bytes, keep_tail=shell)
    kill_at = output_bytes * _SHELL_KILL_FACTOR if shell else output_bytes
    tasks = {
        "output": asyncio.create_task(watcher.read_output(streams.output, out, kill_at)),
        "membrane": asyncio.create_task(watcher.serve(streams.requests, streams.answers)),
        "clock": asyncio.create_task(watcher.clock()),
        "exit": asyncio.create_task(watcher.wait_exit()),
    }
    if writes is not None:
        tasks["writes"] = asyncio.create_task(watcher.writes(writes))
    try:
        if go is not None:
            await _let_go(go)
        stopped = await watcher.done
    finally:
        await _wind_down(child, tasks, streams, sweep)
    if stopped is None and writes is not None and writes.triggered():
        stopped = await asyncio.to_thread(writes.check)  # passed in its last moments
    if not tasks["membrane"].cancelled() and (error := tasks["membrane"].exception()):
        raise error
    return Outcome(
        returncode=child.poll(),
        output=out.text(),
        stopped=None if stopped == "error" else stopped,
        seconds=time.monotonic() - started,
    )


async def _let_go(go: Callable[[], Awaitable[None]]) -> None:
    """Call ``go`` once the watching tasks are parked in their first wait."""
    await asyncio.sleep(0)
    await go()


@dataclass(slots=True)
class _Streams:
    """gg's ends of the output pipe, the request pipe and the answer pipe."""

    output: PipeReader
    requests: PipeReader
    answers: PipeWriter | None

    @classmethod
    def open(cls, out_fd: int, req_fd: int, ans_fd: int | None, limit: int) -> _Streams:
        output = PipeReader(out_fd, _CHUNK)
        requests = PipeReader(req_fd, limit)
        return cls(output, requests, PipeWriter(ans_fd) if ans_fd is not None else None)

    def close(self) -> None:
        if self.answers is not None:
            self.answers.close()
        self.output.close()
        self.requests.close()


class _PopenChild:
    """A process gg started itself (:class:`Child`)."""

    def __init__(self, proc: subprocess.Popen[bytes], *, reaper: bool) -> None:
        self.proc, self.reaper = proc, reaper

    def poll(self) -> int | None:
        return self.proc.poll()

    async def wait(self) -> None:
        await _exited(self.proc)

    async def stop(self) -> None:
        if self.reaper and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signal.SIGTERM)  # the reaper kills every descendant
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(_exited(self.proc), _REAPER_GRACE_S)
        _kill(self.proc)
        forget_group(self.proc.pid)


async def _wind_down(
    child: Child,
    tasks: dict[str, asyncio.Task[None]],
    streams: _Streams,
    sweep: Callable[[], None] | None,
) -> None:
    """Kill the tree, reap, sweep stragglers, drain the pipes (briefly), close everything."""
    await child.stop()
    await _finish(tasks["exit"], 10)
    if sweep is not None:
        await asyncio.to_thread(sweep)
    await _finish(tasks["output"], _GRACE_S)
    await _finish(tasks["membrane"], _GRACE_S)
    await _finish(tasks["clock"], 0)
    if "writes" in tasks:
        await _finish(tasks["writes"], 0)
    streams.close()
