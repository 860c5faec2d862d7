"""The stream: typed events, the append-only JSONL writer, and readers (SPEC O1, §10).

Every run writes one file, ``<state>/runs/<run_id>/stream.jsonl`` in the
workspace's gg-private state directory (:func:`gg.state.run_dir`, outside the
workspace), one JSON object per line. Every event has ``type``, ``run_id``,
``at`` (ISO 8601 UTC) and, where it applies, ``session_id`` and ``turn``; the
writer adds ``seq`` (1, 2, ...), ``chain`` (a keyed hash chained to the
previous event) and, on ``run_started``, ``nonce`` (a random run key): the
seal, :mod:`gg.seal`, which :func:`verify` checks. Events are pydantic models
tagged by ``type``; :data:`Event` is their union.

Durability: the writer flushes after every event and, with ``fsync="turn"``
(the default), calls ``fsync`` at the end of each turn and at session and run
ends, so a crash loses at most the current turn's tail. At a turn's end the
fsync runs in a worker thread, and the sessions of a run that end turns
together share one (group commit): a session goes on once its own events are
on disk, and the others are not held up meanwhile. The file is only ever
appended to, and opened with ``O_EXCL | O_NOFOLLOW``. Values of
secret-looking environment variables (names containing KEY, TOKEN, SECRET or
PASSWORD) and credential-shaped text (provider keys, GitHub/AWS/Slack tokens,
bearer headers...: :data:`gg.text.SECRET_SHAPES`) are replaced by
``[redacted]`` before a line is written, so no secret reaches the stream even
if a model or a tool echoes one.

What it does not promise: ordering across processes (one writer per run), or
that a reader sees a half-written last line (readers skip a torn tail).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import json
import os
import re
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, TypeAlias, TypedDict, TypeVar

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from gg import bounded
from gg.ceilings import CeilingName, ErrorKind
from gg.disk import disk_full, is_disk_full
from gg.endings import EndingRecord
from gg.errors import UserError
from gg.models.base import RetryNotice, Usage
from gg.seal import Checker, Sealer, StreamAltered, Verdict, verify
from gg.state import open_private, private_dir
from gg.text import Redactor, cut

__all__ = [
    "CeilingTripped",
    "Checkpoint",
    "EndingDeclared",
    "EndingRefused",
    "EndingRevoked",
    "EndingSuperseded",
    "ErrorTurn",
    "Event",
    "EventIds",
    "GateBlocked",
    "GatePassed",
    "IssueStateChanged",
    "Listener",
    "RetryEvent",
    "RunEnded",
    "RunResumed",
    "RunStarted",
    "SessionEnded",
    "SessionStarted",
    "StreamAltered",
    "StreamWriter",
    "ToolCalled",
    "ToolResult",
    "TurnEvent",
    "Verdict",
    "excerpt",
    "now_iso",
    "parse_event",
    "read_events",
    "verify",
]


@functools.lru_cache(maxsize=1)
def _utc_second(second: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))


def now_iso() -> str:
    """The current time as ISO 8601 UTC with milliseconds, e.g. ``2026-11-30T14:51:17.123Z``.

    Every event is stamped, so the date and time of day are formatted once per
    second (a one-entry cache) and only the milliseconds per call.
    """
    ms = int(time.time() * 1000)
    return f"{_utc_second(ms // 1000)}.{ms % 1000:03d}Z"


def excerpt(text: str, limit: int = 500) -> str:
    """``text`` cut to ``limit`` characters, its head kept (:func:`gg.text.cut`)."""
    return cut(text, limit)


def excerpt_arguments(arguments: Any, limit: int = 2000, *, budget: int = 20_000) -> Any:
    """A call's arguments as the stream records them, bounded.

    Every string cut to ``limit`` characters (:func:`excerpt`), at most ``budget``
    characters of strings in all, and at most 200 items per list or object (a marker
    item says how many more).

    One program may make thousands of calls with megabytes of arguments each; the
    stream (gg's own disk, outside the workspace's write cap) keeps a bounded record
    of each (issue 9). The tool itself gets the whole arguments.
    """
    left = [budget]

    def cut(value: Any, depth: int) -> Any:
        if isinstance(value, str):
            keep = max(0, min(limit, left[0]))
            left[0] -= min(len(value), keep)
            return excerpt(value, keep)
        if depth > 64:
            return "[… nested too deep to record]"
        if isinstance(value, dict):
            items = list(value.items())
            out = {str(k)[:200]: cut(v, depth + 1) for k, v in items[:200]}
            if len(items) > 200:
                out["…"] = f"[{len(items) - 200} more keys]"
            return out
        if isinstance(value, list | tuple):
            out_list = [cut(v, depth + 1) for v in value[:200]]
            if len(value) > 200:
                out_list.append(f"[… {len(value) - 200} more items]")
            return out_list
        return value

    return cut(arguments, 0)


_M = TypeVar("_M", bound=BaseModel)
_setattr = object.__setattr__
_CALL_GIVEN = frozenset({"run_id", "session_id", "turn", "name", "arguments"})
_RESULT_GIVEN = frozenset({"run_id", "session_id", "turn", "name", "ok", "excerpt"})
_CHECKPOINT_GIVEN = frozenset({"run_id", "session_id", "turn", "messages", "counts", "budget"})


class _Base(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    run_id: str
    at: str = Field(default_factory=now_iso)
    session_id: str | None = None
    turn: int | None = None
    seq: int | None = Field(default=None, exclude=True)
    """The event's number in its stream, from 1 (set by the writer; read back, never dumped)."""
    chain: str | None = Field(default=None, exclude=True)
    """The seal's chain value after this event (:mod:`gg.seal`); read back, never dumped."""


