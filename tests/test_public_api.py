"""The public API is pinned: what ``gg/__init__.py`` exports (STYLE 1)."""

from __future__ import annotations

import types

import gg

EXPECTED = [
    "Agent",
    "Approve",
    "CallableHook",
    "Ceilings",
    "CommandHook",
    "ConfigError",
    "Declarations",
    "Diagnosis",
    "Ending",
    "Event",
    "Finish",
    "GGError",
    "Gate",
    "Model",
    "ModelError",
    "ModelUnavailable",
    "Refusal",
    "Registry",
    "Reply",
    "RequestChanges",
    "Role",
    "Run",
    "RunResult",
    "SandboxError",
    "ScriptExhausted",
    "SessionResult",
    "Settings",
    "StopEvent",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolError",
    "ToolSpec",
    "ToolsetArm",
    "Usage",
    "UserError",
    "WorkspaceEscape",
    "check_ending",
    "load_settings",
    "read_events",
    "tool",
]


def test_exports_are_pinned_and_sorted() -> None:
    assert gg.__all__ == EXPECTED
    assert gg.__all__ == sorted(gg.__all__)
    for name in gg.__all__:
        assert hasattr(gg, name), name


def test_all_is_exactly_the_public_names_of_the_package() -> None:
    """Nothing public leaks (``gg.annotations``, a stray import) and nothing exported is missing."""
    public = {
        name
        for name, value in vars(gg).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert sorted(public) == gg.__all__


def test_the_version_is_there() -> None:
    assert isinstance(gg.__version__, str) and gg.__version__.count(".") == 2


def test_every_export_is_documented() -> None:
    for name in gg.__all__:
        obj = getattr(gg, name)
        if callable(obj) and not isinstance(obj, type(gg.Ending)):
            assert (obj.__doc__ or "").strip(), f"{name} has no docstring"
