"""Board issue state changes are events on the run's stream: ``issue_state`` (issue 12 item 7)."""

from __future__ import annotations

import io
from pathlib import Path

from board_support import GREET_FIXED
from rich.console import Console

from gg.board import Board, IssueState
from gg.render import Renderer
from gg.stream import IssueStateChanged, read_events
from gg.testing import ScriptedModel, call


def _states(stream: Path) -> list[IssueStateChanged]:
    return [e for e in read_events(stream) if isinstance(e, IssueStateChanged)]


def test_each_transition_is_on_the_stream_up_to_stuck(repo: Path) -> None:
    model = ScriptedModel(
        [
            call("write_file", path="greet.py", content=GREET_FIXED),
            call("finish", summary="greet fixed; the tests pass."),
            call("request_changes", items=["Add a docstring"]),
        ]
    )
    board = Board(repo, model=model, max_rounds=1, concurrency=1)
    board.add("Greet politely")
    result = board.run()
    assert board.show(1).issue.state is IssueState.STUCK
    events = _states(result.stream)
    assert [(e.issue, e.state) for e in events] == [
        (1, "implementing"),
        (1, "reviewing"),
        (1, "stuck"),
    ]
    assert all(e.run_id == result.run_id and e.session_id is None for e in events)
    assert events[-1].event == "stuck" and events[-1].diagnosis
    assert [e.round for e in events] == [1, 1, 1]
    out = io.StringIO()
    Renderer(Console(file=out, width=200))(events[-1])
    assert out.getvalue().startswith("issue #1 stuck → stuck (round 1)")


def test_a_pause_is_on_the_stream_with_its_reason(repo: Path) -> None:
    board = Board(repo, model=ScriptedModel([]), concurrency=1)
    board.add("Greet politely")
    result = board.run()
    events = _states(result.stream)
    assert events[-1].event == "paused" and events[-1].state == "implementing"
    assert events[-1].diagnosis and "no more replies" in events[-1].diagnosis
