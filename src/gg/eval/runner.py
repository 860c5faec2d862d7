"""Running eval tasks through gg's public API (SPEC M6, C2).

Every run gets a fresh temporary copy of its task's workspace, one :class:`gg.Agent`
in the task's role and the configuration's mode and language, and the task's
``check.py`` once the session is over. What the session did is read off the stream
events it wrote (turns, error turns by kind, ceilings, tokens), not off the model.
"""

from __future__ import annotations

import functools
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gg.agent import Agent
from gg.endings import Language
from gg.eval.checks import run_check
from gg.eval.tasks import Task
from gg.models.base import Model

__all__ = ["Configuration", "ModelSource", "Progress", "RunRecord", "run_one", "run_suite"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Configuration:
    """One configuration of a suite run: a model spec, a mode and (code mode) a language."""

    model: str
    mode: str = "tool-calling"
    language: Language = "python"

    @property
    def label(self) -> str:
        """``"local · code · javascript"``; the language only in code mode."""
        parts = [self.model, self.mode, *([self.language] if self.mode == "code" else [])]
        return " · ".join(parts)


ModelSource = Callable[[Task, Configuration], Model]
"""Gives the model for one run of a task in a configuration (may reuse one per configuration)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Progress:
    """Where a suite run is, for a progress line.

    Attributes:
        configuration: the configuration's label.
        task: the task's name.
        index: the run's number (1-based) among ``total``.
        total: how many runs the suite makes.
        repeat: the repeat (1-based) of this task.
        turn: the turn the session is on (0 before the first).
    """

    configuration: str
    task: str
    index: int
    total: int
    repeat: int
    turn: int


@dataclass(slots=True, kw_only=True)
class RunRecord:
    """One run of one task in one configuration, as the report and the JSON show it.

    Attributes:
        task, role, kind: the task's name, role and class.
        configuration: the configuration's label; ``model``, ``mode``, ``language`` its parts.
        repeat: 1-based.
        status: ``"ended"``, ``"stopped"`` or ``"error"`` (gg itself failed: ``error`` says how).
        ending: ``{"call", ...arguments}`` or ``None``.
        valid_ending: the session ended by an ending that passed the gate (SPEC S1).
        success: the task's check passed (and it ran).
        check: the check's one line.
        turns: turns the session took.
        error_turns: error turns by kind (SPEC S5).
        ceiling: the ceiling that stopped it, if one did (SPEC S6).
        diagnosis: why it stopped, if it did.
        input_tokens, output_tokens: summed over the run's turns.
        seconds: wall time of the session (the check not included).
        stream: the run's stream file.
    """

    task: str
    role: str
    kind: str
    configuration: str
    model: str
    mode: str
    language: str
    repeat: int
    status: str = "error"
    ending: dict[str, Any] | None = None
    valid_ending: bool = False
    success: bool = False
    check: str = ""
    turns: int = 0
    error_turns: dict[str, int] = field(default_factory=dict)
    ceiling: str | None = None
    diagnosis: str | None = None
    error: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    seconds: float = 0.0
    stream: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The record as a JSON-ready dict."""
        return asdict(self)


class _Collector:
    """A stream listener: counts what a session did, and reports its turns."""

    def __init__(self, on_turn: Callable[[int], None]) -> None:
        self.turns = 0
        self.kinds: Counter[str] = Counter()
        self.ceiling: str | None = None
        self.tokens = [0, 0]
        self._on_turn = on_turn

    def __call__(self, event: Any) -> None:
        kind = getattr(event, "type", None)
        if kind == "turn":
            self.turns = max(self.turns, int(getattr(event, "turn", 0) or 0))
            usage = getattr(event, "usage", None)
            self.tokens[0] += int(getattr(usage, "input_tokens", 0) or 0)
            self.tokens[1] += int(getattr(usage, "output_tokens", 0) or 0)
            self._on_turn(self.turns)
        elif kind == "error_turn":
            self.kinds[str(getattr(event, "kind", "unknown"))] += 1
        elif kind == "ceiling_tripped":
            self.ceiling = str(getattr(event, "ceiling", "unknown"))


async def run_one(
    task: Task,
    configuration: Configuration,
    model: Model,
    *,
    repeat: int = 1,
    max_turns: int = 8,
    max_seconds: float = 0,
    on_turn: Callable[[int], None] = lambda turn: None,
) -> RunRecord:
    """Run ``task`` once in a fresh copy of its workspace, then its check.

    Args:
        task: the task.
        configuration: mode and language (its model spec is the label only: ``model`` runs).
        model: the model to drive.
        repeat: the repeat number, for the record.
        max_turns: the session's turn ceiling (SPEC S6).
        max_seconds: the session's wall-clock ceiling in seconds (SPEC S6); 0 = none.
        on_turn: called with the turn number after each turn.

    Returns:
        The record. A failure of gg itself is recorded (``status="error"``), not raised.

    Raises:
        gg.errors.UserError: a bad setting (the same for every run: the CLI exits 2).
    """
    record = RunRecord(
        task=task.name, role=task.role.value, kind=task.kind, repeat=repeat,
        configuration=configuration.label, model=configuration.model,
        mode=configuration.mode, language=configuration.language,
    )  # fmt: skip
    scratch = Path(tempfile.mkdtemp(prefix=f"gg-eval-{task.name}-"))
    workspace = scratch / "workspace"
    try:
        shutil.copytree(task.workspace, workspace, symlinks=True)
        limits = {"max_turns": max_turns, "max_seconds": max_seconds}
        await _session(record, task, configuration, model, workspace, limits, on_turn)
        if record.error is None:
            outcome = run_check(
                task.check, workspace=workspace, original=task.workspace, ending=record.ending
            )
            record.success, record.check = outcome.ok and record.valid_ending, outcome.message
        return record
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


async def _session(
    record: RunRecord,
    task: Task,
    configuration: Configuration,
    model: Model,
    workspace: Path,
    limits: dict[str, float],
    on_turn: Callable[[int], None],
) -> None:
    """Run the task's session in ``workspace``; fill ``record`` from its result and stream."""
    collector = _Collector(on_turn)
    agent = Agent(
        model=model,
        workspace=workspace,
        role=task.role,
        mode=configuration.mode,
        language=configuration.language,
        ceilings=limits,
        listeners=[collector],
    )
    started = time.monotonic()
    try:
        result = await agent.arun(task.text)
    except Exception as e:  # gg failed: the record says so, the suite goes on
        record.error = f"{type(e).__name__}: {e}"[:500]
    else:
        _fill(record, result.to_json(), result.session.turns)
    record.seconds = round(time.monotonic() - started, 3)
    record.turns = max(record.turns, collector.turns)
    record.error_turns = dict(sorted(collector.kinds.items()))
    record.ceiling = collector.ceiling
    record.input_tokens, record.output_tokens = collector.tokens


def _fill(record: RunRecord, result: dict[str, Any], turns: int) -> None:
    record.status = str(result["status"])
    record.ending = result["ending"]
    record.valid_ending = result["status"] == "ended" and result["ending"] is not None
    record.diagnosis = result["diagnosis"]
    record.stream = result["stream"]
    record.turns = turns


async def run_suite(
    tasks: Sequence[Task],
    configurations: Sequence[Configuration],
    models: ModelSource,
    *,
    repeat: int = 1,
    max_turns: int = 8,
    max_seconds: float = 0,
    on_progress: Callable[[Progress], None] = lambda p: None,
) -> list[RunRecord]:
    """Run every task ``repeat`` times in every configuration, one run after another.

    Args:
        tasks: the tasks (:func:`gg.eval.tasks.load_tasks`).
        configurations: the configurations, in report order.
        models: gives each run its model (``models(task, configuration)``).
        repeat: runs per task and configuration (at least 1).
        max_turns: the turn ceiling of every session.
        max_seconds: the wall-clock ceiling of every session, in seconds; 0 = none.
        on_progress: called before each run and after each turn.

    Returns:
        One record per run, in the order they ran.

    Raises:
        gg.errors.UserError: a bad setting or model spec (before or at the first run).
    """
    total = len(tasks) * len(configurations) * repeat
    records: list[RunRecord] = []
    for configuration in configurations:
        for task in tasks:
            for n in range(1, repeat + 1):
                point = functools.partial(
                    Progress, configuration=configuration.label, task=task.name,
                    index=len(records) + 1, total=total, repeat=n,
                )  # fmt: skip
                on_progress(point(turn=0))

                def on_turn(turn: int, point: Callable[..., Progress] = point) -> None:
                    on_progress(point(turn=turn))

                record = await run_one(
                    task, configuration, models(task, configuration), repeat=n,
                    max_turns=max_turns, max_seconds=max_seconds, on_turn=on_turn,
                )  # fmt: skip
                records.append(record)
    return records
