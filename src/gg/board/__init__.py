"""The board: issues run through implementer, reviewers and merge agent (SPEC B1-B5).

Public names::

    from gg.board import Board, Issue, IssueState

    board = Board("repo", model="local")
    board.add("Fix divide by zero")
    result = board.run()          # BoardResult: run_id, status, issues, diagnosis, stream

Modules: :mod:`~gg.board.store` (records, the ``Store`` seam),
:mod:`~gg.board.sqlite` (the default store), :mod:`~gg.board.postgres` (the
PostgreSQL store, the ``postgres`` extra), :mod:`~gg.board.git` (worktrees,
commits, merges), :mod:`~gg.board.workflow` (one issue's steps),
:mod:`~gg.board.merge` (the merge step), :mod:`~gg.board.board` (the API),
:mod:`~gg.board.tracker` (stream events to progress lines),
:mod:`~gg.board.display` and :mod:`~gg.board.cli` (``gg board ...``).
"""

from __future__ import annotations

from gg.board.board import Board, BoardResult, open_store
from gg.board.errors import BoardError
from gg.board.sqlite import SqliteStore
from gg.board.store import (
    HistoryEntry,
    Issue,
    IssueDetail,
    IssueState,
    SessionRecord,
    Store,
    Verdict,
)
from gg.board.workflow import Progress

__all__ = [
    "Board",
    "BoardError",
    "BoardResult",
    "HistoryEntry",
    "Issue",
    "IssueDetail",
    "IssueState",
    "Progress",
    "SessionRecord",
    "SqliteStore",
    "Store",
    "Verdict",
    "open_store",
]
