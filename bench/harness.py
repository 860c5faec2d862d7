"""The bench: gg's per-turn overhead and memory beside pydantic-ai's and smolagents'.

Run it with ``bench/run``. This script has two faces:

* the **orchestrator** (no ``--worker``): runs one worker process per subject
  and phase (the timed ones one after another, the memory ones side by side),
  then prints the table and writes ``bench/results.md``;
* a **worker** (``--worker SUBJECT --phase PHASE``): measures one subject in a
  fresh process and prints one JSON object.

Subjects: ``gg-turn`` and ``gg-never`` (gg with the stream's ``fsync`` set to
``"turn"``, the default, or ``"never"``), ``pydantic-ai`` and ``smolagents``.
Every model is zero-latency and answers one trivial tool call per turn, so the
time between two model calls of a session is the harness's own work for one
turn: acting on the reply, recording it, and building the next request.

Phases:

* ``turns``: a warm-up, then ``--sessions`` sessions of ``--turns`` tool turns
  one after another (the median over all their turns), then one session of
  ``--far-turn`` + 10 turns (the median around turn 10 against the median
  around turn ``--far-turn``: flat or growing with the session's length).
* ``throughput``: ``--concurrent`` sessions of ``--concurrent-turns`` tool
  turns (and the ending turn) alive at once in one process; turns per second
  of wall time, and the growth of the process's peak RSS per session.
* ``memory``: the same sessions under ``tracemalloc``: the peak of traced
  memory while they run, above what was traced before, per session.
"""

from __future__ import annotations

import argparse
import gc
import importlib.metadata
import itertools
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

HERE = Path(__file__).resolve().parent
SUBJECTS = ("gg-turn", "gg-never", "pydantic-ai", "smolagents")
PEERS = ("pydantic-ai", "smolagents")
PHASES = ("turns", "throughput", "memory")
LABELS = {
    "gg-turn": "gg (fsync turn, default)",
    "gg-never": "gg (fsync never)",
    "pydantic-ai": "pydantic-ai (FunctionModel)",
    "smolagents": "smolagents (ToolCallingAgent)",
}
PACKAGES = {
    "gg-turn": "gg",
    "gg-never": "gg",
    "pydantic-ai": "pydantic-ai-slim",
    "smolagents": "smolagents",
}
WINDOW = 5
"""Turns either side of turn 10 and of the far turn whose median is reported."""


# --- worker ------------------------------------------------------------------------------------


class Subject(Protocol):
    """What each ``subject_*.py`` module's ``Subject`` does."""

    def sequential(self, sessions: int, turns: int) -> list[list[float]]:
        """Run sessions of ``turns`` tool turns one after another; model-call times per session."""
        ...

    def concurrent(self, sessions: int, turns: int) -> int:
        """Run sessions alive at once; the number of turns taken."""
        ...

    def close(self) -> None:
        """Release what the subject holds (temporary files)."""
        ...


def make_subject(name: str) -> Subject:
    """The subject called ``name``, imported only in its own worker process."""
    if name.startswith("gg-"):
        import subject_gg

        return subject_gg.Subject(fsync=name.removeprefix("gg-"))
    if name == "pydantic-ai":
        import subject_pydantic_ai

        return subject_pydantic_ai.Subject()
    if name == "smolagents":
        import subject_smolagents

        return subject_smolagents.Subject()
    raise SystemExit(f"unknown subject {name!r}; one of {', '.join(SUBJECTS)}")


def intervals_us(stamps: Sequence[float]) -> list[float]:
    """Microseconds between consecutive model calls of one session: one per tool turn."""
    return [(b - a) * 1e6 for a, b in itertools.pairwise(stamps)]


def window_median(runs: Sequence[Sequence[float]], turn: int) -> float:
    """The median of turns ``turn - WINDOW`` .. ``turn + WINDOW`` (1-based), over all runs."""
    return statistics.median(us for run in runs for us in run[turn - 1 - WINDOW : turn + WINDOW])


