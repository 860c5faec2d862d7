"""Binding and running ``gg serve`` (issue 15 item 3): loopback unless told otherwise.

The socket is bound here, before uvicorn starts, so ``--port 0`` can say which port the
system picked: the first line printed is ``gg serve: http://HOST:PORT/`` (tests read it).
A host that is not a loopback address is served only because ``--host`` named it, and a
warning says who can reach it then; the ``Host`` header is checked against the bound
name on loopback (:class:`gg.web.app.Guard`).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from pathlib import Path

import uvicorn

from gg.errors import UserError
from gg.web.app import create_app

__all__ = ["DEFAULT_HOST", "LOOPBACK_NAMES", "bind", "is_loopback", "serve", "url_of"]

DEFAULT_HOST = "127.0.0.1"
"""Where ``gg serve`` listens unless ``--host`` says otherwise."""
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
"""The ``Host`` names a loopback server answers to (with the bound address itself)."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` is ``localhost`` or a loopback address (127.0.0.0/8, ::1)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host``:``port`` (``port`` 0: one the system picks).

    Raises:
        UserError: the address cannot be bound (in use, not this machine's, bad port).
    """
    if not 0 <= port <= 65535:
        raise UserError(f"--port: {port} is not a TCP port (0-65535)")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as e:
        raise UserError(f"--host: cannot resolve {host!r}: {e.strerror}") from None
    family, _, _, _, address = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as e:
        sock.close()
        raise UserError(f"--host {host} --port {port}: cannot listen: {e.strerror or e}") from None
    sock.set_inheritable(True)
    return sock


def url_of(sock: socket.socket) -> str:
    """``http://HOST:PORT/`` for a bound socket (an IPv6 address in brackets)."""
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


def serve(
    workspace: Path,
    *,
    host: str = DEFAULT_HOST,
    port: int = 8765,
    say: Callable[[str], None],
    warn: Callable[[str], None],
    trust_config: bool = False,
) -> None:
    """Serve ``workspace``'s board and runs until interrupted (Ctrl-C, SIGTERM).

    Args:
        workspace: the workspace to show (must be a directory).
        host: the address to listen on; anything but loopback is warned about.
        port: the TCP port (0: any free one; the URL printed says which).
        say: prints one line for the operator (the URL, on stdout).
        warn: prints the warning about a non-loopback host (on stderr).
        trust_config: read a board store a changed ``gg.toml`` newly names (issue 9).

    Raises:
        UserError: the workspace is not a directory, or the address cannot be bound.
    """
    if not workspace.is_dir():
        raise UserError(f"--workspace: {str(workspace)!r} is not a directory")
    sock = bind(host, port)
    loopback = is_loopback(host)
    say(f"gg serve: {url_of(sock)} (workspace {workspace.resolve()}; read-only; Ctrl-C stops)")
    if not loopback:
        warn(
            f"gg serve: warning: listening on {host}, not loopback: anyone who can reach this "
            "machine can read every run and the board (model output, tool output, diffs); "
            "there is no authentication"
        )
    hosts = None if not loopback else {*LOOPBACK_NAMES, host.lower()}
    app = create_app(workspace, hosts=hosts, trust_config=trust_config)
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, timeout_graceful_shutdown=1, lifespan="on"
    )
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
