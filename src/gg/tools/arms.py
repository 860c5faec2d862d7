"""Toolset arms: named selections over the registry's offered tools (SPEC §1).

An arm is a filter, not a copy: :meth:`ToolsetArm.select` reads the shared
:class:`~gg.tools.registry.Registry` each time. A run resolves its arm once
(:func:`resolve_toolset`) and keeps the :class:`Toolset` it got: every session,
the skills section and on-use scripts read that one selection. Ending calls are never
registry tools, so no arm may offer or withhold one: every agent always has
the endings its role gives it (SPEC §1, S2).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from gg.config import ToolsSettings
from gg.endings import Role, is_ending_name
from gg.errors import UserError
from gg.mcp.names import capability as mcp_capability
from gg.tools.registry import Registry, Tool

__all__ = ["Toolset", "ToolsetArm", "arm_from_settings", "resolve_toolset"]

_ALSO_WITHHELD = {"write_file": ("edit_file",)}
"""Withholding a tool withholds these too: ``edit_file`` is a form of ``write_file``, so an
arm written to mean "no file writes" keeps that meaning now that both exist."""

_ENDING_REFUSAL = "ending calls are never registry tools: no arm offers or withholds them"


def _as_tuple(value: Iterable[str] | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return (value,)
    return tuple(value)


@dataclass(frozen=True, kw_only=True)
class ToolsetArm:
    """A named selection over the tools the registry's capabilities offer (SPEC §1).

    Lists given for the tuple fields are stored as tuples. Construction refuses
    an ending call named in ``offer`` or ``withhold``; :meth:`select` checks
    the names against a registry.
    """

    name: str = "all"
    """The arm's name, as the stream shows it."""
    capabilities: tuple[str, ...] | None = None
    """The capabilities whose tools the arm draws from; ``None`` = every capability."""
    offer: tuple[str, ...] | None = None
    """The tools offered, in this order; ``None`` = every tool of those capabilities."""
    withhold: tuple[str, ...] = ()
    """Tools never offered, even if ``offer`` names them (``write_file`` withholds
    ``edit_file`` too)."""

    def __post_init__(self) -> None:
        if not self.name:
            raise UserError("a toolset arm needs a non-empty name")
        object.__setattr__(self, "capabilities", _as_tuple(self.capabilities))
        object.__setattr__(self, "offer", _as_tuple(self.offer))
        object.__setattr__(self, "withhold", _as_tuple(self.withhold) or ())
        for field_name in ("offer", "withhold"):
            for tool_name in getattr(self, field_name) or ():
                if is_ending_name(tool_name):
                    raise UserError(
                        f"toolset arm {self.name!r} {field_name}s {tool_name!r}: "
                        f"{_ENDING_REFUSAL} (SPEC §1)"
                    )

    def select(self, registry: Registry) -> list[Tool]:
        """The arm's tools from ``registry``, in a deterministic order.

        Order: ``offer``'s order when given, else registration order.

        Args:
            registry: the shared registry.

        Returns:
            The offered tools, withheld ones removed, each once.

        Raises:
            UserError: naming this arm and the unknown capability or tool, a tool
                ``offer`` names from a capability the arm does not draw from, or
                an ending call (SPEC §1).
        """
        caps = registry.capabilities
        chosen = tuple(caps) if self.capabilities is None else self.capabilities
        for cap in chosen:
            if cap not in caps:
                raise UserError(
                    f"toolset arm {self.name!r} names unknown capability {cap!r}; "
                    f"known capabilities: {', '.join(map(repr, caps)) or 'none'}"
                )
        pool = [name for cap in chosen for name in caps[cap]]
        for name in (*(self.offer or ()), *self.withhold):
            self._check_known(registry, name)
        if self.offer is None:
            wanted = pool
        else:
            wanted = list(dict.fromkeys(self.offer))
            for name in wanted:
                if name not in pool and not registry.expects(name):
                    raise UserError(
                        f"toolset arm {self.name!r} offers {name!r}, but its capability "
                        f"{registry.capability_of(name)!r} is not among the arm's capabilities"
                    )
        withheld = set(self.withhold)
        for name in self.withhold:
            withheld.update(_ALSO_WITHHELD.get(name, ()))
        out: list[Tool] = []
        for name in wanted:
            if is_ending_name(name):
                raise UserError(f"toolset arm {self.name!r} has {name!r}: {_ENDING_REFUSAL}")
            tool = registry.get(name)
            if tool is not None and name not in withheld:
                out.append(tool)
        return out

    def _check_known(self, registry: Registry, name: str) -> None:
        if is_ending_name(name):
            raise UserError(f"toolset arm {self.name!r} names {name!r}: {_ENDING_REFUSAL}")
        if name not in registry and not registry.expects(name):
            raise UserError(
                f"toolset arm {self.name!r} names unknown tool {name!r}; "
                f"known tools: {', '.join(map(repr, registry.names)) or 'none'}"
            )


