"""The stream's seal: a keyed hash chain over its events, and its verifier (issue 9 item 3).

Every line :class:`gg.stream.StreamWriter` writes ends with fields the seal
adds (SPEC §10)::

    {..., "seq": 7, "chain": "<64 hex digits>"}
    {..., "seq": 1, "nonce": "<32 hex digits>", "chain": "..."}    (run_started only)

``seq`` counts the run's events from 1; ``nonce`` is a random run key carried
by the first event; ``chain`` is::

    chain_n = HMAC-SHA256(key, chain_(n-1) + line_n up to, not including, ',"chain"')
    chain_0 = 32 zero bytes

``key`` is a random 32-byte secret of the run. It never enters the stream: it
is kept, with the nonce, in ``seal.key`` in the run's gg-private directory
(:func:`gg.state.run_dir`). Beside it ``seal.head`` records the last event
the writer knows it wrote (``seq``, ``chain``, ``closed``); the writer
rewrites it in place at every turn-end sync and at close, and holds an
exclusive ``flock`` on it while it writes the stream (so a reader can tell a
live run from a dead one).

What a verdict proves, given the key: every event read was written by gg in
this order, with nothing inserted, edited or removed between them; nothing
sealed before the last turn-end sync was cut off; and a run that closed had
nothing appended after. What it does not prove: events of the last turn
written after its last sync and then cut off cannot be told from a crash;
anyone who can read ``seal.key`` (gg's user) can forge a stream; a stream
whose key is missing (another machine, a moved workspace, a deleted state
dir) can only be checked for its numbering (:class:`Unkeyed`).

The verdict is one of :class:`Intact`, :class:`Running`, :class:`Unended`,
:class:`Altered`, :class:`Truncated`, :class:`Unkeyed`; :func:`verify` reads
a whole file, :class:`Checker` checks lines as they come (``gg watch``).
"""

from __future__ import annotations

import binascii
import fcntl
import hmac
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeAlias

from gg.errors import GGError, UserError
from gg.state import RUN_ID_PATTERN, StateError, existing_state, open_private, state_home

__all__ = [
    "HEAD_NAME",
    "KEY_NAME",
    "Altered",
    "Checker",
    "Head",
    "Intact",
    "Running",
    "Sealer",
    "StreamAltered",
    "Truncated",
    "Unended",
    "Unkeyed",
    "Verdict",
    "verify",
]

KEY_NAME = "seal.key"
HEAD_NAME = "seal.head"
_ZERO = bytes(32)
_HEAD_SIZE = 160
_CHAIN_OPEN = b',"chain":"'
_SUFFIX = len(_CHAIN_OPEN) + 64 + 2  # ',"chain":"' + 64 hex + '"}'


# -- the writer's side ---------------------------------------------------------------------


class Sealer:
    """Seals one run's lines and keeps its key and head files (the writer's side).

    Args:
        directory: the run's gg-private directory; ``seal.key`` and ``seal.head``
            are created there (``O_EXCL | O_NOFOLLOW``, mode 0600).
        durable: fsync the key at creation and the head at close.

    Raises:
        StateError: the files exist already (a run id used twice) or are not
            regular files of gg's user.
    """

    def __init__(self, directory: Path, *, durable: bool) -> None:
        self.key = secrets.token_bytes(32)
        self.nonce = secrets.token_hex(16)
        self.seq = 0
        """Events sealed so far."""
        self.chain = _ZERO
        """The chain value of event ``seq`` (raw bytes)."""
        self._durable = durable
        self._head_seq = -1
        try:
            fd = open_private(directory / KEY_NAME, os.O_WRONLY, create=True)
            try:
                _write_all(fd, json.dumps({"nonce": self.nonce, "key": self.key.hex()}).encode())
                if durable:
                    os.fsync(fd)
            finally:
                os.close(fd)
            self._head = open_private(directory / HEAD_NAME, os.O_RDWR, create=True)
        except FileExistsError as exc:
            raise StateError(
                f"{str(directory)!r} already holds a sealed stream (a run id used twice?)"
            ) from exc
        fcntl.flock(self._head, fcntl.LOCK_EX | fcntl.LOCK_NB)
        self.write_head(0, _ZERO)

    def seal(self, body: str) -> bytes:
        """Seal one event: ``body`` as its sealed line, newline included.

        ``body`` is one event as a JSON object, without seal fields. Costs one
        HMAC-SHA256 over the line (about 1-2 us).
        """
        self.seq += 1
        if self.seq == 1:
            data = f'{body[:-1]},"seq":1,"nonce":"{self.nonce}"'.encode()
        else:
            data = f'{body[:-1]},"seq":{self.seq}'.encode()
        mac = hmac.digest(self.key, self.chain + data, "sha256")
        self.chain = mac
        return b'%s,"chain":"%s"}\n' % (data, binascii.hexlify(mac))

    def write_head(self, seq: int, chain: bytes, *, closed: bool = False) -> None:
        """Record that events 1..``seq`` are written (``chain``: event ``seq``'s value).

        Call only once those events are written (flushed, or fsynced when
        durable): the head must never claim more than the file holds.
        """
        if seq <= self._head_seq and not closed:
            return
        self._head_seq = seq
        record = b'{"seq":%d,"chain":"%s","closed":%s}' % (
            seq,
            binascii.hexlify(chain),
            b"true" if closed else b"false",
        )
        os.pwrite(self._head, record.ljust(_HEAD_SIZE - 1) + b"\n", 0)

    def close(self) -> None:
        """Mark the head closed at the last event, fsync it when durable, drop the lock."""
        self.write_head(self.seq, self.chain, closed=True)
        if self._durable:
            os.fsync(self._head)
        os.close(self._head)  # releases the flock


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


