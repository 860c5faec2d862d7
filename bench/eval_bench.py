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
from gg.eval.tasks import default_suite, load_tasks

HERE = Path(__file__).resolve().parent
PEERS = ("smolagents-tool", "smolagents-code", "pydantic-ai")


def _gguf() -> Path:
    from gg.models.local import ensure_model_file

    return Path(ensure_model_file())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(
    gguf: Path, chat_format: str | None, log: Path
) -> tuple[subprocess.Popen[bytes], str]:
    """Start llama_cpp.server on a free loopback port; return it and its ``/v1`` URL."""
    port = _free_port()
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(gguf),
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "8192",
        "--n_threads", "2", "--verbose", "False",
        *(["--chat_format", chat_format] if chat_format else []),
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


def run_gg(spec: str, args: argparse.Namespace) -> list[dict[str, Any]]:
    """The suite through gg's API (the same runner ``gg eval`` uses)."""
    tasks = load_tasks(default_suite(), args.tasks)
    models = SpecModels(progress=lambda say: print(f"  {say}", file=sys.stderr))

    def show(p: Any) -> None:
        print(f"\r  [{p.index}/{p.total}] {p.task} turn {p.turn}   ", end="", file=sys.stderr)

    async def go() -> list[dict[str, Any]]:
        try:
            records = await run_suite(
                tasks, [Configuration(model=spec)], models, repeat=args.repeat,
                max_turns=args.max_turns, on_progress=show,
            )  # fmt: skip
        finally:
            await models.aclose()
        return [r.to_json() for r in records]

    out = asyncio.run(go())
    print(file=sys.stderr)
    return out


def run_peer(subject: str, url: str, args: argparse.Namespace, tmp: Path) -> list[dict[str, Any]]:
    """The suite through one peer, in the peers' venv."""
    out = tmp / f"{subject}.json"
    command = [
        args.python, str(HERE / "eval_peer.py"), "--subject", subject, "--url", url,
        "--tasks", args.tasks, "--max-turns", str(args.max_turns),
        "--repeat", str(args.repeat), "--out", str(out),
    ]  # fmt: skip
    done = subprocess.run(command, check=False)
    if done.returncode != 0 or not out.is_file():
        return [{"task": "*", "success": False, "valid_ending": False, "turns": 0,
                 "seconds": 0, "error": f"{subject} exited {done.returncode}"}]  # fmt: skip
    return list(json.loads(out.read_text()))


def table(results: dict[str, list[dict[str, Any]]]) -> str:
    """The side-by-side markdown table."""
    tasks = sorted({r["task"] for runs in results.values() for r in runs})
    head = "| subject | runs | success | valid endings | mean turns | wall s | " + " | ".join(tasks)
    lines = [head + " |", "|" + " --- |" * (6 + len(tasks))]
    for subject, runs in results.items():
        n = max(len(runs), 1)
        per = [sum(r["success"] for r in runs if r["task"] == t) for t in tasks]
        lines.append(
            f"| {subject} | {len(runs)} | {sum(r['success'] for r in runs) / n:.0%} | "
            f"{sum(r['valid_ending'] for r in runs) / n:.0%} | "
            f"{sum(r['turns'] for r in runs) / n:.1f} | {sum(r['seconds'] for r in runs):.0f} | "
            + " | ".join(str(p) for p in per)
            + " |"
        )
    return "\n".join(lines)


def main() -> None:
    """Parse the flags, start the server, run every subject, print and write the table."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--python", required=True, help="the peers' venv interpreter")
    p.add_argument("--tasks", default="*")
    p.add_argument("--max-turns", type=int, default=8)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--gguf", type=Path, default=None, help="default: gg's embedded model")
    p.add_argument("--chat-format", default="gemma", help="llama_cpp.server's; '' = the GGUF's")
    p.add_argument("--subjects", default="gg-embedded,gg-openai-compat," + ",".join(PEERS))
    p.add_argument("--json", type=Path, default=None)
    p.add_argument("--out", type=Path, default=HERE / "eval-results.md")
    args = p.parse_args()
    subjects = [s for s in args.subjects.split(",") if s]
    results: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="gg-eval-bench-") as tmp:
        if "gg-embedded" in subjects:
            print("gg embedded (--model local)", file=sys.stderr)
            results["gg embedded"] = run_gg("local", args)
        server, url = start_server(
            args.gguf or _gguf(), args.chat_format or None, Path(tmp) / "server.log"
        )
        try:
            if "gg-openai-compat" in subjects:
                print(f"gg openai-compat ({url})", file=sys.stderr)
                results["gg openai-compat"] = run_gg(f"openai-compat:local@{url}", args)
            for peer in (s for s in PEERS if s in subjects):
                print(peer, file=sys.stderr)
                results[peer] = run_peer(peer, url, args, Path(tmp))
        finally:
            server.terminate()
            server.wait(timeout=20)
    text = table(results)
    print(text)
    note = f"max {args.max_turns} turns, {args.repeat} repeat(s), tasks {args.tasks!r}"
    args.out.write_text(f"# gg eval beside the peers\n\n{note}\n\n{text}\n", encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