def long_runs(subject_name: str, args: argparse.Namespace) -> int:
    """How many long sessions a subject runs: a peer's take half a minute or more each."""
    return int(args.peer_long_runs if subject_name in PEERS else args.long_runs)


def measure_turns(subject: Subject, args: argparse.Namespace) -> dict[str, Any]:
    """Median per-turn time over many short sessions; turn 10 against the far turn."""
    subject.sequential(5, 20)  # warm up: imports, caches, first-call paths
    started = time.perf_counter()
    runs = subject.sequential(args.sessions, args.turns)
    seconds = time.perf_counter() - started
    per_turn = [us for stamps in runs for us in intervals_us(stamps)]
    long_us = [
        intervals_us(stamps)
        for stamps in subject.sequential(long_runs(args.worker, args), args.far_turn + 10)
    ]
    return {
        "turns_measured": len(per_turn),
        "median_us": statistics.median(per_turn),
        "p90_us": statistics.quantiles(per_turn, n=10)[-1],
        "seconds": seconds,
        "turn10_us": window_median(long_us, 10),
        "far_us": window_median(long_us, args.far_turn),
    }


def rss_kib() -> int:
    """This process's resident set size now, in KiB (Linux ``/proc``)."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") // 1024


def measure_throughput(subject: Subject, args: argparse.Namespace) -> dict[str, Any]:
    """Turns per second with ``--concurrent`` sessions alive at once; peak RSS growth each."""
    subject.concurrent(10, args.concurrent_turns)
    gc.collect()
    before = rss_kib()
    started = time.perf_counter()
    turns = subject.concurrent(args.concurrent, args.concurrent_turns)
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    return {
        "turns": turns,
        "seconds": seconds,
        "turns_per_s": turns / seconds,
        "rss_kib_per_session": max(peak - before, 0) / args.concurrent,
    }


def measure_memory(subject: Subject, args: argparse.Namespace) -> dict[str, Any]:
    """Peak traced memory above the baseline while ``--concurrent`` sessions run, per session."""
    subject.concurrent(10, args.concurrent_turns)
    gc.collect()
    tracemalloc.start()
    base, _ = tracemalloc.get_traced_memory()
    subject.concurrent(args.concurrent, args.concurrent_turns)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {"kib_per_session": (peak - base) / 1024 / args.concurrent}


def worker(args: argparse.Namespace) -> None:
    """Measure one subject in one phase; print one JSON line."""
    subject = make_subject(args.worker)
    try:
        measure = {
            "turns": measure_turns,
            "throughput": measure_throughput,
            "memory": measure_memory,
        }[args.phase]
        out = measure(subject, args)
    finally:
        subject.close()
    out["version"] = importlib.metadata.version(PACKAGES[args.worker])
    print(json.dumps(out))


# --- orchestrator ------------------------------------------------------------------------------


@dataclass(kw_only=True)
class Row:
    """One subject's measures, merged from its three worker runs."""

    subject: str
    data: dict[str, Any]

    @property
    def label(self) -> str:
        """The subject's name and version as the table shows it."""
        return f"{LABELS[self.subject]} {self.data['version']}"


def run_worker(python: str, subject: str, phase: str, args: argparse.Namespace) -> dict[str, Any]:
    """Run one worker process and return its JSON."""
    cmd = [
        python,
        str(Path(__file__).resolve()),
        "--worker",
        subject,
        "--phase",
        phase,
        "--sessions",
        str(args.sessions),
        "--turns",
        str(args.turns),
        "--far-turn",
        str(args.far_turn),
        "--concurrent",
        str(args.concurrent),
        "--concurrent-turns",
        str(args.concurrent_turns),
        "--long-runs",
        str(args.long_runs),
        "--peer-long-runs",
        str(args.peer_long_runs),
    ]
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        print(proc.stderr, file=sys.stderr)
        raise SystemExit(f"the {subject} worker failed in phase {phase} (exit {proc.returncode})")
    print(
        f"  {subject:12s} {phase:10s} {time.perf_counter() - started:6.1f} s",
        file=sys.stderr,
        flush=True,
    )
    data: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return data


