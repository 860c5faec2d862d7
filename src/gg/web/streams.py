"""The runs of a workspace and bounded reads of their streams (issue 15, SPEC O1).

A run is ``<state>/runs/<run_id>/stream.jsonl`` in the workspace's gg-private state
directory (:mod:`gg.state`). Only a run id of :data:`gg.state.RUN_ID_PATTERN` whose
directory is a real directory (not a link) holding a regular stream file is a run: any
other name in a URL is no run (a 404), so no path is ever built from a URL that could
leave the runs directory.

Stream lines are written by gg, but what they quote (model text, tool output, hook
output) is not, and a stream can be edited by anyone who can write the state directory.
So every read here is bounded: :class:`Tail` reads at most :data:`MAX_STREAM_BYTES` of a
file in all and at most :data:`MAX_POLL_BYTES` per poll, and drops lines longer than
:data:`MAX_LINE_BYTES`. A huge stream shows its first part, never hangs a page.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from gg.errors import UserError
from gg.seal import Checker, Head
from gg.state import RUN_ID_PATTERN, StateError, open_private, state_path
from gg.stream import Event, parse_event

__all__ = [
    "MAX_LINE_BYTES",
    "MAX_POLL_BYTES",
    "MAX_RUNS",
    "MAX_STREAM_BYTES",
    "MAX_SUMMARY_BYTES",
    "RunFile",
    "RunRead",
    "RunSummary",
    "SealedTail",
    "Tail",
    "find_run",
    "list_runs",
    "parse_line",
    "read_run",
    "summary_of",
]

MAX_STREAM_BYTES = 32 * 1024 * 1024
"""The most of one stream file read, in bytes (a page of a larger one says it is cut)."""
MAX_POLL_BYTES = 4 * 1024 * 1024
"""The most read from one stream in one poll, in bytes."""
MAX_LINE_BYTES = 2 * 1024 * 1024
"""A longer line is not an event gg wrote (gg cuts what it quotes): it is skipped."""
MAX_SUMMARY_BYTES = 8 * 1024 * 1024
"""The most of one stream read for its row in the board page's list of runs, in bytes."""
MAX_RUNS = 200
"""The most runs listed on the board page (the newest)."""


@dataclass(frozen=True, slots=True)
class RunFile:
    """A run of the workspace: its id, directory and stream file."""

    run_id: str
    directory: Path
    stream: Path
    mtime_ns: int


def _runs_root(workspace: Path) -> Path:
    return state_path(workspace) / "runs"


def _is_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def find_run(workspace: Path, run_id: str) -> RunFile | None:
    """The run ``run_id`` of ``workspace``, or ``None`` when there is no such run.

    Args:
        workspace: the workspace (its state directory is looked up, nothing created).
        run_id: untrusted (a URL's); anything not matching :data:`RUN_ID_PATTERN`, or
            naming a link, a missing directory or a stream that is not a regular file, is
            no run.

    Returns:
        The run, or ``None``.
    """
    if not RUN_ID_PATTERN.fullmatch(run_id):
        return None
    root = _runs_root(workspace)
    directory = root / run_id
    if not _is_dir(root) or not _is_dir(directory):
        return None
    stream = directory / "stream.jsonl"
    try:
        st = os.lstat(stream)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return RunFile(run_id, directory, stream, st.st_mtime_ns)


def list_runs(workspace: Path, limit: int = MAX_RUNS) -> list[RunFile]:
    """The runs of ``workspace``, newest stream first, at most ``limit``.

    Returns:
        The runs (empty when the workspace has no state or no runs yet).
    """
    root = _runs_root(workspace)
    if not _is_dir(root):
        return []
    try:
        names = os.listdir(root)
    except OSError:
        return []
    found = [run for name in names if (run := find_run(workspace, name)) is not None]
    found.sort(key=lambda r: (r.mtime_ns, r.run_id), reverse=True)
    return found[:limit]


