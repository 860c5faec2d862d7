"""The warm sandbox: a fork server (zygote) per workspace, one spare kept ready (issue 11).

A :class:`Zygote` is one sandboxed process started exactly as a cold program
is (bubblewrap, or the ``unshare``/``rlimit`` layers' ``boot.py``), in mode
``zygote``: it enters the layer's namespaces, loads the interpreter, the
runner and its imports, and waits on a control socket. Each program is one
``fork`` of it (``guest/zygote.py``), made before the program exists
(:meth:`Zygote.prime`): the forked child applies the program's confinement
(rlimits, Landlock, the slot uid, seccomp), binds the SDK and waits for its
program on its answer pipe. A program's turn is then one write of the
program, its run, and the zygote's report that it ended (as soon as every
thread of it is exiting, before the kernel freed its memory: ``guest/zygote.py``;
the next program of the workspace waits for the reap); gg watches it as
it watches a cold process (the wall clock, the output cap, the membrane,
the write cap: :func:`gg.sandbox.process.watch`), from the moment the
program is written.

A :class:`Pool` keeps, per workspace, one zygote in use and one spare, both
started in the background (when a session starts, and after each program),
so consecutive turns never wait for a start. A zygote whose program did not
end normally, that did not report its scratch places empty, whose waiting
child or itself died, or that ran 100 programs, is closed and replaced, never
reused (SPEC M3), and so is one whose workspace is no longer the directory it
was started for.

A ``"javascript"`` :class:`Key`'s zygote binds Deno too, and its children exec
it with ``runner.js`` once confined (``guest/zygote.py``): Deno cannot fork, so
each program still pays Deno's own start, in the background, but no longer
bubblewrap's or the boot's; the program and its SDK are written beside the
runner in the zygote's run directory and a ``go`` line lets it run them
(:mod:`gg.sandbox.deno` describes the runner's side).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import select
import socket
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gg import reaper
from gg.errors import SandboxError
from gg.sandbox.accounts import SANDBOX_GID, uid_slot
from gg.sandbox.deno import ENTRY, WARM_SDK, identity
from gg.sandbox.host import Isolation, host_facts
from gg.sandbox.launch import (
    Mode,
    Spec,
    deno_config,
    plan,
    prepare_run_dir,
    program_config,
)
from gg.sandbox.limits import Limits
from gg.sandbox.rundirs import new_run_dir, remove_run_dir
from gg.sandbox.seccomp import seccomp_bpf

__all__ = ["Key", "Pool", "Primed", "Zygote", "ZygoteChild"]

_START_TIMEOUT_S = 20.0
_STOP_GRACE_S = 15.0  # the zygote's child reaper gets 12 s before its SIGKILL
_KILLED = -9
_SPARES = 2
_PROGRAMS_PER_ZYGOTE = 100
"""Programs one zygote serves before it is retired (its spare has long been ready)."""


@dataclass(frozen=True, slots=True)
class Key:
    """What a zygote is bound to: its layer, workspace, limits, protected files, language.

    A ``"javascript"`` zygote's children exec Deno with ``runner.js`` once confined
    (Deno cannot fork: the zygote saves each one bubblewrap's and the boot's start).
    """

    isolation: Isolation
    workspace: Path
    limits: Limits
    protect: tuple[str, ...]
    language: str = "python"
    """``"python"`` or ``"javascript"``: what its children run (SPEC M2's language arm)."""
    read_only: bool = False
    """Its programs' workspace is read-only (a reviewer's, issue 16): bubblewrap binds it
    so, and each child's Landlock ruleset gives it read and execute only."""


class Zygote:
    """One warm sandboxed fork server (start it with :meth:`start`)."""

    def __init__(
        self,
        key: Key,
        proc: subprocess.Popen[bytes],
        sock: socket.socket,
        ident: tuple[int, int] | None = None,
    ) -> None:
        self.key, self.proc, self.sock = key, proc, sock
        self.run_dir: Path | None = None
        self.usable = True
        """``False`` once it died, was killed or left anything behind: never reused."""
        self.cleaning: asyncio.Future[bool] | None = None
        """After a program: resolves to whether the zygote reported its leftovers gone."""
        self.child: ZygoteChild | None = None
        """Its latest child (waiting, running or ended)."""
        self.primed: Primed | None = None
        """The next program's child, forked and confined, waiting (:meth:`prime`)."""
        self._held: list[Primed] = []
        """Children whose slot uid stays locked until the zygote reports clean."""
        self.programs = 0
        """Programs it ran; past :data:`_PROGRAMS_PER_ZYGOTE` it is retired."""
        self._pending = bytearray()
        self.identity = ident if ident is not None else identity(key.workspace)
        """The workspace directory it was started for, taken before bubblewrap's bind of it
        was opened (``ident``): a workspace removed and made again is another, and the
        zygote is not used for it (one swapped while it starts fails the check too)."""

    @classmethod
    async def start(cls, key: Key) -> Zygote:
        """Start a zygote for ``key`` and wait for its ``ready``.

        Raises:
            gg.errors.SandboxError: it could not start (its stderr is quoted).
            gg.errors.DiskFull: its run directory's filesystem is full.
        """
        run_dir = _new_run_dir(key)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        # SysV objects would outlive a program here; a reviewer's may not write xattrs
        bpf = seccomp_bpf(deny_sysv_ipc=True, deny_xattr=key.read_only)
        sec_read: int | None = None
        if bpf:
            sec_read, sec_write = os.pipe()
            os.write(sec_write, bpf)
            os.close(sec_write)
        spec = cls._spec(key, run_dir, theirs.fileno(), sec_read)
        ident = identity(key.workspace)  # before plan() opens the directory bubblewrap binds
        the_plan = plan(spec)
        err_read, err_write = os.pipe()
        argv, args_fd, conf_fd = _hidden(the_plan.argv, key.isolation)
        try:
            proc = subprocess.Popen(
                argv, stdin=conf_fd, stdout=err_write, stderr=err_write, env=the_plan.env,
                pass_fds=(*the_plan.pass_fds, *([args_fd] if args_fd is not None else [])),
                start_new_session=True, cwd="/",
            )  # fmt: skip
        except BaseException:
            ours.close()
            remove_run_dir(run_dir)
            raise
        finally:
            extra = [fd for fd in (sec_read, args_fd, conf_fd) if fd is not None]
            for fd in [*the_plan.fds, err_write, *extra]:
                os.close(fd)
            theirs.close()
        reaper.watch(proc.pid)  # its group is killed even if gg is (issue 12 item 3)
        zygote = cls(key, proc, ours, ident)
        zygote.run_dir = run_dir
        ours.setblocking(False)
        try:
            ready = await asyncio.wait_for(zygote._line(), _START_TIMEOUT_S)
        except (TimeoutError, OSError, ValueError):
            ready = None
        except BaseException:  # cancelled (the pool closed, the event loop ended)
            zygote.close()
            os.close(err_read)
            raise
        if not isinstance(ready, dict) or ready.get("kind") != "ready":
            zygote.close()
            os.set_blocking(err_read, False)
            with contextlib.suppress(OSError):
                why = os.read(err_read, 4000).decode("utf-8", "replace")
            os.close(err_read)
            raise SandboxError(f"the warm sandbox could not start: {locals().get('why', '')}")
        os.close(err_read)
        return zygote

    @staticmethod
    def _spec(key: Key, run_dir: Path, control_fd: int, seccomp_fd: int | None) -> Spec:
        return Spec(
            mode="zygote", isolation=key.isolation, facts=host_facts(), limits=key.limits,
            workspace=key.workspace, run_dir=run_dir, uid=None, req_fd=control_fd,
            seccomp_fd=seccomp_fd, protect=key.protect, deno=key.language == "javascript",
            read_only=key.read_only,
        )  # fmt: skip

    def written(self) -> list[Path]:
        """Where its programs' writes land on the host's disk (the write cap watches them)."""
        tmp = [] if self.key.isolation is Isolation.BWRAP or self.run_dir is None else [
            self.run_dir / "tmp"
        ]  # fmt: skip
        return [self.key.workspace, *tmp]

    def config(self, uid: int | None) -> dict[str, object]:
        """The per-program confinement for a program run as ``uid`` (``None``: gg's user)."""
        assert self.run_dir is not None
        mode: Mode = "javascript" if self.key.language == "javascript" else "python"
        spec = Spec(
            mode=mode, isolation=self.key.isolation, facts=host_facts(),
            limits=self.key.limits, workspace=self.key.workspace, run_dir=self.run_dir,
            uid=uid, req_fd=3, read_only=self.key.read_only,
        )  # fmt: skip
        return program_config(spec)

    async def _line(self) -> Any:
        loop = asyncio.get_running_loop()
        while b"\n" not in self._pending:
            data = await loop.sock_recv(self.sock, 65536)
            if not data:
                raise ConnectionError("the zygote closed its control socket")
            self._pending += data
        line, _, rest = bytes(self._pending).partition(b"\n")
        self._pending[:] = rest
        return json.loads(line)

    async def prime(self, sdk: str) -> None:
        """Fork the next program's child now, confined, waiting for its program (issue 11).

        The child binds ``sdk`` (the SDK source the next program most likely has; ``""``:
        none) and blocks reading its answer pipe, where :meth:`send_program` writes the
        program: the fork, the confinement and the SDK are paid before the program
        arrives. The slot uid (as root) is held from here until the program's turn ends.
        A JavaScript child execs Deno instead, which preloads ``sdk`` (:meth:`_stage_js`).

        Raises:
            gg.errors.SandboxError: the zygote is gone (it is then not usable).
            OSError: a JavaScript child's SDK file could not be written (a full disk).
        """
        slot = contextlib.ExitStack()
        uid = slot.enter_context(uid_slot()) if host_facts().is_root else None
        pipes = [os.pipe(), os.pipe(), os.pipe()]  # output, requests, answers
        (out_r, out_w), (req_r, req_w), (ans_r, ans_w) = pipes
        theirs = [out_w, req_w, ans_r]
        try:
            if uid is not None:
                for fd in (req_w, ans_r):
                    os.fchown(fd, uid, SANDBOX_GID)
            message = {**self.config(uid), "sdk": sdk}
            if self.identity is not None:  # the child checks the directory it opens is it
                message["ident"] = list(self.identity)
            if self.key.language == "javascript":
                message["sdk"] = ""
                theirs += self._stage_js(sdk, message)
            child = await self.fork(message, theirs)
        except BaseException:
            for fd in (out_r, req_r, ans_w):
                os.close(fd)
            slot.close()
            raise
        finally:
            for fd in theirs:
                os.close(fd)
        self.primed = Primed(child=child, fds=(out_r, req_r, ans_w), uid=uid, sdk=sdk, slot=slot)

    def _stage_js(self, sdk: str, message: dict[str, object]) -> list[int]:
        """Before a JavaScript child: the SDK it preloads; Deno's executable, when passed.

        ``sdk-warm.mjs`` is the SDK of the last program (``""``: none, and none is
        preloaded); the previous child is gone (the zygote reported clean). Outside
        bubblewrap Deno is exec'd from a descriptor opened here (``exe`` in the message).
        """
        assert self.run_dir is not None
        warm = self.run_dir / WARM_SDK
        if sdk:
            warm.write_text(sdk, encoding="utf-8")
        else:
            warm.unlink(missing_ok=True)
        if self.key.isolation is Isolation.BWRAP:
            return []
        deno = host_facts().deno
        if deno is None:
            raise SandboxError("JavaScript programs need Deno")
        message["exe"] = True
        return [os.open(deno, os.O_RDONLY | os.O_CLOEXEC)]

    def take_primed(self) -> Primed:
        """The waiting child, for one program; the zygote is not usable again until it is clean.

        Raises:
            gg.errors.SandboxError: there is none, or it died while it waited.
        """
        primed, self.primed = self.primed, None
        self.usable = False  # until its program ended normally and it reported clean
        if primed is None or primed.child.poll() is not None:
            if primed is not None:
                primed.release()
            self.close()
            raise SandboxError("the warm sandbox's waiting child is gone")
        return primed

    def hold_until_clean(self, primed: Primed) -> None:
        """Let ``primed``'s slot uid go once the zygote reported clean (or was closed).

        The zygote's cleaner may still run as that uid (``kill(-1)`` included) after the
        program's end is reported: no other program may get the uid before it is done. A
        zygote that is not usable keeps it until :meth:`close` killed everything in it.
        """
        if not self.usable:  # it is closed next (Pool.give_back): the slot goes then
            self._held.append(primed)
            return
        if self.cleaning is None or self.cleaning.done():
            primed.release()
            return
        self._held.append(primed)

        def release(_: object) -> None:
            if primed in self._held:
                self._held.remove(primed)
                primed.release()

        self.cleaning.add_done_callback(release)

    async def send_program(
        self, answers: int, primed: Primed, program: str, sdk: str, timeout: float
    ) -> None:
        """Write the program (and its SDK, unless the child bound it already) to the child.

        Args:
            answers: gg's end of the child's answer pipe (``primed``'s, handed to the watcher).
            primed: the waiting child.
            program: the program's source.
            sdk: its SDK's source.
            timeout: seconds the child has to take all of it.

        Raises:
            gg.errors.SandboxError: the child is gone or did not take it within ``timeout``.
        """
        try:
            if self.key.language == "javascript":  # a full disk: nothing of it ran
                data = self._go_js(primed, program, sdk)
            else:
                body = {"program": program, "sdk": None if sdk == primed.sdk else sdk}
                data = (json.dumps(body, separators=(",", ":")) + "\n").encode()
            os.set_blocking(answers, False)
            sent = os.write(answers, data)  # the pipe is empty: most programs fit at once
            if sent < len(data):
                await asyncio.wait_for(_write_all(answers, data[sent:]), timeout)
        except (OSError, TimeoutError) as exc:
            self.close()
            raise SandboxError(f"the warm sandbox's child did not take its program: {exc}") from exc

    def _go_js(self, primed: Primed, program: str, sdk: str) -> bytes:
        """Write a JavaScript program and its SDK beside the runner; the go line it waits for.

        The runner keeps the SDK it preloaded when ``sdk`` is that same text
        (``runner.js``); it enters the workspace (``cwd``) once the line comes.

        Raises:
            OSError: the files could not be written.
        """
        assert self.run_dir is not None
        (self.run_dir / "program.mjs").write_text(program, encoding="utf-8")
        (self.run_dir / "sdk.mjs").write_text(sdk, encoding="utf-8")
        go = {"kind": "go", "cwd": str(self.key.workspace), "warm_sdk": sdk == primed.sdk}
        return (json.dumps(go, separators=(",", ":")) + "\n").encode()

    async def fork(self, message: dict[str, object], fds: Sequence[int]) -> ZygoteChild:
        """Ask for one child with ``fds`` (output, requests, answers) as its pipes.

        Raises:
            gg.errors.SandboxError: the zygote is gone (it is then not usable).
        """
        loop = asyncio.get_running_loop()
        data = (json.dumps({"kind": "run", **message}, separators=(",", ":")) + "\n").encode()
        try:
            await loop.sock_sendall(self.sock, b"")
            socket.send_fds(self.sock, [b" "], list(fds))
            await loop.sock_sendall(self.sock, data)
        except OSError as exc:
            self.close()
            raise SandboxError(f"the warm sandbox is gone: {exc}") from exc
        self.child = ZygoteChild(self)
        return self.child

    async def read_clean(self) -> bool:
        """Wait for its report after a program's exit: whether every leftover is gone.

        After an early ``exit`` (every thread of the program exiting, the kernel still
        freeing its memory: :mod:`guest.zygote`) the report starts with ``reaped``, once
        that process is gone. Each report has :data:`_STOP_GRACE_S` seconds. The zygote
        is closed if it is not clean, is late, or died.
        """
        try:
            answer = await asyncio.wait_for(self._line(), _STOP_GRACE_S)
            if answer == {"kind": "reaped"} and self.child is not None:
                self.child.gone.set()  # reported early: now the process is gone too
                answer = await asyncio.wait_for(self._line(), _STOP_GRACE_S)
            clean = isinstance(answer, dict) and answer == {"kind": "clean", "clean": True}
        except (OSError, ValueError, TypeError, TimeoutError):
            clean = False
        if not clean:
            self.close()
        return clean

    async def reaped(self) -> None:
        """Return once its latest program's process is reaped; past a grace, close it.

        The zygote may report a program's end while the kernel still frees the
        process's memory (every thread of it exiting, :mod:`guest.zygote`); gg's host-side
        work for the turn overlaps that, and ``Sandbox.run`` returns only after it: no
        process of a program remains when its turn ends (SPEC M3).
        """
        child = self.child
        if child is None or child.gone.is_set():
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(child.gone.wait(), _STOP_GRACE_S)
        if not child.gone.is_set():
            self.close()

    def close(self) -> None:
        """Stop it for good (its namespace and every process in it die with it).

        Returns once every process below it has ended too (at most 5 s): a pid
        namespace's processes die after its first process does, and a program's
        process must be gone before its turn ends (SPEC M3).
        """
        self.usable = False
        if self.child is not None:
            self.child.abandon()
        with contextlib.suppress(OSError):
            self.sock.close()
        below = _pidfds(_below(self.proc.pid))
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, 9)
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        _await_ended(below, 5.0)
        reaper.forget(self.proc.pid)
        primed, self.primed = self.primed, None
        for held in [*self._held, *([primed] if primed is not None else [])]:
            held.close()  # its processes died with the zygote: the slot uid is free
        self._held.clear()
        if self.child is not None:
            self.child.gone.set()  # killed with the zygote's namespace
        if self.run_dir is not None:
            with contextlib.suppress(OSError):
                remove_run_dir(self.run_dir)
            self.run_dir = None