def fmt(value: float, digits: int = 0) -> str:
    """A number with thousands separators."""
    return f"{value:,.{digits}f}"


def table(rows: list[Row], args: argparse.Namespace) -> str:
    """The results table in Markdown, ratios against the fastest peer."""
    peers = [r for r in rows if r.subject in PEERS]
    fastest = min(peers, key=lambda r: r.data["median_us"])
    lightest = min(peers, key=lambda r: r.data["kib_per_session"])
    far = fmt(args.far_turn)
    head = (
        f"| harness | median µs/turn | x fastest peer | µs @ turn ~10 | µs @ turn ~{far} "
        f"| {far} ÷ 10 | KiB/session (tracemalloc) | x lightest peer | KiB/session (RSS) "
        f"| turns/s, {fmt(args.concurrent)} concurrent |"
    )
    lines = [head, "| --- |" + " ---: |" * 9]
    for r in rows:
        d = r.data
        lines.append(
            f"| {r.label} | {fmt(d['median_us'], 1)} "
            f"| {d['median_us'] / fastest.data['median_us']:.2f} "
            f"| {fmt(d['turn10_us'], 1)} | {fmt(d['far_us'], 1)} "
            f"| {d['far_us'] / d['turn10_us']:.2f} | {fmt(d['kib_per_session'], 1)} "
            f"| {d['kib_per_session'] / lightest.data['kib_per_session']:.2f} "
            f"| {fmt(d['rss_kib_per_session'], 1)} | {fmt(d['turns_per_s'])} |"
        )
    return "\n".join(lines)


def checks(rows: list[Row], args: argparse.Namespace) -> list[str]:
    """The targets of issue 2 item 11, each with its measured value and a verdict."""
    by = {r.subject: r.data for r in rows}
    peers = [by[p] for p in PEERS]
    fastest = min(d["median_us"] for d in peers)
    gg = by["gg-never"]
    flat = gg["far_us"] / gg["turn10_us"]
    items = [
        (
            gg["median_us"] <= fastest / 3,
            f"gg (fsync never) median per-turn overhead {gg['median_us']:.1f} µs is "
            f"{gg['median_us'] / fastest:.2f} x the fastest peer's {fastest:.1f} µs "
            "(target: at most 0.33)",
        ),
        (
            flat <= 1.2,
            f"gg (fsync never) turn ~{args.far_turn:,} takes {flat:.2f} x turn ~10 "
            "(target: at most 1.2)",
        ),
        (
            gg["kib_per_session"] <= 40,
            f"gg: {args.concurrent:,} concurrent sessions take {gg['kib_per_session']:.1f} KiB "
            "each (tracemalloc; target: at most 40)",
        ),
    ]
    return [f"- {'PASS' if ok else 'FAIL'}: {text}" for ok, text in items]


