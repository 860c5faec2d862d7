"""Memories: notes an agent stores and recalls across runs (SPEC T3, S13).

The capability ``memory`` offers two registry tools:

- ``remember(text, tags=[])`` stores a note, returns its number;
- ``recall(query, limit=5)`` returns the notes that best match ``query``.

Notes live in SQLite, in the gg-private state directory of the run's
workspace, outside it (:func:`gg.state.workspace_state`; issue 9 item 2):
``<state>/gg.sqlite3`` (the file other parts of gg may share; this module only
touches tables named ``memory_*``). So memories are scoped per workspace and
outlive the run that wrote them, and no program in the workspace can edit
them; a ``.gg/gg.sqlite3`` left in the workspace by gg 0.1 is never read. Schema::

    memory_meta(key TEXT PRIMARY KEY, value TEXT)     -- 'schema_version' = '1'
    memory_notes(id INTEGER PRIMARY KEY, text, tags, created_at, run_id, session_id)
    memory_fts(text, tags)  -- FTS5, rowid = memory_notes.id; only when SQLite has FTS5

Ranking: the query's words are matched against each note's text and tags
(FTS5 with BM25 when available, else ``LIKE`` and a count of the words
found); notes with more tags equal to a query word come first, then the
better text match, then the newer note. An empty query returns the newest notes.

On-use script (S13): ``[memory] on_recall = "path/script.py"`` (or ``.js``,
relative to the workspace) runs on every recall through
:func:`gg.onuse.run_on_use`, with no ending group. Before its first line,
gg defines ``recall``: ``{"query": str, "notes": [{"id", "text", "tags"}]}``
(so the script's line numbers in errors are one more than in its file). What
it prints is appended to the recall's result.

What this does not promise: notes are plain text on the host (no
secrecy from gg's user; agents read them through ``recall``), and a store
written by a newer schema is refused rather than read.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from gg.endings import Language
from gg.errors import ToolError, UserError
from gg.onuse import run_on_use
from gg.state import StateError, private_file, warn_legacy, workspace_state
from gg.stream import now_iso
from gg.tools.registry import Tool, ToolContext, tool
from gg.tools.safefs import read_beneath

__all__ = [
    "DB_NAME",
    "MEMORY_TOOLS",
    "SCHEMA_VERSION",
    "Memory",
    "MemoryStore",
    "db_path",
    "recall",
    "remember",
]

DB_NAME = "gg.sqlite3"
SCHEMA_VERSION = 1
TEXT_MAX = 10_000  # characters in one note
TAGS_MAX = 20
TAG_MAX = 40  # characters in one tag
_CANDIDATES = 200  # matches ranked per query
_SCRIPT_CAP = 1_000_000  # bytes of an on_recall script

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS memory_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS memory_notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL, "
    "tags TEXT NOT NULL DEFAULT '', created_at TEXT NOT NULL, run_id TEXT, session_id TEXT)",
)
_FTS = "CREATE VIRTUAL TABLE IF NOT EXISTS memory_fts USING fts5(text, tags)"


def db_path(workspace: Path) -> Path:
    """The path of the workspace's memory database: ``<state>/gg.sqlite3``.

    ``<state>`` is the workspace's gg-private state directory (made if missing; issue 9
    item 2).

    Raises:
        gg.state.StateError: the state directory is unusable.
    """
    return workspace_state(workspace) / DB_NAME


@dataclass(frozen=True, kw_only=True)
class Memory:
    """One stored note."""

    id: int
    """Its number in the store."""
    text: str
    """What was remembered."""
    tags: tuple[str, ...] = ()
    """Normalized tags: lower case, no spaces."""
    created_at: str = ""
    """When it was stored, ISO 8601 UTC."""

    def line(self) -> str:
        """``#id (date, tags: a, b) text``, as ``recall`` shows it."""
        tags = f", tags: {', '.join(self.tags)}" if self.tags else ""
        return f"#{self.id} ({self.created_at[:10]}{tags}) {self.text}"


def normalize_tags(tags: Sequence[str]) -> tuple[str, ...]:
    """Lower-case, trim, drop a leading ``#``, join inner spaces with ``-``; dedupe.

    Raises:
        ToolError: more than 20 tags, or a tag over 40 characters.
    """
    out: dict[str, None] = {}
    for raw in tags:
        tag = "-".join(raw.strip().lstrip("#").lower().split())
        if len(tag) > TAG_MAX:
            raise ToolError(f"tag {raw!r} is longer than {TAG_MAX} characters")
        if tag:
            out[tag] = None
    if len(out) > TAGS_MAX:
        raise ToolError(f"a note takes at most {TAGS_MAX} tags, got {len(out)}")
    return tuple(out)


