"""One source per default (issue 10 item 5): the runtime defaults are the config models'.

Every default a run uses comes from :mod:`gg.config`'s section models; the runtime
objects (ceilings, sandbox limits, retry policy, hooks, tool context) are built from
them, so ``gg.toml``, ``gg init``'s file and the library's own defaults cannot drift.
"""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path

import pytest

from gg.ceilings import Ceilings
from gg.config import (
    CeilingSettings,
    HookSettings,
    ModelSettings,
    SandboxSettings,
    Settings,
    ToolsSettings,
    default_toml,
    settings_from_dict,
)
from gg.endings import Role
from gg.errors import UserError
from gg.hooks import CommandHook
from gg.models.retry import RetryPolicy
from gg.sandbox.limits import Limits
from gg.tools.registry import ToolContext


def test_ceilings_defaults_are_the_config_defaults() -> None:
    names = {f.name for f in dataclasses.fields(Ceilings)}
    assert names == set(CeilingSettings.model_fields)
    assert Ceilings() == Ceilings.from_settings(CeilingSettings())
    assert dataclasses.asdict(Ceilings()) == CeilingSettings().model_dump()


def test_ceilings_from_settings_carry_every_value() -> None:
    cfg = CeilingSettings(
        consecutive_errors=5, error_rate=0.25, error_window=4, gate_blocks=2,
        max_turns=7, max_tokens=900, max_seconds=12.5, max_cost=0.75,
    )  # fmt: skip
    assert dataclasses.asdict(Ceilings.from_settings(cfg)) == cfg.model_dump()


def test_limits_defaults_are_the_config_defaults() -> None:
    shared = {f.name for f in dataclasses.fields(Limits)} & set(SandboxSettings.model_fields)
    # every number [sandbox] can set is a limit; isolation and commands are not limits
    assert set(SandboxSettings.model_fields) - shared == {"isolation", "commands"}
    defaults, cfg = Limits(), SandboxSettings()
    for name in shared:
        assert getattr(defaults, name) == getattr(cfg, name), name
    assert Limits.from_settings(cfg) == defaults


def test_limits_from_settings_carry_every_settable_value() -> None:
    cfg = SandboxSettings(
        wall_s=5, cpu_s=4, memory_mb=256, processes=9, output_bytes=5_000,
        write_bytes=2 << 20, write_files=500, program_bytes=4_000,
    )  # fmt: skip
    limits = Limits.from_settings(cfg)
    for name in ("wall_s", "cpu_s", "memory_mb", "processes", "output_bytes", "write_bytes",
                 "write_files", "program_bytes"):  # fmt: skip
        assert getattr(limits, name) == getattr(cfg, name), name
    assert limits.calls == Limits().calls  # the ones gg.toml cannot set keep their defaults


def test_retry_defaults_are_the_model_section_defaults() -> None:
    policy, model = RetryPolicy(), ModelSettings()
    assert (policy.max_retries, policy.timeout_s) == (model.max_retries, model.timeout_s)
    # the documented values (README gg.toml section, gg init's file)
    assert (model.max_retries, model.timeout_s) == (3, 120)


def test_hook_defaults_are_the_hook_entry_defaults() -> None:
    entry = HookSettings(command="true")
    hook = CommandHook(command="true")
    assert hook.timeout_s == entry.timeout_s
    assert hook.roles == tuple(entry.roles)
    assert hook.on_error == entry.on_error
    assert hook.pass_env == tuple(entry.pass_env)
    assert hook.trusted == entry.trusted
    assert CommandHook.from_settings(entry) == hook


def test_a_hook_from_settings_carries_every_value() -> None:
    entry = HookSettings(
        command="make check", timeout_s=9, roles=[Role.REVIEW], on_error="pass",
        pass_env=["CI"], trusted=True,
    )  # fmt: skip
    hook = CommandHook.from_settings(entry)
    assert (hook.command, hook.timeout_s, hook.roles, hook.on_error, hook.pass_env) == (
        "make check", 9, (Role.REVIEW,), "pass", ("CI",),
    )  # fmt: skip
    assert hook.trusted


def test_tool_output_cap_default_is_the_tools_section_default(tmp_path: Path) -> None:
    assert ToolContext(workspace=tmp_path).output_cap == ToolsSettings().output_cap


def test_gg_init_file_holds_exactly_the_defaults() -> None:
    parsed = settings_from_dict(tomllib.loads(default_toml()))
    assert parsed == Settings()


def test_a_bad_limit_from_settings_is_still_refused() -> None:
    cfg = SandboxSettings()
    with pytest.raises(UserError, match="'calls'"):
        dataclasses.replace(Limits.from_settings(cfg), calls=0)
