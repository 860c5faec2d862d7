"""Everything one sandboxed process needs before it starts, and the cleanup after it.

:func:`prepared` takes a uid slot (when gg is root), makes the run directory
(``$TMPDIR/gg-sandbox-<euid>/run-*``) with the files the guest reads, opens
the pipes (requests, answers, the seccomp filter) and builds the launch
:class:`~gg.sandbox.launch.Plan`. On exit it closes whatever descriptors were
not handed over and deletes the run directory.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from gg.sandbox.accounts import SANDBOX_GID, kill_all, share_workspace, uid_slot
from gg.sandbox.host import Isolation, host_facts
from gg.sandbox.launch import Mode, Plan, Spec, plan, prepare_run_dir
from gg.sandbox.limits import Limits
from gg.sandbox.rundirs import new_run_dir, remove_run_dir
from gg.sandbox.seccomp import seccomp_bpf

__all__ = ["Options", "Prepared", "prepared", "run_blocking"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Options:
    """The less common launch options of one process (see :class:`gg.sandbox.launch.Spec`)."""

    read_only: bool = False
    """Shell mode: the workspace is read-only (hooks, issue 9 item 5)."""
    env: tuple[tuple[str, str], ...] = ()
    """Shell mode: variables added to the built environment."""
    binds: tuple[str, ...] = ()
    """Directories visible read-only at their own path."""
    protect: tuple[str, ...] = ()
    """Workspace files bound read-only over it under bubblewrap (issue 9 item 2)."""


@dataclass(slots=True, kw_only=True)
class Prepared:
    """A process ready to start: its plan, gg's pipe ends, the child's, and the sweep."""

    plan: Plan
    req_read: int
    """gg's end of the request pipe (the guest writes fd 3)."""
    ans_write: int | None
    """gg's end of the answer pipe (the guest reads fd 4); ``None`` without a membrane."""
    child_fds: list[int]
    """The child's pipe ends; close them once it has started."""
    sweep: Callable[[], None] | None
    """Kills whatever the run left behind (``kill(-1)`` as the slot uid), if needed."""
    owned: set[int] = field(default_factory=set)
    """Descriptors :func:`prepared` still closes on exit; :meth:`hand_over` removes them."""
    run_dir: Path | None = None
    """The run directory on the host (removed when :func:`prepared` exits)."""
    written: list[Path] = field(default_factory=list)
    """Where the process's writes land on the host's disk: the workspace, and its private
    tmp under the ``unshare`` and ``rlimit`` layers (the write cap watches them)."""

    def hand_over(self) -> tuple[int, int | None, list[int]]:
        """Give up ownership of every pipe end (the caller closes them from now on)."""
        self.owned.clear()
        return self.req_read, self.ans_write, self.child_fds


def _pipe_with(data: bytes, owned: set[int]) -> int:
    read_fd, write_fd = os.pipe()
    owned.add(read_fd)
    try:
        os.write(write_fd, data)  # a few KiB: fits in the pipe buffer
    finally:
        os.close(write_fd)
    return read_fd


def _pipes(
    mode: Mode, isolation: Isolation, uid: int | None, owned: set[int], read_only: bool = False
) -> tuple[int, int, int | None, int | None, int | None]:
    """The request pipe, the answer pipe (program modes) and the seccomp pipe, all in ``owned``.

    A ``read_only`` process's filter also denies extended-attribute writes.

    Returns:
        ``(req_read, req_write, ans_read, ans_write, seccomp_read)``.
    """
    req_read, req_write = os.pipe()
    owned |= {req_read, req_write}
    ans_read = ans_write = None
    if mode in ("python", "javascript"):
        ans_read, ans_write = os.pipe()
        owned |= {ans_read, ans_write}
    if uid is not None:  # Deno re-opens its pipes by /dev/fd/N, as the slot uid
        for fd in (req_write, ans_read):
            if fd is not None:
                os.fchown(fd, uid, SANDBOX_GID)
    no_ipc = isolation is Isolation.RLIMIT  # no IPC namespace there
    bpf = seccomp_bpf(deny_sysv_ipc=no_ipc, deny_xattr=read_only)
    seccomp_fd = _pipe_with(bpf, owned) if bpf else None
    return req_read, req_write, ans_read, ans_write, seccomp_fd


def _fill_run_dir(
    run_dir: Path, *, uid: int | None, isolation: Isolation, files: dict[str, str], mode: Mode
) -> None:
    """Lay out ``run_dir`` for a ``mode`` guest and write ``files`` (name -> UTF-8 text)."""
    prepare_run_dir(run_dir, uid=uid, isolation=isolation, mode=mode)
    for name, text in files.items():
        (run_dir / name).write_text(text, encoding="utf-8")


