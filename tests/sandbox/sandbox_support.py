"""Helpers for the sandbox tests (fixtures live in ``conftest.py``)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from gg.sandbox import CallAnswer, CallRequest, Limits

SHARED = Path(__file__).resolve().parents[3] / "shared"
"""``shared/`` beside the repository (CI clones the repo with shared/ next to it)."""

FAST = Limits(wall_s=3, cpu_s=2, memory_mb=256, processes=32, output_bytes=100_000, calls=1_000)
"""Small limits, so that a limit test ends in seconds.

``calls`` is a tenth of the default: a loaded CI machine made 9,978 of 10,000 calls in the
3 s wall clock, so the call limit must be reached well within the wall clock.
"""


@dataclass
class Arena:
    """A workspace and a canary outside it."""

    root: Path
    workspace: Path
    canary: Path
    secret: str
    marker: str

    def canary_intact(self) -> bool:
        return (
            self.canary.read_text() == self.secret and self.canary.stat().st_mode & 0o777 == 0o644
        )


@dataclass
class Listener:
    """A loopback TCP server shared by the session, counting every connection it accepts."""

    port: int
    count: int = 0


class TcpServer:
    """A test's view of the :class:`Listener`: connections made since the test began."""

    def __init__(self, listener: Listener) -> None:
        self._listener = listener
        self._base = listener.count
        self.port = listener.port

    @property
    def connections(self) -> int:
        return self._listener.count - self._base


class Recorder:
    """A test handler: records calls; answers tools by echo, refuses endings it is told to."""

    def __init__(self, refuse: tuple[str, ...] = ()) -> None:
        self.calls: list[CallRequest] = []
        self.refuse = refuse

    async def __call__(self, request: CallRequest) -> CallAnswer:
        self.calls.append(request)
        if request.kind == "ending":
            if request.name in self.refuse:
                return CallAnswer(
                    ok=False, error=f"{request.name} is not available", error_type="ending_refused"
                )
            return CallAnswer(ok=True)
        if request.name == "fail":
            return CallAnswer(ok=False, error="the tool failed on purpose")
        return CallAnswer(ok=True, value={"tool": request.name, "arguments": request.arguments})


def leftover_processes(marker: str) -> list[str]:
    """Processes whose command line or working directory mentions ``marker``."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{entry.name}/cmdline").read_bytes().replace(b"\0", b" ")
            cwd = os.readlink(f"/proc/{entry.name}/cwd")
        except OSError:
            continue
        if marker.encode() in cmdline or marker in cwd:
            found.append(f"{entry.name}: {cmdline[:200]!r} cwd={cwd}")
    return found
