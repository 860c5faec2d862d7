"""The board's progress display and reports (``gg board run|list|show``, SPEC O2).

:class:`BoardDisplay` is a board observer: on a terminal it keeps a live
table with one row per issue (state, round, what its session is doing);
elsewhere (CI, a pipe) it prints one line per state change and session
start or end, never per turn. :func:`issues_table` and :func:`detail_view`
render the store for ``list`` and ``show``.

Titles, bodies, activities, verdict items, diagnoses and history details are
written by agents (or by whoever filed the issue): every cell is inert text
(:mod:`gg.terminal`), never rich markup (issue 9 item 8, issue 12).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import assert_never

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.table import Table
from rich.text import Text

from gg.board.store import Issue, IssueDetail, IssueState
from gg.board.workflow import Progress
from gg.endings import Approve, Finish, RequestChanges, ending_from_record
from gg.terminal import inert, inert_text, line

__all__ = ["STATE_STYLE", "BoardDisplay", "detail_view", "issues_table"]

STATE_STYLE: dict[IssueState, str] = {
    IssueState.OPEN: "white",
    IssueState.IMPLEMENTING: "cyan",
    IssueState.REVIEWING: "magenta",
    IssueState.MERGING: "blue",
    IssueState.DONE: "bold green",
    IssueState.STUCK: "bold red",
}


def _state(issue: Issue) -> Text:
    return Text(issue.state.value, style=STATE_STYLE[issue.state])


def _cut(text: str, limit: int) -> str:
    """``text`` made inert, on one line, cut to ``limit`` characters."""
    flat = " ".join(inert(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _outcome(issue: Issue, limit: int = 120) -> str:
    """Merged (its sha), or the diagnosis cut to ``limit`` characters (tables: one line)."""
    if issue.state is IssueState.DONE:
        return f"merged {inert(issue.merge_sha[:10])}" if issue.merge_sha else "nothing to merge"
    return _cut(issue.diagnosis or "", limit)


def _cell(text: str) -> Text:
    """A table cell of untrusted text: inert, never markup."""
    return inert_text(text)


class BoardDisplay:
    """A board observer that shows each issue's progress.

    Args:
        console: where to draw.
        live: a live table (default: when the console is a terminal).
    """

    def __init__(self, console: Console, *, live: bool | None = None) -> None:
        self.console = console
        self.rows: dict[int, tuple[Issue, str]] = {}
        use_live = console.is_terminal if live is None else live
        self._live = (
            Live(self.table(), console=console, refresh_per_second=4, transient=False)
            if use_live
            else None
        )

    def __enter__(self) -> BoardDisplay:
        if self._live is not None:
            self._live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.update(self.table())
            self._live.stop()

    def __call__(self, progress: Progress) -> None:
        """Take one update from the board."""
        issue = progress.issue
        self.rows[issue.number] = (issue, progress.activity)
        if self._live is not None:
            self._live.update(self.table())
        elif progress.event != "turn":
            self.console.print(
                line(
                    f"#{issue.number} ",
                    (issue.state.value, STATE_STYLE[issue.state]),
                    f" (round {issue.round}) · {_cut(progress.activity, 160)}",
                ),
                highlight=False,
            )

    def table(self) -> Table:
        """The live table: one row per issue seen so far."""
        table = Table(title="gg board", expand=True)
        for col in ("#", "title", "state", "round", "now"):
            table.add_column(col, overflow="fold" if col == "now" else "ellipsis")
        for number in sorted(self.rows):
            issue, activity = self.rows[number]
            now = (
                _outcome(issue) if issue.state in (IssueState.DONE, IssueState.STUCK) else activity
            )
            table.add_row(
                _cell(str(number)),
                _cell(_cut(issue.title, 40)),
                _state(issue),
                _cell(str(issue.round)),
                _cell(_cut(now, 90)),
            )
        return table


def issues_table(issues: list[Issue]) -> Table:
    """``gg board list``: one row per issue."""
    table = Table(title=None if issues else "no issues yet (gg board add TITLE)")
    for col in ("#", "state", "round", "title", "result"):
        table.add_column(col)
    for i in issues:
        table.add_row(
            _cell(str(i.number)),
            _state(i),
            _cell(str(i.round)),
            _cell(_cut(i.title, 60)),
            _cell(_outcome(i)),
        )
    return table


def _detail_text(detail: Mapping[str, object]) -> str:
    shown = {k: v for k, v in detail.items() if v not in (None, [], {}, "") and k != "record"}
    return _cut(json.dumps(shown, ensure_ascii=False), 160) if shown else ""


def _ending_text(ending: Mapping[str, object] | None, diagnosis: str | None) -> str:
    """A stored session's ending as text, or its diagnosis when it stopped.

    The ending is its :data:`gg.endings.EndingRecord`, read back typed; a record that
    is no ending shows its call.
    """
    if ending is None:
        return _cut(diagnosis or "", 100)
    try:
        typed = ending_from_record(ending)
    except ValueError:
        return inert(str(ending.get("call", "")))
    match typed:
        case Finish():
            return f"finish: {_cut(typed.summary, 80)}"
        case RequestChanges():
            return f"request_changes: {len(typed.items)} item(s)"
        case Approve():
            return "approve"
        case _:
            assert_never(typed)


_SESSION_EVENTS = ("session_started", "session_ended")


DETAIL_LIMIT = 4000
"""``gg board show N`` prints a diagnosis whole up to this many characters (the table of
``gg board list`` and ``run`` cuts it to one line): its end says what to do next."""


def detail_view(d: IssueDetail) -> RenderableType:
    """``gg board show N``: the issue, its sessions, verdicts and history.

    The history table leaves out the per-session rows (the sessions table has them).
    """
    i = d.issue
    head = line((f"#{i.number} {i.title}", "bold"), "  ")
    head.append_text(_state(i))
    head.append(f"  round {i.round}")
    lines: list[RenderableType] = [head]
    if i.body:
        lines.append(inert_text(i.body))
    facts = [f"branch {i.branch}" if i.branch else "", _outcome(i, DETAIL_LIMIT)]
    lines.append(inert_text(" · ".join(f for f in facts if f), style="dim"))
    sessions = Table(title="sessions")
    for col in ("kind", "round", "session", "status", "ending / diagnosis"):
        sessions.add_column(col)
    for s in d.sessions:
        kind = f"reviewer {s.reviewer}" if s.kind == "reviewer" else s.kind
        sessions.add_row(
            *(
                _cell(c)
                for c in (
                    kind,
                    str(s.round),
                    s.session_id or "-",
                    s.status,
                    _ending_text(s.ending, s.diagnosis),
                )
            )
        )
    verdicts = Table(title="verdicts")
    for col in ("round", "reviewer", "verdict", "items"):
        verdicts.add_column(col)
    for v in d.verdicts:
        items = "\n".join(f"{n}. {t}" for n, t in enumerate(v.items, 1))
        verdicts.add_row(*(_cell(c) for c in (str(v.round), str(v.reviewer), v.call, items)))
    history = Table(title="history")
    for col in ("at (UTC)", "event", "state", "detail"):
        history.add_column(col)
    for h in d.history:
        if h.event in _SESSION_EVENTS:
            continue
        move = f"{h.from_state or ''} → {h.to_state}" if h.to_state else ""
        history.add_row(
            *(
                _cell(c)
                for c in (h.at[:19].replace("T", " "), h.event, move, _detail_text(h.detail))
            )
        )
    return Group(*lines, sessions, verdicts, history)
