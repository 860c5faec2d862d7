"""Race-free file access beneath a workspace (issue 9, Build item 1; SPEC §10 Built-in tools).

Everything under a workspace is written by the agent, so every host-side
path operation here resolves *beneath* an ``O_PATH|O_DIRECTORY`` handle of
the workspace with no window between check and use:

- **reads** open with ``openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)``
  where the kernel has it; when it does not, or when it refuses (an absolute
  symlink, a link that leaves), an fd-relative walk decides: each component
  opened with ``O_NOFOLLOW``, symlinks read with ``readlinkat`` and resolved
  by gg itself (at most :data:`MAX_HOPS`), ``..`` popped from gg's own stack
  of directory handles, never looked up. Nothing ever resolves above the
  workspace handle, whatever is renamed or swapped meanwhile;
- only **regular files** with a single name are read: the final open uses
  ``O_NONBLOCK|O_NOCTTY`` (a FIFO never blocks it), the fd is ``fstat``-ed,
  and FIFOs, sockets, devices and hard-linked files are refused;
- reads are **size-capped** on the fd (at most ``cap + 1`` bytes are read;
  ``st_size`` is never trusted);
- **writes** create missing parents with ``mkdirat``, write a temporary file
  in the parent's handle and ``renameat`` it over the name, so a hard link
  or a symlink swapped in at the last moment is replaced, never written through;
- **writes never go into a git directory** (:func:`git_dir_problem`): not into any
  directory named ``.git`` at any depth, nor any directory that holds two or more of
  git's markers (``HEAD``, ``objects/``, ``refs/``, ``commondir``, ``config``), nor
  onto a final name ``.git`` (a ``gitdir:`` file redirects git). Each directory is
  judged as the walk opens it, by that handle (whatever path, ``..`` or link led
  there); the workspace itself too. Git configuration and hooks run programs for
  whoever runs git there next (the operator), so an agent may read them, not write.

Errors raised: :class:`gg.errors.WorkspaceEscape` (a path or link leaving the
workspace) and :class:`gg.errors.ToolError` (anything else), messages for the
model. :func:`run_blocking` runs such work off the event loop under a deadline.

What this module does not promise: a thread stuck in the kernel (a hung
network filesystem) cannot be killed; its call times out and the thread is
abandoned. The workspace path itself is trusted (the operator chose it).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import errno
import os
import secrets
import stat
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeAlias, TypeVar

from gg.disk import disk_full, is_disk_full
from gg.errors import ToolError, WorkspaceEscape

__all__ = [
    "MAX_HOPS",
    "Beneath",
    "Kind",
    "check_path",
    "git_dir_problem",
    "open_beneath",
    "read_beneath",
    "read_capped",
    "run_blocking",
]

MAX_HOPS = 40
"""The most symlinks one resolution follows (as the kernel's own limit)."""

_T = TypeVar("_T")
Kind: TypeAlias = Literal["file", "directory", "any"]
"""What :meth:`Beneath.open` accepts: a regular file, a directory, or either."""
_SYS_OPENAT2 = 437  # the same number on every Linux architecture (a 5.6+ syscall)
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_BENEATH = 0x08
_DIR_FLAGS = os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_KINDS = {stat.S_IFIFO: "a FIFO (named pipe)", stat.S_IFSOCK: "a socket",
          stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device",
          stat.S_IFDIR: "a directory", stat.S_IFLNK: "a symbolic link"}  # fmt: skip
_MISSING = {"file": "no such file", "directory": "no such directory",
            "any": "no such file or directory"}  # fmt: skip
_POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="gg-files")