def arm_from_settings(tools: ToolsSettings) -> ToolsetArm:
    """The toolset arm named by ``[tools] arm`` (``"all"``: every configured capability).

    A configured MCP server's capability (``mcp:<name>``, ``[[tools.mcp]]``) joins the
    default capabilities: an arm without its own ``capabilities`` offers its tools.

    Args:
        tools: the ``[tools]`` settings.

    Returns:
        The arm (not yet checked against a registry: see :func:`resolve_toolset`).

    Raises:
        UserError: no arm of that name in ``[tools.arms]``.
    """
    servers = [mcp_capability(server.name) for server in tools.mcp]  # configured: offered
    default = tuple(dict.fromkeys([*tools.capabilities, *servers]))
    if tools.arm == "all" and "all" not in tools.arms:
        return ToolsetArm(name="all", capabilities=default)
    if tools.arm not in tools.arms:
        raise UserError(f"tools.arm: no toolset arm named {tools.arm!r} in [tools.arms]")
    spec = tools.arms[tools.arm]
    caps = spec.capabilities if spec.capabilities is not None else default
    return ToolsetArm(
        name=tools.arm,
        capabilities=tuple(caps),
        offer=None if spec.offer is None else tuple(spec.offer),
        withhold=tuple(spec.withhold),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Toolset:
    """A toolset arm resolved against a registry, once: what a run's sessions are offered.

    Attributes:
        arm: the arm.
        tools: the tools it selected, in its order.
        capabilities: the capability of each tool of ``tools``, index for index.
    """

    arm: ToolsetArm
    tools: tuple[Tool, ...]
    capabilities: tuple[str, ...]

    def tools_for(self, role: Role) -> tuple[Tool, ...]:
        """The tools a session of ``role`` is offered.

        All of :attr:`tools` for Standard; for Review only those that cannot change the
        workspace (``access`` ``"read"``, and ``"command"`` tools, which a reviewer's
        read-only context runs in a read-only sandbox), so a reviewer never rewrites the
        work under review (issue 16).
        """
        if role is Role.REVIEW:
            return tuple(t for t in self.tools if t.access != "write")
        return self.tools

    def offers(self, name: str) -> bool:
        """Whether a tool named ``name`` is among :attr:`tools`."""
        return any(t.name == name for t in self.tools)

    def without(self, capabilities: Iterable[str]) -> tuple[Tool, ...]:
        """:attr:`tools` minus those of ``capabilities`` (on-use scripts' SDK, SPEC S13)."""
        dropped = frozenset(capabilities)
        return tuple(
            t for t, c in zip(self.tools, self.capabilities, strict=True) if c not in dropped
        )


def resolve_toolset(tools: ToolsSettings, registry: Registry) -> Toolset:
    """Resolve the arm ``[tools] arm`` names against ``registry`` (SPEC §1).

    Args:
        tools: the ``[tools]`` settings.
        registry: the shared registry.

    Returns:
        The :class:`Toolset`: the arm, its tools and their capabilities.

    Raises:
        UserError: an unknown arm, capability or tool, or an ending call named
            (:meth:`ToolsetArm.select`).
    """
    arm = arm_from_settings(tools)
    selected = tuple(arm.select(registry))
    caps = tuple(registry.capability_of(t.name) or "" for t in selected)
    return Toolset(arm=arm, tools=selected, capabilities=caps)
