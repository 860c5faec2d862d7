"""``search_text``'s engine: an fd walk beneath the workspace with RE2 (issue 9, Build item 1).

The pattern is compiled by RE2 (``google-re2``): matching takes time linear
in the text, so no pattern can backtrack forever (``^(a+)+$`` and its
kin are plain linear scans), and compilation is bounded by RE2's memory
budget (``max_mem``) and its repeat limit (``{1000}``). The price is RE2's
syntax, the same as ripgrep's: no backreferences and no lookaround; such a
pattern is a clear tool error.

The walk opens every directory and file beneath the workspace handle with
``O_NOFOLLOW``, relative to its parent's fd (never by path), skips symlinks,
anything not a regular file, hard-linked files, binary files, and files
over :attr:`Search.file_limit` bytes (counted by reading). It stops at a
deadline, a file count and a byte budget, raising :class:`gg.errors.ToolError`.
It runs in a worker thread (:func:`gg.tools.safefs.run_blocking`).
"""

from __future__ import annotations

import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import re2  # type: ignore[import-untyped]

from gg.errors import ToolError
from gg.tools.safefs import Beneath, read_capped

__all__ = ["SKIP_DIRS", "Search", "compile_pattern"]

SKIP_DIRS = frozenset(
    {".git", ".hg", ".svn", ".gg", ".venv", "venv", "node_modules", "__pycache__",
     ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox"}
)  # fmt: skip
"""Directory names the walk never enters."""

_OPEN = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_NOCTTY | os.O_CLOEXEC
_LINE_MAX = 300  # characters of a matching line shown
_MAX_DEPTH = 128  # directories deeper than this are not entered
_RE2_MAX_MEM = 32 << 20  # bytes RE2 may use for one compiled pattern


class _Done(Exception):
    """Internal: enough hits."""


def compile_pattern(pattern: str) -> Any:
    """Compile ``pattern`` with RE2 (linear-time matching; issue 9 item 1).

    Returns:
        An ``re2._Regexp`` (``.search(text)``).

    Raises:
        ToolError: not valid RE2 syntax (backreferences and lookaround are not).
    """
    options = re2.Options()
    options.log_errors = False
    options.max_mem = _RE2_MAX_MEM
    try:
        return re2.compile(pattern, options)
    except re2.error as exc:
        detail = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(
            exc.args[0], bytes) else str(exc)  # fmt: skip
        raise ToolError(
            f"invalid regular expression {pattern!r}: {detail}. search_text uses RE2 "
            "syntax (as ripgrep): no backreferences, no lookahead or lookbehind"
        ) from None


@dataclass(kw_only=True)
class Search:
    """One ``search_text`` call: pattern, bounds, and the hits so far.

    Attributes are the bounds; :meth:`run` does the work (blocking: run it off the loop).
    """

    pattern: str
    """The RE2 pattern, matched against each line."""
    deadline: float
    """``time.monotonic()`` value past which the search gives up (a ToolError)."""
    max_hits: int = 200
    """Hits after which the search stops (the caller adds a marker)."""
    file_limit: int = 2_000_000
    """Bytes: larger files are skipped."""
    max_files: int = 20_000
    """Files read at most."""
    max_bytes: int = 200_000_000
    """Bytes read in all, at most."""
    hits: list[str] = field(default_factory=list)
    files: int = 0
    bytes: int = 0
    _regex: Any = None

    def run(self, workspace: Path, path: str) -> list[str]:
        """Search the file or directory ``path`` beneath ``workspace``.

        Returns:
            Hits as ``"file:line: text"`` (at most :attr:`max_hits`), in walk order
            (a directory's files sorted, then its subdirectories sorted).

        Raises:
            WorkspaceEscape: ``path`` leaves the workspace.
            ToolError: bad pattern, missing path, deadline passed.
        """
        self._regex = compile_pattern(self.pattern)
        with Beneath(workspace) as root:
            fd = root.open(path, kind="any")
        shown = os.path.normpath(path)
        try:
            if stat.S_ISREG(os.fstat(fd).st_mode):
                self._search(fd, shown)
            else:
                self._walk(fd, "" if shown == "." else shown)
        except _Done:
            pass
        finally:
            os.close(fd)
        return self.hits

    def _walk(self, top: int, top_rel: str) -> None:
        """Depth-first over directory fds, holding one fd per level (closes all but ``top``)."""
        stack = [(top, top_rel, iter(self._dir(top, top_rel)))]
        try:
            while stack:
                fd, rel, subdirs = stack[-1]
                name = next(subdirs, None)
                if name is None:
                    stack.pop()
                    if fd != top:
                        os.close(fd)
                    continue
                if len(stack) >= _MAX_DEPTH:
                    continue
                try:
                    child = os.open(name, _OPEN | os.O_DIRECTORY, dir_fd=fd)
                except OSError:
                    continue  # swapped for a symlink or gone: skipped
                child_rel = f"{rel}/{name}" if rel else name
                stack.append((child, child_rel, iter(())))  # owned by the stack from here
                stack[-1] = (child, child_rel, iter(self._dir(child, child_rel)))
        finally:
            for fd, _, _ in stack:
                if fd != top:
                    os.close(fd)

    def _dir(self, fd: int, rel: str) -> list[str]:
        """Search the files of the directory ``fd``; return its subdirectories to enter."""
        files, subdirs = [], []
        try:
            with os.scandir(fd) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        if entry.name not in SKIP_DIRS:
                            subdirs.append(entry.name)
                    elif entry.is_file(follow_symlinks=False):
                        files.append(entry.name)
        except OSError:
            return []
        for name in sorted(files):
            self._file(fd, name, f"{rel}/{name}" if rel else name)
        return sorted(subdirs)

    def _file(self, dir_fd: int, name: str, rel: str) -> None:
        self._check_bounds()
        try:
            fd = os.open(name, _OPEN, dir_fd=dir_fd)
        except OSError:
            return  # a symlink swapped in (ELOOP), a socket (ENXIO), gone...
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:
                return
            data = read_capped(fd, self.file_limit)
        except OSError:
            return
        finally:
            os.close(fd)
        self.files += 1
        if data is None:
            self.bytes += self.file_limit
            return
        self.bytes += len(data)
        if b"\x00" not in data[:8192]:
            self._search_text(data.decode("utf-8", "replace"), rel)

    def _search(self, fd: int, rel: str) -> None:
        """Search one regular file given as the root (opened by :meth:`Beneath.open`)."""
        data = read_capped(fd, self.file_limit)
        if data is not None and b"\x00" not in data[:8192]:
            self._search_text(data.decode("utf-8", "replace"), rel)

    def _search_text(self, text: str, rel: str) -> None:
        search = self._regex.search
        for number, line in enumerate(text.splitlines(), 1):
            if search(line):
                self.hits.append(f"{rel}:{number}: {line[:_LINE_MAX]}")
                if len(self.hits) >= self.max_hits:
                    raise _Done
            if number & 0x3FF == 0:
                self._check_bounds()

    def _check_bounds(self) -> None:
        if time.monotonic() > self.deadline:
            raise ToolError(
                f"search_text stopped at its deadline after {self.files:,} files "
                f"({len(self.hits)} hits so far); narrow the path or the pattern"
            )
        if self.files >= self.max_files or self.bytes >= self.max_bytes:
            if self.hits:
                raise _Done
            raise ToolError(
                f"search_text stopped after {self.files:,} files ({self.bytes:,} bytes) "
                "with no hit; narrow the path"
            )