class _OpenHow(ctypes.Structure):
    _fields_ = (("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64),
                ("resolve", ctypes.c_uint64))  # fmt: skip


class _Escape(Exception):
    """Internal: the walk tried to leave the workspace."""


_GIT_MARKERS = (("HEAD", "file"), ("objects", "dir"), ("refs", "dir"),
                ("commondir", "file"), ("config", "file"))  # fmt: skip
"""What git looks for in a git directory (``HEAD`` and ``objects/`` + ``refs/``, or
``HEAD`` and ``commondir``), and the ``config`` that makes one dangerous. A directory with
two of them is treated as a git directory: no write adds a third, so none can be
assembled piece by piece either (every git directory git accepts holds at least two,
and one an agent could use against the operator at least three)."""


def git_dir_problem(dir_fd: int, name: str) -> str | None:
    """Why the directory ``dir_fd`` (reached by entry ``name``) is a git directory, or ``None``.

    Judged on the open directory itself (issue 9 item 4, SPEC §10 Built-in tools): its
    entry name is ``.git``, or it holds two or more of git's markers (names looked up
    beneath ``dir_fd``; ``HEAD`` may be a symlink, as old git wrote it).

    Args:
        dir_fd: an open (``O_PATH`` is enough) handle of the directory.
        name: the directory entry it was opened by (``"."`` for the workspace itself).

    Returns:
        A short reason for the model (``"it is named .git"``, ``"it holds HEAD, refs/"``).
    """
    if name == ".git":
        return "it is named .git"
    found = []
    for marker, kind in _GIT_MARKERS:
        try:
            st = os.stat(marker, dir_fd=dir_fd, follow_symlinks=False)
        except OSError:
            continue
        if kind == "dir" and stat.S_ISDIR(st.st_mode):
            found.append(marker + "/")
        elif kind == "file" and (
            stat.S_ISREG(st.st_mode) or (marker == "HEAD" and stat.S_ISLNK(st.st_mode))
        ):
            found.append(marker)
    return f"it holds {', '.join(found)}" if len(found) >= 2 else None


class _GitDir(Exception):
    """Internal: a write walked into (or named) a git directory."""

    def __init__(self, where: str, why: str) -> None:
        super().__init__(where, why)
        self.where, self.why = where, why


def _load_openat2() -> Callable[[int, str, int], int] | None:
    """The ``openat2`` syscall as a function, or ``None`` where the kernel lacks it."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        syscall = libc.syscall
    except (OSError, AttributeError):
        return None
    syscall.restype = ctypes.c_long

    def openat2(dirfd: int, path: str, flags: int) -> int:
        how = _OpenHow(flags, 0, _RESOLVE_BENEATH | _RESOLVE_NO_MAGICLINKS)
        fd = int(syscall(ctypes.c_long(_SYS_OPENAT2), ctypes.c_int(dirfd),
                         ctypes.c_char_p(os.fsencode(path)), ctypes.byref(how),
                         ctypes.c_size_t(ctypes.sizeof(how))))  # fmt: skip
        if fd < 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err), path)
        return fd

    try:
        os.close(openat2(-100, ".", os.O_PATH | os.O_CLOEXEC))  # AT_FDCWD: a probe
    except OSError:
        return None  # ENOSYS (old kernel) or a seccomp filter refusing it
    return openat2


_OPENAT2 = _load_openat2()


def check_path(path: str) -> None:
    """Refuse, by its text alone, a tool path that cannot be beneath the workspace.

    Args:
        path: a path relative to the workspace, as the model or program gave it.

    Raises:
        ToolError: ``path`` is empty or contains a NUL character.
        WorkspaceEscape: ``path`` is absolute or climbs out with ``..`` (issue 9 item 1).
    """
    if "\x00" in path:
        raise ToolError(f"path {path!r} contains a NUL character")
    if not path:
        raise ToolError("the path is empty; give a path relative to the workspace, e.g. '.'")
    if path.startswith("/"):
        raise WorkspaceEscape(
            f"path {path!r} is absolute; paths are relative to the workspace "
            "(e.g. 'src/main.py'), and nothing outside it can be reached"
        )
    if os.path.normpath(path).split("/")[0] == "..":
        raise WorkspaceEscape(f"path {path!r} leaves the workspace; paths must stay inside it")


def _kind(mode: int) -> str:
    return _KINDS.get(stat.S_IFMT(mode), "not a regular file")


def _os_error(path: str, exc: OSError, action: str, kind: Kind = "any") -> ToolError:
    """The model-facing error for an ``OSError`` met on ``path``."""
    if exc.errno == errno.ENOENT:
        return ToolError(f"{_MISSING[kind]}: {path!r}")
    if exc.errno == errno.ENOTDIR:
        return ToolError(f"{path!r}: a component of the path is not a directory")
    if exc.errno == errno.ELOOP:
        return ToolError(f"{path!r}: too many symbolic links (more than {MAX_HOPS})")
    if exc.errno == errno.ENXIO:
        return ToolError(f"{path!r} is a socket or device, not a regular file")
    return ToolError(f"cannot {action} {path!r}: {exc.strerror or exc}")


@dataclass(kw_only=True)
class _Walk:
    """One resolution in progress: gg's own stack of directory handles below the root."""

    root: int
    workspace: str
    fds: list[int] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    hops: int = 0
    no_git: bool = False
    """A write: refuse to enter or create a git directory (:func:`git_dir_problem`)."""

    @property
    def cur(self) -> int:
        return self.fds[-1] if self.fds else self.root

    def rel(self, name: str = ".") -> str:
        parts = [*self.names, *([] if name == "." else [name])]
        return "/".join(parts) or "."

    def close(self) -> None:
        while self.fds:
            os.close(self.fds.pop())
        self.names.clear()

    def up(self) -> None:
        if not self.fds:
            raise _Escape
        os.close(self.fds.pop())
        self.names.pop()

    def link(self, target: str, todo: deque[str]) -> None:
        """Queue a symlink's target in place of the link (absolute ones only inside)."""
        self.hops += 1
        if self.hops > MAX_HOPS:
            raise OSError(errno.ELOOP, os.strerror(errno.ELOOP))
        if not target:
            raise OSError(errno.ENOENT, os.strerror(errno.ENOENT))
        if target.startswith("/"):
            inside = os.path.normpath(target)
            if inside != self.workspace and not inside.startswith(self.workspace + "/"):
                raise _Escape
            self.close()
            target = inside[len(self.workspace) :].lstrip("/") or "."
        todo.extendleft(reversed(target.split("/")))

    def enter(self, name: str, todo: deque[str], create: bool) -> None:
        """Step into directory ``name`` (following a symlink by queueing its target)."""
        try:
            fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=self.cur)
        except FileNotFoundError:
            if not create:
                raise
            if todo and todo[0] == "..":
                todo.popleft()  # 'missing/..' is where we are: make nothing on the way
                return
            if self.no_git and name == ".git":
                raise _GitDir(self.rel(name), "it would be named .git") from None
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, 0o777, dir_fd=self.cur)
            fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=self.cur)
        try:
            mode = os.fstat(fd).st_mode
            if stat.S_ISLNK(mode):
                self.link(os.readlink("", dir_fd=fd), todo)
                return
            if not stat.S_ISDIR(mode):
                raise OSError(errno.ENOTDIR, os.strerror(errno.ENOTDIR))
            why = git_dir_problem(fd, name) if self.no_git else None
            if why is not None:
                raise _GitDir(self.rel(name), why)
        except BaseException:
            os.close(fd)
            raise
        self.fds.append(fd)
        self.names.append(name)

    def descend(self, todo: deque[str], create: bool) -> str:
        """Walk all of ``todo`` but its last name, which is returned (``"."`` if none)."""
        while todo:
            name = todo.popleft()
            if name in ("", "."):
                continue
            if name == "..":
                self.up()
                continue
            if not any(n not in ("", ".") for n in todo):
                return name
            self.enter(name, todo, create)
        return "."


