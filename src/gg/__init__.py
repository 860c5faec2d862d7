"""gg: an agent driver whose sessions end only by an explicit, typed ending call.

The public API. Everything else is private by not being exported here::

    import gg

    result = gg.Agent(model="scripted:replies.json", workspace=".").run("Fix the test.")
    result.status      # "ended" | "stopped"
    result.ending      # gg.Finish(summary=...) | gg.Approve() | gg.RequestChanges(items=...)
"""

from gg.agent import Agent, RunResult
from gg.ceilings import Ceilings, Diagnosis
from gg.config import Settings, load_settings
from gg.endings import (
    Approve,
    Declarations,
    Ending,
    Finish,
    Refusal,
    RequestChanges,
    Role,
    check_ending,
)
from gg.errors import (
    ConfigError,
    GGError,
    ModelError,
    ModelUnavailable,
    SandboxError,
    ScriptExhausted,
    ToolError,
    UserError,
    WorkspaceEscape,
)
from gg.hooks import CallableHook, CommandHook, Gate, StopEvent
from gg.models.base import Model, Reply, ToolCall, ToolSpec, Usage
from gg.run import Run
from gg.session import SessionResult
from gg.stream import Event, read_events
from gg.tools.arms import ToolsetArm
from gg.tools.registry import Registry, Tool, ToolContext, tool

__all__ = [
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

__version__ = "0.1.0"
