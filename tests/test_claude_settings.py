"""Hooks loaded from a Claude Code settings.json (SPEC H1; issue 13 item 3).

The settings file and its hook scripts are written as Claude Code users write them
(``$CLAUDE_PROJECT_DIR/.claude/hooks/...``, reading the Claude Code fields on stdin),
named from gg.toml's ``[hooks] claude_settings``, and run unchanged in real sessions
driven by the scripted model: Stop, SubagentStop, PreToolUse, PostToolUse, SessionStart.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

import gg
from gg.claude_settings import claude_hooks
from gg.config import load_settings
from gg.errors import ConfigError
from gg.models.base import SystemMessage, ToolMessage
from gg.stream import GatePassed, read_events
from gg.testing import ScriptedModel, call

STOP_ONCE = """\
#!/usr/bin/env python3
import json, sys
data = json.load(sys.stdin)
if data["hook_event_name"] == "Stop" and not data["stop_hook_active"]:
    print(json.dumps({"decision": "block", "reason": "root: run the tests first"}))
"""

SUBAGENT_ONCE = """\
#!/usr/bin/env python3
import json, sys
data = json.load(sys.stdin)
if data["hook_event_name"] == "SubagentStop" and not data["stop_hook_active"]:
    print("subagent: say what you changed", file=sys.stderr)
    sys.exit(2)
"""

DENY_RM = """\
#!/usr/bin/env python3
import json, sys
data = json.load(sys.stdin)
if "rm -rf" in data["tool_input"].get("command", ""):
    print("no rm -rf here", file=sys.stderr)
    sys.exit(2)
"""

POST = """\
#!/usr/bin/env python3
import json
print(json.dumps({"hookSpecificOutput": {"hookEventName": "PostToolUse",
      "additionalContext": "post-tool note from settings.json"}}))
"""

START = """\
#!/usr/bin/env python3
import json
print(json.dumps({"hookSpecificOutput": {"hookEventName": "SessionStart",
      "additionalContext": "session-start note from settings.json"}}))
