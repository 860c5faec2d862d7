"""gg eval beside the peers, in one run, against one model (issue 16 item 5).

Starts llama.cpp's OpenAI-compatible server (``python -m llama_cpp.server``) on
127.0.0.1 with one GGUF (default: gg's embedded model), then runs the same suite with:

- ``gg embedded``: gg's own local path (``--model local``), same GGUF, in process;
- ``gg openai-compat``: gg against the server (``openai-compat:local@URL``);
- ``smolagents-tool``, ``smolagents-code``, ``pydantic-ai``: bench/eval_peer.py in the
  peers' venv, against the same server.

Every subject gets the same tasks, task text, turn limit and check.py. Prints one table
(success rate, valid endings, mean turns, wall time per subject, successes per task) and
writes it to bench/eval-results.md (and the records to --json).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from gg.eval.models import SpecModels
from gg.eval.runner import Configuration, run_suite
from gg.eval.tasks import Task, default_suite, load_tasks
from gg.models.catalogue import DEFAULT_LOCAL_MODEL, catalogue_entry
from gg.models.model_file import ensure_model_file

HERE = Path(__file__).resolve().parent
PEERS = ("smolagents-tool", "smolagents-code", "pydantic-ai")


def say(text: str) -> None:
    """One progress line on stderr, with the time and the load average."""
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"[{time.strftime('%H:%M:%S')} load {load}] {text}", file=sys.stderr, flush=True)


def say_record(r: dict[str, Any]) -> None:
    """One run's outcome as a progress line."""
    say(
        f"  {r['task']}: success={r['success']} ending={r['valid_ending']} "
        f"turns={r['turns']} {r['seconds']:.0f}s {_first_line(r.get('error'))}"
    )