class RunStarted(_Base):
    """A run began. ``settings``: the effective configuration; ``isolation``: the sandbox layer."""

    type: Literal["run_started"] = "run_started"
    settings: dict[str, Any]
    isolation: str
    workspace: str
    pid: int = 0
    """The gg process writing the stream (``gg watch`` stops when it is gone)."""
    sandbox: dict[str, Any] = {}
    """What the sandbox has in force: namespaces, Landlock ABI, seccomp, dedicated uid."""
    commands: str = "sandbox"
    """Where ``run_command`` runs: ``"sandbox"``, or ``"host"`` (gg's user, no sandbox)."""
    config_changed: list[str] = []
    """``gg.toml`` and hook scripts changed since the workspace's last run (issue 9)."""
    nonce: str | None = Field(default=None, exclude=True)
    """The run's random key (32 hex digits), set by the writer (:mod:`gg.seal`)."""


class SessionStarted(_Base):
    """A session began (SPEC §10)."""

    type: Literal["session_started"] = "session_started"
    role: str
    mode: str
    language: str
    arm: str
    model: str
    parent: str | None = None
    task: str = ""
    resumed: bool = False


class TurnEvent(_Base):
    """One model reply.

    Text excerpt, called tool names, usage (the reply's own
    :class:`gg.models.base.Usage`), model latency in seconds.
    """

    type: Literal["turn"] = "turn"
    text: str
    calls: list[str]
    usage: Usage
    seconds: float


def _head(ids: EventIds, kind: str) -> dict[str, Any]:
    """The fields every event starts with, in declaration order, for :func:`_built`."""
    return {
        "run_id": ids["run_id"],
        "at": now_iso(),
        "session_id": ids["session_id"],
        "turn": ids["turn"],
        "seq": None,
        "chain": None,
        "type": kind,
    }


def _built(cls: type[_M], fields: dict[str, Any], given: frozenset[str]) -> _M:
    """An event of ``cls`` holding ``fields`` (every field, in declaration order), unvalidated.

    What ``cls.model_construct`` builds from the same values, without its per-field
    default lookups (tens of microseconds per event, two events per call: issue 11).
    """
    event = cls.__new__(cls)
    _setattr(event, "__dict__", fields)
    _setattr(event, "__pydantic_fields_set__", set(given))
    _setattr(event, "__pydantic_extra__", None)
    _setattr(event, "__pydantic_private__", None)
    return event


class ToolCalled(_Base):
    """A call in a reply or a program, before it runs."""

    type: Literal["tool_call"] = "tool_call"
    name: str
    arguments: dict[str, Any] | str

    @classmethod
    def of(cls, ids: EventIds, name: str, arguments: dict[str, Any] | str) -> ToolCalled:
        """The event of a program's call, built without validation (issue 11).

        For values gg made itself (the ids, the name, bounded arguments): the same event,
        and the same stream line, as ``ToolCalled.model_construct(**ids, ...)``.
        """
        fields = {
            **_head(ids, "tool_call"),
            "name": name,
            "arguments": arguments,
        }
        return _built(cls, fields, _CALL_GIVEN)


