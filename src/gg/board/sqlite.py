"""The SQLite board store, the default (SPEC B1): ``<state>/board.sqlite3``.

``<state>`` is the repository's gg-private state directory, outside it
(:func:`gg.state.workspace_state`; issue 9 item 2), so no agent can edit the
board; a ``.gg/board.sqlite3`` left in the repository by gg 0.1 is never read.

The file is opened in WAL mode with ``synchronous=FULL``: readers (``gg board
list`` while a run goes on) never block the writer, and a committed
transaction survives a killed process. One connection writes; every change
is one ``BEGIN IMMEDIATE`` transaction that also appends a history row.

Schema migrations: ``schema_version`` holds the version reached; the
ordered :data:`MIGRATIONS` list brings any older file up to date on open,
each step in its own transaction. A file from a newer gg is refused rather
than guessed at.

What it does not promise: use from several threads at once beyond a lock
around each call, or sharing one file between two running boards (the board
takes a file lock for that).
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from gg import UserError
from gg.board.errors import BoardError, IssueMoved
from gg.board.rows import (
    HISTORY_COLUMNS,
    ISSUE_COLUMNS,
    SESSION_COLUMNS,
    history_of,
    issue_of,
    session_of,
)
from gg.board.store import (
    TERMINAL,
    Issue,
    IssueDetail,
    IssueState,
    SessionKind,
    SessionStatus,
    Verdict,
    now_iso,
)
from gg.disk import disk_full, is_disk_full
from gg.state import workspace_state

__all__ = ["MIGRATIONS", "SqliteStore", "default_path"]

_STATES = ", ".join(f"'{s.value}'" for s in IssueState)

MIGRATIONS: list[str] = [
    # 1: boards, issues, sessions, verdicts with their items, history.
    f"""
    CREATE TABLE boards (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        created_at TEXT NOT NULL
    );
    CREATE TABLE issues (
        id INTEGER PRIMARY KEY,
        board_id INTEGER NOT NULL REFERENCES boards(id),
        number INTEGER NOT NULL,
        title TEXT NOT NULL,
        body TEXT NOT NULL DEFAULT '',
        state TEXT NOT NULL CHECK (state IN ({_STATES})),
        round INTEGER NOT NULL DEFAULT 0,
        branch TEXT,
        summary TEXT,
        diagnosis TEXT,
        merge_sha TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        UNIQUE (board_id, number)
    );
    CREATE TABLE sessions (
        id INTEGER PRIMARY KEY,
        issue_id INTEGER NOT NULL REFERENCES issues(id),
        kind TEXT NOT NULL CHECK (kind IN ('implementer', 'reviewer', 'merge')),
        round INTEGER NOT NULL,
        reviewer INTEGER,
        run_id TEXT NOT NULL,
        session_id TEXT,
        status TEXT NOT NULL CHECK (status IN ('running', 'ended', 'stopped', 'abandoned')),
        ending TEXT,
        diagnosis TEXT,
        messages TEXT,
        started_at TEXT NOT NULL,
        ended_at TEXT
    );
    CREATE TABLE verdicts (
        id INTEGER PRIMARY KEY,
        issue_id INTEGER NOT NULL REFERENCES issues(id),
        session_id INTEGER REFERENCES sessions(id),
        round INTEGER NOT NULL,
        reviewer INTEGER NOT NULL,
        call TEXT NOT NULL CHECK (call IN ('approve', 'request_changes')),
        at TEXT NOT NULL,
        UNIQUE (issue_id, round, reviewer)
    );
    CREATE TABLE verdict_items (
        verdict_id INTEGER NOT NULL REFERENCES verdicts(id),
        position INTEGER NOT NULL,
        text TEXT NOT NULL,
        PRIMARY KEY (verdict_id, position)
    );
    CREATE TABLE history (
        id INTEGER PRIMARY KEY,
        issue_id INTEGER NOT NULL REFERENCES issues(id),
        at TEXT NOT NULL,
        event TEXT NOT NULL,
        from_state TEXT,
        to_state TEXT,
        detail TEXT NOT NULL DEFAULT '{{}}'
    );
    CREATE INDEX sessions_issue ON sessions (issue_id);
    CREATE INDEX history_issue ON history (issue_id);
    """,
    # 2: claims, so that several board runners on one store take each issue once (issue 17).
    """
    ALTER TABLE issues ADD COLUMN claimed_by TEXT;
    ALTER TABLE issues ADD COLUMN claimed_until TEXT
    """,
]
"""Ordered schema migrations; the file's ``schema_version`` is how many have run.

