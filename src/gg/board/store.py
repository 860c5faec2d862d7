r"""The board's records and the :class:`Store` seam (SPEC B1, B5).

A store keeps a board's issues: title, body, state, the sessions run for
them (implementer, reviewers, merge agent), the reviewers' verdicts with
their items, and an append-only history. :mod:`gg.board.sqlite` implements
it on SQLite (the default, ``<state>/board.sqlite3`` in :mod:`gg.state`,
outside the repository); :mod:`gg.board.postgres` on PostgreSQL (``board.store =
"postgresql://..."``, the ``postgres`` extra), with the same schema and migrations.

What a store promises: every state change is one transaction that also
appends a history row, so a crash (SIGKILL) leaves each issue in a state it
really reached, never half-way between two. Several board runners may share
one store (PostgreSQL across machines): each takes an issue only by a
*claim* (:meth:`Store.claim_next`), a lease it renews while it works, so no
issue is worked on by two runners at once and a dead runner's issues are
taken over when its lease runs out. Two runs in one workspace are kept apart
by the board's file lock instead. No ordering of history rows across issues
is promised.

States (SPEC B2-B4)::

    open -> implementing -> reviewing -> (implementing -> reviewing ...) -> merging -> done
                 \               \                                           \
                  +---------------+--------------------> stuck <--------------+
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any, Literal, Protocol, TypeAlias

__all__ = [
    "TERMINAL",
    "HistoryEntry",
    "Issue",
    "IssueDetail",
    "IssueState",
    "SessionKind",
    "SessionRecord",
    "SessionStatus",
    "Store",
    "Verdict",
    "now_iso",
]


def now_iso(*, after: float = 0.0) -> str:
    """The current time (plus ``after`` seconds), ISO 8601 UTC with milliseconds.

    Example: ``2026-11-30T14:51:17.123Z``. Strings of this one shape sort as times do.
    """
    at = datetime.now(UTC) + timedelta(seconds=after)
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class IssueState(StrEnum):
    """Where an issue is in the workflow (SPEC B2-B4)."""

    OPEN = "open"
    """Added, not started."""
    IMPLEMENTING = "implementing"
    """The implementer works on the issue's branch (first time or after a review)."""
    REVIEWING = "reviewing"
    """The reviewers give their verdicts on the branch."""
    MERGING = "merging"
    """All reviewers approved; the merge agent merges the branch into the base branch."""
    DONE = "done"
    """The merge commit is on the base branch."""
    STUCK = "stuck"
    """A ceiling stopped a session, or reviews ran out of rounds; see the diagnosis."""


TERMINAL: frozenset[IssueState] = frozenset({IssueState.DONE, IssueState.STUCK})
"""States a board run does not take further."""

SessionKind: TypeAlias = Literal["implementer", "reviewer", "merge"]
"""What a session did for an issue."""