class ToolResult(_Base):
    """What a call gave back: ``ok`` false for a tool error; ``excerpt`` of the result."""

    type: Literal["tool_result"] = "tool_result"
    name: str
    ok: bool
    excerpt: str

    @classmethod
    def of(cls, ids: EventIds, name: str, ok: bool, excerpt: str) -> ToolResult:
        """The result of a program's call, built without validation (issue 11).

        The same event, and stream line, as ``ToolResult.model_construct(**ids, ...)``.
        """
        fields = {
            **_head(ids, "tool_result"),
            "name": name,
            "ok": ok,
            "excerpt": excerpt,
        }
        return _built(cls, fields, _RESULT_GIVEN)


class ErrorTurn(_Base):
    """A turn gg could not act on (SPEC S5), with the feedback the model was given."""

    type: Literal["error_turn"] = "error_turn"
    kind: ErrorKind
    message: str


class EndingDeclared(_Base):
    """An ending call passed the role and shape checks and was declared (SPEC S8)."""

    type: Literal["ending_declared"] = "ending_declared"
    call: str
    arguments: dict[str, Any]


class EndingRefused(_Base):
    """An ending call was refused: ``unavailable`` (SPEC S3) or ``shape`` (SPEC S4)."""

    type: Literal["ending_refused"] = "ending_refused"
    call: str
    reason: Literal["unavailable", "shape"]
    message: str


class EndingSuperseded(_Base):
    """``count`` earlier declarations of the turn were replaced by the last one (SPEC S8)."""

    type: Literal["ending_superseded"] = "ending_superseded"
    count: int


class EndingRevoked(_Base):
    """A declared ending was withdrawn because the turn failed after it (SPEC S9)."""

    type: Literal["ending_revoked"] = "ending_revoked"
    call: str
    error: str


class GatePassed(_Base):
    """The ending gate let the ending through (SPEC S12); ``hooks``: how many ran."""

    type: Literal["gate_passed"] = "gate_passed"
    call: str
    hooks: int = 0


class GateBlocked(_Base):
    """An agent-stop hook blocked the ending; ``failed``: the hook itself broke (SPEC H1)."""

    type: Literal["gate_blocked"] = "gate_blocked"
    hook: str
    reason: str
    failed: bool = False


class CeilingTripped(_Base):
    """A ceiling stopped the session (SPEC S6), with the operator's diagnosis."""

    type: Literal["ceiling_tripped"] = "ceiling_tripped"
    ceiling: CeilingName
    diagnosis: str


class SessionEnded(_Base):
    """A session is over: by an ``ending`` (its :data:`gg.endings.EndingRecord`) or stopped."""

    type: Literal["session_ended"] = "session_ended"
    ending: EndingRecord | None
    ceiling: CeilingName | None = None
    diagnosis: str | None = None
    turns: int = 0


class RunEnded(_Base):
    """The run is over: ``status`` ``ended`` (exit 0) or ``stopped`` (exit 1)."""

    type: Literal["run_ended"] = "run_ended"
    status: Literal["ended", "stopped"]
    exit_code: int
    diagnosis: str | None = None


class Checkpoint(_Base):
    """What resuming a session needs, at its start and at each turn's end (issue 12 item 4).

    ``messages``: the conversation's messages added since this session's previous
    checkpoint on this stream (all of them in its first), each as
    :func:`gg.checkpoint.message_record` writes it; ``counts``: the session's ceiling
    counts (:class:`gg.ceilings.SessionCeilings`), ``blocked_total`` and ``progress``
    (:meth:`gg.progress.Progress.state`); ``budget``:
    the run's ``tokens``, ``cost`` and ``seconds`` spent so far. Sealed like every
    event, so ``gg resume`` trusts only what gg wrote.
    """

    type: Literal["checkpoint"] = "checkpoint"
    messages: list[dict[str, Any]]
    counts: dict[str, Any]
    budget: dict[str, float]

    @classmethod
    def of(
        cls,
        ids: EventIds,
        messages: list[dict[str, Any]],
        counts: dict[str, Any],
        budget: dict[str, float],
    ) -> Checkpoint:
        """The checkpoint of a turn's end, built without validation (one every turn).

        For values gg made itself (:func:`gg.checkpoint.make_checkpoint`): the same event,
        and the same stream line, as ``Checkpoint.model_construct(**ids, ...)``.
        """
        fields = {
            **_head(ids, "checkpoint"),
            "messages": messages,
            "counts": counts,
            "budget": budget,
        }
        return _built(cls, fields, _CHECKPOINT_GIVEN)


