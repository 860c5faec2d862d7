"""A throwaway PostgreSQL cluster for tests (issue 17): ``initdb`` in a temp dir, loopback only.

:class:`PgCluster` runs the server as an unprivileged user when we are root
(``initdb`` refuses root): ``runuser -u nobody``. It listens on 127.0.0.1 only,
on a free port, with its socket in its own directory; the superuser is ``gg``
with trust authentication (nothing else can reach a loopback port of a
throwaway cluster that lives for one test session). ``./scripts/setup``
installs the server (Debian's ``postgresql``) when it is missing.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import psycopg

NOBODY = "nobody"


def _bin(name: str) -> str:
    """The path of a PostgreSQL server program (``initdb``, ``pg_ctl``)."""
    found = shutil.which(name)
    if found:
        return found
    for path in sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True):
        return path
    raise RuntimeError(
        f"PostgreSQL's {name} is not installed: run ./scripts/setup (apt-get install postgresql)"
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PgCluster:
    """One PostgreSQL server in a temp dir, on ``127.0.0.1:port``, until :meth:`stop`."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="gg-pg-"))
        self.data = self.root / "data"
        self.sock = self.root / "sock"
        self.sock.mkdir()
        self.port = 0
        self._as_root = os.geteuid() == 0
        if self._as_root:
            os.chmod(self.root, 0o755)
            shutil.chown(self.root, NOBODY)
            shutil.chown(self.sock, NOBODY)

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        command = ["runuser", "-u", NOBODY, "--", *args] if self._as_root else list(args)
        return subprocess.run(
            command, cwd=self.root, check=check, capture_output=True, text=True, timeout=120
        )

    def init(self) -> PgCluster:
        """``initdb`` (superuser ``gg``, trust, no fsync) and :meth:`start`."""
        self._run(_bin("initdb"), "-D", str(self.data), "-U", "gg", "-A", "trust", "-E", "UTF8",
                  "--no-sync", "--no-instructions")  # fmt: skip
        return self.start()

    def start(self) -> PgCluster:
        """Start the server (on the same port after a :meth:`kill`); waits until it answers."""
        for _ in range(5):
            self.port = self.port or _free_port()
            options = (
                f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.sock} -c fsync=off "
                "-c max_connections=100"
            )
            done = self._run(
                _bin("pg_ctl"), "-D", str(self.data), "-l", str(self.root / "log"), "-w",
                "-t", "60", "-o", options, "start", check=False,
            )  # fmt: skip
            if done.returncode == 0:
                return self
            self.port = 0  # the port was taken meanwhile: another one
        raise RuntimeError(f"pg_ctl start failed: {done.stderr}\n{self.log()}")

    def log(self) -> str:
        """The server's log."""
        path = self.root / "log"
        return path.read_text(errors="replace") if path.exists() else ""

    def url(self, database: str = "postgres") -> str:
        """The URI of ``database`` on this server (user ``gg``)."""
        return f"postgresql://gg@127.0.0.1:{self.port}/{database}"

    def socket_url(self, url: str) -> str:
        """``url`` (of this server) through its Unix socket, which network namespaces share."""
        return url.replace(f"@127.0.0.1:{self.port}/", "@/") + f"?host={self.sock}&port={self.port}"

    def new_database(self) -> str:
        """Create an empty database; returns its URI."""
        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def terminate(self, pid: int) -> bool:
        """``pg_terminate_backend(pid)``: cut one client's connection from the server side."""
        with psycopg.connect(self.url(), autocommit=True) as conn:
            row = conn.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone()
        return bool(row and row[0])

    def kill(self) -> None:
        """Stop the server at once (``pg_ctl stop -m immediate``): every connection drops."""
        self._run(_bin("pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop",
                  check=False)  # fmt: skip

    def stop(self) -> None:
        """Stop the server and remove its directory."""
        self.kill()
        with contextlib.suppress(OSError):
            shutil.rmtree(self.root)


def wait_for(predicate: Callable[[], object], timeout: float = 30.0) -> None:
    """Poll ``predicate()`` every 50 ms until true; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {predicate}")
        time.sleep(0.05)
