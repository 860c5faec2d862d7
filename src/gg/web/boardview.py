"""The board read from its store and rendered as columns by state (issue 15 item 1, SPEC B1-B5).

:class:`BoardReader` opens the workspace's board store (the default
``<state>/board.sqlite3`` only when it exists, never creating it) and tells by the files'
sizes and times when it changed (a board run in another process writes it).
:func:`board_html` renders the issues as one column per :class:`~gg.board.store.IssueState`,
each card with its rounds, the reviewers' verdicts and their items, and the merge result.
Titles, bodies, items, summaries and diagnoses are written by agents or whoever filed the
issue: all are escaped and cut.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gg.board.board import open_store
from gg.board.errors import BoardError
from gg.board.sqlite import SqliteStore
from gg.board.store import Issue, IssueDetail, IssueState, SessionRecord, Store, Verdict
from gg.config import load_settings
from gg.errors import GGError
from gg.state import state_path
from gg.trust import check
from gg.web.escape import h, num
from gg.web.markup import inert_cut

_UNREADABLE = (GGError, BoardError, sqlite3.Error, ValueError, TypeError, KeyError)
"""What a damaged or hostile store raises on reading (shown as text, never a crash)."""

__all__ = ["MAX_ISSUES", "REMOTE_POLL_S", "BoardReader", "BoardSnapshot", "board_html"]

REMOTE_POLL_S = 1.0
"""Seconds between two reads of a board on a server (no file to watch)."""
MAX_ISSUES = 500
"""The most issues read from a store for one page (the lowest numbers)."""

_COLUMNS: tuple[tuple[IssueState, str], ...] = (
    (IssueState.OPEN, "Open"),
    (IssueState.IMPLEMENTING, "Implementing"),
    (IssueState.REVIEWING, "In review"),
    (IssueState.MERGING, "Merging"),
    (IssueState.DONE, "Done"),
    (IssueState.STUCK, "Stuck"),
)


@dataclass(frozen=True, slots=True)
class BoardSnapshot:
    """The board as read once: each issue's detail, or why the store could not be read."""

    details: tuple[IssueDetail, ...] = ()
    error: str | None = None
    exists: bool = False
    broken: tuple[tuple[Issue, str], ...] = ()
    """Issues whose sessions, verdicts or history could not be read, with why."""


class BoardReader:
    """Reads one workspace's board store, opened on first use and kept open.

    The store is the one ``[board] store`` of the workspace's ``gg.toml`` names, as for
    ``gg board list``: the default SQLite file in gg's state (never created here), a
    ``sqlite:PATH`` file, or a PostgreSQL board (re-read every :data:`REMOTE_POLL_S`).

    A store other than gg's own file is read only under the trust rule (issue 9): a
    changed ``gg.toml`` that newly names one is shown as a problem, never opened, unless
    the operator said ``--trust-config`` (libpq sends ``PGPASSWORD`` to whatever server
    the URL names).

    Args:
        workspace: the repository whose board is shown.
        trust_config: the operator accepted a newly weakening ``gg.toml``.
    """

    def __init__(self, workspace: Path, *, trust_config: bool = False) -> None:
        self.workspace = workspace
        self.problem: str | None = None
        try:
            settings = load_settings(workspace=workspace)
            self.spec = settings.board.store
            if self.spec != "sqlite":
                check(workspace.resolve(), settings, trust=trust_config)
        except GGError as e:
            self.spec, self.problem = "sqlite", f"the workspace's gg.toml: {e}"
        self.path: Path | None = None
        if self.spec == "sqlite":
            self.path = state_path(workspace) / "board.sqlite3"
        elif self.spec.startswith("sqlite:"):
            named = Path(self.spec.removeprefix("sqlite:")).expanduser()
            self.path = named if named.is_absolute() else workspace / named
        self._store: Store | None = None

    def signature(self) -> tuple[object, ...]:
        """Sizes and change times of the store's files: it changed when this did.

        For a store on a server, the time in :data:`REMOTE_POLL_S` steps.
        """
        if self.path is None:
            return (int(time.monotonic() / REMOTE_POLL_S),)
        out: list[tuple[int, int] | None] = []
        for suffix in ("", "-wal"):
            try:
                st = os.lstat(f"{self.path}{suffix}")
                out.append((st.st_size, st.st_mtime_ns))
            except OSError:
                out.append(None)
        return tuple(out)

    def _open(self) -> Store | None:
        if self._store is None:
            if self.path is None:
                self._store = open_store(self.spec, self.workspace)
                return self._store
            try:
                if not stat.S_ISREG(os.lstat(self.path).st_mode):
                    return None
            except OSError:
                return None
            self._store = SqliteStore(self.path)
        return self._store

    def snapshot(self) -> BoardSnapshot:
        """Every issue with its sessions, verdicts and history (at most :data:`MAX_ISSUES`).

        Returns:
            The snapshot; an unreadable store gives one with ``error`` set, never raises.
        """
        if self.problem is not None:
            return BoardSnapshot(error=self.problem, exists=True)
        try:
            store = self._open()
            if store is None:
                return BoardSnapshot()
            issues = store.issues()[:MAX_ISSUES]
        except _UNREADABLE as e:
            return BoardSnapshot(error=f"the board store cannot be read: {e}", exists=True)
        details: list[IssueDetail] = []
        broken: list[tuple[Issue, str]] = []
        for issue in issues:
            try:
                details.append(store.detail(issue.number))
            except _UNREADABLE as e:
                broken.append((issue, f"this issue's records cannot be read: {e}"))
        return BoardSnapshot(tuple(details), exists=True, broken=tuple(broken))

    def close(self) -> None:
        """Close the store. Idempotent."""
        if self._store is not None:
            self._store.close()
            self._store = None