class Beneath:
    """A handle on a workspace through which every path resolves beneath it (issue 9 item 1).

    Use as a context manager; the ``O_PATH`` handle closes on exit.

    Args:
        workspace: the workspace directory (trusted: the operator's choice).

    Raises:
        ToolError: the workspace cannot be opened as a directory.
    """

    def __init__(self, workspace: Path) -> None:
        self.workspace = os.path.realpath(workspace)
        try:
            self.fd = os.open(self.workspace, _DIR_FLAGS)
        except OSError as exc:
            raise ToolError(f"cannot open the workspace: {exc.strerror or exc}") from None

    def __enter__(self) -> Beneath:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the workspace handle (idempotent)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    @contextlib.contextmanager
    def _walk(self, path: str, *, write: bool = False) -> Iterator[_Walk]:
        walk = _Walk(root=self.fd, workspace=self.workspace, no_git=write)
        try:
            if write and (why := git_dir_problem(self.fd, ".")) is not None:
                raise _GitDir(".", why)
            yield walk
        except _Escape:
            raise WorkspaceEscape(
                f"path {path!r} resolves outside the workspace through a symbolic link "
                "(or a '..' after one); paths must stay inside it"
            ) from None
        except _GitDir as exc:
            where = "the workspace" if exc.where == "." else repr(exc.where)
            raise ToolError(
                f"{path!r} is refused: {where} is a git directory ({exc.why}). The file "
                "tools read git directories but never write, make or replace anything in "
                "one: git configuration and hooks run programs for whoever next runs git "
                "there. Nothing was written."
            ) from None
        finally:
            walk.close()

    def _final(self, walk: _Walk, path: str, opener: Callable[[int, str], _T],
               create: bool = False) -> _T:  # fmt: skip
        """Resolve ``path`` in ``walk`` and call ``opener(dir_fd, last_name)``.

        ``opener`` must not follow a final symlink (``O_NOFOLLOW``: ``ELOOP``);
        a final symlink is read and resolved here, beneath the root.
        """
        todo = deque(path.split("/"))
        name = walk.descend(todo, create)
        while True:
            try:
                return opener(walk.cur, name)
            except OSError as exc:
                if exc.errno != errno.ELOOP or name in (".", ".."):
                    raise
            try:
                target = os.readlink(name, dir_fd=walk.cur)
            except OSError as exc:
                if exc.errno not in (errno.EINVAL, errno.ENOENT):
                    raise
                target = name  # swapped back meanwhile: look again (hops bound this)
            walk.link(target, todo)
            name = walk.descend(todo, create)

    def open(self, path: str, *, kind: Kind = "file") -> int:
        """Open ``path`` beneath the workspace for reading, without following out.

        Args:
            path: relative to the workspace; in-workspace symlinks are followed.
            kind: ``"file"`` (a regular file with one name), ``"directory"``, or
                ``"any"`` (either; ``fstat`` the fd to tell).

        Returns:
            An fd (``O_RDONLY|O_NONBLOCK``, close-on-exec) the caller closes.

        Raises:
            WorkspaceEscape: the path or a symlink on it leaves the workspace.
            ToolError: missing, the wrong kind (FIFO, socket, device, hard link...),
                too many links, or another ``OSError``.
        """
        check_path(path)
        flags = _READ_FLAGS  # no O_DIRECTORY: the kind is checked on the fd, for a clear error
        try:
            fd = self._open_fast(path, flags)
            if fd is None:
                with self._walk(path) as walk:
                    fd = self._final(
                        walk, path, lambda d, n: os.open(n, flags | os.O_NOFOLLOW, dir_fd=d)
                    )
        except OSError as exc:
            raise _os_error(path, exc, "open", kind) from None
        _check_kind(fd, path, kind)
        return fd

    def _open_fast(self, path: str, flags: int) -> int | None:
        """``openat2`` beneath the root; ``None`` when the walk must decide instead."""
        if _OPENAT2 is None:
            return None
        try:
            return _OPENAT2(self.fd, path, flags)
        except OSError as exc:
            if exc.errno in (errno.EXDEV, errno.EAGAIN, errno.ELOOP, errno.ENOSYS):
                return None  # leaves, absolute link, a race on '..', or magic: walk it
            raise

    def read(self, path: str, *, cap: int) -> bytes:
        """Read the regular file ``path`` whole, if it holds at most ``cap`` bytes.

        Raises:
            ToolError: over ``cap`` bytes (counted by reading, not by ``st_size``),
                and everything :meth:`open` raises.
        """
        fd = self.open(path)
        try:
            data = read_capped(fd, cap)
        except OSError as exc:
            raise _os_error(path, exc, "read") from None
        finally:
            os.close(fd)
        if data is None:
            raise ToolError(
                f"{path!r} holds more than {cap:,} bytes, too large to read whole; "
                "use search_text, or run_command with head/sed"
            )
        return data

    def write(
        self, path: str, data: bytes, *, guard: Callable[[int, str], None] | None = None
    ) -> str:
        """Replace (or create) the regular file ``path`` with ``data``; create parents.

        The bytes go to a temporary file in the parent directory's handle,
        renamed over the name: a hard link or symlink there is replaced, never
        written through. An existing file's permission bits (and, as root, owner)
        are kept. ``guard(dir_fd, name)``, when given, sees the resolved parent
        directory's handle and the final name just before the write, and may
        raise :class:`ToolError` to refuse it (the name is gg's own file).

        Returns:
            The path written, resolved, relative to the workspace.

        Raises:
            WorkspaceEscape: the path or a symlink on it leaves the workspace.
            ToolError: the name is a directory, FIFO, socket or device; the path
                goes into a git directory or names ``.git`` (:func:`git_dir_problem`); an
                ``OSError``.
            DiskFull: the workspace's filesystem is full (the run stops; issue 12).
        """
        check_path(path)
        try:
            with self._walk(path, write=True) as walk:
                parts = path.split("/")
                if ".git" in parts:  # by its text, before anything is made on the way
                    raise _GitDir("/".join(parts[: parts.index(".git") + 1]), "it is named .git")

                def replace(d: int, n: str) -> str:
                    if n == ".git":
                        raise _GitDir(walk.rel(n), "a .git file or directory redirects git")
                    if guard is not None:
                        guard(d, n)
                    return _replace(walk, d, n, data)

                return self._final(walk, path, replace, create=True)
        except OSError as exc:
            if is_disk_full(exc):  # the run stops, naming the disk (issue 12 item 1)
                raise disk_full(Path(self.workspace) / path, "the workspace file", exc) from None
            raise _os_error(path, exc, "write") from None


