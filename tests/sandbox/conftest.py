"""Fixtures for the sandbox tests: a real sandbox, no mocks.

``arena``: a workspace beside a canary file outside it, both under a
world-searchable temp dir, so that only the sandbox (not the directory
modes) keeps the canary from the program. ``secret_env``: a fake API key in
gg's environment. ``tcp_server``: a loopback server counting connections.
``layer``: each isolation layer this machine supports, forced through
``GG_SANDBOX`` (a layer whose prerequisite is missing is skipped, one whose
prerequisite is present but fails is a failure).
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_support import FAST, Arena, Listener, TcpServer

from gg.sandbox import Isolation, Sandbox


@pytest.fixture
def arena() -> Iterator[Arena]:
    root = Path(tempfile.mkdtemp(prefix="gg-test-", dir="/tmp"))
    os.chmod(root, 0o755)
    workspace = root / "ws"
    workspace.mkdir(mode=0o755)
    outside = root / "outside"
    outside.mkdir(mode=0o755)
    secret = "CANARY-" + secrets.token_hex(12)
    canary = outside / "secret.txt"
    canary.write_text(secret)
    os.chmod(canary, 0o644)
    yield Arena(root, workspace, canary, secret, "ggmark" + secrets.token_hex(8))
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def secret_env(monkeypatch: pytest.MonkeyPatch) -> str:
    key = "sk-canary-" + secrets.token_hex(16)
    monkeypatch.setenv("OPENAI_API_KEY", key)
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    return key


@pytest.fixture(scope="session")
def _listener() -> Iterator[Listener]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    listener = Listener(port=sock.getsockname()[1])

    def accept() -> None:
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return  # closed
            listener.count += 1
            conn.close()

    threading.Thread(target=accept, daemon=True).start()
    yield listener
    sock.shutdown(socket.SHUT_RDWR)
    sock.close()


@pytest.fixture
def tcp_server(_listener: Listener) -> TcpServer:
    """A loopback TCP server; ``connections`` counts those made during this test."""
    return TcpServer(_listener)


@pytest.fixture
def sandbox(layer: Isolation) -> Sandbox:
    """A sandbox forced to ``layer`` through ``GG_SANDBOX``, with :data:`FAST` limits."""
    box = Sandbox(limits=FAST)
    assert box.isolation is layer
    return box


@pytest.fixture
def default_sandbox(monkeypatch: pytest.MonkeyPatch) -> Sandbox:
    """The sandbox gg would pick here (the strongest layer that works)."""
    monkeypatch.delenv("GG_SANDBOX", raising=False)
    return Sandbox(limits=FAST)
