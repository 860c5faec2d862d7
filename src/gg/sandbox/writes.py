"""The write cap: what one sandboxed program or command may add to the disk (issue 9, item 7).

Each program run, on-use script and sandboxed ``run_command`` may add at most
``Limits.write_bytes`` bytes and ``Limits.write_files`` files and directories
to the workspace (and, under the ``unshare`` and ``rlimit`` layers, to its
private tmp, which lives on the host's disk). Past either, gg kills it and
the run is a runtime error naming the cap (``write_bytes`` / ``write_files``).

How, cheaply on a big workspace:

1. **Trigger** (every :data:`POLL_S`): ``statvfs`` of the file systems holding
   those directories. While their free space and free inodes have fallen by
   less than what is left of the cap, the program cannot have passed it, and
   nothing else is done (a couple of microseconds per poll).
2. **Check** (only when triggered, in a thread): a bounded walk
   (:func:`gg.sandbox.tree.walk_beneath`, no symlink followed) summing the
   allocated bytes (``st_blocks``) and the number of entries whose ``ctime`` is
   at or after the start (made or changed since; the program cannot set
   ``ctime`` back). It stops as soon as either sum passes its cap. Below the
   cap (someone else filled the disk), the trigger is re-armed with what is
   left. If the walk could not see everything the program made this turn (a
   tree deeper than :data:`gg.sandbox.tree.MAX_DEPTH`), the fall in free space
   is counted instead.
3. The same check runs once more when the process has ended.

What it does not promise: an exact count. A file changed this turn counts
with its whole size; a program that deletes as much as it writes adds
nothing; another writer on the same file system that fills it while the
program touches over ``write_bytes`` of files can get the program stopped.
Overshoot is what the program can write in one poll plus one walk.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from gg.sandbox.tree import walk_beneath

__all__ = ["POLL_S", "Usage", "WriteCap", "changed_since"]

POLL_S = 0.05
"""Seconds between two ``statvfs`` polls."""
_CLOCK_SLACK_NS = 20_000_000  # file times come from a coarse clock, up to a tick behind

CapName = Literal["write_bytes", "write_files"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Usage:
    """What :func:`changed_since` counted."""

    bytes: int
    """Allocated bytes of entries made or changed since the start (hard links once)."""
    files: int
    """Entries (files, directories, links...) made or changed since the start."""
    complete: bool
    """False if the walk met a directory changed this turn that it could not enter."""


def changed_since(
    roots: Sequence[Path], since_ns: int, *, stop_bytes: int, stop_files: int
) -> Usage:
    """Count what was made or changed under ``roots`` since ``since_ns`` (``ctime``, ns).

    Stops early, once ``bytes > stop_bytes`` or ``files > stop_files``. Never follows a
    symlink; unreadable parts are skipped.
    """
    seen: set[tuple[int, int]] = set()
    total = files = 0
    complete = True
    for root in roots:
        try:
            fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            for node in walk_beneath(fd):
                st = node.st
                if st.st_ctime_ns < since_ns or (st.st_dev, st.st_ino) in seen:
                    continue
                if node.kind == "deep":
                    complete = False
                seen.add((st.st_dev, st.st_ino))
                files += 1
                if not stat.S_ISLNK(st.st_mode):
                    total += st.st_blocks * 512
                if total > stop_bytes or files > stop_files:
                    return Usage(bytes=total, files=files, complete=complete)
        finally:
            os.close(fd)
    return Usage(bytes=total, files=files, complete=complete)


class WriteCap:
    """Watches one process's writes against ``max_bytes`` and ``max_files`` (module docstring).

    Args:
        roots: the directories whose growth counts (the workspace, the private tmp).
        max_bytes: the byte cap (``Limits.write_bytes``).
        max_files: the file cap (``Limits.write_files``).
    """

    def __init__(self, roots: Sequence[Path], *, max_bytes: int, max_files: int) -> None:
        self.roots = [Path(r) for r in roots]
        self.max_bytes, self.max_files = max_bytes, max_files
        self.since_ns = time.time_ns() - _CLOCK_SLACK_NS
        self._left = (max_bytes, max_files)
        self._base = self._free()
        self._start = self._base
        self.usage: Usage | None = None
        """The last check's count, if one ran."""

    def _free(self) -> tuple[int, int]:
        """Free bytes and free inodes, summed over the distinct file systems of the roots."""
        seen: set[int] = set()
        free_bytes = free_files = 0
        for root in self.roots:
            with contextlib.suppress(OSError):
                dev = os.stat(root).st_dev
                if dev in seen:
                    continue
                seen.add(dev)
                vfs = os.statvfs(root)
                free_bytes += vfs.f_bavail * vfs.f_frsize
                free_files += vfs.f_favail
        return free_bytes, free_files

    def triggered(self) -> bool:
        """Whether the disk lost at least what is left of either cap since the last check."""
        now = self._free()
        return self._base[0] - now[0] >= self._left[0] or self._base[1] - now[1] >= self._left[1]

    def check(self) -> CapName | None:
        """Walk and count (blocking); the cap passed, or ``None`` and the trigger is re-armed."""
        now = self._free()
        usage = changed_since(
            self.roots, self.since_ns, stop_bytes=self.max_bytes, stop_files=self.max_files
        )
        if not usage.complete:  # part of the tree is out of sight: count the disk's loss
            usage = Usage(
                bytes=max(usage.bytes, self._start[0] - now[0]),
                files=max(usage.files, self._start[1] - now[1]),
                complete=False,
            )
        self.usage = usage
        if usage.bytes > self.max_bytes:
            return "write_bytes"
        if usage.files > self.max_files:
            return "write_files"
        self._base = now
        self._left = (self.max_bytes - usage.bytes, self.max_files - usage.files)
        return None

    def message(self, name: CapName, *, what: str = "program") -> str:
        """The runtime error for passing ``name`` (``what``: "program" or "command")."""
        if name == "write_bytes":
            return (
                f"the {what} wrote more than {self.max_bytes} bytes to the workspace in one "
                f"turn (the write_bytes cap) and was stopped"
            )
        return (
            f"the {what} made or changed more than {self.max_files} files in the workspace in "
            f"one turn (the write_files cap) and was stopped"
        )
