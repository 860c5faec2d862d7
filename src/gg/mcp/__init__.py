"""MCP servers as registry tools (SPEC T1, issue 13 item 1; the ``[mcp]`` extra).

``[[tools.mcp]]`` entries in ``gg.toml`` (:class:`gg.config.McpServerSettings`) name
servers that gg starts for each run and stops when it ends: :mod:`gg.mcp.hub`
starts them, :mod:`gg.mcp.client` speaks the protocol with the official ``mcp`` SDK,
:mod:`gg.mcp.process` runs a stdio server (in the run's sandbox by default),
:mod:`gg.mcp.tool` is a server's tool as a registry tool, and :mod:`gg.mcp.names`
names it (``mcp__<server>__<tool>``, capability ``mcp:<server>``).

This package's ``__init__`` imports nothing, so the registry and the arms can use
:mod:`gg.mcp.names` without loading the SDK.
"""
