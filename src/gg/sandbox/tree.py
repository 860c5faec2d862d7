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

__all__ = ["MAX_DEPTH", "Node", "walk_beneath"]

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