def _session_line(s: SessionRecord) -> str:
    who = f"reviewer {num(s.reviewer)}" if s.kind == "reviewer" else h(s.kind)
    anchor = f"#session-{h(s.session_id)}" if s.session_id else ""
    link = f'<a href="/runs/{h(s.run_id)}{anchor}">{h(s.session_id or "-")}</a>'
    why = f' <span class="diag">{h(s.diagnosis, 300)}</span>' if s.diagnosis else ""
    return (
        f'<li class="sess st-{h(s.status)}">round {num(s.round)} · {who} · {link} · '
        f"{h(s.status)}{why}</li>"
    )


def _verdict_html(v: Verdict) -> str:
    listed = v.items if isinstance(v.items, list | tuple) else [v.items]
    items = "".join(f"<li>{h(item, 500)}</li>" for item in listed[:50])
    more = f"<li>… {num(len(listed) - 50)} more</li>" if len(listed) > 50 else ""
    listing = f'<ol class="items">{items}{more}</ol>' if items else ""
    return (
        f'<div class="verdict v-{h(v.call)}" data-verdict="{h(v.call)}">'
        f"reviewer {num(v.reviewer)}: <b>{h(v.call)}</b>{listing}</div>"
    )


def _round_key(value: object) -> tuple[int, int, str]:
    """Rounds in order: integers first by value, anything unreadable after (by its text)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return (0, value, "")
    return (1, 0, repr(value)[:100])


def _rounds_html(d: IssueDetail) -> str:
    rounds = sorted({v.round for v in d.verdicts} | {s.round for s in d.sessions}, key=_round_key)
    out: list[str] = []
    for r in rounds:
        verdicts = "".join(_verdict_html(v) for v in d.verdicts if v.round == r)
        sessions = "".join(_session_line(s) for s in d.sessions if s.round == r)
        out.append(
            f'<details class="round" open><summary>round {num(r)}</summary>'
            f'{verdicts}<ul class="sessions">{sessions}</ul></details>'
        )
    return "".join(out)


def _result_html(d: IssueDetail) -> str:
    i = d.issue
    if i.state is IssueState.DONE:
        sha = inert_cut(str(i.merge_sha), 12)[0]  # redacted before it is cut
        what = f"merged {h(sha)}" if i.merge_sha else "nothing to merge"
        return f'<p class="result merged">{what}</p>'
    if i.diagnosis:
        return f'<p class="result diag">{h(i.diagnosis, 1000)}</p>'
    return ""


def _card(d: IssueDetail) -> str:
    i = d.issue
    summary = f'<p class="summary">{h(i.summary, 600)}</p>' if i.summary else ""
    body = f'<p class="body">{h(i.body, 400)}</p>' if i.body else ""
    branch = f" · {h(i.branch, 200)}" if i.branch else ""
    return (
        f'<article class="card" data-issue="{num(i.number)}" data-state="{h(i.state.value)}">'
        f'<h3>#{num(i.number)} <span class="title">{h(i.title, 200)}</span></h3>'
        f'<p class="meta">round {num(i.round)}{branch}</p>{body}{summary}'
        f"{_rounds_html(d)}{_result_html(d)}</article>"
    )


def _broken_card(i: Issue, why: str) -> str:
    return (
        f'<article class="card" data-issue="{num(i.number)}" data-state="{h(i.state.value)}">'
        f'<h3>#{num(i.number)} <span class="title">{h(i.title, 200)}</span></h3>'
        f'<p class="error">{h(why, 1000)}</p></article>'
    )


def board_html(snapshot: BoardSnapshot) -> str:
    """The board's columns, one per state in workflow order, as an HTML fragment.

    Args:
        snapshot: what :meth:`BoardReader.snapshot` read.

    Returns:
        ``<section class="board">`` with a ``<div class="column" data-state=...>`` per
        state (each card an ``<article data-issue=N>``), or a note when there is no board.
    """
    if snapshot.error is not None:
        return f'<p class="error">{h(snapshot.error, 2000)}</p>'
    if not snapshot.exists:
        return '<p class="note">This workspace has no board yet (gg board add TITLE).</p>'
    columns: list[str] = []
    for state, label in _COLUMNS:
        cards = [_card(d) for d in snapshot.details if d.issue.state is state]
        cards += [_broken_card(i, why) for i, why in snapshot.broken if i.state is state]
        columns.append(
            f'<div class="column" data-state="{h(state.value)}"><h2>{h(label)} '
            f'<span class="count">{num(len(cards))}</span></h2>{"".join(cards)}</div>'
        )
    return f'<section class="board">{"".join(columns)}</section>'


def issue_count(snapshot: BoardSnapshot) -> Sequence[int]:
    """The issue numbers of a snapshot (for tests and the page title)."""
    return [d.issue.number for d in snapshot.details]
