"""Hooks from a Claude Code ``settings.json``, as gg hook entries (SPEC H1, issue 13 item 3).

``[hooks] claude_settings = [".claude/settings.json"]`` in ``gg.toml`` names Claude Code
settings files whose ``hooks`` section gg loads as its own hooks:

==================  ====================================================================
Claude Code event   gg hook
==================  ====================================================================
``Stop``            ``[[hooks.agent_stop]]`` with ``sessions = "root"``
``SubagentStop``    ``[[hooks.agent_stop]]`` with ``sessions = "subagents"``
``PreToolUse``      ``[[hooks.pre_tool]]``, the group's ``matcher``
``PostToolUse``     ``[[hooks.post_tool]]``, the group's ``matcher``
``SessionStart``    ``[[hooks.session_start]]`` (its ``startup``/``resume`` matcher ignored)
==================  ====================================================================

Each ``{"type": "command", "command": ..., "timeout": S}`` becomes one entry: the
command as is (run with ``$CLAUDE_PROJECT_DIR`` set to the workspace, in the run's
sandbox like any gg hook), ``timeout`` seconds (Claude Code's default 60 when absent),
and ``on_error`` from ``[hooks] claude_on_error`` (default ``"pass"``: a hook that
exits 1 or crashes lets things through, as in Claude Code). A matcher's Claude Code
tool names are gg's: ``Bash`` is ``run_command``, ``Read`` ``read_file``, ``Write``
``write_file``, ``Edit`` and ``MultiEdit`` ``edit_file``, ``Glob`` and ``LS``
``list_dir``, ``Grep`` ``search_text``; ``mcp__<server>__<tool>`` names match gg's MCP
tools as they are.
Other events (``Notification``, ``UserPromptSubmit``, ``PreCompact``...) have no gg
counterpart and are skipped; a hook of another ``type`` (``prompt``) is an error.

This module only converts parsed JSON; :func:`gg.config.with_claude_hooks` reads the
files. It imports nothing of gg but errors.
"""

from __future__ import annotations

import re
from typing import Any

from gg.errors import ConfigError

__all__ = ["CLAUDE_TOOLS", "claude_hooks"]

CLAUDE_TOOLS: dict[str, str] = {
    "Bash": "run_command",
    "Read": "read_file",
    "Write": "write_file",
    "Edit": "edit_file",
    "MultiEdit": "edit_file",
    "Glob": "list_dir",
    "LS": "list_dir",
    "Grep": "search_text",
}
"""Claude Code's built-in tool names -> gg's built-ins, for matchers."""

_EVENTS = {
    "Stop": ("agent_stop", {"sessions": "root"}),
    "SubagentStop": ("agent_stop", {"sessions": "subagents"}),
    "PreToolUse": ("pre_tool", {}),
    "PostToolUse": ("post_tool", {}),
    "SessionStart": ("session_start", {}),
}
_DEFAULT_TIMEOUT_S = 60.0
_WORD = re.compile(r"[A-Za-z]+")


def _matcher(value: object, where: str) -> str:
    """A Claude Code matcher as gg's: each ``|`` alternative that is a Claude tool renamed."""
    if value is None:
        return "*"
    if not isinstance(value, str):
        raise ConfigError(f"{where}: matcher must be a string")
    if value in ("", "*"):
        return "*"
    parts = value.split("|")
    renamed = [CLAUDE_TOOLS.get(p.strip(), p) if _WORD.fullmatch(p.strip()) else p for p in parts]
    return "|".join(dict.fromkeys(renamed))


def _entry(hook: object, event: str, where: str, on_error: str) -> dict[str, Any]:
    if not isinstance(hook, dict) or hook.get("type", "command") != "command":
        raise ConfigError(f"{where}: only command hooks are supported (type = 'command')")
    command, timeout = hook.get("command"), hook.get("timeout", _DEFAULT_TIMEOUT_S)
    if not isinstance(command, str) or not command.strip():
        raise ConfigError(f"{where}: a command hook needs a non-empty command")
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
        raise ConfigError(f"{where}: timeout must be a positive number of seconds")
    return {"command": command, "timeout_s": float(timeout), "on_error": on_error}


def claude_hooks(data: object, *, source: str, on_error: str) -> dict[str, list[dict[str, Any]]]:
    """The gg hook entries of a parsed Claude Code settings file (see the module docstring).

    Args:
        data: the file's parsed JSON.
        source: the file, for error messages.
        on_error: every entry's ``on_error`` (``[hooks] claude_on_error``).

    Returns:
        ``{"agent_stop": [...], "pre_tool": [...], "post_tool": [...],
        "session_start": [...]}``: entries as ``gg.toml`` would spell them, in file order.

    Raises:
        ConfigError: not a JSON object, or a ``hooks`` section of the wrong shape,
            naming the file and the place.
    """
    out: dict[str, list[dict[str, Any]]] = {k: [] for k, _ in _EVENTS.values()}
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: a Claude Code settings file is a JSON object")
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict):
        raise ConfigError(f"{source}: hooks must be an object of events")
    for event, groups in hooks.items():
        if event not in _EVENTS:
            continue
        kind, extra = _EVENTS[event]
        if not isinstance(groups, list):
            raise ConfigError(f"{source}: hooks.{event} must be a list of matcher groups")
        for i, group in enumerate(groups):
            where = f"{source}: hooks.{event}[{i}]"
            if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
                raise ConfigError(f"{where}: a matcher group needs a list of hooks")
            for j, hook in enumerate(group["hooks"]):
                entry = _entry(hook, event, f"{where}.hooks[{j}]", on_error) | extra
                if kind in ("pre_tool", "post_tool"):
                    entry["matcher"] = _matcher(group.get("matcher"), where)
                out[kind].append(entry)
    return out