SessionStatus: TypeAlias = Literal["running", "ended", "stopped", "abandoned"]
"""``running`` until it ends; ``abandoned`` when gg died while it ran (a crash)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Issue:
    """One issue of a board.

    Attributes:
        number: its number on the board (``#N``), from 1.
        title: one line.
        body: the description (may be empty).
        state: where it is in the workflow.
        round: the implementer's round: 0 before it starts, 1 for the first
            implementation, +1 after each review that requested changes.
        branch: its git branch (``gg/issue-N``) once started.
        summary: the implementer's last ``finish`` summary.
        diagnosis: why it is ``stuck`` (or why the last attempt failed).
        merge_sha: the merge commit on the base branch when ``done``.
        created_at: ISO 8601 UTC.
        updated_at: ISO 8601 UTC of the last change.
    """

    number: int
    title: str
    body: str
    state: IssueState
    round: int = 0
    branch: str | None = None
    summary: str | None = None
    diagnosis: str | None = None
    merge_sha: str | None = None
    created_at: str = ""
    updated_at: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionRecord:
    """A session run for an issue.

    Attributes:
        id: the store's row id.
        kind: implementer, reviewer or merge.
        round: the issue's round when it ran.
        reviewer: the reviewer's index (1-based) for reviewers, else ``None``.
        run_id: the run whose stream holds it.
        session_id: its id in that stream (``s3``), once started.
        status: running, ended, stopped or abandoned.
        ending: ``{"call": ..., ...}`` as on the stream, when ended.
        diagnosis: why it stopped, when stopped.
        started_at / ended_at: ISO 8601 UTC.
    """

    id: int
    kind: SessionKind
    round: int
    reviewer: int | None
    run_id: str
    session_id: str | None
    status: SessionStatus
    ending: dict[str, Any] | None
    diagnosis: str | None
    started_at: str
    ended_at: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """A reviewer's verdict, read off its typed ending (SPEC S11).

    Attributes:
        round: the round reviewed.
        reviewer: the reviewer's index, 1-based.
        call: ``"approve"`` or ``"request_changes"``.
        items: the requested changes (trimmed, none blank), empty for approve.
        session: the :class:`SessionRecord` id it came from.
        at: ISO 8601 UTC.
    """

    round: int
    reviewer: int
    call: Literal["approve", "request_changes"]
    items: tuple[str, ...] = ()
    session: int | None = None
    at: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class HistoryEntry:
    """One row of an issue's append-only history.

    Attributes:
        at: ISO 8601 UTC.
        event: what happened, e.g. ``"state"``, ``"session_started"``, ``"verdict"``.
        from_state / to_state: for state changes, else ``None``.
        detail: event-specific facts (JSON object).
    """

    at: str
    event: str
    from_state: IssueState | None
    to_state: IssueState | None
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class IssueDetail:
    """An issue with everything the store holds about it (``gg board show N``)."""

    issue: Issue
    sessions: tuple[SessionRecord, ...]
    verdicts: tuple[Verdict, ...]
    history: tuple[HistoryEntry, ...]


class Store(Protocol):
    """Where a board lives (SPEC B1). Every mutating call is one transaction with history.

    Errors: :class:`gg.UserError` for an unknown issue number;
    :class:`gg.board.BoardError` (code ``"store"``) when the store is unusable
    (a newer schema, a corrupt file) or a transition finds an unexpected state.
    """

    def add_issue(self, title: str, body: str = "") -> Issue:
        """Add an ``open`` issue; returns it with its number."""
        ...

    def issue(self, number: int) -> Issue:
        """The issue ``#number``."""
        ...

    def issues(self) -> list[Issue]:
        """All issues, by number."""
        ...

    def transition(
        self,
        number: int,
        *,
        event: str,
        to: IssueState | None = None,
        expect: Collection[IssueState] | None = None,
        detail: dict[str, Any] | None = None,
        **fields: Any,
    ) -> Issue:
        """Change ``state`` (when ``to`` is given) and ``fields``, append history; atomic.

        ``fields`` may be ``round``, ``branch``, ``summary``, ``diagnosis``,
        ``merge_sha``. ``expect``: the states the issue must be in, else
        :class:`BoardError` and nothing changes.
        """
        ...

    def start_session(
        self, number: int, *, kind: SessionKind, round: int, reviewer: int | None, run_id: str
    ) -> int:
        """Record a session as ``running``; returns its record id."""
        ...

    def session_started(self, record: int, session_id: str) -> None:
        """Note the stream's id of a running session."""
        ...

    def end_session(
        self,
        record: int,
        *,
        status: SessionStatus,
        ending: dict[str, Any] | None = None,
        diagnosis: str | None = None,
        messages: str | None = None,
        verdict: Verdict | None = None,
    ) -> None:
        """Record how a session ended (and a reviewer's verdict) in one transaction.

        ``messages``: the conversation as JSON, kept to resume an implementer.
        """
        ...

    def abandon_running(self, runner: str | None = None) -> int:
        """Mark sessions still ``running`` (gg died) as ``abandoned``; returns how many.

        ``runner``: only sessions of issues no other live runner claims; ``None``: all.
        """
        ...

    def claim_next(
        self, runner: str, *, lease_s: float, skip: Collection[int] = ()
    ) -> Issue | None:
        """Claim the lowest-numbered unfinished issue that no live runner holds (issue 17).

        A claim is free when unset, held by ``runner`` itself (a restarted run of the
        same workspace: its file lock proves the old holder dead) or past its lease.
        Each claim appends a ``claimed`` history row naming the runner. Two runners
        calling at once never get the same issue (one transaction, a row lock).

        Args:
            runner: the runner's key, stable for a workspace (``host:state-dir``).
            lease_s: seconds the claim lasts unless :meth:`renew` extends it.
            skip: numbers not to claim (this run took them already).

        Returns:
            The claimed issue, or ``None`` when none is free.
        """
        ...

    def renew(self, runner: str, *, lease_s: float) -> set[int]:
        """Extend ``runner``'s claims by ``lease_s`` seconds; returns the numbers it holds."""
        ...

    def release(self, runner: str, number: int | None = None) -> None:
        """Drop ``runner``'s claim on ``#number`` (``None``: every one it holds)."""
        ...

    def claimed_elsewhere(self, runner: str) -> list[int]:
        """Unfinished issues that another runner holds a live claim on, by number."""
        ...

    def conversation(self, number: int) -> str | None:
        """The JSON conversation of the issue's last ended implementer session."""
        ...

    def verdicts(self, number: int, round: int | None = None) -> list[Verdict]:
        """The issue's verdicts (of ``round`` when given), by round then reviewer."""
        ...

    def detail(self, number: int) -> IssueDetail:
        """The issue with its sessions, verdicts and history."""
        ...

    def close(self) -> None:
        """Release the store. Idempotent."""
        ...
