"""A board runner's claim renewal, in a thread of its own (issue 17, lease renewal).

A runner holds each issue it works on by a claim that lasts
``claim_lease_s`` seconds unless renewed (:meth:`gg.board.store.Store.renew`).
The renewal used to be an asyncio task on the loop that drives the issues, so
anything that blocked that loop for longer than the lease (a synchronous store
call waiting on a locked database or retrying a lost connection, a
synchronous ``git push``, a user's model, tool or hook that blocks) starved
it: the lease ran out while the runner was alive and working, another runner
took the issue over, and the first one's work was fenced off and wasted.

:class:`LeaseKeeper` renews from a daemon thread instead, every
``claim_lease_s / 3`` seconds on the monotonic clock, whatever the loop is
doing. The stores guard each call with a lock of their own
(:class:`~gg.board.sqlite.SqliteStore`, :class:`~gg.board.postgres.PostgresStore`),
so the thread shares the run's store handle. The thread never touches the
loop's tasks: it reports the issues whose claim it found lost to a callback
that runs on the loop's thread (``loop.call_soon_threadsafe``), which stops
their work there.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

from gg.errors import GGError

__all__ = ["LeaseKeeper"]


class LeaseKeeper:
    """Renews a runner's claims from a daemon thread (issue 17, lease renewal).

    The loop tells it which issues it works on (:meth:`hold`, :meth:`drop`). Each
    renewal first copies that set under a lock, then calls ``renew``; an issue of
    the copy missing from what ``renew`` returns lost its claim, and is reported to
    ``on_lost`` on the loop's thread. An issue claimed after the copy is checked at
    the next renewal, so one the loop has just claimed is never reported lost.

    A renewal that raises a :class:`gg.GGError` is skipped (the store's own
    retries and diagnosis stop the run; the next renewal tries again). Any other
    exception is a defect: the thread stores it (with a note naming the
    renewal) and ends; :meth:`check` re-raises it in the loop, which the schedule
    calls on every turn and once more after :meth:`stop`, so it never vanishes.

    Args:
        renew: extends this runner's claims; returns the issue numbers it still
            holds (:meth:`gg.board.store.Store.renew` with the runner and lease).
        every_s: seconds between renewals (``claim_lease_s / 3``); must be > 0.
        on_lost: called on the loop's thread with the set of issue numbers whose
            claim was lost (never empty).
        loop: the event loop ``on_lost`` runs on.
        name: the thread's name (``threading.enumerate()`` shows it while it runs).

    Raises:
        ValueError: ``every_s`` is not positive.
    """

    def __init__(
        self,
        renew: Callable[[], set[int]],
        *,
        every_s: float,
        on_lost: Callable[[set[int]], None],
        loop: asyncio.AbstractEventLoop,
        name: str,
    ) -> None:
        if not every_s > 0:
            raise ValueError(f"the claim renewal period must be positive, not {every_s!r}")
        self._renew = renew
        self._every_s = every_s
        self._on_lost = on_lost
        self._loop = loop
        self._lock = threading.Lock()
        self._numbers: set[int] = set()
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._beat, name=name, daemon=True)

    @property
    def name(self) -> str:
        """The renewal thread's name."""
        return self._thread.name

    def hold(self, number: int) -> None:
        """Check the claim on ``#number`` from the next renewal on (call once it is claimed)."""
        with self._lock:
            self._numbers.add(number)

    def drop(self, number: int) -> None:
        """Stop checking the claim on ``#number`` (call before releasing it)."""
        with self._lock:
            self._numbers.discard(number)

    def start(self) -> None:
        """Start the renewal thread (its first renewal is ``every_s`` from now)."""
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread and wait for it: at once, or when a renewal under way returns.

        Safe to call more than once, and before :meth:`start`.
        """
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def check(self) -> None:
        """Re-raise, in the caller's thread, what broke the renewal thread, if anything.

        Raises:
            BaseException: the exception (not a :class:`gg.GGError`) a renewal raised.
        """
        if self._error is not None:
            raise self._error

    def _beat(self) -> None:
        """The thread: renew every ``every_s`` until stopped, or until a defect."""
        next_at = time.monotonic() + self._every_s
        while not self._stop.wait(max(0.0, next_at - time.monotonic())):
            try:
                self._once()
            except BaseException as e:  # a defect: kept for the loop (check), never lost
                e.add_note("raised renewing the board's claims (gg's lease renewal thread)")
                self._error = e
                return
            next_at = max(next_at + self._every_s, time.monotonic())

    def _once(self) -> None:
        """One renewal; the lost claims go to ``on_lost`` on the loop's thread."""
        with self._lock:
            expected = set(self._numbers)
        try:
            held = self._renew()
        except GGError:
            return  # the store's own retries and diagnosis stop the run
        lost = expected - held
        if lost and not self._stop.is_set():
            self._loop.call_soon_threadsafe(self._on_lost, lost)
