"""The session loop in tool-calling mode, through the public API with the scripted model.

Covers SPEC S1-S6, S8, S10-S12 (issue 2's must-show list).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import gg
from gg.prompts import ENDING_RULE_MARK
from gg.testing import ScriptedModel, call, text
from support import RunScripted, events_of, types_of


def test_finish_ends_the_session(run_scripted: RunScripted) -> None:
    result, model = run_scripted([call("finish", summary="  did it  ")])
    assert result.status == "ended" and result.exit_code == 0
    assert result.ending == gg.Finish(summary="did it")
    assert result.to_json()["ending"] == {"call": "finish", "summary": "did it"}
    model.assert_complete()
    t = types_of(result)
    assert t[0] == "run_started" and t[-1] == "run_ended"
    assert t.index("ending_declared") < t.index("gate_passed") < t.index("session_ended")


def test_prose_never_ends_a_session_and_trips_consecutive_errors(
    run_scripted: RunScripted,
) -> None:
    # S1, S6: "done" in prose is an error turn; three in a row stop the run.
    result, _ = run_scripted([text("Done! The task is complete."), text("done"), text("DONE")])
    assert result.status == "stopped" and result.exit_code == 1 and result.ending is None
    assert result.diagnosis is not None
    assert "replied with prose 3 times in a row; it never called a tool" in result.diagnosis
    evs = events_of(result)
    errors = [e for e in evs if e.type == "error_turn"]
    assert [e.kind for e in errors] == ["no_tool_call"] * 3
    tripped = [e for e in evs if e.type == "ceiling_tripped"]
    assert tripped[0].ceiling == "consecutive_errors"
    ended = [e for e in evs if e.type == "session_ended"][0]
    assert ended.ending is None and ended.ceiling == "consecutive_errors"


def test_error_rate_ceiling(run_scripted: RunScripted) -> None:
    # Alternating error / ok turns never hit 3 in a row but exceed 50% of a window of 10.
    replies = []
    for _ in range(6):
        replies += [text("thinking"), call("list_dir")]
    ceilings = {"error_window": 10, "error_rate": 0.4, "repeated_calls": 0}
    result, _ = run_scripted(replies, ceilings=ceilings)
    assert result.status == "stopped"
    tripped = [e for e in events_of(result) if e.type == "ceiling_tripped"][0]
    assert tripped.ceiling == "error_rate"
    assert "5 of the last 10 turns were error turns" in tripped.diagnosis


def test_each_role_is_offered_only_its_group(run_scripted: RunScripted) -> None:
    _, m1 = run_scripted([call("finish", summary="x")])
    assert "finish" in m1.calls[0][1]
    assert not {"approve", "request_changes"} & set(m1.calls[0][1])
    _, m2 = run_scripted([call("approve")], role="review")
    offered = set(m2.calls[0][1])
    assert {"approve", "request_changes"} <= offered and "finish" not in offered
    assert {"read_file", "list_dir", "search_text", "run_command"} <= offered
    assert "write_file" not in offered  # a reviewer cannot write to the workspace (issue 16)


def test_wrong_group_is_refused_before_shape(run_scripted: RunScripted) -> None:
    result, model = run_scripted([call("request_changes", items=[]), call("finish", summary="ok")])
    assert result.ending == gg.Finish(summary="ok")
    evs = events_of(result)
    refused = [e for e in evs if e.type == "ending_refused"][0]
    assert refused.reason == "unavailable" and "not the one to give verdicts" in refused.message
    assert [e.kind for e in evs if e.type == "error_turn"] == ["ending_refused"]
    # the model was told, in the tool result of its call
    fed_back = model.calls[1][0][-1]
    assert "not the one to give verdicts" in fed_back.content


def test_reviewer_finish_refused(run_scripted: RunScripted) -> None:
    result, _ = run_scripted([call("finish", summary="lgtm"), call("approve")], role="review")
    assert result.ending == gg.Approve()
    refused = [e for e in events_of(result) if e.type == "ending_refused"][0]
    assert "approve()" in refused.message and "request_changes(items)" in refused.message


def test_shapes_blank_summary_and_items(run_scripted: RunScripted) -> None:
    result, _ = run_scripted([call("finish", summary="   "), call("finish", summary="real")])
    assert result.ending == gg.Finish(summary="real")
    assert [e.reason for e in events_of(result) if e.type == "ending_refused"] == ["shape"]
    result, _ = run_scripted(
        [
            call("request_changes", items=[" ", ""]),
            call("request_changes", items=["  ", " fix x "]),
        ],
        role="review",
    )
    assert result.ending == gg.RequestChanges(items=("fix x",))
    assert result.to_json()["ending"] == {"call": "request_changes", "items": ["fix x"]}


def test_error_turn_kinds_with_feedback(run_scripted: RunScripted) -> None:
    replies = [
        text("no call"),
        call("nope"),
        gg.Reply(
            tool_calls=(
                gg.ToolCall(
                    name="read_file", arguments="{bad json", parse_error="Expecting property name"
                ),
            )
        ),
        call("read_file", wrong=1),
        call("finish", summary=""),
        call("finish", summary="ok"),
    ]
    result, model = run_scripted(replies, ceilings={"consecutive_errors": 10})
    assert result.status == "ended"
    errors = [e for e in events_of(result) if e.type == "error_turn"]
    assert [e.kind for e in errors] == [
        "no_tool_call",
        "unknown_tool",
        "bad_arguments",
        "bad_arguments",
        "ending_refused",
    ]
    assert "Every reply must call a tool" in errors[0].message
    assert "The tools offered are:" in errors[1].message and "finish" in errors[1].message
    assert "not a JSON object" in errors[2].message
    assert "path" in errors[3].message  # names the missing field
    assert "non-empty" in errors[4].message or "summary is empty" in errors[4].message


def test_two_endings_in_one_reply_last_wins(run_scripted: RunScripted) -> None:
    reply = gg.Reply(
        tool_calls=(
            gg.ToolCall(name="finish", arguments={"summary": "first"}),
            gg.ToolCall(name="finish", arguments={"summary": "second"}),
        )
    )
    result, _ = run_scripted([reply])
    assert result.ending == gg.Finish(summary="second")
    sup = [e for e in events_of(result) if e.type == "ending_superseded"]
    assert [e.count for e in sup] == [1]


def test_failure_in_the_same_reply_revokes(run_scripted: RunScripted) -> None:
    reply = gg.Reply(
        tool_calls=(
            gg.ToolCall(name="finish", arguments={"summary": "done"}),
            gg.ToolCall(name="read_file", arguments={"path": "missing.txt"}),
        )
    )
    result, _ = run_scripted([reply, call("finish", summary="really done")])
    assert result.ending == gg.Finish(summary="really done")
    revoked = [e for e in events_of(result) if e.type == "ending_revoked"]
    assert len(revoked) == 1 and revoked[0].call == "finish"


def test_rule_stated_once_in_system_prompt(run_scripted: RunScripted) -> None:
    # S10: the rule about revocation and endings appears once, in the system prompt.
    _, model = run_scripted([text("hi"), call("finish", summary="ok")])
    convo = model.calls[1][0]
    joined = [m.content for m in convo]
    assert sum(c.count(ENDING_RULE_MARK) for c in joined) == 1
    assert ENDING_RULE_MARK in convo[0].content and convo[0].role == "system"
    assert sum(c.count("revoked") for c in joined) == 1


def test_verdict_read_off_the_ending_not_prose(run_scripted: RunScripted) -> None:
    # S11: prose says approved; the call requests changes; the verdict is the call.
    reply = gg.Reply(
        text="Approved, looks great!",
        tool_calls=(gg.ToolCall(name="request_changes", arguments={"items": ["add a test"]}),),
    )
    result, _ = run_scripted([reply], role="review")
    assert result.ending == gg.RequestChanges(items=("add a test",))


def test_gate_blocks_then_passes_and_hook_sees_blocked_before(
    run_scripted: RunScripted,
    workspace: Path,
) -> None:
    # S12: the hook blocks until a file exists; the model fixes it and declares again.
    seen = workspace / "seen.jsonl"
    hook = (
        f'{sys.executable} -c "import json,sys,pathlib; e=json.load(sys.stdin); '
        f"open('{seen}','a').write(json.dumps(e)+'\\n'); "
        "sys.exit(0 if pathlib.Path('fixed.txt').exists() else "
        "(sys.stderr.write('tests fail: fixed.txt missing'), 2)[1])\""
    )
    result, model = run_scripted(
        [
            call("finish", summary="done"),
            call("write_file", path="fixed.txt", content="y"),
            call("finish", summary="done now"),
        ],
        # trusted: this hook writes a log into the workspace, which a sandboxed hook cannot
        hooks=[gg.CommandHook(command=hook, timeout_s=30, trusted=True)],
    )
    assert result.ending == gg.Finish(summary="done now")
    evs = events_of(result)
    blocked = [e for e in evs if e.type == "gate_blocked"]
    assert len(blocked) == 1 and "fixed.txt missing" in blocked[0].reason
    assert not blocked[0].failed
    assert any("fixed.txt missing" in m.content for m in model.calls[1][0])
    payloads = [json.loads(line) for line in seen.read_text().splitlines()]
    assert [p["blocked_before"] for p in payloads] == [0, 1]
    assert payloads[0]["event"] == "agent-stop" and payloads[0]["role"] == "standard"
    assert payloads[0]["ending"] == {"call": "finish", "summary": "done"}
    assert set(payloads[0]) == {
        *("event", "role", "ending", "session_id", "workspace", "blocked_before"),
        *("hook_event_name", "cwd", "stop_hook_active", "transcript_path"),
        "last_assistant_message",  # Claude Code's Stop fields (issue 13 item 3)
    }
    assert [p["stop_hook_active"] for p in payloads] == [False, True]


@pytest.mark.parametrize("hook_cmd", ["sleep 5", "no-such-command-gg-test"])
def test_broken_hook_blames_the_hook(run_scripted: RunScripted, hook_cmd: str) -> None:
    replies = [call("finish", summary=f"try {i}") for i in range(3)]
    result, _ = run_scripted(
        replies,
        hooks=[gg.CommandHook(command=hook_cmd, timeout_s=0.5)],
        ceilings={"gate_blocks": 3},
    )
    assert result.status == "stopped" and result.ending is None
    assert result.diagnosis is not None
    assert "is broken" in result.diagnosis and "not by the model's work" in result.diagnosis
    tripped = [e for e in events_of(result) if e.type == "ceiling_tripped"][0]
    assert tripped.ceiling == "gate_blocks"


def test_callable_hook_through_the_api(run_scripted: RunScripted) -> None:
    calls: list[int] = []

    def must_mention_tests(event: gg.StopEvent) -> str | None:
        calls.append(event.blocked_before)
        return None if "tests" in event.ending["summary"] else "say how you tested it"

    result, _ = run_scripted(
        [call("finish", summary="done"), call("finish", summary="done; tests pass")],
        hooks=[must_mention_tests],
    )
    assert result.ending == gg.Finish(summary="done; tests pass") and calls == [0, 1]


def test_max_turns_and_script_exhausted(run_scripted: RunScripted) -> None:
    result, _ = run_scripted([call("list_dir")] * 5, ceilings={"max_turns": 3})
    assert result.status == "stopped" and "3 turns" in (result.diagnosis or "")
    result, _ = run_scripted([call("list_dir")])
    assert result.status == "stopped"
    assert "no more replies" in (result.diagnosis or "")


def test_tools_really_run_in_the_workspace(run_scripted: RunScripted, workspace: Path) -> None:
    result, model = run_scripted(
        [
            call("write_file", path="src/a.txt", content="hello"),
            call("read_file", path="../outside.txt"),
            call("finish", summary="wrote a.txt"),
        ]
    )
    assert (workspace / "src" / "a.txt").read_text() == "hello"
    results = [e for e in events_of(result) if e.type == "tool_result"]
    assert results[1].ok is False  # an escape is a tool error, not a crash
    assert result.status == "ended"


def test_user_function_tool(run_scripted: RunScripted) -> None:
    def add(a: int, b: int) -> int:
        """Add two integers.

        Args:
            a: the first.
            b: the second.
        """
        return a + b

    result, model = run_scripted([call("add", a=2, b=3), call("finish", summary="5")], tools=[add])
    assert "add" in model.calls[0][1]
    assert model.calls[1][0][-1].content == "5"
    assert result.status == "ended"


def test_user_function_named_like_an_ending_is_refused(workspace: Path) -> None:
    def finish(summary: str) -> str:
        return summary

    with pytest.raises(gg.UserError, match="never registry tools"):
        gg.Agent(model=ScriptedModel([]), workspace=workspace, tools=[finish])


def test_failing_check_is_not_called_broken(run_scripted: RunScripted) -> None:
    # A check that blocks the way SPEC H1 says (exit 2, the reason on stderr) blocks, and
    # the diagnosis does not call the hook broken: the model's work is what fails the check.
    # (Exit 1 is the hook itself failing: tests/test_hook_outcome.py.)
    replies = [call("finish", summary=f"try {i}") for i in range(2)]
    result, _ = run_scripted(
        replies,
        hooks=[gg.CommandHook(command="echo '1 test failed' >&2; exit 2")],
        ceilings={"gate_blocks": 2},
    )
    assert result.status == "stopped" and result.diagnosis is not None
    assert "is broken" not in result.diagnosis and "1 test failed" in result.diagnosis


def test_resume_continues_the_same_session_in_its_own_workspace(
    workspace: Path,
    tmp_path: Path,
) -> None:
    import asyncio

    other = tmp_path / "worktree"
    other.mkdir()
    model = ScriptedModel(
        [
            call("write_file", path="a.txt", content="1"),
            call("finish", summary="first"),
            call("finish", summary="second"),
        ]
    )
    agent = gg.Agent(model=model, workspace=workspace)

    async def go() -> tuple[gg.SessionResult, gg.SessionResult, gg.Run]:
        run = agent.new_run()
        first = await run.session("implement", workspace=other)
        again = await run.session("address: fix x", resume=first, workspace=other)
        run.end("ended")
        return first, again, run

    first, again, run = asyncio.run(go())
    assert (other / "a.txt").read_text() == "1" and not (workspace / "a.txt").exists()
    assert again.session_id == first.session_id and again.ending == gg.Finish(summary="second")
    # the resumed conversation holds the first one, then the new message
    convo = model.calls[2][0]
    assert convo[1].content == "implement" and convo[-1].content == "address: fix x"
    starts = [e for e in gg.read_events(run.stream.path) if e.type == "session_started"]
    assert [s.resumed for s in starts] == [False, True]


def test_run_command_runs_in_the_sandbox(
    run_scripted: RunScripted, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 3 item 7: the built-in runs through the run's sandbox: the workspace is
    # writable, gg's secrets are not visible, the network is not reachable.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-canary-should-not-leak-123")
    result, model = run_scripted(
        [
            call("run_command", command="echo made > made.txt; echo key=${OPENAI_API_KEY:-none}"),
            call(
                "run_command",
                command='python3 -c "import socket; socket.create_connection('
                "('127.0.0.1', 9), timeout=2)\" || echo no-network",
            ),
            call("finish", summary="ok"),
        ]
    )
    assert result.status == "ended"
    assert (workspace / "made.txt").read_text().strip() == "made"
    first, second = (m.content for m in model.calls[2][0] if m.role == "tool")
    assert "key=none" in first and "sk-canary" not in first
    assert "no-network" in second


def test_budget_ceiling_counts_tokens_across_the_run(run_scripted: RunScripted) -> None:
    used = {
        "tool_calls": [{"name": "list_dir", "arguments": {}}],
        "usage": {"input_tokens": 400, "output_tokens": 100},
    }
    result, _ = run_scripted([used] * 5, ceilings={"max_tokens": 1200})
    assert result.status == "stopped" and result.ending is None
    tripped = next(e for e in events_of(result) if e.type == "ceiling_tripped")
    assert tripped.ceiling == "budget"
    assert "1500 tokens used, over the limit of 1200" in tripped.diagnosis
    turns = [e for e in events_of(result) if e.type == "turn"]
    assert len(turns) == 3 and turns[0].usage.input_tokens == 400
