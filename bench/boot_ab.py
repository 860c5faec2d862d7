"""What the compiled guest boot saves (issue 11): one interleaved A/B run, machine CPU.

Every sandboxed process boots from ``boot.py``. gg writes the code it compiled once per
process into the run's directory (:mod:`gg.sandbox.bytecode`); without those files the
guest compiles the source at every start, as it did before. This bench runs the same
sandbox both ways, alternating in rounds, and reports the CPU the whole machine spent per
JavaScript program (each one a fresh Deno spare) and per shell command, read from
``/proc/stat`` (so the sandbox's own processes count, whichever process reaps them).

Run it on an otherwise idle machine (the figure is the whole machine's)::

    .venv/bin/python bench/boot_ab.py [--rounds 4] [--runs 15]

Not a test: nothing here fails a build.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

from gg.sandbox import CallAnswer, CallRequest, Sandbox, launch

_WRITE = launch.write_compiled


def _busy_s() -> float:
    """CPU seconds the whole machine has spent (not idle, not waiting on I/O)."""
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


async def _answer(request: CallRequest) -> CallAnswer:
    return CallAnswer(ok=True, value="ok")


async def _batch(sandbox: Sandbox, workspace: Path, kind: str, runs: int) -> float:
    """Machine CPU ms per run of ``kind`` (``js``: a program and a 150 ms pause, for the
    next spare to start; ``shell``: ``true``)."""
    before = _busy_s()
    for _ in range(runs):
        if kind == "shell":
            await sandbox.run_shell("true", workspace=workspace, timeout_s=10)
        else:
            await sandbox.run(
                "let x = 1;", language="javascript", workspace=workspace, tools=[],
                handler=_answer,
            )  # fmt: skip
            await asyncio.sleep(0.15)
    return (_busy_s() - before) / runs * 1000


async def main(rounds: int, runs: int) -> None:
    """Alternate compiled and source boots for ``rounds`` rounds; print the medians."""
    workspace = Path(tempfile.mkdtemp(prefix="gg-bench-boot-"))
    results: dict[tuple[str, str], list[float]] = {}
    async with Sandbox() as sandbox:
        for _ in range(3):  # warm-up: host facts, the first spares
            await sandbox.run("let x = 1;", language="javascript", workspace=workspace,
                              tools=[], handler=_answer)  # fmt: skip
        for _ in range(rounds):
            for boot in ("compiled", "source"):
                launch.write_compiled = _WRITE if boot == "compiled" else _no_files  # type: ignore[assignment]
                for kind in ("js", "shell"):
                    results.setdefault((boot, kind), []).append(
                        await _batch(sandbox, workspace, kind, runs)
                    )
    launch.write_compiled = _WRITE
    print(f"{rounds} interleaved rounds x {runs} runs; machine CPU ms per run, medians")
    for kind in ("js", "shell"):
        compiled = statistics.median(results[("compiled", kind)])
        source = statistics.median(results[("source", kind)])
        print(f"{kind:6s} compiled boot {compiled:6.1f}  source boot {source:6.1f}  "
              f"ratio {compiled / source:.2f}")  # fmt: skip


def _no_files(run_dir: Path, guest_dir: str, names: tuple[str, ...] = ()) -> None:
    """No compiled code in the run's directory: the guest compiles the source."""


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4, help="interleaved rounds")
    parser.add_argument("--runs", type=int, default=15, help="runs of each kind per round")
    args = parser.parse_args()
    started = time.monotonic()
    asyncio.run(main(args.rounds, args.runs))
    print(f"({time.monotonic() - started:.0f} s)")