def _check_kind(fd: int, path: str, kind: Kind) -> None:
    """Close ``fd`` and raise unless it is a directory or a one-name regular file, as asked."""
    try:
        st = os.fstat(fd)
        if kind != "file" and stat.S_ISDIR(st.st_mode):
            return
        if kind != "directory" and stat.S_ISREG(st.st_mode):
            if st.st_nlink <= 1:
                return
            problem = (
                f"{path!r} is a hard link ({st.st_nlink} names for one file); gg reads "
                "files with one name only, since another name may be outside the workspace"
            )
        elif stat.S_ISDIR(st.st_mode):
            problem = f"{path!r} is a directory; use list_dir to see what it holds"
        elif kind == "directory" and stat.S_ISREG(st.st_mode):
            problem = f"{path!r} is a file, not a directory; use read_file"
        else:
            problem = (
                f"{path!r} is {_kind(st.st_mode)}, not a regular file; gg reads regular files only"
            )
    except BaseException:
        os.close(fd)
        raise
    os.close(fd)
    raise ToolError(problem)


def read_capped(fd: int, cap: int) -> bytes | None:
    """Read ``fd`` to its end, or ``None`` as soon as it yields more than ``cap`` bytes.

    Raises:
        OSError: from ``read`` (``EAGAIN`` on a FIFO that slipped through, etc.).
    """
    chunks: list[bytes] = []
    total = 0
    while total <= cap:
        chunk = os.read(fd, min(cap + 1 - total, 1 << 20))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
    return None