@dataclass(slots=True)
class Tail:
    """Follows one file as it grows: the complete lines appended since the last poll.

    Args:
        path: the file (opened without following a link, each poll).
        limit: the most bytes read from it in all; past that, :attr:`cut` is set.

    Attributes:
        offset: bytes consumed so far.
        lines: complete lines returned so far.
        skipped: lines dropped for being longer than :data:`MAX_LINE_BYTES`.
        cut: the file is longer than ``limit``; the rest is never read.
        missing: the last poll could not open the file (gone, a link, not gg's).
    """

    path: Path
    limit: int = MAX_STREAM_BYTES
    offset: int = 0
    lines: int = 0
    skipped: int = 0
    cut: bool = False
    missing: bool = False
    _partial: bytes = b""
    _dropping: bool = field(default=False, repr=False)

    def poll(self, budget: int = MAX_POLL_BYTES) -> list[bytes]:
        """Read what was appended (at most ``budget`` bytes); its complete lines, in order.

        Returns:
            The new complete lines, without their newlines (a torn last line waits).
        """
        if self.offset >= self.limit:
            self.cut = self.cut or self.size() > self.offset
            return []
        want = min(budget, self.limit - self.offset)
        if want <= 0:
            return []
        data = self._read(want)
        if not data:
            return []
        self.offset += len(data)
        return self._split(data)

    def size(self) -> int:
        """The file's size now (0 when it cannot be looked at)."""
        try:
            return os.lstat(self.path).st_size
        except OSError:
            return 0

    def _read(self, want: int) -> bytes:
        try:
            fd = open_private(self.path, os.O_RDONLY)
        except (OSError, StateError):
            self.missing = True
            return b""
        self.missing = False
        try:
            return os.pread(fd, want, self.offset)
        except OSError:
            return b""
        finally:
            os.close(fd)

    def _split(self, data: bytes) -> list[bytes]:
        pieces = (self._partial + data).split(b"\n")
        self._partial = pieces.pop()
        out: list[bytes] = []
        for piece in pieces:
            if self._dropping or len(piece) > MAX_LINE_BYTES:
                self._dropping = False
                self.skipped += 1
                continue
            out.append(piece)
        self.lines += len(pieces)
        if len(self._partial) > MAX_LINE_BYTES:  # never buffer more than a line's worth
            self._partial, self._dropping = b"", True
        return out


def parse_line(raw: bytes) -> Event | None:
    """The event on one stream line, or ``None`` for a blank or damaged line."""
    raw = raw.strip()
    if not raw:
        return None
    try:
        return parse_event(raw)
    except (ValidationError, ValueError):
        return None


@dataclass(slots=True)
class SealedTail:
    """A :class:`Tail` whose lines are checked against the run's seal before use.

    The first line that fails stops the tail: :attr:`failure` says why (the tamper
    check's text), and nothing from there on is returned.

    Args:
        run: the run to follow.
    """

    run: RunFile
    tail: Tail = field(init=False)
    check: Checker = field(init=False)
    failure: str | None = None

    def __post_init__(self) -> None:
        self.tail = Tail(self.run.stream)
        self.check = Checker(self.run.stream, seal_dir=self.run.directory)

    def poll(self, budget: int = MAX_POLL_BYTES) -> list[tuple[int, Event]]:
        """The new events that pass the seal, each with its line number (from 1)."""
        if self.failure is not None:
            return []
        first = self.tail.lines + 1
        out: list[tuple[int, Event]] = []
        for number, raw in enumerate(self.tail.poll(budget), first):
            try:
                failed = self.check.feed(raw)
            except UserError as e:  # line 1 is no run_started: not a gg stream
                self.failure = str(e)
                break
            if failed is not None:
                self.failure = failed.message()
                break
            event = parse_line(raw)
            if event is not None:
                out.append((number, event))
        return out

    def verdict(self) -> str:
        """The tamper check's text for the lines read so far (``gg show``'s first line)."""
        if self.failure is not None:
            return self.failure
        try:
            text = self.check.finish(self.check.head_at_start).message()
        except UserError as e:
            text = str(e)
        if self.tail.cut:
            text += (
                f" (the stream is longer than {MAX_STREAM_BYTES // (1024 * 1024)} MiB: "
                "only its beginning is read and shown)"
            )
        return text


@dataclass(frozen=True, slots=True)
class RunRead:
    """A run's stream as read for its page: the trusted events and the verdict.

    Attributes:
        events: the events before any damage the seal found, in order.
        verdict: the tamper check's text (:meth:`gg.seal.Verdict.message`).
        lines: the stream lines consumed (the live feed goes on after them).
    """

    events: list[Event]
    verdict: str
    lines: int