def _sweep_for(uid: int | None, isolation: Isolation, python: str) -> Callable[[], None] | None:
    """The sweep after a run as the slot ``uid``: ``kill(-1)`` as that uid, run by ``python``.

    ``None`` without a slot uid (gg is not root) or under bubblewrap.
    """
    if uid is None or isolation is Isolation.BWRAP:
        return None
    return lambda: kill_all(uid, python)


@contextlib.contextmanager
def prepared(
    *,
    mode: Mode,
    isolation: Isolation,
    limits: Limits,
    workspace: Path,
    files: dict[str, str],
    command: str = "",
    wall_s: float = 0,
    options: Options | None = None,
) -> Iterator[Prepared]:
    """Prepare one sandboxed process (see the module docstring).

    Args:
        mode: what the process runs.
        isolation: the layer to run it under.
        limits: its limits.
        workspace: the resolved workspace directory (the one writable place).
        files: name -> text, written into the run directory (``program.py``, ``sdk.mjs``...).
        command: the shell command (``mode == "shell"``).
        wall_s: the shell command's timeout (raises its CPU limit to match).
        options: a read-only workspace, extra variables and binds, protected files.

    Yields:
        The :class:`Prepared` process.
    """
    facts = host_facts()
    opt = options or Options()
    slot = uid_slot() if facts.is_root else contextlib.nullcontext(None)
    with slot as uid:
        if uid is not None:
            share_workspace(workspace)
        run_dir = new_run_dir("run-")
        owned: set[int] = set()
        try:
            _fill_run_dir(run_dir, uid=uid, isolation=isolation, files=files, mode=mode)
            pipes = _pipes(mode, isolation, uid, owned, opt.read_only)
            req_read, req_write, ans_read, ans_write, seccomp_fd = pipes
            spec = Spec(
                mode=mode, isolation=isolation, facts=facts, limits=limits,
                workspace=workspace, run_dir=run_dir, uid=uid, req_fd=req_write,
                ans_fd=ans_read, seccomp_fd=seccomp_fd, command=command, wall_s=wall_s,
                read_only=opt.read_only, env=opt.env, binds=opt.binds, protect=opt.protect,
            )  # fmt: skip
            the_plan = plan(spec)
            owned |= set(the_plan.fds)
            sweep = _sweep_for(uid, isolation, facts.python)
            child = [fd for fd in (req_write, ans_read, seccomp_fd) if fd is not None]
            written = [workspace] + ([] if isolation is Isolation.BWRAP else [run_dir / "tmp"])
            yield Prepared(
                plan=the_plan, req_read=req_read, ans_write=ans_write,
                child_fds=child, sweep=sweep, owned=owned, written=written, run_dir=run_dir,
            )  # fmt: skip
        finally:
            for fd in owned:
                with contextlib.suppress(OSError):
                    os.close(fd)
            with contextlib.suppress(OSError):
                remove_run_dir(run_dir)  # a program's private tmp may be any depth


@dataclass(frozen=True, slots=True, kw_only=True)
class Blocking:
    """What a short blocking run (the probe, a JavaScript syntax check) gave."""

    ready: bool
    returncode: int | None
    output: str
    timed_out: bool


def _run_to_end(the_plan: Plan, timeout_s: float) -> tuple[int | None, bytes, bool]:
    """Run to the end or the timeout; then stop the tree (via the reaper first, if any)."""
    proc = subprocess.Popen(
        the_plan.argv, env=the_plan.env, pass_fds=the_plan.pass_fds,
        user=the_plan.user, group=the_plan.group,
        extra_groups=[] if the_plan.user is not None else None,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        start_new_session=True, cwd="/",
    )  # fmt: skip
    try:
        output, _ = proc.communicate(timeout=timeout_s)
        return proc.returncode, output, False
    except subprocess.TimeoutExpired:
        if the_plan.reaper:
            proc.send_signal(signal.SIGTERM)  # boot.py's reaper kills every descendant
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=12)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            output, _ = proc.communicate(timeout=2)
            return None, output, True
        return None, b"", True
    finally:
        if proc.stdout is not None:
            proc.stdout.close()


def run_blocking(job: Prepared, *, timeout_s: float) -> Blocking:
    """Run a short job to its end without a membrane (blocking; for the probe and syntax checks)."""
    req_read, ans_write, child_fds = job.hand_over()
    fds = [*child_fds, *job.plan.fds]
    try:
        returncode, output, timed_out = _run_to_end(job.plan, timeout_s)
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        fds = []
        if job.sweep is not None:
            job.sweep()
        os.set_blocking(req_read, False)
        try:
            ready = os.read(req_read, 4096).startswith(b'{"kind": "ready"}')
        except BlockingIOError:
            ready = False
    finally:
        for fd in [*fds, req_read, *([ans_write] if ans_write is not None else [])]:
            with contextlib.suppress(OSError):
                os.close(fd)
    text = output.decode("utf-8", "replace") if isinstance(output, bytes) else str(output)
    return Blocking(ready=ready, returncode=returncode, output=text, timed_out=timed_out)