"""


def _script(ws: Path, name: str, body: str) -> str:
    hooks = ws / ".claude" / "hooks"
    hooks.mkdir(parents=True, exist_ok=True)
    (hooks / name).write_text(body)
    (hooks / name).chmod((hooks / name).stat().st_mode | stat.S_IXUSR | stat.S_IXOTH)
    return f'"$CLAUDE_PROJECT_DIR"/.claude/hooks/{name}'


def _group(command: str, matcher: str | None = None) -> dict[str, object]:
    group: dict[str, object] = {"hooks": [{"type": "command", "command": command, "timeout": 30}]}
    if matcher is not None:
        group["matcher"] = matcher
    return group


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    settings = {
        "permissions": {"allow": ["Bash(npm test:*)"]},  # other keys: ignored
        "hooks": {
            "Stop": [_group(_script(path, "stop.py", STOP_ONCE))],
            "SubagentStop": [_group(_script(path, "sub.py", SUBAGENT_ONCE))],
            "PreToolUse": [_group(_script(path, "deny.py", DENY_RM), "Bash")],
            "PostToolUse": [_group(_script(path, "post.py", POST), "Edit|Write")],
            "SessionStart": [_group(_script(path, "start.py", START), "startup")],
            "Notification": [_group("true")],
        },
    }
    (path / ".claude" / "settings.json").write_text(json.dumps(settings))
    (path / "gg.toml").write_text(
        '[hooks]\nclaude_settings = [".claude/settings.json"]\n'
        '[tools]\ncapabilities = ["files", "shell", "agents"]\n'
    )
    return path


def _said(model: ScriptedModel, turn: int) -> str:
    return "\n".join(
        str(m.content) for m in model.calls[turn][0] if not isinstance(m, SystemMessage)
    )


def test_the_settings_hooks_become_gg_hooks(ws: Path) -> None:
    hooks = load_settings(workspace=ws).hooks
    assert [(h.sessions, h.on_error, h.timeout_s) for h in hooks.agent_stop] == [
        ("root", "pass", 30.0),
        ("subagents", "pass", 30.0),
    ]
    assert [h.matcher for h in hooks.pre_tool] == ["run_command"]
    assert [h.matcher for h in hooks.post_tool] == ["edit_file|write_file"]
    assert len(hooks.session_start) == 1


def test_stop_pre_post_and_session_start_run_as_in_claude_code(ws: Path) -> None:
    (ws / "keep.txt").write_text("keep")
    model = ScriptedModel(
        [
            call("run_command", command="rm -rf keep.txt"),
            call("write_file", path="a.txt", content="x"),
            call("finish", summary="first"),
            call("finish", summary="second"),
        ]
    )
    result = gg.Agent(model=model, workspace=ws).run("tidy up")
    assert result.status == "ended" and result.ending == gg.Finish(summary="second")
    assert (ws / "keep.txt").exists()
    system = [m for m in model.calls[0][0] if isinstance(m, SystemMessage)][0].content
    assert "session-start note from settings.json" in system
    tools = [m.content for m in model.calls[2][0] if isinstance(m, ToolMessage)]
    assert "no rm -rf here" in tools[0]
    assert "post-tool note from settings.json" in tools[1]
    assert "root: run the tests first" in _said(model, 3)  # Stop blocked once, then let it end


def test_subagent_stop_checks_subagents_and_stop_the_root(ws: Path) -> None:
    model = ScriptedModel(
        [
            call("spawn", task="make b.txt"),  # root
            call("finish", summary="sub first"),  # subagent: SubagentStop blocks
            call("finish", summary="sub done"),  # subagent: passes (stop_hook_active)
            call("finish", summary="root first"),  # root: Stop blocks once
            call("finish", summary="root done"),
        ]
    )
    result = gg.Agent(model=model, workspace=ws).run("delegate")
    assert result.status == "ended" and result.ending == gg.Finish(summary="root done")
    assert "subagent: say what you changed" in _said(model, 2)
    assert "root: run the tests first" not in _said(model, 2)
    assert "sub done" in _said(model, 3)  # the spawn's result
    assert "root: run the tests first" in _said(model, 4)
    passed = [e for e in read_events(result.stream) if isinstance(e, GatePassed)]
    assert [(e.session_id, e.hooks) for e in passed] == [("s2", 1), ("s1", 1)]  # one hook each


def test_exit_1_lets_the_stop_through_unless_block_is_chosen(ws: Path) -> None:
    settings = {"hooks": {"Stop": [_group("exit 1")]}}
    (ws / ".claude" / "settings.json").write_text(json.dumps(settings))
    model = ScriptedModel([call("finish", summary="d")])
    assert gg.Agent(model=model, workspace=ws).run("t").status == "ended"  # Claude Code's way
    toml = '[hooks]\nclaude_settings = [".claude/settings.json"]\nclaude_on_error = "block"\n'
    (ws / "gg.toml").write_text(toml)
    model = ScriptedModel([call("finish", summary="d"), call("finish", summary="d")])
    result = gg.Agent(model=model, workspace=ws, trust_config=True).run("t")
    assert result.status == "stopped"  # blocked every time until the gate_blocks ceiling


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ([], "JSON object"),
        ({"hooks": {"Stop": {"hooks": []}}}, "list of matcher groups"),
        ({"hooks": {"Stop": [{"matcher": ""}]}}, "list of hooks"),
        ({"hooks": {"Stop": [{"hooks": [{"type": "prompt", "prompt": "x"}]}]}}, "only command"),
        ({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": ""}]}]}}, "non-empty"),
        (
            {"hooks": {"PreToolUse": [{"matcher": 3, "hooks": [{"command": "true"}]}]}},
            "matcher must be",
        ),
    ],
)
def test_a_malformed_settings_file_is_a_config_error(data: object, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        claude_hooks(data, source="settings.json", on_error="pass")


def test_a_missing_or_linked_settings_file_is_a_config_error(ws: Path, tmp_path: Path) -> None:
    (ws / ".claude" / "settings.json").unlink()
    with pytest.raises(ConfigError, match="settings.json"):
        load_settings(workspace=ws)
    (tmp_path / "elsewhere.json").write_text("{}")
    (ws / ".claude" / "settings.json").symlink_to(tmp_path / "elsewhere.json")
    with pytest.raises(ConfigError, match="symbolic link"):
        load_settings(workspace=ws)


def test_a_changed_settings_file_removing_a_stop_hook_is_refused(ws: Path) -> None:
    model = ScriptedModel([call("finish", summary="a"), call("finish", summary="b")])
    assert gg.Agent(model=model, workspace=ws).run("t").status == "ended"
    (ws / ".claude" / "settings.json").write_text(json.dumps({"hooks": {}}))  # as an agent could
    with pytest.raises(gg.UserError, match="--trust-config"):
        gg.Agent(model=ScriptedModel([call("finish", summary="d")]), workspace=ws).run("t")


def test_loading_twice_adds_nothing(ws: Path) -> None:
    settings = load_settings(workspace=ws)
    agent = gg.Agent(model=ScriptedModel([]), workspace=ws, settings=settings)
    assert agent.settings.hooks == settings.hooks


def test_narrowing_a_stop_hook_to_subagents_is_refused(tmp_path: Path) -> None:
    ws = tmp_path / "w"
    ws.mkdir()
    (ws / "gg.toml").write_text('[[hooks.agent_stop]]\ncommand = "true"\n')
    first = gg.Agent(model=ScriptedModel([call("finish", summary="d")]), workspace=ws).run("t")
    assert first.status == "ended"
    (ws / "gg.toml").write_text('[[hooks.agent_stop]]\ncommand = "true"\nsessions = "subagents"\n')
    with pytest.raises(gg.UserError, match="--trust-config"):
        gg.Agent(model=ScriptedModel([call("finish", summary="d")]), workspace=ws).run("t")


def test_a_callable_hook_can_check_subagents_only(tmp_path: Path) -> None:
    ws = tmp_path / "w"
    ws.mkdir()
    (ws / "gg.toml").write_text('[tools]\ncapabilities = ["files", "agents"]\n')
    seen: list[tuple[str, bool]] = []

    def check(event: gg.StopEvent) -> str | None:
        seen.append((event.session_id, event.subagent))
        return None if event.blocked_before else "subagents explain themselves"

    hook = gg.CallableHook(fn=check, sessions="subagents")
    model = ScriptedModel(
        [
            call("spawn", task="sub"),
            call("finish", summary="sub 1"),
            call("finish", summary="sub 2"),
            call("finish", summary="root"),
        ]
    )
    result = gg.Agent(model=model, workspace=ws, hooks=[hook]).run("t")
    assert result.status == "ended" and result.ending == gg.Finish(summary="root")
    assert seen == [("s2", True), ("s2", True)]  # never the root session
    assert "subagents explain themselves" in _said(model, 2)
