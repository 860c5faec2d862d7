"""Rows of the board's tables as the store's types: one mapping for SQLite and PostgreSQL.

Both stores (:mod:`gg.board.sqlite`, :mod:`gg.board.postgres`) have the same schema
(SPEC B1, issue 17); they select the columns named here, in this order, and build
their records with these functions, so the two cannot drift apart.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from gg.board.store import HistoryEntry, Issue, IssueState, SessionRecord

__all__ = [
    "HISTORY_COLUMNS",
    "ISSUE_COLUMNS",
    "SESSION_COLUMNS",
    "history_of",
    "issue_of",
    "session_of",
]

ISSUE_COLUMNS = (
    "number, title, body, state, round, branch, summary, diagnosis, merge_sha, "
    "created_at, updated_at"
)
"""The ``issues`` columns :func:`issue_of` reads, in its order."""

SESSION_COLUMNS = (
    "id, kind, round, reviewer, run_id, session_id, status, ending, diagnosis, started_at, ended_at"
)
"""The ``sessions`` columns :func:`session_of` reads, in its order."""

HISTORY_COLUMNS = "at, event, from_state, to_state, detail"
"""The ``history`` columns :func:`history_of` reads, in its order."""


def issue_of(row: Sequence[Any]) -> Issue:
    """An :class:`Issue` from a row of :data:`ISSUE_COLUMNS`."""
    return Issue(
        number=row[0],
        title=row[1],
        body=row[2],
        state=IssueState(row[3]),
        round=row[4],
        branch=row[5],
        summary=row[6],
        diagnosis=row[7],
        merge_sha=row[8],
        created_at=row[9],
        updated_at=row[10],
    )


def session_of(row: Sequence[Any]) -> SessionRecord:
    """A :class:`SessionRecord` from a row of :data:`SESSION_COLUMNS` (``ending`` is JSON)."""
    return SessionRecord(
        id=row[0],
        kind=row[1],
        round=row[2],
        reviewer=row[3],
        run_id=row[4],
        session_id=row[5],
        status=row[6],
        ending=None if row[7] is None else json.loads(row[7]),
        diagnosis=row[8],
        started_at=row[9],
        ended_at=row[10],
    )


def history_of(row: Sequence[Any]) -> HistoryEntry:
    """A :class:`HistoryEntry` from a row of :data:`HISTORY_COLUMNS` (``detail`` is JSON)."""
    return HistoryEntry(
        at=row[0],
        event=row[1],
        from_state=IssueState(row[2]) if row[2] else None,
        to_state=IssueState(row[3]) if row[3] else None,
        detail=json.loads(row[4]),
    )
