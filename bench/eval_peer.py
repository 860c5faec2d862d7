"""The eval suite driven by a peer harness (runs in bench/.venv-peers; issue 16 item 5).

Each peer gets, per task: the same task text (plus one sentence on how that peer ends
a review, since its only ending is its own final answer), tools equivalent to gg's
built-ins (``read_file``, ``write_file``, ``list_dir``, ``run_command``: the command
runs in gg's sandbox, as gg's does), the same turn limit, a fresh copy of the task's
workspace, and the same ``check.py``. Subjects:

- ``smolagents-tool``: smolagents ``ToolCallingAgent``; ends by ``final_answer``.
- ``smolagents-code``: smolagents ``CodeAgent`` (its local Python executor).
- ``pydantic-ai``: a pydantic-ai ``Agent``; ends by its output (a string, or a
  ``Verdict`` for reviews).

A peer's run is a valid ending when the harness itself says the agent ended (not a
turn limit, not an error), whatever the answer holds; success needs the check too.

    python bench/eval_peer.py --subject smolagents-tool --url http://127.0.0.1:PORT/v1 \
        --tasks '*' --max-turns 8 --repeat 1 --out runs.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from gg.errors import GGError
from gg.eval.checks import run_check
from gg.eval.tasks import Task, default_suite, load_tasks
from gg.sandbox import Sandbox
from gg.tools.safefs import read_beneath

REVIEW_ENDING = {
    "smolagents": " When you are done, call final_answer with 'approve', or with "
    "'request_changes: ' followed by what is wrong.",
    "pydantic-ai": " Your final output is the verdict: approve, or request_changes with the items.",
}
_WORKSPACE: list[Path] = []


def _ws() -> Path:
    return _WORKSPACE[-1]


def _inside(path: str) -> Path:
    target = (_ws() / path).resolve()
    if not target.is_relative_to(_ws()):
        raise ValueError(f"{path!r} is outside the workspace")
    return target


def read_file(path: str) -> str:
    """Read a text file in the workspace.

    Args:
        path: The file's path, relative to the workspace.
    """
    try:
        return read_beneath(_ws(), path, cap=200_000).decode("utf-8", "replace")
    except GGError as e:
        return f"error: {e}"


def write_file(path: str, content: str) -> str:
    """Write a text file in the workspace, replacing it if it exists.

    Args:
        path: The file's path, relative to the workspace.
        content: The file's full new content.
    """
    try:
        target = _inside(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
    except (OSError, ValueError) as e:
        return f"error: {e}"
    return f"wrote {len(content.encode())} bytes to {path}"


def list_dir(path: str = ".") -> str:
    """List a directory of the workspace.

    Args:
        path: The directory, relative to the workspace.
    """
    try:
        entries = sorted(os.scandir(_inside(path)), key=lambda e: e.name)
    except (OSError, ValueError) as e:
        return f"error: {e}"
    return "\n".join(e.name + ("/" if e.is_dir() else "") for e in entries) or "(empty)"


async def arun_command(command: str, timeout_s: float = 60) -> str:
    """Run a shell command in the workspace (gg's sandbox) and return its exit code and output.

    Args:
        command: The shell command line to run.
        timeout_s: Seconds before the command is killed.
    """
    try:
        async with Sandbox() as sandbox:
            r = await sandbox.run_shell(command, workspace=_ws(), timeout_s=min(timeout_s, 120))
    except GGError as e:
        return f"error: {e}"
    return f"exit code {r.exit_code}\n{r.output[-8000:]}"


def run_command(command: str, timeout_s: float = 60) -> str:
    """Run a shell command in the workspace and return its exit code and output.

    Args:
        command: The shell command line to run.
        timeout_s: Seconds before the command is killed.
    """
    return asyncio.run(arun_command(command, timeout_s))


def _verdict_text(answer: str) -> dict[str, Any]:
    text = answer.strip()
    if text.lower().startswith("approve"):
        return {"call": "approve"}
    if text.lower().replace(" ", "_").startswith("request_changes"):
        items = text.split(":", 1)[1].strip() if ":" in text else ""
        return {"call": "request_changes", "items": [items or "changes requested"]}
    return {"call": "final_answer", "summary": text}  # no verdict: the check fails it


def _smolagents(
    task: Task, url: str, max_turns: int, code: bool, max_tokens: int
) -> tuple[dict | None, int]:
    from smolagents import CodeAgent, OpenAIServerModel, ToolCallingAgent
    from smolagents import tool as smol_tool
    from smolagents.monitoring import LogLevel

    model = OpenAIServerModel(
        model_id="local", api_base=url, api_key="none", max_tokens=max_tokens,
        flatten_messages_as_text=True,  # llama_cpp.server takes string contents only
    )  # fmt: skip
    tools = [smol_tool(f) for f in (read_file, write_file, list_dir, run_command)]
    kind = CodeAgent if code else ToolCallingAgent
    agent = kind(tools=tools, model=model, max_steps=max_turns, verbosity_level=LogLevel.OFF)
    text = task.text + (REVIEW_ENDING["smolagents"] if task.role.value == "review" else "")
    result = agent.run(text, return_full_result=True)
    turns = len(result.steps) - 1 if result.steps else 0
    if result.state != "success":
        return None, turns
    answer = str(result.output)
    ending = _verdict_text(answer) if task.role.value == "review" else None
    return ending or {"call": "finish", "summary": answer}, turns


class Verdict(BaseModel):
    """A review's verdict: approve, or request changes with what is wrong."""

    verdict: Literal["approve", "request_changes"]
    items: list[str] = []


def _pydantic_ai(task: Task, url: str, max_turns: int, max_tokens: int) -> tuple[dict | None, int]:
    from pydantic_ai import Agent
    from pydantic_ai.exceptions import AgentRunError
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider
    from pydantic_ai.usage import UsageLimits

    model = OpenAIChatModel("local", provider=OpenAIProvider(base_url=url, api_key="none"))
    review = task.role.value == "review"
    agent: Any = Agent(
        model, output_type=Verdict if review else str,
        tools=[read_file, write_file, list_dir, arun_command],
        model_settings={"max_tokens": max_tokens, "timeout": 300},
    )  # fmt: skip
    text = task.text + (REVIEW_ENDING["pydantic-ai"] if review else "")
    try:
        result = agent.run_sync(text, usage_limits=UsageLimits(request_limit=max_turns))
    except AgentRunError:
        return None, max_turns
    usage = result.usage if hasattr(result.usage, "requests") else result.usage()
    turns = usage.requests
    if review:
        v: Verdict = result.output
        return {"call": v.verdict, **({"items": v.items} if v.verdict != "approve" else {})}, turns
    return {"call": "finish", "summary": str(result.output)}, turns


def run_task(
    subject: str, task: Task, url: str, max_turns: int, repeat: int, max_tokens: int = 512
) -> dict[str, Any]:
    """One run of ``task`` by ``subject``; a record like gg's RunRecord (a subset).

    Every reply is capped at ``max_tokens`` output tokens.
    """
    scratch = Path(tempfile.mkdtemp(prefix=f"gg-eval-peer-{task.name}-"))
    workspace = scratch / "workspace"
    shutil.copytree(task.workspace, workspace, symlinks=True)
    _WORKSPACE.append(workspace.resolve())
    record: dict[str, Any] = {"task": task.name, "role": task.role.value, "repeat": repeat}
    started = time.monotonic()
    try:
        if subject == "pydantic-ai":
            ending, turns = _pydantic_ai(task, url, max_turns, max_tokens)
        else:
            code = subject == "smolagents-code"
            ending, turns = _smolagents(task, url, max_turns, code, max_tokens)
        record.update(ending=ending, turns=turns, error=None)
    except Exception as e:  # the harness failed: recorded, the suite goes on
        record.update(ending=None, turns=max_turns, error=f"{type(e).__name__}: {e}"[:300])
    record["seconds"] = round(time.monotonic() - started, 3)
    valid = record["ending"] is not None and record["ending"]["call"] != "final_answer"
    outcome = run_check(
        task.check, workspace=workspace, original=task.workspace, ending=record["ending"]
    )
    record.update(valid_ending=valid, success=valid and outcome.ok, check=outcome.message)
    _WORKSPACE.pop()
    shutil.rmtree(scratch, ignore_errors=True)
    return record


def main() -> None:
    """Parse the flags, run the suite with one subject, write its records as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--subject", required=True,
                        choices=("smolagents-tool", "smolagents-code", "pydantic-ai"))  # fmt: skip
    parser.add_argument("--url", required=True)
    parser.add_argument("--tasks", default="*")
    parser.add_argument("--max-turns", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--max-output-tokens", type=int, default=512)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    records = [
        run_task(args.subject, task, args.url, args.max_turns, n, args.max_output_tokens)
        for task in load_tasks(default_suite(), args.tasks)
        for n in range(1, args.repeat + 1)
    ]
    args.out.write_text(json.dumps(records, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
