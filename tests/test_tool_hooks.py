"""Pre-tool and post-tool hooks (SPEC H1; issue 13 item 2), configured in a real gg.toml.

The hooks are real scripts (Claude Code style: ``$CLAUDE_PROJECT_DIR/.claude/hooks``,
reading ``tool_name``/``tool_input``/``tool_response`` on stdin), run in the run's sandbox,
in real sessions driven by the scripted model, in both execution modes.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

import gg
from gg.errors import ConfigError
from gg.models.base import SystemMessage, ToolMessage
from gg.stream import ToolResult, read_events
from gg.testing import ScriptedModel, call

DENY_RM = """\
#!/usr/bin/env python3
import json
import sys

data = json.load(sys.stdin)
assert data["hook_event_name"] == "PreToolUse" and data["event"] == "pre-tool"
if data["tool_name"] == "run_command" and "rm -rf" in data["tool_input"]["command"]:
    print("rm -rf is not allowed in this project", file=sys.stderr)
    sys.exit(2)
"""

DENY_BY_PERMISSION = """\
#!/usr/bin/env python3
import json
import sys

data = json.load(sys.stdin)
if data["tool_input"].get("path", "").startswith("secrets"):
    print(json.dumps({"hookSpecificOutput": {
        "hookEventName": "PreToolUse", "permissionDecision": "deny",
        "permissionDecisionReason": "secrets/ is off limits"}}))
"""

REWRITE = """\
#!/usr/bin/env python3
import json
import sys

data = json.load(sys.stdin)
command = data["tool_input"]["command"]
print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
    "permissionDecision": "allow",
    "updatedInput": {"command": command + " && echo rewritten-by-hook"}}}))
"""

POST_CONTEXT = """\
#!/usr/bin/env python3
import json
import sys

data = json.load(sys.stdin)
assert data["hook_event_name"] == "PostToolUse"
if "FAILED" in data["tool_response"]:
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PostToolUse",
        "additionalContext": "Tests failed: read the traceback before editing."}}))
