"""Dedicated uids for sandboxed programs when gg runs as root (SPEC M3).

``RLIMIT_NPROC`` does nothing for root, and root can read every file, so a
program never runs as root: each run takes a **slot**, uid ``UID_BASE + n``
(n in 0..255), locked with ``flock`` under :func:`gg.sandbox.host.state_dir`
for as long as the run lasts. Concurrent runs get different uids, so one
run's process count and cleanup (``kill(-1)`` as that uid) never touch
another's. These uids have no passwd entry; they need none.

**Workspace access.** Every slot uid has the primary group
:data:`SANDBOX_GID`. The workspace gets a POSIX ACL granting that group
``rwX`` and, on directories, the same as a *default* ACL, so files created
later by gg (root) or by a program inherit it. Nothing is chowned: files gg
made stay root's, files a program makes belong to its slot uid and the
sandbox group, and are writable by every later slot through the inherited
ACL. The walk runs once per workspace (when its root lacks the default
entry); a file moved in from outside later keeps its own ACL and is then
read-only to programs (call :func:`share_workspace` with ``force=True``).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import struct
import subprocess
from collections.abc import Iterator
from pathlib import Path

from gg.errors import SandboxError
from gg.sandbox.host import state_dir
from gg.sandbox.tree import walk_beneath

__all__ = ["SANDBOX_GID", "UID_BASE", "is_shared", "kill_all", "share_workspace", "uid_slot"]

UID_BASE = 61001
"""The first slot uid."""
SLOTS = 256
SANDBOX_GID = 61000
"""The group every slot uid has; the workspace ACL grants it ``rwX``."""
_NEXT = [0]
"""Where this process's next search for a free slot starts: after the last one it took, so
the slots it still holds (a session's waiting children) are not tried again each time, and
a freed uid is reused as late as possible."""

_ACCESS = "system.posix_acl_access"
_DEFAULT = "system.posix_acl_default"
_USER_OBJ, _USER, _GROUP_OBJ, _GROUP, _MASK, _OTHER = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20
_NO_ID = 0xFFFFFFFF


@contextlib.contextmanager
def uid_slot() -> Iterator[int]:
    """Hold a free slot uid for the duration of the ``with`` block.

    Slots are tried in turn from the one after this process's last (every slot is tried
    before the search gives up).

    Yields:
        The uid (``UID_BASE`` .. ``UID_BASE + 255``).

    Raises:
        gg.errors.SandboxError: (retryable) when all 256 slots are busy.
    """
    lock_dir = state_dir() / "slots"
    lock_dir.mkdir(mode=0o700, exist_ok=True)
    start = _NEXT[0]
    for n in ((start + i) % SLOTS for i in range(SLOTS)):
        fd = os.open(lock_dir / f"{n}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        _NEXT[0] = (n + 1) % SLOTS
        try:
            yield UID_BASE + n
        finally:
            os.close(fd)
        return
    raise SandboxError(f"all {SLOTS} sandbox uids are busy", retryable=True)


def kill_all(uid: int, python: str) -> None:
    """SIGKILL every process of ``uid`` (``kill(-1)`` from a process running as it).

    Catches processes that left the program's session or process group.
    """
    code = "import os\ntry:\n    os.kill(-1, 9)\nexcept ProcessLookupError:\n    pass\n"
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        subprocess.run(
            [python, "-I", "-S", "-c", code],
            user=uid, group=SANDBOX_GID, extra_groups=[], env={}, cwd="/",
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            timeout=10, check=False,
        )  # fmt: skip


# ---------------------------------------------------------------- POSIX ACLs


def _decode(blob: bytes) -> dict[tuple[int, int], int]:
    entries = {}
    for off in range(4, len(blob) - 7, 8):
        tag, perm, ident = struct.unpack_from("<HHI", blob, off)
        entries[(tag, ident)] = perm
    return entries


def _encode(entries: dict[tuple[int, int], int]) -> bytes:
    body = b"".join(struct.pack("<HHI", t, p, i) for (t, i), p in sorted(entries.items()))
    return struct.pack("<I", 2) + body


def _from_mode(mode: int) -> dict[tuple[int, int], int]:
    return {
        (_USER_OBJ, _NO_ID): (mode >> 6) & 7,
        (_GROUP_OBJ, _NO_ID): (mode >> 3) & 7,
        (_OTHER, _NO_ID): mode & 7,
    }


def _with_group(entries: dict[tuple[int, int], int], gid: int, perm: int) -> bytes:
    entries = dict(entries)
    entries[(_GROUP, gid)] = perm
    mask = 0
    for (tag, _), p in entries.items():
        if tag in (_USER, _GROUP_OBJ, _GROUP):
            mask |= p
    entries[(_MASK, _NO_ID)] = mask
    return _encode(entries)


def _read_acl(fd: int, name: str, mode: int) -> dict[tuple[int, int], int] | None:
    try:
        return _decode(os.getxattr(fd, name))
    except OSError as exc:
        if exc.errno in (errno.ENODATA, errno.ENOTSUP):
            return _from_mode(mode) if name == _ACCESS else None
        raise


def _grant_fd(fd: int, st: os.stat_result, gid: int) -> None:
    is_dir = stat.S_ISDIR(st.st_mode)
    perm = 7 if is_dir or st.st_mode & stat.S_IXUSR else 6
    current = _read_acl(fd, _ACCESS, st.st_mode) or _from_mode(st.st_mode)
    if current.get((_GROUP, gid)) != perm or current.get((_MASK, _NO_ID), 0) & perm != perm:
        os.setxattr(fd, _ACCESS, _with_group(current, gid, perm))
    if is_dir:
        default = _read_acl(fd, _DEFAULT, st.st_mode) or _from_mode(st.st_mode)
        if default.get((_GROUP, gid)) != 7:
            os.setxattr(fd, _DEFAULT, _with_group(default, gid, 7))


def _has_default(path: Path, gid: int) -> bool:
    try:
        # never through a link: the walk below opens the same root with O_NOFOLLOW
        return _decode(os.getxattr(path, _DEFAULT, follow_symlinks=False)).get((_GROUP, gid)) == 7
    except OSError:
        return False


def is_shared(path: Path, gid: int = SANDBOX_GID) -> bool:
    """Whether the workspace root already carries ``gid``'s default ACL entry.

    One ``getxattr``, cheap enough for the event loop; when it is there,
    :func:`share_workspace` is a no-op.
    """
    return _has_default(path, gid)


def share_workspace(path: Path, *, gid: int = SANDBOX_GID, force: bool = False) -> None:
    """Grant ``gid`` ``rwX`` on the workspace tree, as an access and a default ACL.

    The tree was written by the agent, so the walk follows nothing out of it
    (:func:`gg.sandbox.tree.walk_beneath`): no symlink is followed (each
    directory is opened ``O_NOFOLLOW | O_DIRECTORY`` beneath its parent's
    descriptor), no mount point is crossed, only directories and regular files
    are touched, through descriptors, never by path. A regular file with more
    than one hard link is skipped unless a slot uid owns it: its other names may
    be outside the workspace (and, with ``fs.protected_hardlinks`` off, be any
    file on the host). Directories deeper than :data:`gg.sandbox.tree.MAX_DEPTH`
    are not entered. Skipped when the root already carries the default entry,
    unless ``force``. (``setfacl -R`` is not used: it follows symlinks given on
    its command line and hard links always.)

    Raises:
        gg.errors.SandboxError: when the file system does not support ACLs.
    """
    if not force and _has_default(path, gid):
        return
    try:
        root = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise SandboxError(f"cannot open the workspace {str(path)!r}: {exc}") from exc
    try:
        for node in walk_beneath(root):
            if node.kind == "dir":
                _grant_fd(node.fd, node.st, gid)
            elif node.kind == "file" and _linked_safely(node.st):
                _grant_file(node.fd, node.name, gid)
    except OSError as exc:
        if exc.errno in (errno.ENOTSUP, errno.EOPNOTSUPP):
            raise SandboxError(
                f"the workspace {str(path)!r} is on a file system without POSIX ACLs; "
                "the sandbox uid cannot be given write access to it"
            ) from exc
        raise
    finally:
        os.close(root)


def _linked_safely(st: os.stat_result) -> bool:
    """One name only, or owned by a slot uid (which may change it anyway)."""
    return st.st_nlink <= 1 or UID_BASE <= st.st_uid < UID_BASE + SLOTS


def _grant_file(dir_fd: int, name: str, gid: int) -> None:
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    try:
        fd = os.open(name, flags, dir_fd=dir_fd)
    except OSError:
        return  # vanished, or swapped for a symlink
    try:
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode) and _linked_safely(st):
            _grant_fd(fd, st, gid)
    finally:
        os.close(fd)
