"""Per-configuration figures of a suite run, as a table and as JSON (SPEC M6).

Rates are fractions of the configuration's runs: a **valid ending** is a session that
ended by an ending call that passed the gate (SPEC S1); a **success** is a valid ending
whose task check passed.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rich.table import Table
from rich.text import Text

from gg.eval.runner import RunRecord

__all__ = ["Summary", "suite_json", "summarize", "summary_table", "write_json"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Summary:
    """The figures of one configuration.

    Attributes:
        configuration: its label (``"local · tool-calling"``).
        runs: how many runs.
        valid_ending_rate: fraction (0..1) of runs that ended by an ending (SPEC S1).
        success_rate: fraction (0..1) of runs whose check passed after a valid ending.
        mean_turns: turns per run, on average.
        error_turns: error turns by kind, summed over the runs (SPEC S5).
        ceilings: ceilings that stopped runs, by name (SPEC S6).
        errors: runs where gg itself failed.
        input_tokens, output_tokens: summed over the runs.
        seconds: wall time of the sessions, summed.
        by_task: ``{task: successes}`` over the runs.
    """

    configuration: str
    runs: int
    valid_ending_rate: float
    success_rate: float
    mean_turns: float
    error_turns: dict[str, int] = field(default_factory=dict)
    ceilings: dict[str, int] = field(default_factory=dict)
    errors: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    seconds: float = 0.0
    by_task: dict[str, int] = field(default_factory=dict)


def _summary(label: str, runs: Sequence[RunRecord]) -> Summary:
    n = len(runs)
    kinds: Counter[str] = Counter()
    for r in runs:
        kinds.update(r.error_turns)
    tasks: Counter[str] = Counter({r.task: 0 for r in runs})
    tasks.update(r.task for r in runs if r.success)
    return Summary(
        configuration=label,
        runs=n,
        valid_ending_rate=sum(r.valid_ending for r in runs) / n,
        success_rate=sum(r.success for r in runs) / n,
        mean_turns=sum(r.turns for r in runs) / n,
        error_turns=dict(sorted(kinds.items())),
        ceilings=dict(sorted(Counter(r.ceiling for r in runs if r.ceiling).items())),
        errors=sum(r.status == "error" for r in runs),
        input_tokens=sum(r.input_tokens for r in runs),
        output_tokens=sum(r.output_tokens for r in runs),
        seconds=round(sum(r.seconds for r in runs), 3),
        by_task=dict(tasks),
    )


def summarize(records: Sequence[RunRecord]) -> list[Summary]:
    """One :class:`Summary` per configuration, in the order configurations first ran."""
    groups: dict[str, list[RunRecord]] = {}
    for r in records:
        groups.setdefault(r.configuration, []).append(r)
    return [_summary(label, runs) for label, runs in groups.items()]


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.items()) or "-"


def summary_table(summaries: Sequence[Summary]) -> Table:
    """The report table: one row per configuration."""
    table = Table(title="gg eval", title_justify="left")
    for column in ("configuration", "runs", "valid endings", "success", "mean turns"):
        table.add_column(column, justify="left" if column == "configuration" else "right")
    for column in ("error turns", "ceilings"):
        table.add_column(column)
    for column in ("tokens in/out", "wall s"):
        table.add_column(column, justify="right")
    for s in summaries:
        cells = (
            s.configuration,
            str(s.runs),
            f"{s.valid_ending_rate:.0%}",
            f"{s.success_rate:.0%}",
            f"{s.mean_turns:.1f}",
            _counts(s.error_turns) + (f"; gg failed {s.errors}" if s.errors else ""),
            _counts(s.ceilings),
            f"{s.input_tokens}/{s.output_tokens}",
            f"{s.seconds:.1f}",
        )
        table.add_row(*(Text(c) for c in cells))  # plain text, never markup
    return table


def suite_json(records: Sequence[RunRecord], *, settings: dict[str, Any]) -> dict[str, Any]:
    """``{"settings", "configurations": [Summary...], "runs": [RunRecord...]}``."""
    return {
        "settings": settings,
        "configurations": [asdict(s) for s in summarize(records)],
        "runs": [r.to_json() for r in records],
    }


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` to ``path`` as indented JSON (UTF-8, a final newline)."""
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