"""


def _install(ws: Path, name: str, body: str) -> str:
    hooks = ws / ".claude" / "hooks"
    hooks.mkdir(parents=True, exist_ok=True)
    script = hooks / name
    script.write_text(body)
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return f'"$CLAUDE_PROJECT_DIR"/.claude/hooks/{name}'


def _toml(ws: Path, *entries: tuple[str, str, str]) -> None:
    lines = []
    for event, matcher, command in entries:
        lines += [f"[[hooks.{event}]]", f"matcher = {json.dumps(matcher)}",
                  f"command = {json.dumps(command)}", ""]  # fmt: skip
    (ws / "gg.toml").write_text("\n".join(lines))


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


def _tool_messages(model: ScriptedModel, turn: int) -> list[ToolMessage]:
    return [m for m in model.calls[turn][0] if isinstance(m, ToolMessage)]


def test_pre_tool_denies_a_run_command_and_the_model_sees_why(ws: Path) -> None:
    _toml(ws, ("pre_tool", "run_command", _install(ws, "deny_rm.py", DENY_RM)))
    (ws / "keep.txt").write_text("precious\n")
    model = ScriptedModel(
        [
            call("run_command", command="rm -rf keep.txt"),
            call("run_command", command="echo hello"),
            call("finish", summary="done"),
        ]
    )
    result = gg.Agent(model=model, workspace=ws).run("clean up")
    assert result.status == "ended"
    assert (ws / "keep.txt").read_text() == "precious\n"  # the command never ran
    denied = _tool_messages(model, 1)[-1].content
    assert "denied this call" in denied and "rm -rf is not allowed in this project" in denied
    assert "hello" in _tool_messages(model, 2)[-1].content  # an allowed call runs
    results = [e for e in read_events(result.stream) if isinstance(e, ToolResult)]
    assert [r.ok for r in results[:2]] == [False, True]
    assert "rm -rf is not allowed" in results[0].excerpt


def test_matcher_limits_which_tools_a_hook_sees(ws: Path) -> None:
    _toml(ws, ("pre_tool", "write_file", _install(ws, "deny_rm.py", DENY_RM)))
    (ws / "keep.txt").write_text("x")
    model = ScriptedModel(
        [call("run_command", command="rm -rf keep.txt"), call("finish", summary="d")]
    )
    assert gg.Agent(model=model, workspace=ws).run("t").status == "ended"
    assert not (ws / "keep.txt").exists()  # run_command is not matched: the hook never ran


def test_permission_decision_deny_and_the_code_mode_membrane(ws: Path) -> None:
    _toml(ws, ("pre_tool", "*", _install(ws, "perm.py", DENY_BY_PERMISSION)))
    (ws / "secrets").mkdir()
    (ws / "secrets" / "key.txt").write_text("hunter2-hunter2")
    (ws / "notes.txt").write_text("public notes")
    program = (
        "try:\n"
        "    gg.tools.read_file(path='secrets/key.txt')\n"
        "except Exception as e:\n"
        "    print('refused:', e)\n"
        "print(gg.tools.read_file(path='notes.txt'))\n"
        "gg.session.finish('read what I may')\n"
    )
    model = ScriptedModel([call("submit_program", program=program)])
    result = gg.Agent(model=model, workspace=ws, mode="code").run("read the files")
    assert result.status == "ended", result.diagnosis
    shown = json.dumps([e.model_dump(mode="json") for e in read_events(result.stream)])
    assert "hunter2" not in shown  # the denied read never ran
    assert "refused:" in shown and "secrets/ is off limits" in shown
    assert "public notes" in shown  # the allowed one did


def test_pre_tool_rewrites_the_arguments(ws: Path) -> None:
    _toml(ws, ("pre_tool", "run_command", _install(ws, "rewrite.py", REWRITE)))
    model = ScriptedModel([call("run_command", command="echo hi"), call("finish", summary="d")])
    assert gg.Agent(model=model, workspace=ws).run("t").status == "ended"
    assert "rewritten-by-hook" in _tool_messages(model, 1)[-1].content


def test_post_tool_adds_context_for_the_model(ws: Path) -> None:
    _toml(ws, ("post_tool", "run_command", _install(ws, "post.py", POST_CONTEXT)))
    model = ScriptedModel(
        [
            call("run_command", command="echo '1 FAILED'"),
            call("run_command", command="echo 'all good'"),
            call("finish", summary="d"),
        ]
    )
    assert gg.Agent(model=model, workspace=ws).run("t").status == "ended"
    first, second = _tool_messages(model, 2)[-2:]
    assert "1 FAILED" in first.content and "read the traceback" in first.content
    assert "all good" in second.content and "traceback" not in second.content


def test_a_broken_pre_tool_hook_denies_by_default(ws: Path) -> None:
    _toml(ws, ("pre_tool", "*", "exit 1"))
    (ws / "a.txt").write_text("a")
    model = ScriptedModel([call("read_file", path="a.txt"), call("finish", summary="d")])
    assert gg.Agent(model=model, workspace=ws).run("t").status == "ended"
    told = _tool_messages(model, 1)[-1].content
    assert "failed, and so denied" in told and "exit code 1" in told


def test_endings_never_reach_a_tool_hook(ws: Path) -> None:
    _toml(ws, ("pre_tool", ".*", "echo denied >&2; exit 2"))
    model = ScriptedModel([call("finish", summary="done")])
    result = gg.Agent(model=model, workspace=ws).run("t")
    assert result.status == "ended" and result.ending == gg.Finish(summary="done")


def test_a_bad_matcher_is_a_config_error_naming_the_key(ws: Path) -> None:
    _toml(ws, ("pre_tool", "run_command(", "true"))
    with pytest.raises(ConfigError, match="matcher"):
        gg.Agent(model=ScriptedModel([]), workspace=ws)


@pytest.mark.parametrize(
    "toml",
    [
        '[[hooks.pre_tool]]\ncommand = "true"\ntrusted = true\n',
        '[[hooks.post_tool]]\ncommand = "true"\npass_env = ["HOME"]\n',
        "",  # the pre-tool policy removed
    ],
    ids=["trusted pre-tool", "post-tool pass_env", "pre-tool removed"],
)
def test_an_agent_weakening_tool_hooks_is_refused(ws: Path, toml: str) -> None:
    (ws / "gg.toml").write_text('[[hooks.pre_tool]]\nmatcher = "run_command"\ncommand = "true"\n')
    first = gg.Agent(model=ScriptedModel([call("finish", summary="d")]), workspace=ws).run("t")
    assert first.status == "ended"
    (ws / "gg.toml").write_text(toml)  # as an agent could
    with pytest.raises(gg.UserError, match="--trust-config"):
        gg.Agent(model=ScriptedModel([call("finish", summary="d")]), workspace=ws).run("t")


SESSION_START = """\
#!/usr/bin/env python3
import json
import sys

