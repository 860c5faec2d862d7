"""One ordered, sealed record of a distributed board run (issue 17; SPEC O1, §10).

Each Ray worker's board run writes its own sealed stream on its machine
(:mod:`gg.seal`). It ships the stream to the driver with its seal files (the
run's key and head), and the driver, in :func:`merge`:

1. writes every part under ``<state>/runs/<dispatch id>/parts/worker-SLOT-RUN/``
   (``stream.jsonl``, ``seal.key``, ``seal.head``, gg-private) and verifies it
   against the key shipped with it (:func:`gg.seal.verify`): a part edited,
   reordered or cut after its run sealed it is found and named, and only its
   verified events go on (what this does not prove: below);
2. merges the parts' events into one stream,
   ``<state>/runs/<dispatch id>/stream.jsonl``: the dispatch's own
   ``run_started``, then every worker event (each part's order kept; parts
   interleaved by their ``at`` times, ties by worker slot) with ``run_id`` the
   dispatch id and every session id prefixed ``wSLOT.`` (``w2.s3``: session
   ``s3`` of worker 2), then the dispatch's ``run_ended`` (``stopped``, naming
   the parts that did not verify, when any did not or an issue is not done).
   The workers' own ``run_started`` and ``run_ended`` are left out (the index
   keeps what they said). The merged stream is sealed by the driver with a key
   of its own, so ``gg show <dispatch id>`` replays and verifies it as any run;
3. writes ``index.json``: each part's slot, run id, host, pid, status, issues,
   directory, verdict, event count and last chain value; and the workers lost
   for good (their issues were taken over by the others once their claims ran out).

Before a part is stored, the driver checks what the worker said of it: the
part's slot is the slot of the job the driver made (never the worker's report;
parts claiming one slot are all refused), its run id must fit
:data:`gg.state.RUN_ID_PATTERN` (it names the part's directory; a part whose
run id is not one is refused and nothing of it is written), and its stream is
split on newlines only (model text holds U+2028, U+2029 and U+0085 unescaped): a
verified line that is not a gg event makes the part ``damaged``, its events
from there left out.

What a part's seal proves, and what it does not: the part is verified against
the key shipped *with it*, so ``intact`` means the stream is whole as its
worker's run sealed it (no line edited, reordered or cut after it was written,
on the worker's disk or on the way), not who wrote it: whoever can rewrite a
worker's report can seal a forged stream with a key of their own. The driver
trusts its workers, and Ray's transport between them, as it trusts the Ray
cluster itself (which runs gg with the model's credentials and pushes to the
remote): a cluster you do not control is outside gg's trust boundary. The index
says so (``part_seals``).

A worker that was killed never shipped its stream: the attempt Ray retried
shipped the one that finished its issues (the dead attempt's stream stays on
its machine).
"""

from __future__ import annotations

import heapq
import json
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gg.errors import UserError
from gg.seal import HEAD_NAME, KEY_NAME, verify
from gg.state import RUN_ID_PATTERN, open_private, private_dir
from gg.stream import Event, RunEnded, RunStarted, StreamWriter, parse_event

__all__ = ["PART_SEALS", "Part", "merge"]

PART_SEALS = (
    "each part is verified with the seal key shipped with it: 'intact' means whole as its "
    "worker sealed it, not who wrote it; workers are trusted as the Ray cluster is"
)
"""What the index says a part's verdict proves (see the module's description)."""

