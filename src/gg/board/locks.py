"""Stale git lock files after a crash: found, proven stale, removed (issue 12 item 7; SPEC B5).

git takes a lock by creating ``<file>.lock`` beside the file it changes
(``index.lock``, ``HEAD.lock``, ``packed-refs.lock``, ``refs/heads/<b>.lock``,
a worktree's ``worktrees/<w>/index.lock``...) and renames it over the file
when done. A git killed inside that window leaves the lock behind, and every
later git that needs the file fails ("Unable to create '...lock': File
exists"), so a board issue would stall on every rerun.

A lock is removed only when it is provably stale:

- it is a regular file (never a link) named ``*.lock`` in the repository's
  common git dir, under ``refs/``, or at the top of a worktree's admin dir;
- it is older than the moment the board took its run lock (so no git the
  board started since can own it); and
- no live git process works in the repository (its working directory or a
  ``--git-dir``/``--work-tree`` argument inside it): a user's own git still
  running there may own a lock, and then nothing is removed.

Files are removed through directory descriptors opened without following
links, so a directory swapped for a link is never left.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path

__all__ = ["clear_stale_locks", "git_processes_in", "stale_locks"]


def _under(path: str, roots: Sequence[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def _proc_paths(pid: str) -> Iterator[str]:
    """The working directory and every path argument of process ``pid`` (best effort)."""
    try:
        cwd = os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        cwd = ""
    yield cwd
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read(65536).split(b"\0")
    except OSError:
        return
    for arg in argv:
        text = os.fsdecode(arg)
        for prefix in ("--git-dir=", "--work-tree="):
            if text.startswith(prefix):
                yield os.path.realpath(text.removeprefix(prefix))
        if text.startswith("/"):
            yield os.path.realpath(text)


def git_processes_in(paths: Sequence[Path]) -> list[int]:
    """Pids of live ``git`` processes working under any of ``paths``.

    A process counts when its command name starts with ``git`` and its
    working directory or a path argument lies under one of ``paths`` (real
    paths). Processes gg cannot inspect are skipped.

    Returns:
        The pids, ascending (this process excluded).
    """
    roots = [os.path.realpath(p) for p in paths]
    found: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/comm", "rb") as f:
                comm = f.read(64).strip()
        except OSError:
            continue
        if comm.startswith(b"git") and any(_under(p, roots) for p in _proc_paths(entry)):
            found.append(int(entry))
    return sorted(found)


def _locks_in(dfd: int, rel: str, older_than: float) -> Iterator[tuple[str, str]]:
    """``(directory, name)`` of each old regular ``*.lock`` directly in ``dfd``."""
    for name in os.listdir(dfd):
        if not name.endswith(".lock"):
            continue
        try:
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode) and st.st_mtime < older_than:
            yield rel, name


def _walk_locks(common: Path, older_than: float) -> Iterator[tuple[Path, int, str]]:
    """``(path, directory fd, name)`` of each old regular ``*.lock`` (see :func:`stale_locks`).

    The fd is the walk's own, of a directory reached without following a link, and
    valid only until the walk moves on.
    """
    for top, dirs, _files, dfd in os.fwalk(common, follow_symlinks=False):
        rel = os.path.relpath(top, common)
        parts = [] if rel == "." else rel.split(os.sep)
        if parts != ["worktrees"]:  # the worktrees dir itself holds admin dirs, not locks
            for _dir, name in _locks_in(dfd, top, older_than):
                yield Path(top, name), dfd, name
        if not parts:
            dirs[:] = [d for d in dirs if d in ("refs", "worktrees")]
        elif parts[0] == "worktrees" and len(parts) > 1:
            dirs[:] = []  # only the top of each worktree's admin dir


def stale_locks(common: Path, *, older_than: float) -> list[Path]:
    """Regular ``*.lock`` files older than ``older_than`` (Unix seconds) in git's dir.

    Looked for at the top of ``common`` (the common git dir), anywhere under
    ``common/refs`` and at the top of each ``common/worktrees/<name>``; no
    link is followed.
    """
    return [path for path, _fd, _name in _walk_locks(common, older_than)]


def clear_stale_locks(repo: Path, common: Path, *, older_than: float) -> list[Path]:
    """Remove the stale git locks of ``repo`` (see the module docstring).

    Each is unlinked through the descriptor of the directory the no-follow walk
    found it in, so a directory swapped for a link meanwhile is never entered.

    Args:
        repo: the repository's top level.
        common: its common git dir (real path).
        older_than: Unix seconds; only locks modified before it are candidates
            (the board passes the time it took its run lock).

    Returns:
        The lock files removed; none while a git process works in the repository.
    """
    if not stale_locks(common, older_than=older_than) or git_processes_in([repo, common]):
        return []
    removed: list[Path] = []
    for path, dfd, name in _walk_locks(common, older_than):
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=dfd)
            removed.append(path)
    return removed