Written in the SQL that SQLite and PostgreSQL share: :mod:`gg.board.postgres` runs the
same list (its one translation: ``INTEGER PRIMARY KEY`` becomes an identity column)."""

_FIELDS = frozenset({"round", "branch", "summary", "diagnosis", "merge_sha"})


def default_path(workspace: Path) -> Path:
    """``<state>/board.sqlite3`` in the workspace's gg-private state directory.

    The directory is made if missing (issue 9 item 2).

    Raises:
        gg.state.StateError: the state directory is unusable.
    """
    return workspace_state(workspace) / "board.sqlite3"


def _store_error(message: str, operation: str) -> BoardError:
    return BoardError(message, code="store", operation=operation)


class SqliteStore:
    """A :class:`gg.board.store.Store` on one SQLite file (SPEC B1).

    Args:
        path: the database file; its directory is created.
        board: the board's name within the file.

    Raises:
        BoardError: the file is from a newer gg, or is not a usable database.
    """

    def __init__(self, path: Path, *, board: str = "default") -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.RLock()
        try:
            self._db = sqlite3.connect(
                path, isolation_level=None, check_same_thread=False, timeout=30
            )
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.execute("PRAGMA foreign_keys=ON")
            self._migrate()
            self._board = self._board_id(board)
        except sqlite3.DatabaseError as e:
            raise _store_error(f"cannot use the board store {str(path)!r}: {e}", "open") from None

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One transaction; a full disk becomes :class:`~gg.errors.DiskFull` (issue 12).

        Raises:
            DiskFull: SQLite could not write (``SQLITE_FULL`` or ``ENOSPC``); nothing of
                the transaction is kept.
        """
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    yield self._db
                except BaseException:
                    with contextlib.suppress(sqlite3.Error):
                        self._db.execute("ROLLBACK")
                    raise
                self._commit()
            except (sqlite3.Error, OSError) as e:
                if is_disk_full(e):
                    raise disk_full(self.path, "the board store", e) from None
                raise

    def _commit(self) -> None:
        try:
            self._db.execute("COMMIT")
        except sqlite3.Error:
            with contextlib.suppress(sqlite3.Error):
                self._db.execute("ROLLBACK")
            raise

    def _migrate(self) -> None:
        with self._tx() as db:
            db.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            row = db.execute("SELECT MAX(version) FROM schema_version").fetchone()
        current = row[0] or 0
        if current > len(MIGRATIONS):
            raise _store_error(
                f"the board store {str(self.path)!r} has schema version {current}, newer than "
                f"this gg knows ({len(MIGRATIONS)}); upgrade gg",
                "migrate",
            )
        for version in range(current + 1, len(MIGRATIONS) + 1):
            with self._tx() as db:
                for statement in MIGRATIONS[version - 1].split(";"):
                    if statement.strip():
                        db.execute(statement)
                db.execute("INSERT INTO schema_version (version) VALUES (?)", (version,))

    def _board_id(self, name: str) -> int:
        with self._tx() as db:
            db.execute(
                "INSERT OR IGNORE INTO boards (name, created_at) VALUES (?, ?)", (name, now_iso())
            )
            row = db.execute("SELECT id FROM boards WHERE name = ?", (name,)).fetchone()
        return int(row[0])

    @property
    def schema_version(self) -> int:
        """The schema version of the file (the number of migrations applied)."""
        with self._lock:
            return int(self._db.execute("SELECT MAX(version) FROM schema_version").fetchone()[0])

    # -- issues ------------------------------------------------------------------------

    def add_issue(self, title: str, body: str = "") -> Issue:
        """Add an ``open`` issue numbered after the last one (history: ``added``)."""
        now = now_iso()
        with self._tx() as db:
            (last,) = db.execute(
                "SELECT COALESCE(MAX(number), 0) FROM issues WHERE board_id = ?", (self._board,)
            ).fetchone()
            cur = db.execute(
                "INSERT INTO issues (board_id, number, title, body, state, created_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (self._board, last + 1, title, body, IssueState.OPEN.value, now, now),
            )
            self._history(
                db, int(cur.lastrowid or 0), "added", None, IssueState.OPEN, {"title": title}
            )
        return self.issue(last + 1)

    def _row_id(self, db: sqlite3.Connection, number: int) -> tuple[int, IssueState]:
        row = db.execute(
            "SELECT id, state FROM issues WHERE board_id = ? AND number = ?", (self._board, number)
        ).fetchone()
        if row is None:
            raise UserError(f"no issue #{number} on this board")
        return int(row[0]), IssueState(row[1])

    def issue(self, number: int) -> Issue:
        """The issue ``#number``.

        Raises:
            UserError: no such issue.
        """
        with self._lock:
            row = self._db.execute(
                f"SELECT {ISSUE_COLUMNS} FROM issues WHERE board_id = ? AND number = ?",
                (self._board, number),
            ).fetchone()
        if row is None:
            raise UserError(f"no issue #{number} on this board")
        return issue_of(row)

    def issues(self) -> list[Issue]:
        """All issues of the board, by number."""
        with self._lock:
            rows = self._db.execute(
                f"SELECT {ISSUE_COLUMNS} FROM issues WHERE board_id = ? ORDER BY number",
                (self._board,),
            ).fetchall()
        return [issue_of(r) for r in rows]

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
        """Change the state and fields of ``#number`` and append history, atomically.

        Raises:
            UserError: no such issue.
            BoardError: the issue is not in one of ``expect``, or a field is unknown.
        """
        unknown = set(fields) - _FIELDS
        if unknown:
            raise _store_error(f"unknown issue field(s) {sorted(unknown)!r}", "transition")
        with self._tx() as db:
            rowid, state = self._row_id(db, number)
            if expect is not None and state not in expect:
                raise IssueMoved(
                    f"issue #{number} is {state.value!r}, expected one of "
                    f"{sorted(s.value for s in expect)!r}",
                    operation=f"transition to {to}",
                )
            sets = dict(fields, updated_at=now_iso())
            if to is not None:
                sets["state"] = to.value
            assignments = ", ".join(f"{k} = ?" for k in sets)
            db.execute(f"UPDATE issues SET {assignments} WHERE id = ?", (*sets.values(), rowid))
            self._history(db, rowid, event, state if to else None, to, {**fields, **(detail or {})})
        return self.issue(number)

    @staticmethod
    def _history(
        db: sqlite3.Connection,
        issue_id: int,
        event: str,
        from_state: IssueState | None,
        to_state: IssueState | None,
        detail: dict[str, Any],
    ) -> None:
        db.execute(
            "INSERT INTO history (issue_id, at, event, from_state, to_state, detail) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (
                issue_id,
                now_iso(),
                event,
                from_state.value if from_state else None,
                to_state.value if to_state else None,
                json.dumps(detail, ensure_ascii=False),
            ),
        )

    # -- sessions and verdicts -----------------------------------------------------------

    def start_session(
        self, number: int, *, kind: SessionKind, round: int, reviewer: int | None, run_id: str
    ) -> int:
        """Record a ``running`` session for ``#number``; returns its record id."""
        with self._tx() as db:
            rowid, _ = self._row_id(db, number)
            cur = db.execute(
                "INSERT INTO sessions (issue_id, kind, round, reviewer, run_id, status, "
                "started_at) VALUES (?, ?, ?, ?, ?, 'running', ?)",
                (rowid, kind, round, reviewer, run_id, now_iso()),
            )
            record = int(cur.lastrowid or 0)
            self._history(
                db,
                rowid,
                "session_started",
                None,
                None,
                {
                    "kind": kind,
                    "round": round,
                    "reviewer": reviewer,
                    "run_id": run_id,
                    "record": record,
                },
            )
        return record

    def session_started(self, record: int, session_id: str) -> None:
        """Note the stream's session id of a running session."""
        with self._tx() as db:
            db.execute("UPDATE sessions SET session_id = ? WHERE id = ?", (session_id, record))

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
        """Record a session's end and, for a reviewer, its verdict, in one transaction."""
        with self._tx() as db:
            row = db.execute(
                "SELECT issue_id, kind, session_id FROM sessions WHERE id = ?", (record,)
            ).fetchone()
            if row is None:
                raise _store_error(f"no session record {record}", "end_session")
            issue_id, kind, sid = row
            db.execute(
                "UPDATE sessions SET status = ?, ending = ?, diagnosis = ?, messages = ?, "
                "ended_at = ? WHERE id = ?",
                (
                    status,
                    None if ending is None else json.dumps(ending, ensure_ascii=False),
                    diagnosis,
                    messages,
                    now_iso(),
                    record,
                ),
            )
            self._history(
                db,
                issue_id,
                "session_ended",
                None,
                None,
                {
                    "kind": kind,
                    "session_id": sid,
                    "status": status,
                    "ending": ending,
                    "diagnosis": diagnosis,
                    "record": record,
                },
            )
            if verdict is not None:
                self._verdict(db, issue_id, record, verdict)

    def _verdict(self, db: sqlite3.Connection, issue_id: int, record: int, v: Verdict) -> None:
        cur = db.execute(
            "INSERT INTO verdicts (issue_id, session_id, round, reviewer, call, at) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (issue_id, round, reviewer) DO NOTHING",
            (issue_id, record, v.round, v.reviewer, v.call, now_iso()),
        )
        if not cur.rowcount:
            return  # already recorded (idempotent)
        vid = cur.lastrowid
        db.executemany(
            "INSERT INTO verdict_items (verdict_id, position, text) VALUES (?, ?, ?)",
            [(vid, i, item) for i, item in enumerate(v.items, 1)],
        )
        self._history(
            db,
            issue_id,
            "verdict",
            None,
            None,
            {"round": v.round, "reviewer": v.reviewer, "call": v.call, "items": list(v.items)},
        )

    def abandon_running(self, runner: str | None = None) -> int:
        """Mark ``running`` sessions ``abandoned`` (after a crash); returns how many.

        ``runner``: only those of issues no other live runner claims (unclaimed, claimed
        by ``runner`` or with an expired claim); ``None``: every one of the board.
        """
        with self._tx() as db:
            rows = db.execute(
                "SELECT s.id, s.issue_id, s.kind, s.session_id FROM sessions s JOIN issues i "
                "ON s.issue_id = i.id WHERE i.board_id = ? AND s.status = 'running' AND "
                "(? IS NULL OR i.claimed_by IS NULL OR i.claimed_by = ? OR i.claimed_until < ?)",
                (self._board, runner, runner, now_iso()),
            ).fetchall()
            self._abandon(db, rows)
        return len(rows)

    def _abandon(self, db: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> None:
        """Mark sessions ``(record, issue_id, kind, session_id)`` abandoned, with history."""
        for record, issue_id, kind, sid in rows:
            db.execute(
                "UPDATE sessions SET status = 'abandoned', ended_at = ? WHERE id = ?",
                (now_iso(), record),
            )
            facts = {"kind": kind, "session_id": sid, "record": record}
            self._history(db, issue_id, "session_abandoned", None, None, facts)

    # -- claims (several runners on one store) ----------------------------------------------

    def claim_next(
        self, runner: str, *, lease_s: float, skip: Collection[int] = ()
    ) -> Issue | None:
        """Claim the lowest-numbered unfinished issue no live runner holds (history: ``claimed``).

        Args:
            runner: the claiming runner's key (:meth:`gg.board.store.Store.claim_next`).
            lease_s: seconds the claim lasts unless :meth:`renew` extends it.
            skip: issue numbers not to claim (taken already by this run).

        Returns:
            The claimed issue, or ``None`` when none is free. Sessions of it still marked
            ``running`` (a runner whose lease ran out left them) are made ``abandoned``.
        """
        now = now_iso()
        with self._tx() as db:
            rows = db.execute(
                "SELECT id, number FROM issues WHERE board_id = ? AND state NOT IN (?, ?) AND "
                "(claimed_by IS NULL OR claimed_by = ? OR claimed_until < ?) ORDER BY number",
                (self._board, *sorted(s.value for s in TERMINAL), runner, now),
            ).fetchall()
            free = [(rowid, number) for rowid, number in rows if number not in skip]
            if not free:
                return None
            rowid, number = free[0]
            db.execute(
                "UPDATE issues SET claimed_by = ?, claimed_until = ? WHERE id = ?",
                (runner, now_iso(after=lease_s), rowid),
            )
            self._history(db, rowid, "claimed", None, None, {"runner": runner})
            # a session still marked running is a dead runner's (none live holds the issue)
            left = db.execute(
                "SELECT id, issue_id, kind, session_id FROM sessions WHERE issue_id = ? AND "
                "status = 'running'",
                (rowid,),
            ).fetchall()
            self._abandon(db, left)
        return self.issue(number)

    def renew(self, runner: str, *, lease_s: float) -> set[int]:
        """Extend every claim ``runner`` still holds by ``lease_s``; returns their numbers."""
        with self._tx() as db:
            db.execute(
                "UPDATE issues SET claimed_until = ? WHERE board_id = ? AND claimed_by = ?",
                (now_iso(after=lease_s), self._board, runner),
            )
            rows = db.execute(
                "SELECT number FROM issues WHERE board_id = ? AND claimed_by = ?",
                (self._board, runner),
            ).fetchall()
        return {int(n) for (n,) in rows}

    def release(self, runner: str, number: int | None = None) -> None:
        """Drop ``runner``'s claim on ``#number`` (``None``: on every issue)."""
        with self._tx() as db:
            db.execute(
                "UPDATE issues SET claimed_by = NULL, claimed_until = NULL WHERE board_id = ? "
                "AND claimed_by = ? AND (? IS NULL OR number = ?)",
                (self._board, runner, number, number),
            )

    def claimed_elsewhere(self, runner: str) -> list[int]:
        """Unfinished issues another runner holds a live claim on, by number."""
        with self._lock:
            rows = self._db.execute(
                "SELECT number FROM issues WHERE board_id = ? AND state NOT IN (?, ?) AND "
                "claimed_by IS NOT NULL AND claimed_by <> ? AND claimed_until >= ? "
                "ORDER BY number",
                (self._board, *sorted(s.value for s in TERMINAL), runner, now_iso()),
            ).fetchall()
        return [int(n) for (n,) in rows]

    def conversation(self, number: int) -> str | None:
        """The conversation JSON of ``#number``'s last ended implementer session."""
        with self._lock:
            rowid, _ = self._row_id(self._db, number)
            row = self._db.execute(
                "SELECT messages FROM sessions WHERE issue_id = ? AND kind = 'implementer' AND "
                "status = 'ended' AND messages IS NOT NULL ORDER BY id DESC LIMIT 1",
                (rowid,),
            ).fetchone()
        return None if row is None else str(row[0])

    def detail(self, number: int) -> IssueDetail:
        """``#number`` with its sessions, verdicts and history, oldest first."""
        issue = self.issue(number)
        with self._lock:
            rowid, _ = self._row_id(self._db, number)
            sessions = self._db.execute(
                f"SELECT {SESSION_COLUMNS} FROM sessions WHERE issue_id = ? ORDER BY id",
                (rowid,),
            ).fetchall()
            history = self._db.execute(
                f"SELECT {HISTORY_COLUMNS} FROM history WHERE issue_id = ? ORDER BY id",
                (rowid,),
            ).fetchall()
        return IssueDetail(
            issue=issue,
            sessions=tuple(session_of(r) for r in sessions),
            verdicts=tuple(self.verdicts(number)),
            history=tuple(history_of(h) for h in history),
        )

    def verdicts(self, number: int, round: int | None = None) -> list[Verdict]:
        """``#number``'s verdicts (of ``round`` when given), by round then reviewer."""
        with self._lock:
            rowid, _ = self._row_id(self._db, number)
            rows = self._db.execute(
                "SELECT id, round, reviewer, call, session_id, at FROM verdicts "
                "WHERE issue_id = ? AND (? IS NULL OR round = ?) ORDER BY round, reviewer",
                (rowid, round, round),
            ).fetchall()
            out = []
            for vid, rnd, reviewer, call, session, at in rows:
                items = self._db.execute(
                    "SELECT text FROM verdict_items WHERE verdict_id = ? ORDER BY position", (vid,)
                ).fetchall()
                out.append(
                    Verdict(
                        round=rnd,
                        reviewer=reviewer,
                        call=call,
                        session=session,
                        at=at,
                        items=tuple(t for (t,) in items),
                    )
                )
        return out

    def close(self) -> None:
        """Close the connection. Idempotent."""
        with self._lock:
            self._db.close()
