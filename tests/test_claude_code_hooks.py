"""Claude Code Stop hooks run unchanged in gg (issue 13 item 3, SPEC H1, S12).

Each hook is written as users write them for Claude Code: a script under ``.claude/hooks``
named through ``$CLAUDE_PROJECT_DIR``, reading Claude Code's stdin fields
(``stop_hook_active``, ``transcript_path``, ``session_id``, ``hook_event_name``, ``cwd``)
and answering with exit 2 + stderr, ``{"decision": "block"}``, ``{"continue": false}`` or
``hookSpecificOutput.additionalContext``. They run in the run's sandbox (the default),
in real sessions driven by the scripted model.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

import gg
from gg.config import HookSettings
from gg.hooks import CommandHook
from gg.models.base import UserMessage
from gg.stream import GateBlocked, GatePassed, SessionEnded, read_events
from gg.testing import ScriptedModel, call

STOP_ONCE = """\
#!/usr/bin/env python3
import json
import sys

data = json.load(sys.stdin)
if data.get("stop_hook_active"):
    sys.exit(0)  # already sent back once: let it stop
print(json.dumps({"decision": "block", "reason": "Double-check the edge cases first."}))
"""

NEEDS_TESTS_IN_TRANSCRIPT = """\
#!/usr/bin/env python3
import json
import sys

data = json.load(sys.stdin)
assert data["hook_event_name"] == "Stop"
assert data["cwd"] and data["session_id"]
active = data["stop_hook_active"]
ran_tests = False
with open(data["transcript_path"]) as transcript:
    for line in transcript:
        entry = json.loads(line)
        if entry["type"] != "assistant":
            continue
        for block in entry["message"]["content"]:
            if block["type"] == "tool_use" and block["name"] == "run_command":
                ran_tests = ran_tests or "unittest" in block["input"]["command"]
if not ran_tests:
    print("You have not run the tests (stop_hook_active=%s)." % active, file=sys.stderr)
    sys.exit(2)
"""

NEEDS_DONE_FILE = """\
#!/bin/bash
input=$(cat)
case "$input" in
  *'"hook_event_name": "Stop"'*) ;;
  *) echo "not a Stop event: $input" >&2; exit 1 ;;
esac
if [ ! -f "$CLAUDE_PROJECT_DIR/DONE" ]; then
  echo "Write the DONE file in $CLAUDE_PROJECT_DIR before you stop." >&2
  exit 2
fi
exit 0
"""

STOPS_THE_RUN = """\
#!/usr/bin/env python3
import json
import sys

json.load(sys.stdin)
print(json.dumps({"continue": False, "stopReason": "Nightly freeze: no more changes today."}))
"""

BLOCKS_WITH_CONTEXT = """\
#!/usr/bin/env python3
import json
import sys

data = json.load(sys.stdin)
if data.get("stop_hook_active"):
    sys.exit(0)
