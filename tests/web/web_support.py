"""Helpers for the browser tests (importable as ``web_support``; tests/web is on sys.path).

:func:`chromium` finds the system's Chromium (Debian's ``chromium`` package, which
``./scripts/setup`` installs) and fails the test with a clear message when it is missing:
the browser tests never skip. :class:`Served` runs ``gg serve`` for real in a subprocess
on 127.0.0.1 with ``--port 0`` and reads the URL it prints.
"""

from __future__ import annotations

import contextlib
import os
import queue
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import TracebackType

import pytest

from gg.state import state_path

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
BOARD_TESTS = REPO / "tests" / "board"
DRIVER = HERE / "web_board_driver.py"
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def chromium() -> str:
    """The system Chromium's path; fails the test (never skips) when there is none."""
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    pytest.fail(
        "the browser tests need Chromium from the system's packages, and none was found "
        f"(looked for {', '.join(BROWSERS)} on PATH): run ./scripts/setup, which installs "
        "Debian's 'chromium' package (apt-get install chromium)",
        pytrace=False,
    )


def artefacts() -> Path:
    """Where the tests save screenshots: $GG_ARTEFACTS, else tests/artefacts/ (git-ignored)."""
    out = Path(os.environ.get("GG_ARTEFACTS") or REPO / "tests" / "artefacts")
    out.mkdir(parents=True, exist_ok=True)
    return out


def child_env(**extra: str) -> dict[str, str]:
    """The environment for gg subprocesses: this one, with the sources and test helpers first."""
    paths = [str(REPO / "src"), str(BOARD_TESTS), str(REPO / "tests")]
    old = os.environ.get("PYTHONPATH")
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([*paths, *([old] if old else [])]),
        **extra,
    }


_URL = re.compile(r"gg serve: (http://\S+/)")


class Served:
    """``gg serve -w WORKSPACE --port 0`` running in a subprocess; ``.url`` once it listens.

    Args:
        workspace: the workspace to serve.
        args: more arguments (``--host ...``).
    """

    def __init__(self, workspace: Path, *args: str) -> None:
        self.command = [sys.executable, "-m", "gg", "serve", "-w", str(workspace), "--port", "0"]
        self.command += list(args)
        self.url = ""
        self.lines: list[str] = []
        self.stderr = ""
        self._lines: queue.Queue[str] = queue.Queue()
        self.proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> Served:
        self.proc = subprocess.Popen(
            self.command,
            env=child_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        threading.Thread(target=self._read, daemon=True).start()
        deadline = time.monotonic() + 30
        while not self.url:
            left = deadline - time.monotonic()
            assert left > 0 and self.proc.poll() is None, f"gg serve did not start: {self.lines}"
            try:
                got = self._lines.get(timeout=min(left, 0.5))
            except queue.Empty:
                continue
            self.lines.append(got)
            if found := _URL.search(got):
                self.url = found[1]
        return self

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for got in self.proc.stdout:
            self._lines.put(got)

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self.proc is not None
        self.proc.terminate()
        try:
            _, self.stderr = self.proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):  # a leftover holds its pipes
                _, self.stderr = self.proc.communicate(timeout=10)


def run_board(repo: Path, *, delay: float = 0.0) -> subprocess.Popen[str]:
    """Start the scripted board (:mod:`web_board_driver`) on ``repo`` in another process."""
    return subprocess.Popen(
        [sys.executable, str(DRIVER), str(repo)],
        env=child_env(GG_WEB_DELAY=str(delay)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


class StreamWatch(threading.Thread):
    """Notes when each line of the workspace's (one) stream appears, polling every 5 ms."""

    def __init__(self, repo: Path) -> None:
        super().__init__(daemon=True)
        self.runs = state_path(repo) / "runs"
        self.written: dict[int, float] = {}
        self.stream: Path | None = None
        self.done = threading.Event()

    def run(self) -> None:
        data = b""
        while not self.done.is_set():
            found = sorted(self.runs.glob("*/stream.jsonl")) if self.runs.is_dir() else []
            if found:
                self.stream = found[0]
                data = self.stream.read_bytes()
                now = time.time()
                for n in range(len(self.written) + 1, data.count(b"\n") + 1):
                    self.written[n] = now
            time.sleep(0.005)