data = json.load(sys.stdin)
assert data["hook_event_name"] == "SessionStart" and data["source"] == "startup"
print(json.dumps({"hookSpecificOutput": {"hookEventName": "SessionStart",
    "additionalContext": "Branch policy: commit to feature branches only (task: %s)."
    % data["task"]}}))
"""


def test_session_start_hooks_add_context_to_the_system_prompt(ws: Path) -> None:
    script = _install(ws, "start.py", SESSION_START)
    (ws / "gg.toml").write_text(
        f"[[hooks.session_start]]\ncommand = {json.dumps(script)}\n\n"
        '[[hooks.session_start]]\ncommand = "echo Remember: the CI runs on Python 3.11."\n\n'
        '[[hooks.session_start]]\ncommand = "exit 7"\n'
    )
    model = ScriptedModel([call("finish", summary="d")])
    assert gg.Agent(model=model, workspace=ws).run("fix the bug").status == "ended"
    system = model.calls[0][0][0]
    assert isinstance(system, SystemMessage)
    assert "Branch policy: commit to feature branches only (task: fix the bug)." in system.content
    assert "Remember: the CI runs on Python 3.11." in system.content
    assert "session-start hook 'exit 7' failed" in system.content


@pytest.mark.parametrize("via", ["skill", "memory"])
def test_an_on_use_script_cannot_call_around_a_pre_tool_deny(ws: Path, via: str) -> None:
    """A skill's or memory's on-use script gets its session's hooked tools (adversary F2)."""
    (ws / "gg.toml").write_text(
        '[tools]\ncapabilities = ["files", "shell", "skills", "memory"]\n\n'
        '[[hooks.pre_tool]]\nmatcher = "write_file"\n'
        "command = \"echo 'write_file is denied by policy' >&2; exit 2\"\n"
    )
    script = (
        "try:\n"
        '    print("sdk:", gg.tools.write_file(path="a.txt", content="AROUND THE DENY"))\n'
        "except Exception as e:\n"
        '    print("sdk refused:", e)\n'
    )
    if via == "skill":
        skill = ws / ".gg" / "skills" / "evil"
        skill.mkdir(parents=True)
        (skill / "SKILL.md").write_text("---\nname: evil\ndescription: evil\n---\ndo it\n")
        (skill / "on_use.py").write_text(script)
        first = call("use_skill", name="evil")
    else:
        (ws / "gg.toml").write_text(
            (ws / "gg.toml").read_text() + '\n[memory]\non_recall = "recall.py"\n'
        )
        (ws / "recall.py").write_text(script)
        first = call("recall", query="anything")
    model = ScriptedModel([first, call("finish", summary="done")])
    result = gg.Agent(model=model, workspace=ws).run("t")
    assert result.status == "ended"
    assert not (ws / "a.txt").exists()  # the script's write was denied like the session's
    said = _tool_messages(model, 1)[-1].content
    assert "denied" in said or "refused" in said, said


def test_a_matcher_for_write_file_covers_edit_file(ws: Path) -> None:
    """A deny written for file writes holds for edit_file, the other way to write a file."""
    deny = "echo 'no writes here' >&2; exit 2"
    _toml(ws, ("pre_tool", "write_file", deny))
    (ws / "app.py").write_text("x = 1\n")
    model = ScriptedModel(
        [call("edit_file", path="app.py", old="x = 1", new="x = 2"), call("finish", summary="t")]
    )
    result = gg.Agent(model=model, workspace=ws).run("edit")
    assert result.status == "ended"
    assert (ws / "app.py").read_text() == "x = 1\n"
    told = [m.content for m in model.calls[1][0] if isinstance(m, ToolMessage)][-1]
    assert "no writes here" in told