print(json.dumps({
    "decision": "block",
    "reason": "Update the changelog.",
    "hookSpecificOutput": {"hookEventName": "Stop",
                           "additionalContext": "The changelog is CHANGES.md, newest first."},
}))
"""


def _install(workspace: Path, name: str, body: str) -> str:
    hooks = workspace / ".claude" / "hooks"
    hooks.mkdir(parents=True, exist_ok=True)
    script = hooks / name
    script.write_text(body)
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return f'"$CLAUDE_PROJECT_DIR"/.claude/hooks/{name}'


def _agent(workspace: Path, model: ScriptedModel, command: str, **extra: object) -> gg.Agent:
    hook = CommandHook.from_settings(HookSettings(command=command))
    return gg.Agent(model=model, workspace=workspace, hooks=[hook], **extra)  # type: ignore[arg-type]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "project"
    ws.mkdir()
    return ws


def test_a_hook_that_blocks_only_once_blocks_once_then_passes(workspace: Path) -> None:
    command = _install(workspace, "stop_once.py", STOP_ONCE)
    model = ScriptedModel([call("finish", summary="first"), call("finish", summary="second")])
    result = _agent(workspace, model, command).run("do the task")
    assert result.status == "ended" and result.ending == gg.Finish(summary="second")
    events = list(read_events(result.stream))
    blocked = [e for e in events if isinstance(e, GateBlocked)]
    assert [e.reason for e in blocked] == ["Double-check the edge cases first."]
    assert not blocked[0].failed
    assert sum(isinstance(e, GatePassed) for e in events) == 1


def test_a_hook_reading_the_transcript_sees_the_session_so_far(workspace: Path) -> None:
    command = _install(workspace, "needs_tests.py", NEEDS_TESTS_IN_TRANSCRIPT)
    model = ScriptedModel(
        [
            call("finish", summary="done without testing"),
            call("run_command", command="python3 -m unittest -q 2>&1; echo ran"),
            call("finish", summary="done, tested"),
        ]
    )
    result = _agent(workspace, model, command).run("do the task")
    assert result.status == "ended" and result.ending == gg.Finish(summary="done, tested")
    blocked = [e for e in read_events(result.stream) if isinstance(e, GateBlocked)]
    assert len(blocked) == 1 and not blocked[0].failed
    assert blocked[0].reason == "You have not run the tests (stop_hook_active=False)."
    # the model was told why
    told = [m.content for m in model.calls[1][0] if isinstance(m, UserMessage)]
    assert any("You have not run the tests" in t for t in told)
    # the transcript is gg's, outside the workspace, in the documented format
    assert not list(workspace.rglob("*.jsonl"))
    transcript = result.stream.parent / "transcripts" / f"{blocked[0].session_id}.jsonl"
    records = [json.loads(line) for line in transcript.read_text().splitlines()]
    assert [r["type"] for r in records[:2]] == ["system", "user"]
    uses = [
        b["name"]
        for r in records
        if r["type"] == "assistant"
        for b in r["message"]["content"]
        if b["type"] == "tool_use"
    ]
    assert uses == ["finish", "run_command", "finish"]
    outputs = [
        b["content"]
        for r in records
        if r["type"] == "user" and isinstance(r["message"]["content"], list)
        for b in r["message"]["content"]
        if b["type"] == "tool_result" and b["name"] == "run_command"
    ]
    assert len(outputs) == 1 and "ran" in outputs[0]


def test_a_bash_hook_under_claude_project_dir_blocks_by_exit_2(workspace: Path) -> None:
    command = _install(workspace, "check.sh", NEEDS_DONE_FILE)
    model = ScriptedModel(
        [
            call("finish", summary="early"),
            call("write_file", path="DONE", content="yes\n"),
            call("finish", summary="done"),
        ]
    )
    result = _agent(workspace, model, command).run("do the task")
    assert result.status == "ended", result.diagnosis
    blocked = [e for e in read_events(result.stream) if isinstance(e, GateBlocked)]
    assert [e.reason for e in blocked] == [f"Write the DONE file in {workspace} before you stop."]


def test_changing_a_claude_project_dir_script_during_the_run_is_caught(workspace: Path) -> None:
    command = _install(workspace, "check.sh", NEEDS_DONE_FILE)
    model = ScriptedModel(
        [
            call("run_command", command="printf '#!/bin/sh\\nexit 0\\n' > .claude/hooks/check.sh"),
            call("finish", summary="done"),
            call("finish", summary="done"),
        ]
    )
    result = _agent(workspace, model, command, ceilings={"gate_blocks": 2}).run("do the task")
    assert result.status == "stopped" and result.ending is None


def test_continue_false_stops_the_run_with_the_reason_as_diagnosis(workspace: Path) -> None:
    command = _install(workspace, "freeze.py", STOPS_THE_RUN)
    model = ScriptedModel([call("finish", summary="done"), call("finish", summary="again")])
    result = _agent(workspace, model, command).run("do the task")
    assert result.status == "stopped" and result.ending is None
    assert result.diagnosis is not None
    assert "Nightly freeze: no more changes today." in result.diagnosis
    assert "freeze.py" in result.diagnosis and "stopped the run" in result.diagnosis
    assert model.remaining == 1  # the session did not go on
    events = list(read_events(result.stream))
    ended = [e for e in events if isinstance(e, SessionEnded)]
    assert ended[-1].ending is None and ended[-1].ceiling is None
    assert not any(isinstance(e, GatePassed) for e in events)


def test_additional_context_goes_to_the_model_with_the_block(workspace: Path) -> None:
    command = _install(workspace, "changelog.py", BLOCKS_WITH_CONTEXT)
    model = ScriptedModel([call("finish", summary="done"), call("finish", summary="done")])
    result = _agent(workspace, model, command).run("do the task")
    assert result.status == "ended"
    told = [m.content for m in model.calls[1][0] if isinstance(m, UserMessage)][-1]
    assert "Update the changelog." in told
    assert "The changelog is CHANGES.md, newest first." in told
