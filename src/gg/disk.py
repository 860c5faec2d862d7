"""A full disk, told as such: which file, which filesystem, how to go on (issue 12 item 1).

gg writes to three places a run depends on: the stream (SPEC O1), the board's
store (B1) and the workspace. When one of them runs out of space (``ENOSPC``,
a quota's ``EDQUOT``, SQLite's ``SQLITE_FULL``) the run stops with a
:class:`~gg.errors.DiskFull` whose message names the file and the mount point
of the filesystem holding it, never with a traceback.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path

from gg.errors import DiskFull

__all__ = ["disk_full", "is_disk_full", "mount_point"]

_FULL = {errno.ENOSPC, errno.EDQUOT}
_SQLITE_FULL = 13
"""SQLite's result code for "database or disk is full"."""


def mount_point(path: Path) -> Path:
    """The mount point of the filesystem holding ``path`` (or its nearest existing parent).

    Found by walking up until the device changes; no link is followed on the way.
    """
    here = Path(os.path.abspath(path))
    while not os.path.lexists(here) and here != here.parent:
        here = here.parent
    try:
        dev = os.lstat(here).st_dev
        while here != here.parent and os.lstat(here.parent).st_dev == dev:
            here = here.parent
    except OSError:
        pass
    return here


def is_disk_full(error: BaseException) -> bool:
    """Whether ``error`` means the disk (or a quota) is full."""
    if isinstance(error, DiskFull):
        return True
    if isinstance(error, OSError):
        return error.errno in _FULL
    if isinstance(error, sqlite3.Error):
        code = getattr(error, "sqlite_errorcode", None)
        return code == _SQLITE_FULL or "disk is full" in str(error)
    return False


def disk_full(path: Path, what: str, error: BaseException | None = None) -> DiskFull:
    """A :class:`~gg.errors.DiskFull` for ``path``, naming its filesystem and free space.

    ``what`` names what could not be written ("the stream", "the board store"...);
    the message names the filesystem and the free space gg sees on it.
    """
    mount = mount_point(path)
    try:
        st = os.statvfs(mount)
        free = f"{st.f_bavail * st.f_frsize // 1024} KiB free"
    except OSError:
        free = "free space unknown"
    cause = f" ({error})" if error is not None else ""
    return DiskFull(
        f"the disk is full: cannot write {what} {str(path)!r} on the filesystem mounted at "
        f"{str(mount)!r} ({free}){cause}; free some space there, then run again",
        path=path,
        mount=mount,
    )
