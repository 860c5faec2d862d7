"""How well a model's calls went in a ``gg eval --json`` run, beyond success (issue 16).

When every run of a configuration fails, success rates cannot rank models; the calls in
each run's stream still can. Per configuration this prints: runs, calls, the share of
calls whose tool result was ok, distinct calls per run (a run repeating one call scores
1), the share of runs whose first call succeeded, and the share of runs that wrote a file
(``write_file`` / ``edit_file`` with an ok result).

    python bench/eval_calls.py eval-a.json eval-b.json ...
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

WRITES = {"write_file", "edit_file", "apply_patch"}


def run_calls(stream: Path) -> list[tuple[str, str, bool]]:
    """``(name, arguments as JSON, ok)`` for each tool call in a run's stream, in order."""
    calls: list[tuple[str, str, bool]] = []
    pending: dict[str, str] = {}
    for line in stream.read_text(encoding="utf-8").splitlines():
        event: dict[str, Any] = json.loads(line)
        if event.get("type") == "tool_call":
            pending[event["name"]] = json.dumps(event.get("arguments"), sort_keys=True)
        elif event.get("type") == "tool_result":
            name = event["name"]
            calls.append((name, pending.pop(name, ""), bool(event.get("ok"))))
    return calls


def summary(path: Path) -> list[str]:
    """One line per configuration of one ``gg eval --json`` file."""
    runs: dict[str, list[list[tuple[str, str, bool]]]] = {}
    for record in json.loads(path.read_text(encoding="utf-8"))["runs"]:
        stream = Path(record.get("stream") or "")
        calls = run_calls(stream) if stream.is_file() else []
        runs.setdefault(record["configuration"], []).append(calls)
    lines = []
    for label, each in runs.items():
        n, total = len(each), sum(len(c) for c in each) or 1
        ok = sum(c[2] for calls in each for c in calls) / total
        distinct = sum(len({(c[0], c[1]) for c in calls}) for calls in each) / n
        first = sum(bool(calls) and calls[0][2] for calls in each) / n
        wrote = sum(any(c[0] in WRITES and c[2] for c in calls) for calls in each) / n
        lines.append(
            f"| {label} | {n} | {total} | {ok:.0%} | {distinct:.1f} | {first:.0%} | {wrote:.0%} |"
        )
    return lines


def main() -> None:
    """Print the table for every file named on the command line."""
    columns = ("runs", "calls", "ok results", "distinct calls/run", "first call ok", "wrote a file")
    print("| configuration | " + " | ".join(columns) + " |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name in sys.argv[1:]:
        print("\n".join(summary(Path(name))))


if __name__ == "__main__":
    main()
