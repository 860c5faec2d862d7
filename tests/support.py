"""Helpers for tests (importable as ``support``: pytest's pythonpath includes tests/)."""

from __future__ import annotations

import json
from collections.abc import Callable
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