def read_run(run: RunFile) -> RunRead:
    """Read a run's stream once, bounded, checked against its seal (as ``gg show`` does).

    Returns:
        The events, the verdict and how many lines were read.
    """
    sealed = SealedTail(run)
    events: list[Event] = []
    while batch := sealed.poll():
        events.extend(event for _, event in batch)
    return RunRead(events, sealed.verdict(), sealed.tail.lines)


@dataclass(slots=True)
class RunSummary:
    """What the board page's list of runs shows of one run (kept up to date by polls).

    Its facts are read with plain JSON; every line read is also fed to the run's seal
    check, so the row carries the tamper check's verdict as ``gg show`` would give it
    for the lines read so far. Every value is untrusted text for the page.
    """

    run: RunFile
    tail: Tail
    check: Checker
    events: int = 0
    started: str = ""
    last_type: str = ""
    last_at: str = ""
    sessions: set[str] = field(default_factory=set)
    status: str = ""
    pid: int = 0
    shown: str = ""
    """The state, cut and verdict last shown (a change of them is a change of the page)."""
    seal: str = ""
    """The verdict's kind: ``intact``, ``running``, ``unended``, ``altered``..."""
    verdict: str = ""
    """The verdict's text (:meth:`gg.seal.Intact.message` and its peers)."""
    problem: str | None = None

    def poll(self, budget: int = MAX_POLL_BYTES) -> bool:
        """Read what was appended (at most ``budget`` bytes); whether anything shown changed."""
        grew = budget > 0 and self.tail.offset < self.tail.size()
        head = self.check.read_head() if grew else None  # before the lines: claims no more
        lines = self.tail.poll(budget) if grew else []
        for raw in lines:
            self._take(raw)
            self._feed(raw)
        look = f"{self.state()} {self.tail.cut}"
        if lines or not self.shown.startswith(f"{look} ") or not self.seal:
            self._judge(head)
        now = f"{look} {self.seal}"
        changed, self.shown = now != self.shown or bool(lines), now
        return changed

    def _feed(self, raw: bytes) -> None:
        if self.problem is None and self.check.failure is None:
            try:
                self.check.feed(raw)
            except UserError as e:  # line 1 is no run_started: not a gg stream
                self.problem = str(e)

    def _judge(self, head: Head | None) -> None:
        if self.problem is not None:
            self.seal, self.verdict = "not a stream", self.problem
            return
        try:
            found = self.check.finish(head)
        except UserError as e:
            self.seal, self.verdict = "not a stream", str(e)
            return
        self.seal, self.verdict = found.kind, found.message()
        if self.tail.cut:
            self.verdict += " (only the first 8 MiB of the stream read for this list)"

    def _take(self, raw: bytes) -> None:
        try:
            obj = json.loads(raw)
        except ValueError:
            return
        if not isinstance(obj, dict):
            return
        self.events += 1
        kind, at = obj.get("type"), obj.get("at")
        self.last_type = kind if isinstance(kind, str) else "?"
        self.last_at = at if isinstance(at, str) else ""
        sid = obj.get("session_id")
        if isinstance(sid, str) and len(self.sessions) < 10_000:
            self.sessions.add(sid)
        if kind == "run_started":
            self.started = self.last_at
            pid = obj.get("pid")
            self.pid = pid if isinstance(pid, int) else 0
        elif kind == "run_ended":
            status = obj.get("status")
            self.status = status if isinstance(status, str) else "?"

    def state(self) -> str:
        """``ended``/``stopped`` (its run_ended), ``running`` or ``unended`` (writer gone)."""
        if self.status:
            return self.status
        return "running" if _alive(self.pid) else "unended"


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def summary_of(run: RunFile) -> RunSummary:
    """A fresh :class:`RunSummary` of ``run``: nothing read yet, at most 8 MiB to be.

    The bound is :data:`MAX_SUMMARY_BYTES`.
    """
    check = Checker(run.stream, seal_dir=run.directory)
    return RunSummary(run, Tail(run.stream, limit=MAX_SUMMARY_BYTES), check)
