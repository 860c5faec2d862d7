"""The MCP servers of one run: started together at run start, stopped at its end (SPEC T1).

:class:`McpServers` starts every ``[[tools.mcp]]`` server concurrently
(:class:`gg.mcp.client.Connection`), turns each listed tool into an
:class:`~gg.mcp.tool.McpTool` named by :mod:`gg.mcp.names`, and stops them all on
:meth:`McpServers.aclose` (which :meth:`gg.Run.aclose` calls however the run ends).
One server that cannot start stops the start of all: the run does not begin, and the
error is a one-line :class:`~gg.errors.ConfigError` (exit 2 from the CLI).

The SDK is an optional extra: :func:`_import_client` loads the module that needs it
only when a server is configured, and says how to install it when it is missing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from gg.config import McpServerSettings
from gg.errors import ConfigError, GGError
from gg.mcp.names import capability, registry_names
from gg.mcp.tool import McpTool, check_schema
from gg.sandbox import Sandbox
from gg.text import cut

if TYPE_CHECKING:  # an annotation only: the module needs the optional SDK
    from gg.mcp.client import Connection

__all__ = ["McpServers"]

_DESCRIPTION_CAP = 2_000


def _import_client() -> ModuleType:
    """:mod:`gg.mcp.client`, which needs the ``mcp`` SDK (the ``[mcp]`` extra).

    Raises:
        ConfigError: the SDK is not installed.
    """
    try:
        from gg.mcp import client
    except ImportError as exc:
        raise ConfigError(
            f"[[tools.mcp]] needs the MCP SDK ({exc.name or 'mcp'} is missing): "
            "pip install 'gg-agent[mcp]'",
            key="tools.mcp",
        ) from None
    return client


class McpServers:
    """The run's MCP servers (see the module docstring).

    Args:
        servers: the ``[[tools.mcp]]`` entries.
    """

    def __init__(self, servers: Sequence[McpServerSettings]) -> None:
        self.servers = tuple(servers)
        self._closers: list[Callable[[], Awaitable[None]]] = []

    async def start(
        self, *, workspace: Path, sandbox: Callable[[], Sandbox]
    ) -> list[tuple[str, McpTool]]:
        """Start every server and make its tools.

        Args:
            workspace: the run's workspace (resolved).
            sandbox: the run's sandbox, made on first use.

        Returns:
            ``(capability, tool)`` pairs: each server's tools under ``mcp:<name>``, in
            configuration then listing order.

        Raises:
            ConfigError: a server could not start, or lists a tool gg cannot offer (no
                object schema); every server already started is stopped.
        """
        client = _import_client()
        connections: list[Connection] = [
            client.Connection(s, workspace=workspace, sandbox=sandbox) for s in self.servers
        ]
        self._closers = [c.aclose for c in connections]
        results = await asyncio.gather(*(c.start() for c in connections), return_exceptions=True)
        try:
            for result in results:
                if isinstance(result, BaseException):
                    raise result
            return [
                pair
                for server, conn in zip(self.servers, connections, strict=True)
                for pair in _tools(server, conn)
            ]
        except BaseException:
            await self.aclose()
            raise

    async def aclose(self) -> None:
        """Stop every server (idempotent; a server already gone is fine)."""
        closers, self._closers = self._closers, []
        await asyncio.gather(*(close() for close in closers), return_exceptions=True)


def _tools(server: McpServerSettings, conn: Connection) -> list[tuple[str, McpTool]]:
    """The registry tools of one started connection."""
    remote = conn.tools
    names = registry_names(server.name, [t.name for t in remote])
    out: list[tuple[str, McpTool]] = []
    for name, spec in zip(names, remote, strict=True):
        try:
            schema = check_schema(server.name, spec.name, spec.schema)
        except GGError as exc:
            raise ConfigError(str(exc), key="tools.mcp") from None
        description = cut(spec.description.strip(), _DESCRIPTION_CAP) or f"{spec.name}."
        out.append(
            (
                capability(server.name),
                McpTool(
                    name=name,
                    description=f"(MCP server {server.name}) {description}",
                    parameters=schema,
                    server=server.name,
                    remote=spec.name,
                    timeout_s=server.timeout_s,
                    access=server.access,
                    caller=conn,
                ),
            )
        )
    return out