class RunResumed(_Base):
    """This run continues ``from_run`` (its stream ``from_stream``, verified).

    Session ``resumed_session`` goes on after ``turns`` turns and ``messages`` messages.
    """

    type: Literal["run_resumed"] = "run_resumed"
    from_run: str
    from_stream: str
    resumed_session: str
    turns: int
    messages: int
    passed_over: list[int] = Field(default_factory=list)
    """The replies of a scripted model's script (indices from 0) the run does not ask for
    again, those the runs it continues were served included (a crash loop)."""


class RetryEvent(_Base):
    """A model request failed with a transient fault and is tried again (issue 12 item 2).

    ``attempt``: the attempt that failed (from 1); ``wait_s``: seconds before the next;
    ``cause``: what went wrong (status code, the server's words, a malformed chunk);
    ``provider``: who was asked, e.g. ``"openai-compat"``.
    """

    type: Literal["retry"] = "retry"
    provider: str
    attempt: int
    wait_s: float
    cause: str

    @classmethod
    def of(cls, ids: EventIds, notice: RetryNotice) -> RetryEvent:
        """The event of a provider's :class:`gg.models.base.RetryNotice`, with ``ids``."""
        wait = round(notice.wait_s, 3)
        return cls(
            **ids,
            provider=notice.provider,
            attempt=notice.attempt,
            wait_s=wait,
            cause=excerpt(notice.cause, 500),
        )


class IssueStateChanged(_Base):
    """A board issue moved on (issue 12 item 7).

    The ``issue`` number, the transition
    ``event`` (``started``, ``finished``, ``approved``, ``changes_requested``, ``merged``,
    ``stuck``, ``paused``...), its ``state`` now, its ``round``, and the ``diagnosis``
    when it is stuck or paused.
    """

    type: Literal["issue_state"] = "issue_state"
    issue: int
    event: str
    state: str
    round: int = 0
    diagnosis: str | None = None


Event: TypeAlias = Annotated[
    RunStarted
    | SessionStarted
    | TurnEvent
    | ToolCalled
    | ToolResult
    | ErrorTurn
    | EndingDeclared
    | EndingRefused
    | EndingSuperseded
    | EndingRevoked
    | GatePassed
    | GateBlocked
    | CeilingTripped
    | SessionEnded
    | RunEnded
    | Checkpoint
    | RunResumed
    | RetryEvent
    | IssueStateChanged,
    Field(discriminator="type"),
]
"""Any stream event, discriminated by ``type``."""

Listener: TypeAlias = Callable[[Event], None]
"""Gets each event after it is written (the live view, the board's tracker)."""


class EventIds(TypedDict):
    """The ids every event of a session carries: ``Event(**ids, ...)`` builds one."""

    run_id: str
    session_id: str | None
    turn: int | None


_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)


def parse_event(line: str | bytes) -> Event:
    """Parse one stream line into its event type.

    Raises:
        pydantic.ValidationError: if the line is not a known event.
    """
    return _ADAPTER.validate_json(line)


def _fields(model: BaseModel) -> dict[str, Any]:
    """A model's dumped fields (excluded ones left out), nested models as dicts."""
    out: dict[str, Any] = {}
    for name, info in type(model).model_fields.items():
        if info.exclude:
            continue
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            value = _fields(value)
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            value = dataclasses.asdict(value)
        out[name] = value
    return out