def _words(query: str) -> list[str]:
    return list(dict.fromkeys(re.findall(r"\w+", query.lower())))


class MemoryStore:
    """The notes of one workspace, in SQLite (SPEC T3). Each call opens its own connection.

    Args:
        path: the database file (created with its folder if missing).
        fts: use FTS5 (``None``: when this SQLite has it; ``False``: ``LIKE`` only).

    Raises:
        UserError: the file cannot be opened, or holds a newer memory schema.
    """

    def __init__(self, path: Path, *, fts: bool | None = None) -> None:
        self.path = path
        self.fts = fts
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            private_file(path)  # a regular file of gg's user, never through a link
            with self._connect() as db:
                self._init(db)
        except (sqlite3.Error, StateError, OSError) as e:
            raise UserError(f"cannot open the memory store {str(path)!r}: {e}") from None

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        try:
            yield db
        finally:
            db.close()

    def _init(self, db: sqlite3.Connection) -> None:
        db.execute("BEGIN IMMEDIATE")
        try:
            for statement in _SCHEMA:
                db.execute(statement)
            row = db.execute("SELECT value FROM memory_meta WHERE key = 'schema_version'")
            found = row.fetchone()
            if found is None:
                db.execute(
                    "INSERT INTO memory_meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
                )
            elif int(found[0]) > SCHEMA_VERSION:
                raise UserError(
                    f"the memory store {str(self.path)!r} has schema version "
                    f"{found[0]}, newer than this gg reads ({SCHEMA_VERSION})"
                )
            self.fts = self._init_fts(db)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def _init_fts(self, db: sqlite3.Connection) -> bool:
        if self.fts is False:
            return False
        try:
            db.execute(_FTS)
        except sqlite3.OperationalError:
            return False  # this SQLite has no FTS5: LIKE it is
        db.execute(
            "INSERT INTO memory_fts(rowid, text, tags) SELECT id, text, tags "
            "FROM memory_notes WHERE id > (SELECT coalesce(max(rowid), 0) FROM memory_fts)"
        )
        return True

    def add(
        self,
        text: str,
        tags: Sequence[str] = (),
        *,
        run_id: str | None = None,
        session_id: str | None = None,
    ) -> Memory:
        """Store a note; returns it with its number."""
        note = Memory(id=0, text=text, tags=normalize_tags(tags), created_at=now_iso())
        with self._connect() as db:
            db.execute("BEGIN IMMEDIATE")
            cur = db.execute(
                "INSERT INTO memory_notes (text, tags, created_at, run_id, session_id) "
                "VALUES (?, ?, ?, ?, ?)",
                (note.text, " ".join(note.tags), note.created_at, run_id, session_id),
            )
            rowid = int(cur.lastrowid or 0)
            if self.fts:
                db.execute(
                    "INSERT INTO memory_fts(rowid, text, tags) VALUES (?, ?, ?)",
                    (rowid, note.text, " ".join(note.tags)),
                )
            db.execute("COMMIT")
        return Memory(id=rowid, text=note.text, tags=note.tags, created_at=note.created_at)

    def count(self) -> int:
        """How many notes are stored."""
        with self._connect() as db:
            return int(db.execute("SELECT count(*) FROM memory_notes").fetchone()[0])

    def search(self, query: str, *, limit: int = 5) -> list[Memory]:
        """The ``limit`` notes that best match ``query`` (module docstring: ranking).

        An empty query (no words) returns the newest notes.
        """
        words = _words(query)
        with self._connect() as db:
            if not words:
                rows = db.execute(
                    "SELECT id, text, tags, created_at FROM memory_notes ORDER BY id DESC LIMIT ?",
                    (limit,),
                ).fetchall()
                return [_memory(r) for r in rows]
            scored = self._fts(db, words) if self.fts else self._like(db, words)
        scored.sort(key=lambda pair: (-len(set(words) & set(pair[1].tags)), pair[0], -pair[1].id))
        return [m for _, m in scored[:limit]]

    def _fts(self, db: sqlite3.Connection, words: list[str]) -> list[tuple[float, Memory]]:
        expr = " OR ".join(f'"{w}"*' for w in words)
        rows = db.execute(
            "SELECT n.id, n.text, n.tags, n.created_at, bm25(memory_fts) FROM memory_fts "
            "JOIN memory_notes n ON n.id = memory_fts.rowid WHERE memory_fts MATCH ? "
            "ORDER BY bm25(memory_fts) LIMIT ?",
            (expr, _CANDIDATES),
        ).fetchall()
        return [(float(r[4]), _memory(r)) for r in rows]

    def _like(self, db: sqlite3.Connection, words: list[str]) -> list[tuple[float, Memory]]:
        where = " OR ".join(
            "lower(text) LIKE ? ESCAPE '\\' OR tags LIKE ? ESCAPE '\\'" for _ in words
        )
        args = [f"%{_escape(w)}%" for w in words for _ in range(2)]
        rows = db.execute(
            f"SELECT id, text, tags, created_at FROM memory_notes WHERE {where} "
            "ORDER BY id DESC LIMIT ?",
            (*args, _CANDIDATES * 5),
        ).fetchall()
        out = []
        for r in rows:
            hay = f"{r[1].lower()} {r[2]}"
            out.append((-float(sum(w in hay for w in words)), _memory(r)))
        return out


