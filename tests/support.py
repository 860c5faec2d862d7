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
def small_tmpfs(mnt: Path, size: str) -> Iterator[Path]:
    """Mount a tmpfs of ``size`` (``"256k"``, ``"1m"``) at the new directory ``mnt``.

    The tests that use it run as root, like CI; a failed mount fails the test.
    """
    mnt.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(mnt)],
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
