"""Registry tools, capabilities and toolset arms (SPEC T1, §1).

- :mod:`gg.tools.registry`: :class:`Tool`, the :func:`tool` decorator, :class:`Registry`.
- :mod:`gg.tools.builtins`: the built-in tools and :func:`default_registry`.
- :mod:`gg.tools.arms`: :class:`ToolsetArm`, a filter over the registry.
"""

from __future__ import annotations

from gg.tools.arms import ToolsetArm
from gg.tools.builtins import default_registry
from gg.tools.registry import (
    ArgumentsError,
    FunctionTool,
    Registry,
    Tool,
    ToolContext,
    tool,
)

__all__ = [
    "ArgumentsError",
    "FunctionTool",
    "Registry",
    "Tool",
    "ToolContext",
    "ToolsetArm",
    "default_registry",
    "tool",
]