def _escape(word: str) -> str:
    return word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _memory(row: Sequence[Any]) -> Memory:
    return Memory(
        id=int(row[0]), text=str(row[1]), tags=tuple(str(row[2]).split()), created_at=str(row[3])
    )


def _store(ctx: ToolContext) -> MemoryStore:
    """The store of the run's workspace (not a session's worktree: memories are shared)."""
    workspace = ctx.run.workspace if ctx.run is not None else ctx.workspace
    warn_legacy(workspace)
    try:
        return MemoryStore(db_path(workspace))
    except UserError as e:
        raise ToolError(str(e)) from e


@tool
async def remember(text: str, tags: tuple[str, ...] = (), *, ctx: ToolContext) -> str:
    """Store a note for later sessions and runs in this workspace; recall finds it again.

    Args:
        text: What to remember, self-contained (at most 10,000 characters).
        tags: Short labels to find it by, e.g. ["testing", "ci"].
        ctx: The calling session's context (supplied by gg, not in the tool's schema).
    """
    if not text.strip():
        raise ToolError("the note is empty: give the text to remember")
    if len(text) > TEXT_MAX:
        raise ToolError(
            f"a note holds at most {TEXT_MAX:,} characters, got {len(text):,}; remember the gist"
        )
    clean = normalize_tags(tags)
    store = await asyncio.to_thread(_store, ctx)
    run_id = ctx.run.run_id if ctx.run is not None else None
    note = await asyncio.to_thread(
        store.add, text.strip(), clean, run_id=run_id, session_id=ctx.session_id
    )
    shown = f" with tags {', '.join(note.tags)}" if note.tags else ""
    return f"Remembered note #{note.id}{shown}."


@tool(access="command")  # runs on-use scripts: read-only for a reviewer
async def recall(
    query: str, limit: Annotated[int, Field(ge=1, le=50)] = 5, *, ctx: ToolContext
) -> str:
    """Find stored notes matching a query (words of their text or tags); best first.

    Args:
        query: Words to look for; an empty query lists the newest notes.
        limit: The most notes to return.
        ctx: The calling session's context (supplied by gg, not in the tool's schema).
    """
    store = await asyncio.to_thread(_store, ctx)
    notes = await asyncio.to_thread(store.search, query, limit=limit)
    if notes:
        head = f"{len(notes)} note{'s' if len(notes) != 1 else ''} match {query!r}:"
        text = "\n".join([head, *(n.line() for n in notes)])
    else:
        total = await asyncio.to_thread(store.count)
        text = f"No note matches {query!r} ({total} stored)."
    script = _on_recall(ctx)
    if script is not None:
        source, language = script
        data = {
            "query": query,
            "notes": [{"id": n.id, "text": n.text, "tags": list(n.tags)} for n in notes],
        }
        text += "\n\n" + await run_on_use(
            ctx,
            source,
            language=language,
            label="the memory's on-recall script",
            data=("recall", data),
        )
    return text


def _on_recall(ctx: ToolContext) -> tuple[str, Language] | None:
    """The ``[memory] on_recall`` script's source and language, or ``None``.

    Raises:
        ToolError: the script cannot be read.
    """
    run = ctx.run
    name = run.settings.memory.on_recall if run is not None else None
    if run is None or not name:
        return None
    path = run.workspace / name
    try:  # in the workspace: agent-written, so opened beneath it (issue 9 item 1)
        data = (
            path.read_bytes()
            if Path(name).is_absolute()
            else read_beneath(run.workspace, name, cap=_SCRIPT_CAP)
        )
        source = data.decode("utf-8")
    except (OSError, UnicodeDecodeError, ToolError) as e:
        raise ToolError(f"[memory] on_recall: cannot read {str(path)!r}: {e}") from e
    return source, "javascript" if name.endswith(".js") else "python"


MEMORY_TOOLS: tuple[Tool, ...] = (remember, recall)
"""The tools of capability ``memory``, in registration order."""
