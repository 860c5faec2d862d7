"""Walk a directory tree the agent wrote without following anything out of it (issue 9, item 7).

Every directory is opened relative to its parent's descriptor with
``O_NOFOLLOW | O_DIRECTORY``, so a symlink (or anything that is not a
directory, such as a FIFO) swapped in between listing and opening is
refused rather than followed; entries are ``lstat``-ed, never followed; the
walk does not cross into another file system (a mount point); it is
iterative (no recursion limit) and holds one descriptor per level, and it
does not enter directories deeper than ``max_depth`` (it reports them).

What it does not promise: a consistent snapshot. The tree may change while it
is walked; entries that vanish are skipped.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

__all__ = ["MAX_DEPTH", "Node", "remove_tree", "walk_beneath"]

MAX_DEPTH = 128
"""Levels below the root the walk enters (one open descriptor per level)."""

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


@dataclass(frozen=True, slots=True)
class Node:
    """One entry met by :func:`walk_beneath`.

    ``kind`` is ``"dir"`` (``fd`` is the directory's own open descriptor, valid
    until the walk moves on; ``name`` is empty), ``"file"`` (a regular file:
    ``fd`` is its parent's descriptor and ``name`` its name there), ``"other"``
    (symlink, FIFO, socket, device: never opened) or ``"deep"`` (a directory past
    ``max_depth`` or on another file system, not entered; ``fd`` is its parent's).
    """

    kind: Literal["dir", "file", "other", "deep"]
    fd: int
    name: str
    st: os.stat_result
    depth: int


def _entries(fd: int, depth: int, dev: int) -> tuple[list[Node], list[str]]:
    """The non-directory nodes of the directory ``fd`` and the names of its subdirectories."""
    nodes: list[Node] = []
    subdirs: list[str] = []
    try:
        with os.scandir(fd) as it:
            listed = list(it)
    except OSError:
        return nodes, subdirs
    for entry in listed:
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode):
            if st.st_dev == dev:
                subdirs.append(entry.name)
            else:
                nodes.append(Node("deep", fd, entry.name, st, depth + 1))
        else:
            kind: Literal["file", "other"] = "file" if stat.S_ISREG(st.st_mode) else "other"
            nodes.append(Node(kind, fd, entry.name, st, depth + 1))
    return nodes, subdirs


def walk_beneath(root_fd: int, *, max_depth: int = MAX_DEPTH) -> Iterator[Node]:
    """Yield every entry beneath the directory ``root_fd`` (the root first, as a ``"dir"``).

    Args:
        root_fd: an open directory descriptor; the caller keeps ownership.
        max_depth: directories deeper than this are yielded as ``"deep"``, not entered.

    Yields:
        :class:`Node` values, parents before their contents.
    """
    root_st = os.fstat(root_fd)
    dev = root_st.st_dev
    yield Node("dir", root_fd, "", root_st, 0)
    nodes, subdirs = _entries(root_fd, 0, dev)
    yield from nodes
    stack: list[tuple[int, Iterator[str], int]] = [(root_fd, iter(subdirs), 0)]
    try:
        while stack:
            parent, names, depth = stack[-1]
            name = next(names, None)
            if name is None:
                stack.pop()
                if parent != root_fd:
                    os.close(parent)
                continue
            child = _open_dir(parent, name, dev)
            if child is None:
                continue
            st = os.fstat(child)
            if depth + 1 > max_depth:
                os.close(child)
                yield Node("deep", parent, name, st, depth + 1)
                continue
            stack.append((child, iter(()), depth + 1))  # owned by the stack from here
            yield Node("dir", child, "", st, depth + 1)
            nodes, subdirs = _entries(child, depth + 1, dev)
            stack[-1] = (child, iter(subdirs), depth + 1)
            yield from nodes
    finally:
        for fd, _, _ in stack:
            if fd != root_fd:
                with contextlib.suppress(OSError):
                    os.close(fd)


def _open_dir(parent: int, name: str, dev: int) -> int | None:
    """Open ``name`` beneath ``parent`` as a directory, never through a symlink; same fs only."""
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=parent)
    except OSError:
        return None  # vanished, or swapped for a symlink or a non-directory
    if os.fstat(fd).st_dev != dev:
        os.close(fd)
        return None
    return fd


def remove_tree(path: str | os.PathLike[str]) -> None:
    """Remove ``path`` and everything beneath it: any depth, no link followed, no recursion.

    A tree an agent wrote can be thousands of levels deep (``shutil.rmtree``
    recurses and fails with ``RecursionError``) or hold links to elsewhere.
    This walks down one directory at a time relative to the current one
    (``O_NOFOLLOW``), unlinks what is not a directory, and climbs back by
    ``..``, checking at each step that the directory reached is the one it
    came from (device and inode); it holds two descriptors at most. A link
    is removed, never followed. Entries that vanish meanwhile are skipped.

    Raises:
        OSError: something could not be removed (permissions); the tree was moved
            while being removed (the climb found another directory); or ``path`` was
            swapped for a link or a file between the check and the open (``ELOOP``,
            ``ENOTDIR``).
    """
    top = os.fspath(path)
    try:
        info = os.lstat(top)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(info.st_mode):
        os.unlink(top)
        return
    parent = os.open(os.path.dirname(os.path.abspath(top)), _DIR_FLAGS & ~os.O_NOFOLLOW)
    try:
        _empty_and_remove(parent, os.path.basename(os.path.abspath(top)))
    finally:
        os.close(parent)


def _empty_and_remove(parent: int, name: str) -> None:
    cur = os.open(name, _DIR_FLAGS, dir_fd=parent)
    trail: list[tuple[str, int, int]] = []  # (name in its parent, parent's dev, parent's ino)
    try:
        while True:
            child = _first_subdir_emptying(cur)
            if child is not None:
                st = os.fstat(cur)
                try:
                    nxt = os.open(child, _DIR_FLAGS, dir_fd=cur)
                except FileNotFoundError:
                    continue
                except OSError:  # a link or a non-directory swapped in: remove the name
                    os.unlink(child, dir_fd=cur)
                    continue
                trail.append((child, st.st_dev, st.st_ino))
                os.close(cur)
                cur = nxt
                continue
            if not trail:
                break
            here, dev, ino = trail.pop()
            up = os.open("..", _DIR_FLAGS, dir_fd=cur)
            os.close(cur)
            cur = up
            st = os.fstat(cur)
            if (st.st_dev, st.st_ino) != (dev, ino):
                raise OSError(f"the tree under {name!r} was moved while gg removed it")
            with contextlib.suppress(FileNotFoundError):
                os.rmdir(here, dir_fd=cur)
    finally:
        os.close(cur)
    os.rmdir(name, dir_fd=parent)


def _first_subdir_emptying(fd: int) -> str | None:
    """Unlink every non-directory in ``fd``; return the name of a subdirectory, if any."""
    with os.scandir(fd) as entries:
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    return entry.name
                os.unlink(entry.name, dir_fd=fd)
            except FileNotFoundError:
                continue
    return None