def _fallback_line(event: Event) -> str:
    """``event`` as one JSON object when pydantic cannot serialise it (issue 9 F4).

    Every value goes through :func:`gg.bounded.jsonable`: lone surrogates become
    U+FFFD, values JSON cannot hold become text, nesting past
    :data:`gg.bounded.MAX_DEPTH` is cut. The line parses back as the same event type.
    """
    body = bounded.jsonable(_fields(event))
    return json.dumps(body, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


_MAX_INT_DIGITS = 4000
"""Integers of more digits may not parse back (pydantic and Python stop near 4,300)."""
_LONG_DIGITS = re.compile(rf"(?<!\d)\d{{{_MAX_INT_DIGITS}}}")  # starts at a run only: linear


def _unreadable(line: str) -> bool:
    """Whether a long line may hold an integer no reader takes (only then is it parsed)."""
    if _LONG_DIGITS.search(line) is None:
        return False
    try:
        parse_event(line)
    except ValueError:
        return True
    return False


def _reparsed(line: str, event: Event) -> Event:
    """The event a fallback line holds, for the listeners (``event`` if it does not parse)."""
    try:
        return parse_event(line)
    except ValueError:
        return event


_HELD_TYPES = (ToolCalled, ToolResult)
"""The events a program's calls make, two per call: held, then written together (issue 11)."""
_HOLD_S = 0.05
"""Held lines are written at most this long after the first of them (``gg watch`` sees them)."""
_HOLD_BYTES = 1 << 16
"""... or once they are this many bytes."""


class StreamWriter:
    """Appends sealed events to a run's JSONL file (SPEC O1; issue 9 item 3). One writer per run.

    Every event is one sealed line, written whole. No event is fsynced on its own:
    the file is fsynced at turn, session and run ends (``fsync="turn"``). The two
    events of each call (``tool_call``, ``tool_result``; a program may make thousands)
    are sealed at once but held in memory and written together (issue 11): by any
    other event (so a turn's end, an ending, a refusal, a checkpoint or an error
    writes them first, in order), by :meth:`sync`, after at most 50 ms, or past
    64 KiB. A gg killed outright may lose those 50 ms of call events, never another
    event; without a running event loop nothing is held.

    Args:
        path: the stream file, created (``O_EXCL | O_NOFOLLOW``, mode 0600); its
            directory is made gg-private (:func:`gg.state.private_dir`).
        fsync: ``"turn"`` to fsync at turn, session and run ends (default), or
            ``"never"`` to leave it to the OS (faster; a crash may lose the tail).
        listeners: callables that get each event as it is emitted (live display).
        seal_dir: where the seal's key and head go (default: the stream's directory).

    Raises:
        OSError: if the file cannot be created (it exists, or is a symbolic link).
        gg.state.StateError: a directory or seal file is not gg-private.
    """

    def __init__(
        self,
        path: Path,
        *,
        fsync: Literal["turn", "never"] = "turn",
        listeners: Sequence[Listener] | None = None,
        seal_dir: Path | None = None,
    ) -> None:
        private_dir(path.parent)
        self.path = path
        self._fsync = fsync == "turn"
        self._seal = Sealer(private_dir(seal_dir or path.parent), durable=self._fsync)
        self._fd = open_private(path, os.O_WRONLY | os.O_APPEND, create=True)
        self._redact = Redactor()
        """The secret-looking environment values and the shapes (:mod:`gg.text`)."""
        self.listeners: list[Listener] = list(listeners or [])
        self.closed = False
        self._written = 0
        """Events written so far."""
        self._synced = 0
        """Events known to be on disk."""
        self._syncing: asyncio.Future[None] | None = None
        """The fsync in flight in a worker thread, if any."""
        self._size = os.fstat(self._fd).st_size
        """Bytes of whole lines in the file: a failed write is cut back to it."""
        self._torn = False
        """A failed write could not be cut back yet (repaired before the next write)."""
        self._held: list[bytes] = []
        """Sealed lines of calls' events not written yet (:meth:`flush`)."""
        self._held_bytes = 0
        self._held_before: tuple[int, bytes] = (self._seal.seq, self._seal.chain)
        self._timer: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._failed: Exception | None = None
        """A flush of held lines that failed in the timer: raised by the next write."""

    def emit(self, event: Event) -> None:
        """Append ``event`` as one sealed line (one ``write``), then tell the listeners.

        They get the redacted event, so the live view shows no secret either.

        Never fails because of what an event holds (issue 9 F4): when pydantic cannot
        serialise it (a lone surrogate, a value JSON cannot hold, nesting too deep),
        or it wrote a line no reader could parse back (an integer of thousands of
        digits), the line is built by :func:`_fallback_line` instead, with lone
        surrogates as U+FFFD; that line is what is sealed, written and shown. The
        normal path costs one length test more (and a regular-expression scan for
        lines of thousands of characters).
        """
        try:
            line = event.model_dump_json()
            if len(line) > _MAX_INT_DIGITS and _unreadable(line):
                raise ValueError("an integer too long to read back")
        except Exception:  # PydanticSerializationError, RecursionError...: the rare path
            line = _fallback_line(event)
            event = _reparsed(line, event)
        clean = self._redact(line)
        if isinstance(event, _HELD_TYPES) and self._may_hold():
            self._hold(clean)
        else:
            self._append(clean)
        self._written += 1
        if self.listeners:
            shown = event if clean is line else parse_event(clean)
            for listener in self.listeners:
                listener(shown)

    def _append(self, clean: str) -> None:
        """Seal and write one line whole, or leave the file and the seal as they were.

        A write that fails or comes up short (a full disk) is cut back to the
        last whole line and the seal's chain rolled back, so no partial line is
        ever glued to the next event (issue 12 item 1); if even the cut fails,
        the next append repairs it first.

        Raises:
            DiskFull: the filesystem is full (names it).
            OSError: another write failure.
        """
        self.flush()  # the held lines go first: the file keeps the order of the events
        if self._torn:
            self._repair()
        before = (self._seal.seq, self._seal.chain)
        self._write(self._seal.seal(clean), before)

    def _write(self, data: bytes, before: tuple[int, bytes]) -> None:
        """One ``write`` of whole sealed lines; on failure roll the seal back to ``before``."""
        try:
            n = os.write(self._fd, data)
        except OSError as e:
            self._undo(before)
            if is_disk_full(e):
                raise disk_full(self.path, "the stream", e) from e
            raise
        if n != len(data):  # a regular file writes short only when it is full
            self._undo(before)
            raise disk_full(self.path, "the stream")
        self._size += n

    def _may_hold(self) -> bool:
        """Whether a line can wait for the next flush: a running loop will flush it soon."""
        try:
            self._loop = asyncio.get_running_loop()
        except RuntimeError:
            return False
        return True

    def _hold(self, clean: str) -> None:
        """Seal a call's event now, write it with the next flush (at most :data:`_HOLD_S` on).

        Raises:
            DiskFull: the last flush of held lines failed (they are lost, and said so).
        """
        self._raise_failed()
        if self._torn:
            self._repair()
        if not self._held:
            self._held_before = (self._seal.seq, self._seal.chain)
            assert self._loop is not None
            self._timer = self._loop.call_later(_HOLD_S, self._flush_later)
        line = self._seal.seal(clean)
        self._held.append(line)
        self._held_bytes += len(line)
        if self._held_bytes >= _HOLD_BYTES:
            self.flush()

    def _flush_later(self) -> None:
        self._timer = None
        try:
            self.flush()
        except Exception as e:  # DiskFull, OSError: raised by the next emit or sync
            self._failed = e

    def _raise_failed(self) -> None:
        failed, self._failed = self._failed, None
        if failed is not None:
            raise failed

    def flush(self) -> None:
        """Write the held lines of calls (one ``write``); every other event flushes them first.

        Raises:
            DiskFull: the filesystem is full; the held lines are lost and the file and seal
                are as before them.
            OSError: another write failure.
        """
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._raise_failed()
        if not self._held:
            return
        data, before, count = b"".join(self._held), self._held_before, len(self._held)
        self._held.clear()
        self._held_bytes = 0
        try:
            self._write(data, before)
        except OSError:
            self._written -= count
            raise

    def _undo(self, before: tuple[int, bytes]) -> None:
        """Forget the line just sealed (its sequence number and chain value)."""
        self._seal.seq, self._seal.chain = before
        self._torn = True
        with contextlib.suppress(OSError):
            self._repair()

    def _repair(self) -> None:
        """Cut the file back to its last whole line (raises OSError if it cannot)."""
        if os.fstat(self._fd).st_size != self._size:
            os.ftruncate(self._fd, self._size)
        self._torn = False

    def sync(self) -> None:
        """Fsync the file now, blocking, when durability is ``"turn"``.

        Then move the seal's head to the last event.
        """
        if not self.closed:
            self.flush()
            if self._fsync:
                os.fsync(self._fd)
            self._synced = self._written
            self._seal.write_head(self._written, self._seal.chain)

    async def sync_turn(self) -> None:
        """At a turn's end, wait until every event written so far is on disk.

        Returns once they are, and the seal's head records them.

        With durability ``"never"`` only the head moves (no fsync). Otherwise the
        fsync runs in a worker thread, so other sessions go on meanwhile; callers
        share the fsync in flight and start a new one only for events written
        after it began.

        Raises:
            OSError: if the fsync fails.
        """
        if not self.closed:
            self.flush()
        if not self._fsync:
            if not self.closed:
                self._seal.write_head(self._written, self._seal.chain)
            return
        target = self._written
        while not self.closed and self._synced < target:
            if self._syncing is None:
                self._syncing = asyncio.ensure_future(self._sync_in_thread())
            await asyncio.shield(self._syncing)

    async def _sync_in_thread(self) -> None:
        written, chain = self._written, self._seal.chain
        try:
            await asyncio.to_thread(os.fsync, self._fd)
        except OSError:
            if not self.closed:  # closing synced everything; its fd may be gone
                raise
        finally:
            self._syncing = None
        if written > self._synced and not self.closed:
            self._synced = written
            self._seal.write_head(written, chain)

    def close(self) -> None:
        """Sync, close the seal's head (``closed``) and the file. Idempotent."""
        if not self.closed:
            self.sync()
            self._seal.close()
            os.close(self._fd)
            self.closed = True


_START_WAIT_S = 10.0
"""How long ``gg watch`` waits for a new stream's first event."""


def _alive(pid: int) -> bool:
    if pid <= 0:
        return True  # unknown writer: keep waiting
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def read_events(
    path: Path,
    *,
    follow: bool = False,
    poll_s: float = 0.2,
    check: Checker | None = None,
    on_damaged: Callable[[int, str], None] | None = None,
) -> Iterator[Event]:
    """Yield the events of a stream file in order.

    Args:
        path: a ``stream.jsonl`` file.
        follow: keep waiting for new lines until a ``run_ended`` event is read, or
            until the process that writes the stream (``run_started.pid``) is gone.
        poll_s: seconds between polls when following.
        check: a :class:`gg.seal.Checker` fed every line before it is parsed; the
            first line that fails raises :class:`StreamAltered` before it is yielded.
        on_damaged: called with ``(line number, why)`` for a line that is not a
            stream event (a write cut short by a crash or a full disk), which is
            then skipped; without it such a line raises (issue 12 item 1).

    Raises:
        FileNotFoundError: if ``path`` does not exist.
        gg.errors.UserError: a line is not a stream event (says which line and why).
        StreamAltered: with ``check``, a line is not the one gg sealed.
    """
    writer = 0
    number = 0
    waited = 0.0
    last_look = False
    with path.open("rb") as f:
        buffer = b""
        while True:
            chunk = f.readline()
            if chunk:
                buffer += chunk
                if not buffer.endswith(b"\n"):
                    continue  # a torn tail: wait for the rest (or drop it at the end)
                raw, buffer = buffer[:-1], b""
                number += 1
                if check is not None and (failure := check.feed(raw)) is not None:
                    raise StreamAltered(failure)
                event = _parse_or_report(raw.strip(), path, number, on_damaged)
                if event is None:
                    continue
                if event.type == "run_started":
                    writer = event.pid
                yield event
                if follow and event.type == "run_ended":
                    return
            elif follow and _alive(writer) and (number or waited < _START_WAIT_S):
                time.sleep(poll_s)
                waited += poll_s
            elif number == 0:
                raise UserError(f"{path}: not a gg stream (no run_started event)")
            elif follow and not last_look:
                last_look = True  # the writer is gone: read what it wrote just before
            else:
                return


def _parse_or_report(
    line: bytes, path: Path, number: int, on_damaged: Callable[[int, str], None] | None
) -> Event | None:
    """The event on ``line``, or ``None``.

    ``None`` for a blank line or a damaged one reported to ``on_damaged``.

    Raises:
        UserError: line 1 is not ``run_started``; a damaged line without ``on_damaged``.
    """
    if not line:
        return None
    try:
        event = _parse_line(line, path, number)
    except UserError as e:
        if on_damaged is None or number == 1:
            raise
        on_damaged(number, str(e))
        return None
    if number == 1 and event.type != "run_started":
        raise UserError(
            f"{path}: not a gg stream (its first event is {event.type!r}, not run_started)"
        )
    return event


def _parse_line(line: bytes, path: Path, number: int) -> Event:
    try:
        return parse_event(line)
    except ValueError as e:  # pydantic.ValidationError, bad UTF-8
        first = str(e).splitlines()
        why = " ".join(first[:3])[:300]
        raise UserError(f"{path}: line {number} is not a gg stream event ({why})") from None


def dump_line(obj: Any) -> str:
    """Compact JSON for ``obj`` (helper for renderers)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
