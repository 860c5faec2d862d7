"""A scriptable HTTP server on 127.0.0.1 for the provider tests.

Each request the server receives takes the next :data:`Action` from its
script (the last one repeats when the script runs out) and is recorded in
:attr:`FakeServer.requests`. Actions cover what a provider does on a good
day and a bad one: a JSON answer with any status and headers, a Server-Sent
Events stream (HTTP/1.1 chunked, as real providers send it), a connection
dropped before any answer, a stream cut off halfway, and a stall.

Nothing here reaches past the loopback interface.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeAlias

__all__ = [
    "Action",
    "Drop",
    "FakeServer",
    "Json",
    "Recorded",
    "Sse",
    "Stall",
    "serve",
    "sse_event",
]


@dataclass(frozen=True, kw_only=True)
class Json:
    """Answer with a JSON body."""

    body: Any
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class Sse:
    """Answer with a stream of SSE frames (each already ``event:``/``data:`` text).

    ``cut_after``: close the connection after that many frames, mid-body.
    """

    frames: Sequence[str]
    cut_after: int | None = None
    delay_s: float = 0.0


@dataclass(frozen=True, kw_only=True)
class Drop:
    """Close the connection without answering."""


@dataclass(frozen=True, kw_only=True)
class Stall:
    """Answer nothing for ``seconds`` (or until the server stops), then close."""

    seconds: float = 30.0


Action: TypeAlias = Json | Sse | Drop | Stall


@dataclass(frozen=True, kw_only=True)
class Recorded:
    """One request as the server saw it."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


def sse_event(data: Any, event: str | None = None) -> str:
    """One SSE frame: optional ``event:`` line, ``data:`` line (JSON unless a str)."""
    payload = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n"


class FakeServer:
    """The server's state: its script, what it received, and its URL."""

    def __init__(self, script: Sequence[Action]) -> None:
        self.script: list[Action] = list(script)
        self.requests: list[Recorded] = []
        self.stop = threading.Event()
        self._lock = threading.Lock()
        self.url = ""

    def next_action(self, recorded: Recorded) -> Action:
        with self._lock:
            self.requests.append(recorded)
            if len(self.script) > 1:
                return self.script.pop(0)
            return self.script[0]


class _Httpd(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, state: FakeServer) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.state = state

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Stay quiet when a client hangs up first (timeouts do that on purpose)."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Httpd

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        headers = {k.lower(): v for k, v in self.headers.items()}
        recorded = Recorded(method="POST", path=self.path, headers=headers, body=body)
        self.close_connection = True
        action = self.server.state.next_action(recorded)
        if isinstance(action, Json):
            self._json(action)
        elif isinstance(action, Sse):
            self._sse(action)
        elif isinstance(action, Stall):
            self.server.state.stop.wait(action.seconds)
            self._abort()
        else:
            self._abort()

    def _json(self, action: Json) -> None:
        data = json.dumps(action.body).encode()
        self.send_response(action.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        for name, value in action.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _sse(self, action: Sse) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        for index, frame in enumerate(action.frames):
            if action.cut_after is not None and index >= action.cut_after:
                self.wfile.flush()
                self._abort()
                return
            data = frame.encode()
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()
            if action.delay_s:
                time.sleep(action.delay_s)
        self.wfile.write(b"0\r\n\r\n")

    def _abort(self) -> None:
        with suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)


@contextmanager
def serve(script: Sequence[Action]) -> Iterator[FakeServer]:
    """Run a :class:`FakeServer` on 127.0.0.1 (a free port) for the ``with`` block."""
    state = FakeServer(script)
    httpd = _Httpd(state)
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.stop.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)
