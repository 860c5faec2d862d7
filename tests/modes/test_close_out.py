"""One turn close-out for both modes (SPEC S8, S9; issue 10 item 2).

The same turn, written as one tool-calling reply or as one program (Python and
JavaScript): declare twice, then fail. Both modes close it the same way: one
``ending_superseded`` (count 1), one ``ending_revoked`` naming the *last*
declaration, no ending gated, and the next turn's declaration is the one the
session ends by. Without the failure the last declaration is read and nothing
is revoked.
"""

from __future__ import annotations

from typing import Any

import pytest

import gg
from gg.endings import Approve, Declarations, Ending, Finish, RequestChanges, TurnClose
from gg.testing import call
from support import RunScripted, events_of

_CLOSE_OUT = ("ending_declared", "ending_superseded", "ending_revoked", "gate_passed")


def _program(source: str) -> gg.Reply:
    return gg.Reply(tool_calls=(gg.ToolCall(name="submit_program", arguments={"program": source}),))


def _calls(*calls: tuple[str, dict[str, Any]]) -> gg.Reply:
    return gg.Reply(tool_calls=tuple(gg.ToolCall(name=n, arguments=a) for n, a in calls))


# (role, the two declarations' calls, the failing turn in each arm, the final turn, the end)
_TURNS: dict[str, dict[str, Any]] = {
    "standard": {
        "calls": ["finish", "finish"],
        "tool-calling": _calls(
            ("finish", {"summary": "first"}),
            ("finish", {"summary": "second"}),
            ("read_file", {"path": "no-such-file.txt"}),
        ),
        "python": "gg.session.finish('first')\ngg.session.finish('second')\n"
        "raise RuntimeError('failed after declaring')",
        "javascript": "await gg.session.finish('first');\nawait gg.session.finish('second');\n"
        "throw new Error('failed after declaring');",
        "last": {"tool-calling": call("finish", summary="third")},
        "python_last": "gg.session.finish('third')",
        "javascript_last": "await gg.session.finish('third');",
        "ending": Finish(summary="third"),
    },
    "review": {
        "calls": ["approve", "request_changes"],
        "tool-calling": _calls(
            ("approve", {}),
            ("request_changes", {"items": ["add a test"]}),
            ("read_file", {"path": "no-such-file.txt"}),
        ),
        "python": "gg.session.approve()\ngg.session.request_changes(['add a test'])\n"
        "raise RuntimeError('failed after declaring')",
        "javascript": "await gg.session.approve();\n"
        "await gg.session.requestChanges(['add a test']);\n"
        "throw new Error('failed after declaring');",
        "last": {"tool-calling": call("approve")},
        "python_last": "gg.session.approve()",
        "javascript_last": "await gg.session.approve();",
        "ending": Approve(),
    },
}

ARMS = ["tool-calling", "python", "javascript"]


def _run(run_scripted: RunScripted, arm: str, role: str, replies: list[gg.Reply]) -> Any:
    if arm == "tool-calling":
        return run_scripted(replies, role=role)[0]
    return run_scripted(replies, role=role, mode="code", language=arm)[0]


def _turns(arm: str, role: str) -> tuple[gg.Reply, gg.Reply]:
    t = _TURNS[role]
    if arm == "tool-calling":
        return t["tool-calling"], t["last"]["tool-calling"]
    return _program(t[arm]), _program(t[f"{arm}_last"])


@pytest.mark.parametrize("role", ["standard", "review"])
@pytest.mark.parametrize("arm", ARMS)
def test_supersede_then_revoke_closes_the_same_in_both_modes(
    run_scripted: RunScripted, arm: str, role: str
) -> None:
    failing, last = _turns(arm, role)
    result = _run(run_scripted, arm, role, [failing, last])
    assert result.status == "ended" and result.ending == _TURNS[role]["ending"]
    events = events_of(result)
    first_turn = [e for e in events if e.turn == 1 and e.type in _CLOSE_OUT]
    assert [e.type for e in first_turn] == [
        "ending_declared",
        "ending_declared",
        "ending_superseded",
        "ending_revoked",
    ]  # no gate for the revoked turn: nothing was left to gate
    assert [e.call for e in first_turn[:2]] == _TURNS[role]["calls"]
    assert first_turn[2].count == 1
    revoked = first_turn[3]
    assert revoked.call == _TURNS[role]["calls"][-1]  # the declaration that counted
    assert revoked.error  # why: the failing call or the program's error
    ended = [e for e in events if e.type == "session_ended"]
    assert ended[-1].ending == _TURNS[role]["ending"].record()


@pytest.mark.parametrize("arm", ARMS)
def test_superseded_without_failure_reads_the_last(run_scripted: RunScripted, arm: str) -> None:
    if arm == "tool-calling":
        reply = _calls(("finish", {"summary": "a"}), ("finish", {"summary": "b"}))
    elif arm == "python":
        reply = _program("gg.session.finish('a')\ngg.session.finish('b')")
    else:
        reply = _program("await gg.session.finish('a');\nawait gg.session.finish('b');")
    result = _run(run_scripted, arm, "standard", [reply])
    assert result.ending == Finish(summary="b")
    types = [e.type for e in events_of(result)]
    assert types.count("ending_superseded") == 1 and "ending_revoked" not in types


@pytest.mark.parametrize(
    ("declared", "failed", "want"),
    [
        ([], False, TurnClose(ending=None, superseded=0, revoked=None)),
        ([], True, TurnClose(ending=None, superseded=0, revoked=None)),
        (
            [Finish(summary="a")],
            False,
            TurnClose(ending=Finish(summary="a"), superseded=0, revoked=None),
        ),
        (
            [Approve(), RequestChanges(items=("x",))],
            True,
            TurnClose(ending=None, superseded=1, revoked=RequestChanges(items=("x",))),
        ),
        (
            [Finish(summary="a"), Finish(summary="b"), Finish(summary="c")],
            False,
            TurnClose(ending=Finish(summary="c"), superseded=2, revoked=None),
        ),
    ],
)
def test_declarations_close_into_one_result(
    declared: list[Ending], failed: bool, want: TurnClose
) -> None:
    decl = Declarations()
    for ending in declared:
        decl.declare(ending)
    assert decl.close(failed=failed) == want
