"""Typed events end to end (SPEC O1, O2; issue 10 item 3).

``emit`` takes a built event; the renderer and the board's tracker take every
event of the union (a ``match`` that ``assert_never`` closes, so a new event
type is a mypy error until both say what to do with it); one ``Usage`` type.
"""

from __future__ import annotations

import ast
import typing
from pathlib import Path

from rich.console import Console

import gg
from gg.board.store import Issue, IssueState
from gg.board.tracker import activity
from gg.board.workflow import SessionSlot
from gg.models.base import Usage
from gg.modes.base import Emit
from gg.render import Renderer, summary_table
from gg.stream import (
    CeilingTripped,
    Checkpoint,
    EndingDeclared,
    EndingRefused,
    EndingRevoked,
    EndingSuperseded,
    ErrorTurn,
    Event,
    EventIds,
    GateBlocked,
    GatePassed,
    IssueStateChanged,
    RetryEvent,
    RunEnded,
    RunResumed,
    RunStarted,
    SessionEnded,
    SessionStarted,
    ToolCalled,
    ToolResult,
    TurnEvent,
    parse_event,
)

SRC = Path(gg.__file__).parent
IDS = EventIds(run_id="r1", session_id="s1", turn=2)

ONE_OF_EACH: list[Event] = [
    RunStarted(
        run_id="r1", settings={"model": {"spec": "scripted"}}, isolation="none", workspace="/w"
    ),
    SessionStarted(**IDS, role="standard", mode="code", language="python", arm="all", model="m"),
    TurnEvent(**IDS, text="hi", calls=["read_file"], usage=Usage(input_tokens=5), seconds=0.5),
    ToolCalled(**IDS, name="read_file", arguments={"path": "a"}),
    ToolResult(**IDS, name="read_file", ok=False, excerpt="no such file"),
    ErrorTurn(**IDS, kind="no_tool_call", message="call a tool"),
    EndingDeclared(**IDS, call="finish", arguments={"summary": "done"}),
    EndingRefused(**IDS, call="approve", reason="unavailable", message="not yours"),
    EndingSuperseded(**IDS, count=2),
    EndingRevoked(**IDS, call="finish", error="boom"),
    GatePassed(**IDS, call="finish", hooks=1),
    GateBlocked(**IDS, hook="make test", reason="2 failed", failed=False),
    CeilingTripped(**IDS, ceiling="max_turns", diagnosis="3 turns"),
    SessionEnded(**IDS, ending={"call": "finish", "summary": "done"}, turns=2),
    RunEnded(run_id="r1", status="ended", exit_code=0),
    Checkpoint(
        **IDS,
        messages=[{"role": "user", "content": "hi"}],
        counts={"turns": 2},
        budget={"tokens": 5, "cost": 0.0, "seconds": 1.5},
    ),
    RunResumed(
        run_id="r2", from_run="r1", from_stream="/s", resumed_session="s1", turns=2, messages=4
    ),
    RetryEvent(**IDS, provider="openai-compat", attempt=1, wait_s=0.5, cause="HTTP 503: busy"),
    IssueStateChanged(run_id="r1", issue=3, event="stuck", state="stuck", round=2, diagnosis="x"),
]


def test_one_of_each_covers_the_union() -> None:
    union = typing.get_args(typing.get_args(Event)[0])  # Annotated[Union[...], Field]
    assert {type(e) for e in ONE_OF_EACH} == set(union)


def test_the_renderer_shows_every_event_and_replays_it_the_same() -> None:
    live, replay = (Console(record=True, width=200, force_terminal=False) for _ in range(2))
    for event in ONE_OF_EACH:
        Renderer(live)(event)
        Renderer(replay)(parse_event(event.model_dump_json()))  # as `gg show` reads it back
    text = live.export_text()
    assert text == replay.export_text()
    for expected in (
        "gg run r1",
        "▶ session",
        "turn 2 · 0.50 s · 5→0 tok · read_file",
        '→ read_file(path="a")',
        "✗ error turn no_tool_call",
        "◆ finish declared",
        "approve refused (unavailable)",
        "2 earlier declaration(s) superseded",
        "↺ finish revoked",
        "✓ ending gate passed",
        "ending gate blocked by agent-stop hook make test",
        "ceiling: max_turns",
        "■ session ended by finish after 2 turns",
        "run ended (exit 0)",
    ):
        assert expected in text, expected
    console = Console(record=True, width=200, force_terminal=False)
    console.print(summary_table(ONE_OF_EACH))
    assert "finish" in console.export_text()


def test_the_tracker_names_turns_blocks_error_turns_and_retries_only() -> None:
    issue = Issue(number=1, title="t", body="", state=IssueState.IMPLEMENTING)
    slot = SessionSlot(issue=issue, label="implementer", record=1, session_id="s1")
    lines = {type(e).__name__: activity(e, slot) for e in ONE_OF_EACH}
    assert lines.pop("TurnEvent") == "implementer s1 · turn 2 · read_file"
    assert lines.pop("GateBlocked") == "implementer s1 · gate blocked by make test"
    assert lines.pop("ErrorTurn") == "implementer s1 · error turn (no_tool_call)"
    assert lines.pop("RetryEvent") == "implementer s1 · openai-compat retry after attempt 1"
    assert set(lines.values()) == {None}


def test_emit_takes_a_built_event() -> None:
    assert typing.get_args(Emit) == ([Event], None)


def _names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
    }


def test_no_any_in_the_renderers_and_the_emit_seam() -> None:
    for module in ("render.py", "board/tracker.py", "board/display.py"):
        assert "Any" not in _names(SRC / module), module


def test_one_usage_type() -> None:
    assert TurnEvent.model_fields["usage"].annotation is Usage
    assert gg.Usage is Usage
    found = [
        path.relative_to(SRC)
        for path in SRC.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ClassDef) and node.name == "Usage"
    ]
    # gg.sandbox.writes.Usage is a workspace's disk use (bytes, files), not token usage.
    assert sorted(map(str, found)) == ["models/base.py", "sandbox/writes.py"]