# -- verdicts ------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Intact:
    """Every event verified under the run's key, and the run ended (``run_ended``)."""

    kind: Literal["intact"] = "intact"
    events: int
    """How many events were read (all verified)."""

    @property
    def trusted(self) -> int:
        """How many leading events are shown as genuine."""
        return self.events

    def message(self) -> str:
        """One line for the operator."""
        return f"stream intact: {self.events} events, each verified under the run's key"


@dataclass(frozen=True, kw_only=True)
class Running:
    """Every event so far verified; the writing gg process still holds the stream."""

    kind: Literal["running"] = "running"
    events: int

    @property
    def trusted(self) -> int:
        """How many leading events are shown as genuine."""
        return self.events

    def message(self) -> str:
        """One line for the operator."""
        return f"stream intact so far: {self.events} events verified; the run is still going"


@dataclass(frozen=True, kw_only=True)
class Unended:
    """Every event verified, none missing, but no ``run_ended``: the process died."""

    kind: Literal["unended"] = "unended"
    events: int

    @property
    def trusted(self) -> int:
        """How many leading events are shown as genuine."""
        return self.events

    def message(self) -> str:
        """One line for the operator."""
        return (
            f"stream intact but the run did not end: {self.events} events verified, no "
            "run_ended (its process was killed or crashed)"
        )


@dataclass(frozen=True, kw_only=True)
class Altered:
    """Event ``at`` is not what gg wrote; the events before it verified.

    The event was edited, inserted, reordered, forged, or is a removed event's successor.
    """

    kind: Literal["altered"] = "altered"
    at: int
    """The first event (1-based line) that fails."""
    reason: str

    @property
    def trusted(self) -> int:
        """How many leading events are shown as genuine."""
        return self.at - 1

    def message(self) -> str:
        """One line for the operator."""
        return (
            f"STREAM ALTERED at event {self.at}: {self.reason}. Only the {self.at - 1} "
            "events before it are gg's; nothing from there on is shown"
        )


@dataclass(frozen=True, kw_only=True)
class Truncated:
    """The file ends after event ``after`` but gg had sealed ``of`` events."""

    kind: Literal["truncated"] = "truncated"
    after: int
    of: int

    @property
    def trusted(self) -> int:
        """How many leading events are shown as genuine."""
        return self.after

    def message(self) -> str:
        """One line for the operator."""
        return (
            f"STREAM TRUNCATED after event {self.after} of {self.of}: the last "
            f"{self.of - self.after} events gg wrote were removed"
        )


@dataclass(frozen=True, kw_only=True)
class Unkeyed:
    """No key for this run in gg's state: the chain cannot be checked, only the numbering."""

    kind: Literal["unkeyed"] = "unkeyed"
    events: int
    sealed: bool
    """The lines carry ``seq``/``chain`` (False: an unsealed gg 0.1 stream)."""
    why: str

    @property
    def trusted(self) -> int:
        """How many leading events are shown (none is proven genuine)."""
        return self.events

    def message(self) -> str:
        """One line for the operator."""
        what = "its numbering is intact" if self.sealed else "it carries no chain (gg 0.1?)"
        return (
            f"STREAM UNVERIFIED: {self.why}, so its {self.events} events cannot be "
            f"checked ({what}); anyone could have written it"
        )


