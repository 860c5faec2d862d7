"""Run directories in gg's sandbox state directory, and the sweep of those a dead gg left.

Every sandboxed process (``run-*``: a program, a shell command, a check; not a gg *run*,
whose stream lives in gg's state) and every warm zygote (``zygote-*``) has a directory
under :func:`gg.sandbox.host.state_dir`, removed when that process or zygote is closed. A
gg that is killed (SIGKILL, a power cut, a test that kills it on purpose) never removes
its own: they piled up by the thousand in the temp directory.

Each directory now has an owner: gg holds an exclusive ``flock`` on ``NAME.lock`` beside
it for as long as the directory lives (the lock file is outside the directory, so no
sandboxed program sees it; mode 0600). The kernel drops the lock when its process dies,
however it dies. The first run directory a gg process makes sweeps the state directory
once: a directory whose lock can be taken, and whose lock file is over a minute old (a
lock file is locked at once by the process that creates it), has no live owner and is
removed with its lock file; a directory with no lock file at all (made by a gg before
this one) is removed once it is a day old. Locks work across processes and PID
namespaces alike, so a live gg's directory is never taken for a dead one's.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import threading
import time
from pathlib import Path

from gg.disk import disk_full, is_disk_full
from gg.errors import SandboxError
from gg.sandbox.host import state_dir
from gg.sandbox.tree import remove_tree

__all__ = ["new_run_dir", "remove_run_dir", "sweep_stale"]

_PREFIXES = ("run-", "zygote-")
_LOCK_GRACE_S = 60.0
"""A lock file younger than this is never swept (its creator may not have locked it yet)."""
_UNOWNED_AGE_S = 86_400.0
"""A directory without a lock file (from an older gg) is swept once it is this old."""
_SWEEP_BUDGET_S = 1.0
"""Time the sweep at a process's first run directory may take (the rest: a later gg's)."""
_HELD: dict[Path, int] = {}
_GUARD = threading.Lock()
_SWEEPING = threading.Lock()
_SWEPT: list[bool] = []


def new_run_dir(prefix: str) -> Path:
    """A new, empty directory (mode 0700) in the state directory, owned by this process.

    Args:
        prefix: ``"run-"`` or ``"zygote-"``.

    Returns:
        Its path; :func:`remove_run_dir` removes it and gives up its lock.

    Raises:
        gg.errors.SandboxError: the state directory is not gg's, or no free name was found.
        gg.errors.DiskFull: its filesystem is full (issue 12: the run stops, named).
        OSError: the state directory cannot be written otherwise.
    """
    try:
        return _new(prefix)
    except OSError as e:
        if is_disk_full(e):
            raise disk_full(state_dir(), "the sandbox's state directory", e) from None
        raise


def _new(prefix: str) -> Path:
    root = state_dir()
    with _SWEEPING:  # not _GUARD: remove_run_dir in another thread never waits for it
        if not _SWEPT:
            _SWEPT.append(True)
            sweep_stale(root, budget_s=_SWEEP_BUDGET_S)
    for _ in range(100):
        path = root / f"{prefix}{secrets.token_hex(6)}"
        try:
            fd = os.open(f"{path}.lock", os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        except FileExistsError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            path.mkdir(mode=0o700)
        except BaseException:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(f"{path}.lock")
            raise
        with _GUARD:
            _HELD[path] = fd
        return path
    raise SandboxError(f"no free run directory name in {str(root)!r}")


def remove_run_dir(path: Path) -> None:
    """Remove a directory :func:`new_run_dir` made (any depth, no link followed), then its lock.

    Raises:
        OSError: the tree could not be removed (its lock is kept, so a later sweep
            does not take it for a dead gg's while this process lives).
    """
    remove_tree(path)
    with _GUARD:
        fd = _HELD.pop(path, None)
    with contextlib.suppress(OSError):
        os.unlink(f"{path}.lock")
    if fd is not None:
        os.close(fd)


def sweep_stale(root: Path, *, budget_s: float | None = None) -> int:
    """Remove the run directories in ``root`` no live gg owns (see the module docstring).

    Never raises: what cannot be removed now is left for a later sweep.

    Args:
        root: the state directory.
        budget_s: stop after this long (``None``: no limit). Its caller may be on the
            event loop: thousands of dead gg's directories take seconds (10,000: 3 s).

    Returns:
        How many directories were removed.
    """
    now = time.time()
    removed = 0
    try:
        entries = list(os.scandir(root))
    except OSError:
        return 0
    names = {entry.name for entry in entries}
    started = time.monotonic()
    for entry in entries:
        if budget_s is not None and time.monotonic() - started > budget_s:
            break
        name = entry.name
        if not name.startswith(_PREFIXES):
            continue
        with contextlib.suppress(OSError):
            if name.endswith(".lock"):
                removed += _sweep_locked(root, entry, now)
            elif f"{name}.lock" not in names and _unowned_and_old(entry, now):
                remove_tree(root / name)
                removed += 1
    return removed


def _unowned_and_old(entry: os.DirEntry[str], now: float) -> bool:
    """A directory (no link) last changed over :data:`_UNOWNED_AGE_S` ago.

    Raises:
        OSError: it cannot be looked at.
    """
    if not entry.is_dir(follow_symlinks=False):
        return False
    return now - entry.stat(follow_symlinks=False).st_mtime > _UNOWNED_AGE_S


def _sweep_locked(root: Path, entry: os.DirEntry[str], now: float) -> int:
    """Remove ``entry``'s directory and the lock file when no process holds the lock.

    Raises:
        OSError: the lock file or the directory could not be opened or removed.
    """
    if now - entry.stat(follow_symlinks=False).st_mtime < _LOCK_GRACE_S:
        return 0
    fd = os.open(root / entry.name, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return 0  # its gg is alive
        directory = root / entry.name.removesuffix(".lock")
        gone = 0
        if directory.is_dir() and not directory.is_symlink():
            remove_tree(directory)
            gone = 1
        os.unlink(root / entry.name)
        return gone
    finally:
        os.close(fd)