@dataclass(slots=True, kw_only=True)
class Primed:
    """A zygote's child waiting for its program (:meth:`Zygote.prime`).

    Attributes:
        child: the forked child, watched through the zygote's reports.
        fds: gg's ends of its pipes ``(output_read, requests_read, answers_write)``.
        uid: the slot uid it runs as (``None``: gg's own user, when gg is not root).
        sdk: the SDK source it bound.
        slot: holds the slot uid's lock until :meth:`release`.
    """

    child: ZygoteChild
    fds: tuple[int, int, int]
    uid: int | None
    sdk: str
    slot: contextlib.ExitStack

    def release(self) -> None:
        """Let the slot uid go (after the program's turn ended and its processes are dead)."""
        self.slot.close()

    def close(self) -> None:
        """Close gg's ends of the pipes (the child sees EOF and exits) and let the slot go.

        Once only: a second call closes nothing (a descriptor number closed twice could by
        then name another file of gg's).
        """
        fds, self.fds = self.fds, ()  # type: ignore[assignment]
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.release()


async def _write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to the pipe ``fd`` without blocking the event loop.

    Raises:
        OSError: the reader is gone (``BrokenPipeError``).
    """
    os.set_blocking(fd, False)
    view, loop = memoryview(data), asyncio.get_running_loop()
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            room: asyncio.Future[None] = loop.create_future()
            loop.add_writer(fd, _resolve, room)
            try:
                await room
            finally:
                loop.remove_writer(fd)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _pipe_of(data: bytes) -> int:
    read_fd, write_fd = os.pipe()
    try:
        os.write(write_fd, data)  # a few KiB: fits in the pipe buffer
    finally:
        os.close(write_fd)
    return read_fd


def _below(pid: int) -> list[int]:
    """Every live descendant of ``pid`` (from ``/proc/PID/task/*/children``)."""
    found: list[int] = []
    todo = [pid]
    while todo:
        current = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue
        for task in tasks:
            with contextlib.suppress(OSError, ValueError):
                with open(f"/proc/{current}/task/{task}/children", "rb") as f:
                    kids = [int(k) for k in f.read().split()]
                found += kids
                todo += kids
    return found


_WAIT_AT_MOST = 256
"""Processes a closing zygote waits for, at most (a fork bomb's thousands would each hold
one of gg's descriptors; the first ones are its program's own, and the rest die with it)."""


def _pidfds(pids: list[int]) -> list[int]:
    """A pidfd for each of the first :data:`_WAIT_AT_MOST` ``pids`` still there.

    One that is gone already is skipped.
    """
    fds = []
    for pid in pids[:_WAIT_AT_MOST]:
        with contextlib.suppress(OSError):
            fds.append(os.pidfd_open(pid))
    return fds


def _await_ended(pidfds: list[int], timeout_s: float) -> None:
    """Wait until every process of ``pidfds`` has ended (or ``timeout_s``); close them.

    ``poll``, not ``select``: a gg with over FD_SETSIZE (1024) descriptors open has
    pidfds that ``select`` refuses (``ValueError``).
    """
    deadline = time.monotonic() + timeout_s
    try:
        poller = select.poll()
        waiting = set(pidfds)
        for fd in waiting:
            poller.register(fd, select.POLLIN)
        while waiting and (left := deadline - time.monotonic()) > 0:
            for fd, _ in poller.poll(max(1, int(left * 1000))):
                poller.unregister(fd)
                waiting.discard(fd)
    finally:
        for fd in pidfds:
            os.close(fd)


def _new_run_dir(key: Key) -> Path:
    """A zygote's run directory, filled; removed again if that fails (a full disk)."""
    run_dir, isolation = new_run_dir("zygote-"), key.isolation
    try:
        prepare_run_dir(run_dir, uid=None, isolation=isolation)
        if isolation is not Isolation.BWRAP and host_facts().is_root:
            os.chmod(run_dir / "tmp", 0o1777)  # every program's slot uid; emptied after each
        if key.language == "javascript":
            _js_files(key, run_dir)
    except BaseException:
        remove_run_dir(run_dir)
        raise
    return run_dir


def _js_files(key: Key, run_dir: Path) -> None:
    """A JavaScript zygote's constant files: the entry modules and Deno's permissions."""
    for name, text in ENTRY.items():
        (run_dir / name).write_text(text, encoding="utf-8")
    spec = Spec(
        mode="javascript", isolation=key.isolation, facts=host_facts(), limits=key.limits,
        workspace=key.workspace, run_dir=run_dir, uid=None, req_fd=3,
    )  # fmt: skip
    (run_dir / "deno.json").write_text(deno_config(spec), encoding="utf-8")


def _hidden(argv: list[str], isolation: Isolation) -> tuple[list[str], int | None, int]:
    """The zygote's command line with no workspace path in it.

    The zygote outlives each program, and nothing in ``/proc`` should tie it to the
    workspace: bubblewrap reads its arguments from a pipe (``--args``), ``boot.py`` its
    config from stdin (``@stdin``).
    """
    config = argv[-1]
    argv = [*argv[:-1], "@stdin"]
    conf_fd = _pipe_of(config.encode())
    if isolation is not Isolation.BWRAP:
        return argv, None, conf_fd
    if "--chdir" in argv:  # the zygote stays in /; each child enters the workspace
        at = argv.index("--chdir")
        del argv[at : at + 2]
    cut = argv.index("--")
    args_fd = _pipe_of(b"".join(a.encode() + b"\0" for a in argv[1:cut]))
    return [argv[0], "--args", str(args_fd), *argv[cut:]], args_fd, conf_fd


class ZygoteChild:
    """One program forked by a :class:`Zygote` (a :class:`gg.sandbox.process.Child`)."""

    def __init__(self, zygote: Zygote) -> None:
        self.zygote = zygote
        self.status: int | None = None
        self.gone = asyncio.Event()
        """Set once the program's process is reaped (or its zygote closed): the zygote may
        report the end first, as soon as every thread of it is exiting."""
        self._ended = asyncio.Event()
        self._reader = asyncio.ensure_future(self._read_exit())

    async def _read_exit(self) -> None:
        try:
            answer = await self.zygote._line()
            if isinstance(answer, dict) and answer.get("kind") == "exit":
                status = int(answer.get("status", 121))
                self.status = -(status - 128) if 128 < status < 160 else status
                if answer.get("reaped") is not False:
                    self.gone.set()
                self.zygote.cleaning = asyncio.ensure_future(self.zygote.read_clean())
            else:
                self.status = _KILLED
                self.zygote.close()
        except (OSError, ValueError, TypeError):
            self.status = _KILLED  # the zygote died under its program
            self.zygote.close()
        except asyncio.CancelledError:
            self.status = _KILLED  # the zygote was closed: it and its children are dead
            raise
        finally:
            self._ended.set()

    def abandon(self) -> None:
        """The zygote was closed: stop waiting for its report (the child is dead with it).

        The program counts as ended now: a reader cancelled before it first ran never
        reaches its ``finally``, and :meth:`wait` would then never return.
        """
        if self.status is None:
            self.status = _KILLED
        with contextlib.suppress(RuntimeError):  # no running loop, or the loop is gone
            self._ended.set()  # wakes its waiters through their loop
            if not self._reader.done() and self._reader is not asyncio.current_task():
                self._reader.cancel()

    def poll(self) -> int | None:
        """The program's exit status (negative: the signal that killed it), once it ended."""
        return self.status if self._ended.is_set() else None

    async def wait(self) -> None:
        """Return when the zygote reported the program's end (or died)."""
        await self._ended.wait()

    async def stop(self) -> None:
        """Ask the zygote to kill the program and its tree; past a grace, kill the zygote."""
        if not self._ended.is_set():
            with contextlib.suppress(OSError):
                self.zygote.sock.send(b'{"kind":"kill"}\n')
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._ended.wait(), _STOP_GRACE_S)
        if not self._ended.is_set():
            self.zygote.close()
            await self._ended.wait()


def _waiting(zygote: Zygote) -> bool:
    """Whether ``zygote`` can take a program now: alive, clean, its child waiting.

    And its workspace is still the directory it was started for.
    """
    primed = zygote.primed
    alive = zygote.usable and zygote.proc.poll() is None
    same = zygote.identity is not None and identity(zygote.key.workspace) == zygote.identity
    return alive and same and primed is not None and primed.child.poll() is None


class Pool:
    """Warm zygotes per :class:`Key`: one to use and one spare, started in the background.

    A zygote given back after a program is kept only once it reported its leftovers gone
    (:meth:`Zygote.read_clean`); until then the next program takes another one, or waits
    for that report if it comes before a fresh start would.
    """

    def __init__(self) -> None:
        self._sdk: dict[Key, str] = {}
        """Per key: the SDK source of its last program (what the next child binds)."""
        self._ready: dict[Key, list[Zygote]] = {}
        self._pending: dict[Key, set[asyncio.Future[Zygote | None]]] = {}
        """Per key: zygotes starting, and zygotes given back and cleaning up."""
        self._cleaning: set[Zygote] = set()
        self._closed = False
        self._loop: asyncio.AbstractEventLoop | None = None

    def _same_loop(self) -> None:
        """Forget every zygote made under another event loop (its watchers died with it)."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            if self._loop is not None:
                self._drop()
            self._loop = loop

    def _drop(self) -> None:
        for zygotes in self._ready.values():
            for zygote in zygotes:
                zygote.close()
        self._ready.clear()
        for zygote in list(self._cleaning):
            zygote.close()
        self._cleaning.clear()
        for tasks in self._pending.values():
            for task in tasks:
                task.cancel()
        self._pending.clear()

    def _live(self, key: Key) -> tuple[list[Zygote], set[asyncio.Future[Zygote | None]]]:
        self._same_loop()
        ready = [z for z in self._ready.get(key, []) if _waiting(z)]
        for zygote in self._ready.get(key, []):
            if zygote not in ready:
                zygote.close()
        self._ready[key] = ready
        pending = {t for t in self._pending.get(key, set()) if not t.done()}
        self._pending[key] = pending
        return ready, pending

    def warm(self, key: Key, spares: int = _SPARES) -> None:
        """Start zygotes for ``key`` in the background until ``spares`` are ready or on the way."""
        if self._closed:
            return
        ready, pending = self._live(key)
        for _ in range(spares - len(ready) - len(pending)):
            self._track(key, asyncio.ensure_future(self._fresh(key)))

    async def _fresh(self, key: Key) -> Zygote:
        """Start a zygote for ``key`` with its first child waiting."""
        zygote = await Zygote.start(key)
        try:
            await zygote.prime(self._sdk.get(key, ""))
        except BaseException:
            zygote.close()
            raise
        return zygote

    def _track(self, key: Key, task: asyncio.Future[Zygote | None]) -> None:
        self._pending.setdefault(key, set()).add(task)
        task.add_done_callback(functools.partial(self._arrived, key))

    def _arrived(self, key: Key, task: asyncio.Future[Zygote | None]) -> None:
        self._pending.get(key, set()).discard(task)
        if task.cancelled() or task.exception() is not None:
            return
        zygote = task.result()
        if zygote is None:
            self.warm(key)  # one was lost: start its replacement
        elif self._closed or len(self._ready.get(key, [])) >= _SPARES:
            zygote.close()  # after a burst of concurrent programs: no more than the spares
        else:
            self._ready.setdefault(key, []).append(zygote)

    async def take(self, key: Key, sdk: str = "") -> Zygote:
        """A ready zygote for ``key``, its child waiting (for one on the way, or a new one).

        Args:
            key: what the zygote is bound to.
            sdk: the program's SDK source: later children bind it before their program.

        Raises:
            gg.errors.SandboxError: none could start.
        """
        self._sdk[key] = sdk
        deadline, fresh = time.monotonic() + _START_TIMEOUT_S, 0
        while True:
            ready, pending = self._live(key)
            if ready:
                return ready.pop(0)
            left = deadline - time.monotonic()
            if not pending or left <= 0:
                zygote = await self._fresh(key)
                if _waiting(zygote):  # its workspace may have been replaced as it started
                    return zygote
                zygote.close()
                fresh += 1  # a workspace gone or swapped, a child that died: twice at most
                if left <= 0 or fresh >= 2 or identity(key.workspace) is None:
                    raise SandboxError("no warm sandbox could start for this workspace")
                continue
            await asyncio.wait(pending, timeout=left, return_when=asyncio.FIRST_COMPLETED)

    def give_back(self, zygote: Zygote) -> None:
        """Return a zygote after its program, and refill the spares.

        The zygote is kept once clean if still usable, else closed.
        """
        key = zygote.key
        if zygote.usable and zygote.cleaning is not None and not self._closed:
            self._cleaning.add(zygote)
            self._track(key, asyncio.ensure_future(self._after_clean(zygote)))
        else:
            zygote.close()
        self.warm(key)

    async def _after_clean(self, zygote: Zygote) -> Zygote | None:
        try:
            assert zygote.cleaning is not None
            clean = await zygote.cleaning
        finally:
            self._cleaning.discard(zygote)
        fit = zygote.programs < _PROGRAMS_PER_ZYGOTE and zygote.proc.poll() is None
        if not (clean and zygote.usable and fit and not self._closed):
            zygote.close()
            return None
        try:
            await zygote.prime(self._sdk.get(zygote.key, ""))
        except (SandboxError, OSError):
            zygote.close()
            return None
        except BaseException:  # cancelled: the pool closed
            zygote.close()
            raise
        return zygote

    def close(self) -> None:
        """Close every zygote (ready, cleaning up or starting)."""
        self._closed = True
        self._drop()