Verdict: TypeAlias = Intact | Running | Unended | Altered | Truncated | Unkeyed
"""What :func:`verify` found, tagged by ``kind``."""


class StreamAltered(GGError):
    """Raised by a checked read at the first event that fails.

    A checked read is :func:`gg.stream.read_events` with ``check``; ``verdict`` says
    which event failed and why.
    """

    def __init__(self, verdict: Altered) -> None:
        super().__init__(verdict.message())
        self.verdict = verdict


# -- the reader's side ---------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Head:
    """The head record: events 1..``seq`` were written; ``live``: the writer holds it."""

    seq: int = 0
    chain: bytes = _ZERO
    closed: bool = False
    live: bool = False


class Checker:
    """Checks a stream's lines one by one against its seal (``gg watch``, :func:`verify`).

    Args:
        path: the stream file (for messages).
        seal_dir: where ``seal.key`` and ``seal.head`` are; default: the
            stream's own directory when it lies in gg's state (``state_home``),
            else the run directory in the gg state of the workspace and run id
            its first event names (only gg's private state is trusted).
    """

    def __init__(self, path: Path, *, seal_dir: Path | None = None) -> None:
        self.path = path
        self.events = 0
        """Lines checked and found good."""
        self.failure: Altered | None = None
        self._seal_dir = seal_dir
        self._key: bytes | None = None
        self._nonce = b""
        self._sealed = True
        self._why = ""
        self._chains: list[bytes] = [_ZERO]
        self._last = b""
        self.head_at_start: Head | None = None
        """The head as it was just after the first line was read (for a whole-file
        check: taken before the rest, it never claims lines not yet read)."""

    @property
    def unkeyed(self) -> str | None:
        """After the first line: why the chain cannot be checked, or ``None`` if it can."""
        return None if self._key is not None or self.events == 0 else (self._why or "no key")

    def feed(self, line: bytes) -> Altered | None:
        """Check the next line (without its newline).

        Returns:
            The failure, if this or an earlier line failed; else ``None``.

        Raises:
            UserError: the first line is not a ``run_started`` event (not a gg stream).
        """
        if self.failure is None:
            reason = self._first(line) if self.events == 0 else self._next(line)
            if reason:
                self.failure = Altered(at=self.events + 1, reason=reason)
            else:
                self.events += 1
                self._last = line
        return self.failure

    def _first(self, line: bytes) -> str | None:
        try:
            obj = json.loads(line)
            if not isinstance(obj, dict):
                raise ValueError("not a JSON object")
        except ValueError as e:
            raise UserError(f"{self.path}: line 1 is not a gg stream event ({e})") from None
        if obj.get("type") != "run_started":
            raise UserError(
                f"{self.path}: not a gg stream (its first event is "
                f"{obj.get('type')!r}, not run_started)"
            )
        self._locate(obj)
        self._sealed = "chain" in obj
        self.head_at_start = self.read_head()
        if self._key is None:
            return None if not self._sealed or obj.get("seq") == 1 else "its number is not 1"
        if str(obj.get("nonce", "")).encode() != self._nonce:
            return "its run key (nonce) is not the one gg gave this run"
        return self._next(line)

    def _locate(self, obj: dict[str, object]) -> None:
        directory = self._seal_dir
        home = state_home().resolve()
        beside = self.path.resolve().parent
        if directory is None and beside.is_relative_to(home) and (beside / KEY_NAME).exists():
            directory = beside  # a stream in gg's own state: its run is where it lies
        if directory is None:
            workspace, run_id = obj.get("workspace"), obj.get("run_id")
            if (
                not isinstance(workspace, str)
                or not isinstance(run_id, str)
                or not RUN_ID_PATTERN.fullmatch(run_id)
            ):
                self._why = "its first event names no workspace and run id"
                return
            try:
                state = existing_state(Path(workspace))
            except StateError as e:
                self._why = str(e)
                return
            if state is None:
                self._why = f"gg has no state for workspace {workspace!r} on this machine"
                return
            directory = state / "runs" / run_id
        self._seal_dir = directory
        self._load_key(directory / KEY_NAME)

    def _load_key(self, path: Path) -> None:
        try:
            fd = open_private(path, os.O_RDONLY)
        except (OSError, StateError) as e:
            self._why = f"no key for this run in gg's state ({path}: {e})"
            return
        try:
            data = json.loads(os.read(fd, 4096))
            self._key, self._nonce = bytes.fromhex(data["key"]), str(data["nonce"]).encode()
        except (ValueError, KeyError, TypeError) as e:
            self._why = f"the run's key file {str(path)!r} is unreadable ({e})"
        finally:
            os.close(fd)

    def _next(self, line: bytes) -> str | None:
        n = self.events + 1
        if not self._sealed:
            return (
                "a line carries seal fields in an unsealed stream" if b'"chain"' in line else None
            )
        tail = line[-_SUFFIX:]
        if len(line) <= _SUFFIX or not tail.startswith(_CHAIN_OPEN) or not tail.endswith(b'"}'):
            return "it does not end with a chain value (not a line gg wrote)"
        data, claimed = line[:-_SUFFIX], tail[len(_CHAIN_OPEN) : -2]
        seq = b',"seq":%d' % n
        if not (data.endswith(seq) or (n == 1 and data[:-43].endswith(seq))):
            return f"its sequence number is not {n} (an event was removed, inserted or moved)"
        if self._key is None:
            return None
        mac = hmac.digest(self._key, self._chains[-1] + data, "sha256")
        if not hmac.compare_digest(binascii.hexlify(mac), claimed):
            return "its chain value does not match what gg's key gives (edited, forged or moved)"
        self._chains.append(mac)
        return None

    def read_head(self) -> Head | None:
        """The head record and whether its writer is alive; ``None`` without a key."""
        if self._key is None or self._seal_dir is None:
            return None
        try:
            fd = open_private(self._seal_dir / HEAD_NAME, os.O_RDONLY)
        except (OSError, StateError):
            return Head()
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                live = False
            except BlockingIOError:
                live = True
            data = json.loads(os.pread(fd, _HEAD_SIZE, 0))
            return Head(
                seq=int(data["seq"]),
                chain=bytes.fromhex(data["chain"]),
                closed=bool(data["closed"]),
                live=live,
            )
        except (ValueError, KeyError, TypeError):
            return Head(live=live)
        finally:
            os.close(fd)

    def finish(self, head: Head | None = None) -> Verdict:
        """The verdict on the lines fed so far, against ``head``.

        ``head`` is read now if not given: read it before the last lines when the writer
        may still be going.

        Raises:
            UserError: no line was fed (not a gg stream).
        """
        if self.failure is not None:
            return self.failure
        if self.events == 0:
            raise UserError(f"{self.path}: not a gg stream (no run_started event)")
        if self._key is None:
            return Unkeyed(events=self.events, sealed=self._sealed, why=self._why)
        head = head if head is not None else self.read_head() or Head()
        if head.seq > self.events:
            return Truncated(after=self.events, of=head.seq)
        if head.seq and self._chains[head.seq] != head.chain:
            return Altered(at=head.seq, reason="it is not the event gg's head record sealed")
        if head.closed and self.events > head.seq:
            return Altered(at=head.seq + 1, reason="it was added after the run closed")
        if _is_run_ended(self._last):
            return Intact(events=self.events)
        return Running(events=self.events) if head.live else Unended(events=self.events)


def _is_run_ended(line: bytes) -> bool:
    try:
        return bool(json.loads(line).get("type") == "run_ended")
    except (ValueError, AttributeError):
        return False


def verify(path: Path, *, seal_dir: Path | None = None) -> Verdict:
    """Check a whole stream file against its seal (issue 9 item 3).

    The head record is read after the first line and before the rest
    (:attr:`Checker.head_at_start`), so a run still writing is never taken for
    a truncated one. A torn last line
    (no newline: a crash mid-write) is not counted.

    Args:
        path: a ``stream.jsonl``.
        seal_dir: where the run's key and head are (default: see :class:`Checker`).

    Returns:
        The verdict (never raises for what the file holds past its first line).

    Raises:
        OSError: the file cannot be read.
        UserError: it is not a gg stream (its first line is not ``run_started``).
    """
    check = Checker(path, seal_dir=seal_dir)
    with path.open("rb") as f:
        for raw in f:
            if not raw.endswith(b"\n") or check.feed(raw[:-1]) is not None:
                break
    return check.finish(check.head_at_start)