def _replace(walk: _Walk, dir_fd: int, name: str, data: bytes) -> str:
    """Write ``data`` over ``name`` in ``dir_fd``: unnamed until whole, else temp and rename."""
    if name in (".", ".."):
        raise ToolError(f"{walk.rel(name)!r} is a directory; give a file path")
    try:
        old: os.stat_result | None = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        old = None
    if old is not None and stat.S_ISLNK(old.st_mode):
        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP))  # _final resolves it
    if old is not None and not stat.S_ISREG(old.st_mode):
        raise ToolError(f"{walk.rel(name)!r} is {_kind(old.st_mode)}; give a regular file path")
    if _write_unnamed(dir_fd, name, data, old):
        return walk.rel(name)
    temp = f".gg-write-{secrets.token_hex(8)}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o666, dir_fd=dir_fd)  # fmt: skip
    try:
        try:
            _write_all(fd, data)
            if old is not None:
                _keep_owner(fd, old)
        finally:
            os.close(fd)
        os.rename(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=dir_fd)
        raise
    return walk.rel(name)


def _write_unnamed(dir_fd: int, name: str, data: bytes, old: os.stat_result | None) -> bool:
    """Write ``data`` as an unnamed file (``O_TMPFILE``), then give it its name; ``False``: cannot.

    Nothing has a name in the directory until the file is whole, so a gg killed mid-write
    leaves nothing behind (issue 12). A new file is linked straight to ``name``; a file
    that replaces one is linked to a temporary name and renamed over it at once (a window
    of two calls, not of the whole write). ``False`` when the filesystem has no
    ``O_TMPFILE`` or ``/proc`` is not there: the caller writes the named way.
    """
    try:
        fd = os.open(".", os.O_TMPFILE | os.O_WRONLY | os.O_CLOEXEC, 0o666, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT):
            return False
        raise
    try:
        _write_all(fd, data)
        if old is not None:
            _keep_owner(fd, old)
        source = f"/proc/self/fd/{fd}"
        if old is None:
            try:
                os.link(source, name, dst_dir_fd=dir_fd, follow_symlinks=True)
                return True
            except FileExistsError:
                pass  # made meanwhile: replace it as below
            except OSError as exc:
                if exc.errno in (errno.ENOENT, errno.EPERM, errno.EACCES, errno.EXDEV):
                    return False
                raise
        temp = f".gg-write-{secrets.token_hex(8)}.tmp"
        try:
            os.link(source, temp, dst_dir_fd=dir_fd, follow_symlinks=True)
        except OSError as exc:
            if exc.errno in (errno.ENOENT, errno.EPERM, errno.EACCES, errno.EXDEV):
                return False
            raise
        try:
            os.rename(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=dir_fd)
            raise
        return True
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _keep_owner(fd: int, old: os.stat_result) -> None:
    """Give the new file the replaced one's permission bits and (as root) owner."""
    with contextlib.suppress(OSError):
        os.fchmod(fd, stat.S_IMODE(old.st_mode) & 0o777)
        if os.geteuid() == 0:
            os.fchown(fd, old.st_uid, old.st_gid)


