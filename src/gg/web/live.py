"""Server-sent events that follow the workspace as it is written (issue 15 item 1).

The files are polled (a ``stat`` and a bounded read of what was appended, every
:data:`POLL_S` seconds), so a board run or a ``gg run`` in another process shows up
within a fraction of a second, with nothing to install.

- :class:`WorkspaceView` keeps the board page's state: the board store's signature and a
  :class:`~gg.web.streams.RunSummary` per run; its :attr:`~WorkspaceView.version` grows
  each time something shown changed. All board feeds share one view.
- :func:`board_feed` sends the fresh board fragment (``event: board``) on each change.
- :func:`run_feed` sends each new event of one run, checked against its seal, as the
  run page's HTML (``event: event``, ``id:`` its line number), the run rendered again
  now and then (``event: summary``: the page takes its header, session tree and charts),
  then the tamper check's verdict (``event: verdict``) and ``event: end`` once the run
  ended or the stream fails its check.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
import weakref
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from gg.stream import Checkpoint, Event, SessionStarted
from gg.web.boardview import BoardReader, BoardSnapshot
from gg.web.pages import board_fragment
from gg.web.runpage import render_event, render_run
from gg.web.streams import MAX_POLL_BYTES, RunFile, RunSummary, SealedTail, list_runs, summary_of

__all__ = [
    "CHUNK_BYTES",
    "KEEPALIVE_S",
    "MAX_FEEDS",
    "POLL_S",
    "REFRESH_BYTES",
    "SUMMARY_S",
    "FeedSlots",
    "WorkspaceView",
    "board_feed",
    "run_feed",
    "sse",
]

POLL_S = 0.12
"""Seconds between two looks at the files."""
REFRESH_BYTES = 8 * 1024 * 1024
"""The most bytes of all streams one look at the board page's runs reads."""
SUMMARY_S = 1.0
"""Seconds between two summaries of a run page (its header, session tree, charts) at least."""
CHUNK_BYTES = 256 * 1024
"""The most stream bytes one step of a run feed reads (then the loop gets a turn)."""
MAX_FEEDS = 16
"""The most live feeds (board and run pages) one server keeps open; beyond, 503."""
KEEPALIVE_S = 15.0
"""Seconds of silence after which a feed sends a comment (keeps proxies from closing it)."""

_BREAKS = re.compile(r"\r\n|\r|\n")


def sse(kind: str, data: str, *, event_id: int | None = None) -> str:
    """One server-sent event: ``event:``, optional ``id:``, one ``data:`` per line.

    Args:
        kind: the event's name (gg's own word).
        data: the payload; every line break (CR, LF, CRLF) starts a new ``data:`` line,
            so no text can forge a field of its own.
        event_id: the ``id:`` field (a stream line number), or ``None``.

    Returns:
        The event's text, ending with its blank line.
    """
    head = f"event: {kind}\n" + (f"id: {event_id}\n" if event_id is not None else "")
    return head + "".join(f"data: {part}\n" for part in _BREAKS.split(data)) + "\n"


class WorkspaceView:
    """What the board page shows, re-read when the files change.

    Args:
        workspace: the workspace (its state directory is read, never written).
        trust_config: the operator accepted a newly weakening ``gg.toml`` (its store).
    """

    def __init__(self, workspace: Path, *, trust_config: bool = False) -> None:
        self.workspace = workspace
        self.reader = BoardReader(workspace, trust_config=trust_config)
        self.version = 0
        self._signature: object = None
        self._runs: dict[str, RunSummary] = {}
        self._snapshot = BoardSnapshot()
        self._html = ""
        self._html_version = -1
        self._looked = 0.0
        self._lock = threading.Lock()  # feeds and pages call in from worker threads

    def refresh(self) -> int:
        """Look at the files (at most once per :data:`POLL_S`); the version after.

        Returns:
            :attr:`version`, one higher than before when anything shown changed.
        """
        with self._lock:
            return self._refresh()

    def _refresh(self) -> int:
        now = time.monotonic()
        if now - self._looked < POLL_S * 0.8 and self._html_version >= 0:
            return self.version
        self._looked = now
        changed = self._refresh_runs()
        signature = self.reader.signature()
        if signature != self._signature:
            self._signature = signature
            snapshot = self.reader.snapshot()
            changed = changed or snapshot != self._snapshot
            self._snapshot = snapshot
        if changed:
            self.version += 1
        return self.version

    def _refresh_runs(self) -> bool:
        runs = {r.run_id: r for r in list_runs(self.workspace)}
        changed = runs.keys() != self._runs.keys()
        self._runs = {
            rid: self._runs[rid] if rid in self._runs else summary_of(run)
            for rid, run in runs.items()
        }
        budget = REFRESH_BYTES  # newest first; what is left is read at the next look
        for summary in self._runs.values():
            before = summary.tail.offset
            changed = summary.poll(max(0, min(budget, MAX_POLL_BYTES))) or changed
            budget -= summary.tail.offset - before
        return changed

    def html(self) -> str:
        """The board fragment for the current version (rendered once per version)."""
        with self._lock:
            self._refresh()
            if self._html_version != self.version:
                summaries = list(self._runs.values())
                self._html = board_fragment(self._snapshot, summaries)
                self._html_version = self.version
            return self._html

    def close(self) -> None:
        """Close the board store."""
        with self._lock:
            self.reader.close()


