"""What a sandboxed stdio MCP server sees of the host beside the sandbox's own (SPEC M3).

gg's interpreter prefixes (the venv and its base, outside ``/usr``) are bound read-only
so that a server written in Python finds gg's packages. Beyond them, the directory of
the server's command and the files its arguments name, when they lie outside ``/usr``,
are bound read-only at their own path (:func:`server_binds`). Those are host paths an
agent could name by editing ``gg.toml``, so :mod:`gg.trust` counts them as a weakening
setting.
"""

from __future__ import annotations

import os
import shutil
import sys

from gg.config import McpServerSettings
from gg.sandbox.host import SYSTEM_PATH

__all__ = ["interpreter_prefixes", "sandbox_path", "server_binds"]


def interpreter_prefixes() -> list[str]:
    """The interpreter prefixes of gg outside ``/usr`` (the venv and its base)."""
    found: list[str] = []
    for raw in (sys.prefix, sys.base_prefix):
        path = os.path.realpath(raw)
        if path != "/" and not path.startswith("/usr") and path not in found:
            found.append(path)
    return found


def sandbox_path() -> str:
    """The server's ``PATH`` in the sandbox: the prefixes' ``bin`` first, then the system's."""
    return ":".join([*(f"{p}/bin" for p in interpreter_prefixes()), SYSTEM_PATH])


def server_binds(server: McpServerSettings) -> list[str]:
    """The host paths bound for ``server`` beyond gg's prefixes, in order, each once.

    The real directory of its command when that is outside ``/usr`` and the prefixes,
    and each argument that is an absolute path to an existing file outside ``/usr``.
    Empty for a URL server or one on the host.
    """
    if server.command is None or not server.sandboxed:
        return []
    prefixes = interpreter_prefixes()
    binds: list[str] = []
    exe = shutil.which(server.command, path=sandbox_path())
    if exe is not None:
        home = os.path.dirname(os.path.realpath(exe))
        if not home.startswith("/usr/") and not any(
            home == p or home.startswith(p + "/") for p in prefixes
        ):
            binds.append(home)
    for arg in server.args:
        if arg.startswith("/") and not arg.startswith("/usr/") and os.path.isfile(arg):
            binds.append(os.path.realpath(arg))
    return list(dict.fromkeys(binds))