def open_beneath(workspace: Path, path: str, *, kind: Kind = "file") -> int:
    """Open ``path`` beneath ``workspace`` (see :meth:`Beneath.open`); the caller closes it."""
    with Beneath(workspace) as root:
        return root.open(path, kind=kind)


def read_beneath(workspace: Path, path: str, *, cap: int) -> bytes:
    """Read a regular file beneath ``workspace``, at most ``cap`` bytes (:meth:`Beneath.read`)."""
    with Beneath(workspace) as root:
        return root.read(path, cap=cap)


async def run_blocking(fn: Callable[[], _T], *, timeout_s: float, what: str) -> _T:
    """Run blocking file work in a worker thread, so the event loop keeps running.

    Args:
        fn: the work, taking no arguments.
        timeout_s: seconds before giving up on it (the thread is then abandoned;
            work that checks a deadline of its own stops by itself).
        what: the operation, for the error message (e.g. ``"read_file"``).

    Returns:
        What ``fn`` returned.

    Raises:
        ToolError: ``fn`` did not finish within ``timeout_s``; and whatever ``fn`` raised.
    """
    loop = asyncio.get_running_loop()
    future = loop.run_in_executor(_POOL, fn)
    try:
        return await asyncio.wait_for(future, timeout_s)
    except TimeoutError:
        raise ToolError(f"{what} did not finish within {timeout_s:g} s and was abandoned") from None
