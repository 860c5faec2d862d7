"""The progress display: a live table on a terminal, lines elsewhere (SPEC O2)."""

from __future__ import annotations

import io

from rich.console import Console

from gg.board import Issue, IssueState, Progress
from gg.board.display import BoardDisplay, detail_view, issues_table
from gg.board.store import IssueDetail


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


def test_board_show_prints_a_long_diagnosis_whole() -> None:
    """The end of a diagnosis says what to do next: ``gg board show N`` never cuts it."""
    why = (
        "branch 'gg/issue-3' already exists and holds commits this board did not make: "
        "delete or rename it (on origin too when the board ran on Ray), then run "
        "gg board retry 3"
    )
    detail = IssueDetail(
        issue=issue(IssueState.STUCK, diagnosis=why), sessions=(), verdicts=(), history=()
    )
    out = io.StringIO()
    Console(file=out, width=100).print(detail_view(detail))
    assert "then run gg board retry 3" in " ".join(out.getvalue().split())
    table = io.StringIO()
    Console(file=table, width=400).print(issues_table([detail.issue]))
    assert "gg board retry 3" not in table.getvalue()  # a table row stays one short line
