"""How an MCP server's tools are named in gg: prefixed, so they shadow nothing (SPEC T1, §1).

A server configured as ``[[tools.mcp]] name = "docs"`` offers its tools under the
capability ``mcp:docs``; its tool ``search-pages`` is the registry tool
``mcp__docs__search_pages`` (``mcpDocsSearchPages`` in a JavaScript program's SDK, which
:mod:`gg.sandbox.sdk` spells). That is Claude Code's ``mcp__<server>__<tool>`` form, so a
hook matcher written for Claude Code (``mcp__docs__.*``) matches the same tools. Every
built-in and ending call lacks the ``mcp__`` prefix, so no server can shadow one;
server names are unique and hold no ``__``, so no two servers collide.

This module imports nothing of gg, so the registry and the arms may use it.
"""

from __future__ import annotations

import hashlib
import re

__all__ = ["capability", "prefix", "registry_names"]

_MAX = 64
_NOT_WORD = re.compile(r"[^A-Za-z0-9_]+")


def capability(server: str) -> str:
    """The capability offering server ``server``'s tools: ``mcp:<server>``."""
    return f"mcp:{server}"


def prefix(server: str) -> str:
    """The prefix of every registry tool of server ``server``: ``mcp__<server>__``."""
    return f"mcp__{server}__"


def _one(server: str, remote: str) -> str:
    word = _NOT_WORD.sub("_", remote).strip("_") or "tool"
    name = prefix(server) + word
    if len(name) > _MAX:  # keep it unique with a digest of the server's own name
        digest = hashlib.sha256(remote.encode("utf-8", "replace")).hexdigest()[:8]
        name = f"{name[: _MAX - 9]}_{digest}"
    return name


def registry_names(server: str, remote: list[str]) -> list[str]:
    """The registry tool names of server ``server``'s tools ``remote``, index for index.

    Each name is ``mcp__<server>__`` and the tool's own name with every run of characters
    other than ASCII letters, digits and ``_`` made one ``_``, at most 64 characters (a
    longer one ends in a digest of the original). Two tools whose names come out alike
    get ``_2``, ``_3``... in listing order.

    Args:
        server: the server's configured name (``[[tools.mcp]] name``).
        remote: the tools' names as the server lists them.

    Returns:
        One ASCII identifier per tool, all distinct.
    """
    out: list[str] = []
    taken: set[str] = set()
    for raw in remote:
        name = base = _one(server, raw)
        n = 1
        while name in taken:
            n += 1
            name = f"{base[: _MAX - len(str(n)) - 1]}_{n}"
        taken.add(name)
        out.append(name)
    return out