_SESSION_FIELDS = ("session_id", "parent", "resumed_session")
"""The fields of an event that name a session of the worker's run."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Part:
    """One worker run's stream as shipped to the driver.

    Attributes:
        slot: the worker's slot (1, 2, ...).
        run_id: its board run's id.
        stream: the stream, as JSONL text.
        seal: ``{"seal.key": text, "seal.head": text}``: the run's seal files (shipped
            with the part: they show it whole as sealed, not who sealed it).
        meta: what the index says of it besides (host, pid, status, issues...).
    """

    slot: int
    run_id: str
    stream: str
    seal: dict[str, str]
    meta: dict[str, Any] = field(default_factory=dict)


def _write_private(path: Path, text: str) -> None:
    """Write a new gg-private file (``O_EXCL | O_NOFOLLOW``, mode 0600)."""
    fd = open_private(path, os.O_WRONLY, create=True)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)


def _refused(part: Part, why: str) -> dict[str, Any]:
    """The index entry of a part that is not stored nor merged, and why."""
    return {
        "slot": part.slot,
        "run_id": part.run_id[:200],
        **part.meta,
        "part": None,
        "verdict": "refused",
        "message": why,
        "events": 0,
        "chain": None,
    }


def _events(stream: str, trusted: int) -> tuple[list[Event], str | None]:
    r"""The first ``trusted`` lines of ``stream`` as events (split on ``\n`` only).

    A stream's text holds U+2028, U+2029 and U+0085 unescaped (model text), which
    :meth:`str.splitlines` would split on: only ``\n`` ends a line.

    Returns:
        The events up to the first line that is not one, and what that line's fault is
        (``None`` when every trusted line parsed).
    """
    events: list[Event] = []
    for number, line in enumerate(stream.split("\n")[:trusted], start=1):
        if not line:
            continue
        try:
            events.append(parse_event(line))
        except ValueError as e:  # pydantic's ValidationError is a ValueError
            first = str(e).splitlines()[0][:200] if str(e) else type(e).__name__
            return events, f"line {number} is not a gg event ({first})"
    return events, None


def _store_part(folder: Path, part: Part) -> tuple[Path | None, dict[str, Any], list[Event]]:
    """Write ``part`` under ``folder/parts/``, verify it; its directory, index entry, events.

    Only the events its seal vouches for are returned (none for a part whose seal
    files are missing or unreadable, or whose run id is not one: that part is
    refused, never written, as its run id would name its directory).
    """
    if not RUN_ID_PATTERN.fullmatch(part.run_id):
        return None, _refused(part, f"its run id {part.run_id[:200]!r} is not a run id"), []
    name = f"worker-{part.slot}-{part.run_id}"
    where = private_dir(private_dir(folder / "parts") / name)
    _write_private(where / "stream.jsonl", part.stream)
    for seal_name in (KEY_NAME, HEAD_NAME):
        if seal_name in part.seal:
            _write_private(where / seal_name, part.seal[seal_name])
    kind: str
    try:
        verdict = verify(where / "stream.jsonl", seal_dir=where)
        kind, message, trusted = verdict.kind, verdict.message(), verdict.trusted
    except (UserError, OSError, ValueError) as e:  # not a gg stream: nothing of it trusted
        kind, message, trusted = "altered", f"not a gg stream: {e}", 0
    if kind == "unkeyed":
        trusted = 0  # a part is only merged when its own key vouches for it
    events, fault = _events(part.stream, trusted)
    if fault is not None:
        kind, message = (
            "damaged",
            f"the part is damaged: {fault}; its events from there are left out",
        )
    entry = {
        "slot": part.slot,
        "run_id": part.run_id,
        **part.meta,
        "part": f"parts/{name}",
        "verdict": kind,
        "message": message,
        "events": len(events),
        "chain": events[-1].chain if events else None,
    }
    return where, entry, events


def _stored(folder: Path, parts: list[Part]) -> list[tuple[dict[str, Any], list[Event]]]:
    """Every part's index entry and merged events; parts sharing a slot are all refused."""
    slots = Counter(part.slot for part in parts)
    out: list[tuple[dict[str, Any], list[Event]]] = []
    for part in parts:
        if slots[part.slot] > 1:
            out.append((_refused(part, f"{slots[part.slot]} parts claim slot {part.slot}"), []))
            continue
        _, entry, events = _store_part(folder, part)
        out.append((entry, events))
    return out


def _rebased(events: list[Event], slot: int, dispatch_id: str) -> Iterator[Event]:
    """A part's events as the merged stream holds them (its run's start and end left out)."""
    for event in events:
        if event.type in ("run_started", "run_ended"):
            continue
        update: dict[str, Any] = {"run_id": dispatch_id}
        for name in _SESSION_FIELDS:
            value = getattr(event, name, None)
            if isinstance(value, str):
                update[name] = f"w{slot}.{value}"
        yield event.model_copy(update=update)


def _problems(entries: list[dict[str, Any]], *, done: bool) -> list[str]:
    """Why the dispatch's record is not a clean end: issues not done, parts not verified."""
    why = [] if done else ["not every issue is done (gg board list)"]
    why += [
        f"worker {e['slot']} ({e['run_id']}): {e['message']}"
        for e in entries
        if e["verdict"] != "intact"
    ]
    return why


def merge(
    folder: Path,
    *,
    dispatch_id: str,
    parts: list[Part],
    workspace: Path,
    settings: dict[str, Any],
    done: bool,
    lost: tuple[str, ...] = (),
) -> Path:
    """Verify ``parts`` and write the merged stream and the index in ``folder`` (see above).

    Args:
        folder: the dispatch's gg-private run directory, ``<state>/runs/<dispatch_id>``.
        dispatch_id: the merged stream's run id.
        parts: every worker run's shipped stream, by slot.
        workspace: the driver's workspace (named by the merged ``run_started``).
        settings: the effective settings (the merged ``run_started`` carries them).
        done: every issue of the board is done.
        lost: the workers that died for good (Ray gave up on them), one line each:
            in the index, and named by the merged ``run_ended``'s diagnosis (a run
            whose issues are all done, every part verified, still ends ``ended``).

    Returns:
        The index, ``folder / "index.json"``.

    Raises:
        OSError, StateError: the files cannot be written (the folder is not new).
    """
    stored = _stored(folder, parts)
    why = _problems([e for e, _ in stored], done=done)
    notes = [f"lost {line} (its issues were taken over)" for line in lost]
    start = RunStarted(
        run_id=dispatch_id,
        settings=settings,
        isolation="ray",
        workspace=str(workspace),
        pid=os.getpid(),
    )
    end = RunEnded(
        run_id=dispatch_id,
        status="stopped" if why else "ended",
        exit_code=1 if why else 0,
        diagnosis="; ".join(why + notes) or None,
    )
    merged = heapq.merge(
        *(_rebased(events, e["slot"], dispatch_id) for e, events in stored),
        key=lambda event: event.at,
    )
    writer = StreamWriter(folder / "stream.jsonl")
    try:
        for event in (start, *merged, end):
            writer.emit(event)
    finally:
        writer.close()
    return _write_index(folder, dispatch_id, [entry for entry, _ in stored], lost)


def _write_index(
    folder: Path, dispatch_id: str, entries: list[dict[str, Any]], lost: tuple[str, ...]
) -> Path:
    """Write ``folder/index.json``: the parts' entries and the lost workers; its path."""
    index = folder / "index.json"
    body = {
        "dispatch_id": dispatch_id,
        "stream": "stream.jsonl",
        "part_seals": PART_SEALS,
        "workers": entries,
    }
    _write_private(index, json.dumps({**body, "lost": list(lost)}, indent=2) + "\n")
    return index
