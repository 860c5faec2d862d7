"""gg.toml: defaults, validation naming the key, endings never registry tools (SPEC C1, §10)."""

from __future__ import annotations

from pathlib import Path

import pytest

import gg
from gg.config import Settings, default_toml, load_settings, settings_from_dict
from gg.errors import ConfigError
from gg.testing import ScriptedModel


def test_defaults_match_the_spec() -> None:
    s = Settings()
    assert s.model.spec == "local"
    assert (s.session.mode, s.session.language, s.session.role) == (
        "tool-calling",
        "python",
        gg.Role.STANDARD,
    )
    c = s.ceilings
    assert (
        c.consecutive_errors,
        c.error_rate,
        c.error_window,
        c.gate_blocks,
        c.max_turns,
        c.max_tokens,
        c.max_seconds,
    ) == (3, 0.5, 10, 8, 50, 0, 0)


def test_no_file_is_defaults(tmp_path: Path) -> None:
    assert load_settings(workspace=tmp_path) == Settings()


@pytest.mark.parametrize(
    ("data", "key"),
    [
        ({"ceilings": {"max_turns": 0}}, "ceilings.max_turns"),
        ({"ceilings": {"error_rate": 2}}, "ceilings.error_rate"),
        ({"session": {"mode": "chat"}}, "session.mode"),
        ({"session": {"role": "boss"}}, "session.role"),
        (
            {"hooks": {"agent_stop": [{"command": "x", "on_error": "explode"}]}},
            "hooks.agent_stop.0.on_error",
        ),
        ({"hooks": {"agent_stop": [{"timeout_s": 3}]}}, "hooks.agent_stop.0.command"),
        ({"surprise": {}}, "surprise"),
        ({"tools": {"capabilities": ["files", "approve"]}}, "tools.capabilities"),
        ({"tools": {"arms": {"a": {"offer": ["request_changes"]}}}}, "tools.arms.a.offer"),
        ({"tools": {"arms": {"a": {"withhold": ["requestChanges"]}}}}, "tools.arms.a.withhold"),
    ],
)
def test_bad_values_name_the_key(data: dict[str, object], key: str) -> None:
    with pytest.raises(ConfigError) as info:
        settings_from_dict(data)
    assert info.value.key == key and key in str(info.value)


def test_endings_in_arms_say_why() -> None:
    with pytest.raises(ConfigError, match="ending calls are never registry tools"):
        settings_from_dict({"tools": {"arms": {"ro": {"withhold": ["finish"]}}}})


def test_arm_withholds_tools_but_never_endings(workspace: Path) -> None:
    settings = settings_from_dict(
        {"tools": {"arm": "ro", "arms": {"ro": {"withhold": ["write_file", "run_command"]}}}}
    )
    model = ScriptedModel([{"tool_calls": [{"name": "finish", "arguments": {"summary": "x"}}]}])
    result = gg.Agent(model=model, workspace=workspace, settings=settings).run("t")
    offered = model.calls[0][1]
    assert "write_file" not in offered and "run_command" not in offered
    assert "read_file" in offered and "finish" in offered
    assert result.status == "ended"


def test_unknown_arm_is_an_error(workspace: Path) -> None:
    settings = settings_from_dict({"tools": {"arm": "nope"}})
    with pytest.raises(gg.UserError, match="tools.arm"):
        gg.Agent(model=ScriptedModel([]), workspace=workspace, settings=settings)


def test_default_toml_round_trips(tmp_path: Path) -> None:
    (tmp_path / "gg.toml").write_text(default_toml())
    assert load_settings(workspace=tmp_path) == Settings()
