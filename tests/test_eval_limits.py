"""``gg eval``'s runner bounds a run in wall time (bench/eval's ``--task-seconds``; SPEC S6)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from gg.eval.models import SpecModels
from gg.eval.runner import Configuration, run_suite
from gg.eval.tasks import default_suite, load_tasks


def _slow_replies(root: Path, task: str, count: int) -> Configuration:
    """Replies that each run a one-second command and never end the task."""
    call = {"name": "run_command", "arguments": {"command": "sleep 1"}}
    replies = {"replies": [{"tool_calls": [call]}] * count}
    (root / f"{task}.json").write_text(json.dumps(replies), encoding="utf-8")
    return Configuration(model=f"scripted:{root}")


def test_a_run_over_its_seconds_is_stopped_by_the_ceiling(tmp_path: Path) -> None:
    config = _slow_replies(tmp_path, "answer-from-notes", 8)
    tasks = load_tasks(default_suite(), "answer-from-notes")
    (record,) = asyncio.run(run_suite(tasks, [config], SpecModels(), max_turns=8, max_seconds=1.5))
    assert (record.status, record.valid_ending, record.success) == ("stopped", False, False)
    assert record.ceiling == "budget" and "second" in (record.diagnosis or ""), record.diagnosis
    assert 2 <= record.turns < 8
    assert record.seconds < 8


def test_without_a_bound_the_same_run_goes_to_its_turn_ceiling(tmp_path: Path) -> None:
    config = _slow_replies(tmp_path, "answer-from-notes", 3)
    tasks = load_tasks(default_suite(), "answer-from-notes")
    (record,) = asyncio.run(run_suite(tasks, [config], SpecModels(), max_turns=3))
    assert (record.status, record.ceiling, record.turns) == ("stopped", "max_turns", 3)