async def board_feed(view: WorkspaceView) -> AsyncIterator[str]:
    """The board page's feed: the board fragment each time it changes.

    The first event is the fragment as it is now (a reconnecting page catches up).
    """
    sent = -1
    quiet = 0.0
    while True:
        version = await asyncio.to_thread(view.refresh)  # files read off the event loop
        if version != sent:
            sent = version
            quiet = 0.0
            yield sse("board", await asyncio.to_thread(view.html))
        elif quiet >= KEEPALIVE_S:
            quiet = 0.0
            yield ": keepalive\n\n"
        await asyncio.sleep(POLL_S)
        quiet += POLL_S


_SUMMARY_KINDS = frozenset(
    {
        "session_started",
        "turn",
        "error_turn",
        "ending_declared",
        "ending_refused",
        "ending_superseded",
        "ending_revoked",
        "gate_passed",
        "gate_blocked",
        "ceiling_tripped",
        "session_ended",
        "run_ended",
    }
)
"""Events that change the run's header, session tree or charts."""


class _Summary:
    """When to send the run page's summary again: after a change, at most every so often.

    The wait is at least :data:`SUMMARY_S` and ten times what the last render took, so a
    huge run is not re-rendered without pause.
    """

    def __init__(self) -> None:
        self.due = False
        self.sent_at = 0.0
        self.wait = SUMMARY_S

    def note(self, event: Event) -> None:
        self.due = self.due or event.type in _SUMMARY_KINDS

    def render(self, events: list[Event], verdict: str, *, force: bool = False) -> str | None:
        now = time.monotonic()
        if not self.due or (not force and now - self.sent_at < self.wait):
            return None
        html = render_run(events, verdict=verdict)
        self.due, self.sent_at = False, time.monotonic()
        self.wait = max(SUMMARY_S, 10 * (self.sent_at - now))
        return html


class _RunFollower:
    """One run feed's state; :meth:`step` does one bounded piece of its work.

    Reading, checking the seal, parsing and rendering all happen in :meth:`step`, which
    the feed runs in a worker thread, so a feed catching up on a long stream holds no
    other request up.
    """

    def __init__(self, run: RunFile, after: int) -> None:
        self.sealed = SealedTail(run)
        self.after = after
        self.events: list[Event] = []
        self.summary = _Summary()
        self.ended = False
        self.languages: dict[str, str] = {}

    def step(self) -> tuple[list[str], bool, bool]:
        """Read at most :data:`CHUNK_BYTES` more of the stream and render what it held.

        Returns:
            ``(frames, read, final)``: the SSE frames to send, whether any event was
            read, and whether the feed is over (its last frames included).
        """
        batch = self.sealed.poll(CHUNK_BYTES)
        frames: list[str] = []
        for number, event in batch:
            self.events.append(event)
            self.ended = self.ended or event.type == "run_ended"
            if isinstance(event, SessionStarted) and event.session_id:
                self.languages[event.session_id] = event.language
            if number > self.after and not isinstance(event, Checkpoint):
                self.summary.note(event)
                language = self.languages.get(event.session_id or "")
                frames.append(sse("event", render_event(event, language=language), event_id=number))
        final = self.sealed.failure is not None or (self.ended and not batch)
        verdict = self.sealed.verdict()
        if (html := self.summary.render(self.events, verdict, force=final)) is not None:
            frames.append(sse("summary", html))
        if final:
            frames += [sse("verdict", verdict), sse("end", "")]
        return frames, bool(batch), final


async def run_feed(run: RunFile, after: int) -> AsyncIterator[str]:
    """One run's feed: its events after line ``after``, as they are written.

    Every line is checked against the run's seal from the first (so a forged line
    appended later is caught too); nothing after a line that fails is sent. Checkpoints
    are not sent (the page does not show them; they hold whole conversations). After
    events that change the header, the session tree or the charts, the whole run is
    rendered again and sent as ``event: summary`` (the page takes those parts from it),
    at most every :data:`SUMMARY_S` seconds, and once more at the end. The stream is read
    and rendered in a worker thread, :data:`CHUNK_BYTES` at a time, never on the event
    loop.

    Args:
        run: the run to follow.
        after: the stream lines the page already shows (its ``?after=``).
    """
    follower = _RunFollower(run, after)
    quiet = 0.0
    while True:
        frames, read, final = await asyncio.to_thread(follower.step)
        for frame in frames:
            yield frame
        if final:
            return
        if read:
            quiet = 0.0
            continue
        if quiet >= KEEPALIVE_S:
            quiet = 0.0
            yield ": keepalive\n\n"
        await asyncio.sleep(POLL_S)
        quiet += POLL_S


class FeedSlots:
    """How many live feeds are open, at most :data:`MAX_FEEDS` (each holds a thread's work).

    Args:
        limit: the most feeds open at once.
    """

    def __init__(self, limit: int = MAX_FEEDS) -> None:
        self.limit = limit
        self.open = 0

    def take(self) -> bool:
        """Take a slot; ``False`` when all are taken (the caller answers 503)."""
        if self.open >= self.limit:
            return False
        self.open += 1
        return True

    def held(self, feed: AsyncIterator[str]) -> AsyncIterator[str]:
        """``feed``'s frames; the slot taken by :meth:`take` is given back when it ends.

        It ends when the feed does, when the client goes away (the generator is closed),
        or when the response never started (the generator is dropped unstarted).
        """
        given = [False]

        def give_back() -> None:
            if not given[0]:
                given[0] = True
                self.open -= 1

        frames = self._frames(feed, give_back)
        weakref.finalize(frames, give_back)
        return frames

    @staticmethod
    async def _frames(
        feed: AsyncIterator[str], give_back: Callable[[], None]
    ) -> AsyncIterator[str]:
        try:
            async for frame in feed:
                yield frame
        finally:
            give_back()
            aclose = getattr(feed, "aclose", None)
            if aclose is not None:
                await aclose()
