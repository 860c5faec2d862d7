"""The progress display: a live table on a terminal, lines elsewhere (SPEC O2)."""

from __future__ import annotations

import io

from rich.console import Console

from gg.board import Issue, IssueState, Progress
from gg.board.display import BoardDisplay, issues_table


def issue(state: IssueState, **kw: object) -> Issue:
    return Issue(number=3, title="Greet politely", body="", state=state, round=1, **kw)  # type: ignore[arg-type]


def test_lines_when_not_a_terminal() -> None:
    out = io.StringIO()
    display = BoardDisplay(Console(file=out, width=120))
    with display:
        display(Progress(issue=issue(IssueState.IMPLEMENTING), activity="started", event="state"))
        display(Progress(issue=issue(IssueState.IMPLEMENTING), activity="turn 1", event="turn"))
        display(
            Progress(
                issue=issue(IssueState.DONE, merge_sha="abc123"), activity="merged", event="state"
            )
        )
    lines = out.getvalue().splitlines()
    assert lines == ["#3 implementing (round 1) · started", "#3 done (round 1) · merged"]


def test_live_table_on_a_terminal() -> None:
    out = io.StringIO()
    console = Console(file=out, width=120, force_terminal=True)
    display = BoardDisplay(console)
    with display:
        display(
            Progress(
                issue=issue(IssueState.REVIEWING),
                activity="reviewer 1/2 s4 · turn 2 · read_file",
                event="turn",
            )
        )
        display(
            Progress(
                issue=issue(IssueState.STUCK, diagnosis="the implementer was stopped"),
                activity="stuck",
                event="state",
            )
        )
    text = out.getvalue()
    assert "gg board" in text and "Greet politely" in text
    assert "the implementer was stopped" in text
    table = io.StringIO()
    Console(file=table, width=120).print(issues_table([issue(IssueState.OPEN)]))
    assert "Greet politely" in table.getvalue() and "open" in table.getvalue()
