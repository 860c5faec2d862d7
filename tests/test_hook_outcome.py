"""One classification of a hook's outcome, read the same by the stream, the live view,
the replay and the ceiling diagnosis (SPEC H1, S6, S12; issue 10 item 2).

SPEC H1 / §10 Hooks: exit 0 passes; exit 2 or a JSON ``{"decision": "block"}`` blocks
(the hook's own answer, the model's work is blamed); any other exit, a timeout, a hook
that cannot start or answers nonsense is the hook itself failing (``on_error``; the
hook is blamed). Each case runs a real hook (a real ``/bin/sh`` command, or a Python
callable) in a real session driven by the scripted model.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

import gg
from gg.endings import Finish, Role
from gg.hooks import CallableHook, CommandHook, Gate, Hook, HookStatus, StopEvent
from gg.render import Renderer
from gg.stream import Event, GateBlocked, read_events
from gg.testing import ScriptedModel, call


def _raises(event: StopEvent) -> None:
    raise RuntimeError("the hook's own bug")


def _answers_nonsense(event: StopEvent) -> Any:
    return 42  # not a HookAnswer: the hook answers nonsense


def _blocks(event: StopEvent) -> str:
    return "say how you tested it"


def _unknown_decision(event: StopEvent) -> dict[str, str]:
    return {"decision": "maybe", "reason": "?"}


CASES: list[tuple[str, Callable[[], Hook], HookStatus]] = [
    ("exit 2", lambda: CommandHook(command="echo '2 tests failed' >&2; exit 2"), "blocked"),
    (
        "json block",
        lambda: CommandHook(command='echo \'{"decision": "block", "reason": "lint: 3 errors"}\''),
        "blocked",
    ),
    ("callable block", lambda: CallableHook(fn=_blocks), "blocked"),
    ("exit 1", lambda: CommandHook(command="echo '1 test failed'; exit 1"), "failed"),
    ("exit 3", lambda: CommandHook(command="exit 3"), "failed"),
    ("not found", lambda: CommandHook(command="gg-no-such-hook-command"), "failed"),
    ("timeout", lambda: CommandHook(command="sleep 5", timeout_s=0.3), "failed"),
    ("signal", lambda: CommandHook(command="kill -9 $$"), "failed"),
    ("raises", lambda: CallableHook(fn=_raises), "failed"),
    ("nonsense", lambda: CallableHook(fn=_answers_nonsense), "failed"),
    ("unknown decision", lambda: CallableHook(fn=_unknown_decision), "failed"),
]


def _render(events: list[Event]) -> str:
    console = Console(record=True, width=300, force_terminal=False)
    renderer = Renderer(console)
    for event in events:
        renderer(event)
    return console.export_text()


@pytest.mark.parametrize(("name", "make", "status"), CASES, ids=[c[0] for c in CASES])
def test_stream_live_view_replay_and_diagnosis_agree(
    workspace: Path, name: str, make: Callable[[], Hook], status: HookStatus
) -> None:
    # The classification itself, from the gate alone.
    event = StopEvent.for_ending(
        Finish(summary="done"), role=Role.STANDARD, session_id="s1", workspace=workspace
    )
    outcome = asyncio.run(Gate([make()]).check(event)).blocking
    assert outcome is not None and outcome.status == status
    assert outcome.decision == "block"  # on_error="block" (H1): a failure blocks too

    # The same hook in a session that can never satisfy it: a live view listens.
    live = Console(record=True, width=300, force_terminal=False)
    agent = gg.Agent(
        model=ScriptedModel([call("finish", summary=f"try {i}") for i in range(2)]),
        workspace=workspace,
        hooks=[make()],
        ceilings={"gate_blocks": 2},
        listeners=[Renderer(live)],
    )
    result = agent.run("do the task")
    assert result.status == "stopped" and result.diagnosis is not None

    events = list(read_events(result.stream))
    blocked = [e for e in events if isinstance(e, GateBlocked)]
    failed = status == "failed"
    assert len(blocked) == 2 and all(e.failed is failed for e in blocked)  # the stream
    for shown in (live.export_text(), _render(events)):  # the live view, gg show
        assert shown.count("ending gate blocked by agent-stop hook") == 2
        assert ("the hook itself failed" in shown) is failed
    blames_hook = "is broken" in result.diagnosis  # the diagnosis
    assert blames_hook is failed
    assert ("the model could not satisfy it" in result.diagnosis) is not failed


def test_on_error_pass_is_still_a_failure_but_lets_the_ending_through(workspace: Path) -> None:
    hook = CommandHook(command="echo oops; exit 1", on_error="pass")
    event = StopEvent.for_ending(
        Finish(summary="done"), role=Role.STANDARD, session_id="s1", workspace=workspace
    )
    result = asyncio.run(Gate([hook]).check(event))
    assert result.passed and result.outcomes[0].status == "failed"
    ran = gg.Agent(
        model=ScriptedModel([call("finish", summary="done")]), workspace=workspace, hooks=[hook]
    ).run("do the task")
    assert ran.status == "ended" and ran.ending == Finish(summary="done")


def test_a_pass_is_passed(workspace: Path) -> None:
    event = StopEvent.for_ending(
        Finish(summary="done"), role=Role.STANDARD, session_id="s1", workspace=workspace
    )
    for hook in (CommandHook(command="true"), CallableHook(fn=lambda e: None)):
        result = asyncio.run(Gate([hook]).check(event))
        assert result.passed and result.outcomes[0].status == "passed"