def machine() -> str:
    """CPU model, cores and Python version, for the results header."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if "model name" in line)
    except (OSError, StopIteration):
        pass
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}"


def method(args: argparse.Namespace) -> list[str]:
    """How the table was measured, as Markdown bullets."""
    far, long = args.far_turn, args.far_turn + 10
    return [
        "- Model: zero latency, one trivial tool call (`noop`) per turn, then the harness's "
        "ending (gg `finish`, pydantic-ai a text reply, smolagents `final_answer`). A turn's "
        "time is the time between two model calls of a session: all the harness does for one "
        "turn.",
        f"- median µs/turn: over {args.sessions:,} sessions x {args.turns} tool turns "
        f"({args.sessions * args.turns:,} turns), one session after another.",
        f"- µs @ turn ~10 and ~{far:,}: the median of the {2 * WINDOW + 1} turns around each, "
        f"in sessions of {long:,} turns, pooled over {args.long_runs} such sessions for gg "
        f"and {args.peer_long_runs} for each peer (one takes a peer 20 s or more).",
        f"- KiB/session: {args.concurrent:,} sessions of {args.concurrent_turns} tool turns and "
        "an ending, alive at once in one process (gg and pydantic-ai: one run or agent, the "
        "sessions gathered with `asyncio.gather`, the model yielding once per call; "
        "smolagents: an agent per session, advanced in turn as generators); the peak of "
        "`tracemalloc`'s traced memory above the baseline, per session. The RSS column: the "
        "growth of the process's peak resident set, in a run without tracemalloc.",
        "- turns/s: the same sessions without tracemalloc, turns (tool turns and endings) "
        "over wall time.",
        "- x fastest peer, x lightest peer: against the peer with the lowest median, memory.",
        "- Each measure runs in its own process; all of them in one run of `bench/run`.",
    ]


def report(rows: list[Row], args: argparse.Namespace) -> str:
    """The whole ``results.md``: where and how it was measured, the table, the targets."""
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    return "\n".join(
        [
            "# Bench results",
            "",
            f"Measured by `bench/run` on {when}: {machine()}.",
            "",
            table(rows, args),
            "",
            *checks(rows, args),
            "",
            "How it was measured:",
            "",
            *method(args),
            "",
        ]
    )


def orchestrate(args: argparse.Namespace) -> None:
    """Measure every subject in every phase, print the table and write ``results.md``.

    The timed phases run one process at a time, so none slows another; the
    memory phases count bytes, not time, and run side by side, one per core.
    """
    data: dict[str, dict[str, Any]] = {subject: {} for subject in args.subjects}
    print("timed phases, one at a time:", file=sys.stderr)
    for subject in args.subjects:
        for phase in ("turns", "throughput"):
            data[subject].update(run_worker(args.python, subject, phase, args))
    print("memory phases, side by side:", file=sys.stderr)
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        memory = pool.map(lambda s: run_worker(args.python, s, "memory", args), args.subjects)
        for subject, measured in zip(args.subjects, memory, strict=True):
            data[subject].update(measured)
    rows = [Row(subject=subject, data=data[subject]) for subject in args.subjects]
    text = report(rows, args)
    print(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
        print(f"written to {args.out}", file=sys.stderr)


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Command-line options (see the module docstring)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--worker", choices=SUBJECTS, help="measure one subject (internal)")
    p.add_argument("--phase", choices=PHASES, default="turns")
    p.add_argument(
        "--python",
        default=sys.executable,
        help="the interpreter of the workers (the bench's peers venv)",
    )
    p.add_argument("--subjects", nargs="+", choices=SUBJECTS, default=list(SUBJECTS))
    p.add_argument("--sessions", type=int, default=200, help="sessions for the median")
    p.add_argument("--turns", type=int, default=50, help="tool turns per median session")
    p.add_argument("--far-turn", type=int, default=1000, help="the turn compared with turn 10")
    p.add_argument(
        "--long-runs",
        type=int,
        default=5,
        help="long sessions of gg, pooled to take the noise out of the windows",
    )
    p.add_argument("--peer-long-runs", type=int, default=1, help="long sessions of each peer")
    p.add_argument("--concurrent", type=int, default=1000, help="sessions alive at once")
    p.add_argument(
        "--concurrent-turns", type=int, default=3, help="tool turns per concurrent session"
    )
    p.add_argument("--out", default=str(HERE / "results.md"), help="results file ('' for none)")
    args = p.parse_args(argv)
    if args.far_turn < 10 + 2 * WINDOW:
        p.error(f"--far-turn must be at least {10 + 2 * WINDOW}")
    if not args.worker and not set(PEERS) <= set(args.subjects):
        p.error("the table compares against the peers: keep pydantic-ai and smolagents")
    return args


def main() -> None:
    """Entry point: a worker or the orchestrator."""
    args = parse()
    if args.worker:
        worker(args)
    else:
        orchestrate(args)


if __name__ == "__main__":
    main()
