"""The ending gate fails closed on any hook answer it cannot read (issue 12 item 5, SPEC H1).

Each answer shape runs as a real ``/bin/sh`` command hook (or a real Python callable) in a
real session driven by the scripted model: the gate must block every ending, the stream must
record each block as the hook's failure, and the diagnosis must blame the hook. Controls
(prose, a googletest-style report, one JSON pass) let the ending through, so the fail-closed
cases cannot pass by blocking everything.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import gg
from gg.hooks import CallableHook, CommandHook, Hook, StopEvent
from gg.stream import GateBlocked, GatePassed, read_events
from gg.testing import ScriptedModel, call

UNREADABLE = {
    "block then another line": '{"decision": "block", "reason": "r"}\n{"decision": "pass"}',
    "block then prose": '{"decision": "block"}\nall good',
    "truncated": '{"decision": "blo',
    "truncated last line": 'checking...\n{"decision": "block", "reas',
    "array": '[{"decision": "block"}]',
    "number": "42",
    "string": '"block"',
    "true": "true",
    "decision not a string": '{"decision": 1}',
    "unknown decision": '{"decision": "Block"}',
    "decision not last": 'x\n{"decision": "block", "reason": "r"}\nsummary: 3 passed',
    "two objects on one line": '{"decision": "pass"}{"decision": "block"}',
}

READABLE_PASS = {
    "prose": "3 passed in 0.12s",
    "googletest": "[==========] Running 1 test\n[  PASSED  ] 1 test.",
    "json pass": '{"decision": "approve"}',
    "json no decision": '{"suppressOutput": true}',
}


def _printing(text: str) -> CommandHook:
    return CommandHook(command=f"printf '%s' {shlex.quote(text)}")


def _run(workspace: Path, hook: Hook, tries: int = 2) -> gg.RunResult:
    agent = gg.Agent(
        model=ScriptedModel([call("finish", summary=f"try {i}") for i in range(tries)]),
        workspace=workspace,
        hooks=[hook],
        ceilings={"gate_blocks": tries},
    )
    return agent.run("do the task")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest.mark.parametrize("answer", list(UNREADABLE.values()), ids=list(UNREADABLE))
def test_an_unreadable_answer_blocks_as_a_hook_failure(workspace: Path, answer: str) -> None:
    result = _run(workspace, _printing(answer))
    assert result.status == "stopped" and result.ending is None
    assert result.diagnosis is not None and "is broken" in result.diagnosis
    events = list(read_events(result.stream))
    blocked = [e for e in events if isinstance(e, GateBlocked)]
    assert len(blocked) == 2 and all(e.failed for e in blocked)
    assert not any(isinstance(e, GatePassed) for e in events)


@pytest.mark.parametrize("answer", list(UNREADABLE.values())[:3], ids=list(UNREADABLE)[:3])
def test_on_error_pass_lets_an_unreadable_answer_through(workspace: Path, answer: str) -> None:
    hook = CommandHook(command=f"printf '%s' {shlex.quote(answer)}", on_error="pass")
    result = _run(workspace, hook, tries=1)
    assert result.status == "ended"


@pytest.mark.parametrize("answer", list(READABLE_PASS.values()), ids=list(READABLE_PASS))
def test_readable_passes_still_pass(workspace: Path, answer: str) -> None:
    result = _run(workspace, _printing(answer), tries=1)
    assert result.status == "ended" and result.ending == gg.Finish(summary="try 0")


def test_a_last_line_block_is_still_read(workspace: Path) -> None:
    result = _run(workspace, _printing('lint ran\n{"decision": "block", "reason": "3 errors"}'))
    blocked = [e for e in read_events(result.stream) if isinstance(e, GateBlocked)]
    assert blocked and blocked[0].reason == "3 errors" and not blocked[0].failed


def _exits(event: StopEvent) -> None:
    sys.exit(0)


def _interrupts(event: StopEvent) -> None:
    raise KeyboardInterrupt


async def _exits_async(event: StopEvent) -> None:
    raise SystemExit("leaving")


class _ExitsOnCall:
    async def __call__(self, event: StopEvent) -> None:
        raise SystemExit(2)


RAISERS: list[tuple[str, Callable[[], Hook]]] = [
    ("sys.exit(0)", lambda: CallableHook(fn=_exits)),
    ("KeyboardInterrupt", lambda: CallableHook(fn=_interrupts)),
    ("async SystemExit", lambda: CallableHook(fn=_exits_async)),
    ("async __call__ SystemExit", lambda: CallableHook(fn=_ExitsOnCall(), name="exits")),
]


@pytest.mark.parametrize(("name", "make"), RAISERS, ids=[r[0] for r in RAISERS])
def test_a_python_hook_cannot_end_the_run(
    workspace: Path, name: str, make: Callable[[], Hook]
) -> None:
    result = _run(workspace, make())  # returns at all: the run was not ended by the hook
    assert result.status == "stopped" and result.diagnosis is not None
    assert "is broken" in result.diagnosis
    blocked = [e for e in read_events(result.stream) if isinstance(e, GateBlocked)]
    assert len(blocked) == 2 and all(e.failed for e in blocked)
    assert "cannot end the run" in blocked[0].reason
