"""Helpers for tests (importable as ``support``: pytest's pythonpath includes tests/)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import gg
from gg.stream import read_events
from gg.testing import ScriptedModel

REPO = Path(__file__).resolve().parents[1]
CORPORA = REPO.parent / "shared" / "corpora"


def events_of(result: gg.RunResult) -> list[Any]:
    """All events of a finished run's stream, parsed."""
    return list(read_events(result.stream))


def types_of(result: gg.RunResult) -> list[str]:
    """The ``type`` of every event of a finished run's stream."""
    return [e.type for e in events_of(result)]


RunScripted = Callable[..., tuple[gg.RunResult, ScriptedModel]]


def write_script(path: Path, replies: list[dict[str, Any]]) -> Path:
    """Write a scripted-model file (SPEC §10) and return its path."""
    path.write_text(json.dumps({"replies": replies}))
    return path


@contextlib.contextmanager
def small_tmpfs(mnt: Path, size: str, *, inodes: int | None = None) -> Iterator[Path]:
    """Mount a tmpfs of ``size`` (``"256k"``, ``"1m"``; at most ``inodes`` files and
    directories, when given) at the new directory ``mnt``.

    The tests that use it run as root, like CI; a failed mount fails the test.
    """
    mnt.mkdir()
    options = f"size={size},mode=0700" + (f",nr_inodes={inodes}" if inodes else "")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(mnt)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, f"cannot mount a tmpfs (these tests need root): {done.stderr}"
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def fill_disk(disk: Path) -> Path:
    """Fill ``disk`` to the last byte; returns the filler file (delete it to free space)."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (65536, 4096, 1):
            with contextlib.suppress(OSError):
                while os.write(fd, b"\0" * size) == size:
                    pass
    finally:
        os.close(fd)
    return filler


GUEST_CODE_PROBE = r"""
import json, os
places = ["/gg/run", "/gg/guest"]
tmp = os.environ.get("TMPDIR", "")
if tmp and tmp != "/tmp":
    places.append(os.path.dirname(tmp))  # the run's directory, outside bubblewrap
wrote, seen = [], []
for place in places:
    for name in ("boot.pyc", "zygote.pyc", "runner.pyc"):
        path = f"{place}/{name}"
        if not os.path.exists(path):
            continue
        seen.append(path)
        for how in ("ab", "r+b"):
            try:
                with open(path, how) as f:
                    f.write(b"x")
                wrote.append(f"{how}:{path}")
            except OSError:
                pass
        try:
            os.rename(path, path + ".old")
            wrote.append("rename:" + path)
        except OSError:
            pass
    try:
        with open(f"{place}/planted.pyc", "xb") as f:
            f.write(b"x")
        wrote.append("create:" + place)
    except OSError:
        pass
print("GUEST " + json.dumps({"seen": seen, "wrote": wrote}))
"""
"""A program that looks for the compiled guest code (``boot.pyc``, ``zygote.pyc``,
``runner.pyc``) in the run's and the guest's directories and tries to write, rename or
add one; its last line is ``GUEST {"seen": [paths], "wrote": [what worked]}``."""


def ended_output(proc: subprocess.Popen[Any], limit: int = 3000) -> str:
    """For a failing assertion: the end of ``proc``'s stderr (else stdout), read boundedly.

    A process still running is killed first. Reading to the end waits at most 10 s: a
    process it left behind may hold the pipes open for much longer.
    """
    if proc.poll() is None:
        proc.kill()
    try:
        out, err = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        return "(its pipes stayed open 10 s after it ended: a process it left holds them)"
    text = err or out or ""
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    return f"exit {proc.returncode}: {text[-limit:]}"


def alive_with(marker: str) -> list[int]:
    """Pids of live (not zombie) processes with ``marker`` as one of their arguments."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in argv and state != "Z":
            found.append(int(entry))
    return found