def _first_line(text: str | None) -> str:
    """The first line of an error, at most 160 characters ("" for none)."""
    return (text or "").strip().splitlines()[0][:160] if (text or "").strip() else ""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(
    gguf: Path, args: argparse.Namespace, log: Path
) -> tuple[subprocess.Popen[bytes], str]:
    """Start llama_cpp.server on a free loopback port; return it and its ``/v1`` URL."""
    port = _free_port()
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(gguf),
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "8192",
        "--n_threads", str(args.threads), "--n_threads_batch", str(args.threads),
        "--verbose", "False",
        *(["--chat_format", args.chat_format] if args.chat_format else []),
    ]  # fmt: skip
    process = subprocess.Popen(command, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if process.poll() is not None:
            sys.exit(f"llama_cpp.server exited:\n{log.read_text(errors='replace')[-2000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=1):
                return process, f"http://127.0.0.1:{port}/v1"
        except OSError:
            time.sleep(0.5)
    process.kill()
    sys.exit("llama_cpp.server did not answer within 180 s")


def run_gg(spec: str, tasks: list[Task], args: argparse.Namespace) -> list[dict[str, Any]]:
    """The suite through gg's API (the same runner ``gg eval`` uses).

    Every reply is capped at ``--max-output-tokens`` and every session at
    ``--task-seconds`` (gg's own ``max_seconds`` ceiling, checked between turns).
    """
    options = {"max_tokens": args.max_output_tokens, "n_threads": args.threads}
    models = SpecModels(progress=say, options=options)

    def show(p: Any) -> None:
        if p.turn == 0:
            say(f"  [{p.index}/{p.total}] {p.task} repeat {p.repeat}")
        else:
            say(f"    {p.task} turn {p.turn}")

    async def go() -> list[dict[str, Any]]:
        try:
            records = await run_suite(
                tasks, [Configuration(model=spec)], models, repeat=args.repeat,
                max_turns=args.max_turns, max_seconds=args.task_seconds, on_progress=show,
            )  # fmt: skip
        finally:
            await models.aclose()
        return [r.to_json() for r in records]

    out = asyncio.run(go())
    for r in out:
        say_record(r)
    return out


def _peer_one(subject: str, task: Task, n: int, url: str, args: argparse.Namespace,
              tmp: Path) -> dict[str, Any]:  # fmt: skip
    """One run of one task by one peer, in its own process, killed after ``--task-seconds``."""
    out = tmp / f"{subject}-{task.name}-{n}.json"
    command = [
        args.python, str(HERE / "eval_peer.py"), "--subject", subject, "--url", url,
        "--tasks", task.name, "--max-turns", str(args.max_turns), "--repeat", "1",
        "--max-output-tokens", str(args.max_output_tokens), "--out", str(out),
    ]  # fmt: skip
    started = time.monotonic()
    failed: dict[str, Any] = {
        "task": task.name, "role": task.role.value, "repeat": n,
        "success": False, "valid_ending": False, "turns": args.max_turns,
    }  # fmt: skip
    try:
        done = subprocess.run(
            command, check=False, timeout=args.task_seconds + 30, env=_peer_env(args)
        )
    except subprocess.TimeoutExpired:
        return {**failed, "seconds": round(time.monotonic() - started, 1),
                "error": f"timed out after {args.task_seconds + 30:.0f} s"}  # fmt: skip
    if done.returncode != 0 or not out.is_file():
        return {**failed, "seconds": round(time.monotonic() - started, 1),
                "error": f"{subject} exited {done.returncode}"}  # fmt: skip
    record = dict(json.loads(out.read_text())[0])
    record["repeat"] = n
    return record


def _peer_env(args: argparse.Namespace) -> dict[str, str]:
    """The environment of a peer's process: ``--peer-path`` ahead of ``PYTHONPATH``."""
    env = dict(os.environ)
    paths = [*args.peer_path, *filter(None, [env.get("PYTHONPATH")])]
    if paths:
        env["PYTHONPATH"] = os.pathsep.join(str(p) for p in paths)
    return env


def run_peer(
    subject: str, tasks: list[Task], url: str, args: argparse.Namespace, tmp: Path
) -> list[dict[str, Any]]:
    """The suite through one peer, in the peers' venv, one process per run."""
    records = []
    for i, task in enumerate(tasks, start=1):
        for n in range(1, args.repeat + 1):
            say(f"  [{i}/{len(tasks)}] {task.name} repeat {n}")
            r = _peer_one(subject, task, n, url, args, tmp)
            say_record(r)
            records.append(r)
    return records


def table(results: dict[str, list[dict[str, Any]]]) -> str:
    """The side-by-side markdown table."""
    tasks = sorted({r["task"] for runs in results.values() for r in runs})
    head = "| subject | runs | success | valid endings | mean turns | wall s/task | "
    lines = [head + " | ".join(tasks) + " |", "|" + " --- |" * (6 + len(tasks))]
    for subject, runs in results.items():
        n = max(len(runs), 1)
        per = [sum(r["success"] for r in runs if r["task"] == t) for t in tasks]
        lines.append(
            f"| {subject} | {len(runs)} | {sum(r['success'] for r in runs) / n:.0%} | "
            f"{sum(r['valid_ending'] for r in runs) / n:.0%} | "
            f"{sum(r['turns'] for r in runs) / n:.1f} | "
            f"{sum(r['seconds'] for r in runs) / n:.0f} | " + " | ".join(str(p) for p in per) + " |"
        )
    return "\n".join(lines)


def _shown_flags() -> str:
    """The command line's flags, without ``--python`` (bench/eval passes it)."""
    flags, skip = [], False
    for word in sys.argv[1:]:
        if skip or word == "--python":
            skip = not skip
            continue
        flags.append(word)
    return " ".join(flags)


def _args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--python", required=True, help="the peers' venv interpreter")
    p.add_argument("--tasks", default="*", help="task names as globs, commas between")
    p.add_argument("--max-turns", type=int, default=8)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--local", default=DEFAULT_LOCAL_MODEL, help="the catalogue model to serve")
    p.add_argument("--gguf", type=Path, default=None, help="any GGUF instead of --local")
    p.add_argument("--chat-format", default="", help="llama_cpp.server's; '' = the GGUF's")
    p.add_argument("--threads", type=int, default=1, help="llama.cpp threads, every subject")
    p.add_argument("--max-output-tokens", type=int, default=512, help="cap on every reply")
    p.add_argument("--task-seconds", type=float, default=600, help="wall-clock bound per run")
    p.add_argument("--subjects", default="gg-embedded,gg-openai-compat," + ",".join(PEERS))
    extra = "a directory to put ahead of the peers' PYTHONPATH (repeatable)"
    p.add_argument("--peer-path", type=Path, action="append", default=[], help=extra)
    p.add_argument("--json", type=Path, default=None)
    p.add_argument("--out", type=Path, default=HERE / "eval-results.md")
    return p.parse_args()


def main() -> None:
    """Parse the flags, start the server, run every subject, print and write the table."""
    args = _args()
    subjects = [s for s in args.subjects.split(",") if s]
    tasks = load_tasks(default_suite(), args.tasks)
    gguf = args.gguf or ensure_model_file(catalogue_entry(args.local), progress=say)
    local_spec = f"local:{args.gguf or args.local}"
    results: dict[str, list[dict[str, Any]]] = {}
    load_before = os.getloadavg()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="gg-eval-bench-") as tmp:
        if "gg-embedded" in subjects:
            say(f"gg embedded ({local_spec})")
            results["gg embedded"] = run_gg(local_spec, tasks, args)
        server, url = start_server(gguf, args, Path(tmp) / "server.log")
        try:
            if "gg-openai-compat" in subjects:
                say(f"gg openai-compat ({url})")
                results["gg openai-compat"] = run_gg(f"openai-compat:local@{url}", tasks, args)
            for peer in (s for s in PEERS if s in subjects):
                say(peer)
                results[peer] = run_peer(peer, tasks, url, args, Path(tmp))
        finally:
            server.terminate()
            server.wait(timeout=20)
    text = table(results)
    print(text)
    load_after = os.getloadavg()
    note = (
        f"Model {gguf.name}, served by llama_cpp.server (chat format: "
        f"{args.chat_format or 'the GGUF template'}), {args.threads} thread(s); "
        f"max {args.max_turns} turns, {args.max_output_tokens} output tokens per reply, "
        f"{args.repeat} repeat(s), tasks {args.tasks!r}; "
        f"{(time.monotonic() - started) / 60:.0f} min in all, 1-min load average "
        f"{load_before[0]:.1f} at the start and {load_after[0]:.1f} at the end "
        f"({os.cpu_count()} cores, shared).\n\nCommand: `bench/eval {_shown_flags()}`"
    )
    args.out.write_text(f"# gg eval beside the peers\n\n{note}\n\n{text}\n", encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
