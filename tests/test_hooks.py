"""Agent-stop hooks and the ending gate with real shell commands (SPEC S12, H1, §10)."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from gg.endings import Finish, RequestChanges, Role
from gg.errors import UserError
from gg.hooks import CallableHook, CommandHook, Gate, HookOutcome, StopEvent


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


def event(workspace: Path, role: Role = Role.STANDARD, blocked_before: int = 0) -> StopEvent:
    ending = Finish(summary="Did it.") if role is Role.STANDARD else RequestChanges(items=("a",))
    return StopEvent.for_ending(
        ending, role=role, session_id="s-1", workspace=workspace, blocked_before=blocked_before
    )


async def one(hook: CommandHook | CallableHook, ev: StopEvent) -> HookOutcome:
    result = await Gate([hook]).check(ev)
    assert len(result.outcomes) == 1
    outcome = result.outcomes[0]
    assert result.passed == (outcome.decision == "pass")
    assert result.blocking == (None if result.passed else outcome)
    return outcome


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


# ---------------------------------------------------------------- the event


def test_stop_event_json_is_the_spec_object_and_claude_codes(workspace: Path) -> None:
    assert event(workspace, blocked_before=3).as_json() == {
        "event": "agent-stop",
        "role": "standard",
        "ending": {"call": "finish", "summary": "Did it."},
        "session_id": "s-1",
        "workspace": str(workspace),
        "blocked_before": 3,
        # Claude Code's Stop hook fields (issue 13 item 3)
        "hook_event_name": "Stop",
        "cwd": str(workspace),
        "stop_hook_active": True,
        "transcript_path": None,
        "last_assistant_message": "",
    }
    assert event(workspace).as_json()["stop_hook_active"] is False
    assert event(workspace, Role.REVIEW).as_json()["ending"] == {
        "call": "request_changes",
        "items": ["a"],
    }


async def test_command_gets_the_event_on_stdin_in_the_workspace(workspace: Path) -> None:
    ev = event(workspace, Role.REVIEW, blocked_before=2)
    outcome = await one(CommandHook(command="cat > seen.json"), ev)
    assert outcome == HookOutcome(
        hook="cat > seen.json", decision="pass", exit_code=0, seconds=outcome.seconds
    )
    seen = json.loads((workspace / "seen.json").read_text())
    assert seen == ev.as_json()
    assert set(seen) == {
        *("event", "role", "ending", "session_id", "workspace", "blocked_before"),
        *("hook_event_name", "cwd", "stop_hook_active", "transcript_path"),
        "last_assistant_message",
    }


# ---------------------------------------------------------------- command answers


async def test_exit_0_passes_even_with_prose_on_stdout(workspace: Path) -> None:
    outcome = await one(CommandHook(command="echo '3 passed'; exit 0"), event(workspace))
    assert (outcome.decision, outcome.failed, outcome.reason) == ("pass", False, "")


async def test_exit_2_blocks_with_stderr(workspace: Path) -> None:
    hook = CommandHook(command="echo noise; echo '  tests fail: test_x  ' >&2; exit 2")
    outcome = await one(hook, event(workspace))
    assert (outcome.decision, outcome.failed, outcome.exit_code) == ("block", False, 2)
    assert outcome.reason == "tests fail: test_x"


async def test_exit_2_with_no_output(workspace: Path) -> None:
    outcome = await one(CommandHook(command="exit 2"), event(workspace))
    assert (outcome.decision, outcome.reason, outcome.failed) == (
        "block",
        "exit 2 with no reason",
        False,
    )


async def test_exit_2_reason_falls_back_to_stdout(workspace: Path) -> None:
    outcome = await one(CommandHook(command="echo '1 failed'; exit 2"), event(workspace))
    assert outcome.reason == "1 failed"


async def test_json_block_decision_on_stdout(workspace: Path) -> None:
    answer = json.dumps({"decision": "block", "reason": "add a test for the edge case"})
    hook = CommandHook(command=f"echo checking; echo {shlex.quote(answer)}")
    outcome = await one(hook, event(workspace))
    assert (outcome.decision, outcome.failed) == ("block", False)
    assert outcome.reason == "add a test for the edge case"


async def test_json_pass_and_unknown_decisions(workspace: Path) -> None:
    ok = CommandHook(command="""echo '{"decision": "pass"}'""")
    assert (await one(ok, event(workspace))).decision == "pass"
    odd = CommandHook(command="""echo '{"decision": "maybe"}'""")
    outcome = await one(odd, event(workspace))
    assert (outcome.decision, outcome.failed) == ("block", True)
    assert "unknown decision 'maybe'" in outcome.reason


async def test_reasons_are_capped_to_their_tail(workspace: Path) -> None:
    hook = CommandHook(command="seq 1 20000 >&2; exit 2")
    outcome = await one(hook, event(workspace))
    assert len(outcome.reason) < 4_100
    assert outcome.reason.endswith("20000") and "characters cut …]\n" in outcome.reason


# ---------------------------------------------------------------- failures


async def test_exit_1_is_a_failure_that_blocks_with_the_output(workspace: Path) -> None:
    hook = CommandHook(command="echo 'FAILED test_a'; echo boom >&2; exit 1")
    outcome = await one(hook, event(workspace))
    assert (outcome.decision, outcome.failed, outcome.exit_code) == ("block", True, 1)
    assert "failed with exit code 1" in outcome.reason
    assert "FAILED test_a" in outcome.reason and "boom" in outcome.reason


async def test_command_not_found(workspace: Path) -> None:
    outcome = await one(CommandHook(command="gg-no-such-command-xyz"), event(workspace))
    assert (outcome.decision, outcome.failed, outcome.exit_code) == ("block", True, 127)
    assert "command not found" in outcome.reason


async def test_missing_workspace_is_a_failure(tmp_path: Path) -> None:
    outcome = await one(CommandHook(command="true"), event(tmp_path / "gone"))
    assert (outcome.decision, outcome.failed) == ("block", True)
    assert "could not start" in outcome.reason


async def test_timeout_blocks_by_default_and_kills_the_group(workspace: Path) -> None:
    hook = CommandHook(command="sleep 30 & echo $! > bg.pid; sleep 30", timeout_s=0.3)
    start = time.monotonic()
    outcome = await one(hook, event(workspace))
    assert time.monotonic() - start < 5
    assert (outcome.decision, outcome.failed, outcome.exit_code) == ("block", True, None)
    assert outcome.reason == f"hook {hook.command!r} timed out after 0.3 s"
    pid = int((workspace / "bg.pid").read_text())
    for _ in range(100):
        if not alive(pid):
            break
        await asyncio.sleep(0.02)
    assert not alive(pid)


async def test_timeout_does_not_wait_on_pipes_an_escaped_grandchild_holds(
    workspace: Path,
) -> None:
    hook = CommandHook(command="setsid sleep 3 & echo $! > esc.pid; sleep 30", timeout_s=0.3)
    start = time.monotonic()
    outcome = await one(hook, event(workspace))
    assert time.monotonic() - start < 2.5
    assert outcome.failed
    pid = int((workspace / "esc.pid").read_text())
    if alive(pid):  # setsid escaped the group on purpose; clean up what this test started
        os.kill(pid, signal.SIGKILL)


async def test_on_error_pass_passes_but_records_the_failure(workspace: Path) -> None:
    hook = CommandHook(command="sleep 30", timeout_s=0.3, on_error="pass")
    outcome = await one(hook, event(workspace))
    assert (outcome.decision, outcome.failed) == ("pass", True)
    assert "timed out after 0.3 s" in outcome.reason
    crash = CommandHook(command="exit 1", on_error="pass")
    outcome = await one(crash, event(workspace))
    assert (outcome.decision, outcome.failed) == ("pass", True)


async def test_command_hook_environment_is_scrubbed(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-fake")
    monkeypatch.setenv("GG_HOOK_DB", "db-url")
    hook = CommandHook(command="env > env.txt", pass_env=("GG_HOOK_DB",))
    assert (await one(hook, event(workspace))).decision == "pass"
    seen = (workspace / "env.txt").read_text()
    assert "sk-ant-fake" not in seen and "GG_HOOK_DB=db-url" in seen


# ---------------------------------------------------------------- roles and order


async def test_roles_filter_which_hooks_run(workspace: Path) -> None:
    review_only = CommandHook(command="exit 2", roles=("review",))  # type: ignore[arg-type]
    assert review_only.roles == (Role.REVIEW,)
    gate = Gate([review_only])
    standard = await gate.check(event(workspace, Role.STANDARD))
    assert (standard.passed, standard.outcomes, standard.blocking) == (True, (), None)
    review = await gate.check(event(workspace, Role.REVIEW))
    assert not review.passed and review.blocking is not None


async def test_first_block_stops_later_hooks(workspace: Path) -> None:
    gate = Gate(
        [
            CommandHook(command="touch first"),
            CommandHook(command="echo nope >&2; exit 2"),
            CommandHook(command="touch third"),
        ]
    )
    result = await gate.check(event(workspace))
    assert not result.passed
    assert [o.decision for o in result.outcomes] == ["pass", "block"]
    assert result.blocking is result.outcomes[1] and result.blocking.reason == "nope"
    assert (workspace / "first").exists() and not (workspace / "third").exists()


async def test_all_pass(workspace: Path) -> None:
    result = await Gate([CommandHook(command="true"), CallableHook(fn=lambda e: None)]).check(
        event(workspace)
    )
    assert result.passed and len(result.outcomes) == 2 and result.blocking is None


def test_bad_hook_settings_are_user_errors() -> None:
    with pytest.raises(UserError, match="roles"):
        CommandHook(command="true", roles=("boss",))  # type: ignore[arg-type]
    with pytest.raises(UserError, match="on_error"):
        CommandHook(command="true", on_error="maybe")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="timeout_s"):
        CommandHook(command="true", timeout_s=0)
    with pytest.raises(UserError, match="non-empty command"):
        CommandHook(command="  ")
    with pytest.raises(UserError, match="CommandHook or CallableHook"):
        Gate(["pytest"])  # type: ignore[list-item]


# ---------------------------------------------------------------- callable hooks


@pytest.mark.parametrize(
    ("answer", "decision", "reason"),
    [
        (None, "pass", ""),
        (True, "pass", ""),
        ({"decision": "pass"}, "pass", ""),
        ("run the linter first", "block", "run the linter first"),
        ({"decision": "block", "reason": "no tests"}, "block", "no tests"),
        (False, "block", "hook 'judge' blocked the ending without giving a reason"),
    ],
)
async def test_sync_callable_answers(
    workspace: Path, answer: Any, decision: str, reason: str
) -> None:
    seen: list[StopEvent] = []

    def judge(ev: StopEvent) -> Any:
        seen.append(ev)
        return answer

    ev = event(workspace)
    outcome = await one(CallableHook(fn=judge, name="judge"), ev)
    assert (outcome.decision, outcome.reason, outcome.failed) == (decision, reason, False)
    assert seen == [ev]


async def test_async_callable_and_default_name(workspace: Path) -> None:
    async def needs_summary(ev: StopEvent) -> str | None:
        await asyncio.sleep(0)
        return None if "tests" in ev.ending["summary"] else "say how you tested it"

    outcome = await one(CallableHook(fn=needs_summary), event(workspace))
    assert outcome.hook.endswith("needs_summary")
    assert (outcome.decision, outcome.reason) == ("block", "say how you tested it")


async def test_callable_object_with_async_call(workspace: Path) -> None:
    class Check:
        async def __call__(self, ev: StopEvent) -> bool:
            return ev.blocked_before > 0

    hook = CallableHook(fn=Check(), name="check")
    assert (await one(hook, event(workspace, blocked_before=0))).decision == "block"
    assert (await one(hook, event(workspace, blocked_before=1))).decision == "pass"


async def test_callable_exception_is_a_failure(workspace: Path) -> None:
    def broken(ev: StopEvent) -> None:
        raise RuntimeError("db down")

    outcome = await one(CallableHook(fn=broken), event(workspace))
    assert (outcome.decision, outcome.failed) == ("block", True)
    assert "raised RuntimeError: db down" in outcome.reason
    lenient = await one(CallableHook(fn=broken, on_error="pass"), event(workspace))
    assert (lenient.decision, lenient.failed) == ("pass", True)


async def test_callable_timeouts(workspace: Path) -> None:
    async def slow_async(ev: StopEvent) -> None:
        await asyncio.sleep(30)

    def slow_sync(ev: StopEvent) -> None:
        time.sleep(0.6)

    for fn in (slow_async, slow_sync):
        start = time.monotonic()
        outcome = await one(CallableHook(fn=fn, name="slow", timeout_s=0.2), event(workspace))
        assert time.monotonic() - start < 0.55
        assert (outcome.decision, outcome.failed) == ("block", True)
        assert outcome.reason == "hook 'slow' timed out after 0.2 s"


async def test_callable_nonsense_answer_is_a_failure(workspace: Path) -> None:
    def nonsense(ev: StopEvent) -> Any:
        return 42

    outcome = await one(CallableHook(fn=nonsense, name="n"), event(workspace))
    assert (outcome.decision, outcome.failed) == ("block", True)
    assert "answered int" in outcome.reason


async def test_python_command_hook_reads_blocked_before(workspace: Path) -> None:
    script = workspace / "hook.py"
    script.write_text(
        "import json, sys\n"
        "e = json.load(sys.stdin)\n"
        "if e['blocked_before'] < 1:\n"
        "    print('not yet: ' + e['ending']['summary'], file=sys.stderr); sys.exit(2)\n"
    )
    hook = CommandHook(command=f"{shlex.quote(sys.executable)} hook.py")
    first = await one(hook, event(workspace, blocked_before=0))
    assert (first.decision, first.reason) == ("block", "not yet: Did it.")
    assert (await one(hook, event(workspace, blocked_before=1))).decision == "pass"
