"""Helpers for board tests (importable as ``board_support``; tests/board is on sys.path)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from gg.board import Board, BoardResult, IssueState
from gg.board.git import GIT_IDENTITY

HOOK = "out=$(python3 -m unittest -q 2>&1) || { printf '%s\\n' \"$out\" | tail -n 20 >&2; exit 2; }"

GREET_BUGGY = 'def greet(name):\n    return "hello " + name\n'
GREET_FIXED = 'def greet(name):\n    return f"Hello, {name}!"\n'
GREET_DOC = 'def greet(name):\n    """Greet ``name`` politely."""\n    return f"Hello, {name}!"\n'
TEST_GREET = (
    "import unittest\n\nfrom greet import greet\n\n\n"
    "class GreetTest(unittest.TestCase):\n"
    "    def test_greet(self):\n"
    "        self.assertEqual(greet('Ann'), 'Hello, Ann!')\n"
)
TEST_GREET_MORE = TEST_GREET + (
    "\n    def test_empty(self):\n        self.assertEqual(greet(''), 'Hello, !')\n"
)


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo`` with gg's identity; its stdout (stripped)."""
    env = {**os.environ, **GIT_IDENTITY}
    out = subprocess.run(
        ["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True
    )
    return out.stdout.strip()


def gg_toml(*, hook: bool = True, extra: str = "") -> str:
    """A gg.toml for tests: the unittest hook for Standard sessions."""
    text = "[ceilings]\nmax_turns = 12\n"
    if hook:
        text += (
            f"\n[[hooks.agent_stop]]\ncommand = {json.dumps(HOOK)}\ntimeout_s = 60\n"
            'roles = ["standard"]\n'
        )
    return text + extra


def make_repo(
    path: Path,
    *,
    files: dict[str, str] | None = None,
    toml: str | None = None,
) -> Path:
    """Create a repository on ``main`` with ``files`` committed (default: greet + its test)."""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    contents = (
        files if files is not None else {"greet.py": GREET_BUGGY, "test_greet.py": TEST_GREET}
    )
    for name, text in {
        **contents,
        ".gitignore": "__pycache__/\n",
        "gg.toml": toml if toml is not None else gg_toml(),
    }.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "initial")
    return path


def show(repo: Path, ref: str, path: str) -> str:
    """The text of ``path`` at ``ref``."""
    return git(repo, "show", f"{ref}:{path}")


PYTHON = sys.executable


def job_of(messages: list[Any]) -> tuple[str, int]:
    """``("implement" | "review" | "merge", N)`` from a board session's first task line."""
    first = next(m.content for m in messages if m.role == "user")
    match = re.match(r"(Implement|Review|Merge) issue #(\d+)", first)
    assert match, first[:80]
    return match[1].lower(), int(match[2])


def replies_so_far(messages: list[Any]) -> int:
    """How many replies the model gave in this conversation."""
    return sum(1 for m in messages if m.role == "assistant")


FAREWELL = 'def farewell(name):\n    return f"Goodbye, {name}."\n'


def run_losing_the_claim(board: Board) -> BoardResult:
    """Run ``board`` on one issue whose claim its model hands to another runner mid-work.

    The lease is 0.6 s (poll 0.1 s), so the renewal finds the loss at once: the run must
    stop that issue's work (not wait out its model's sleep), leave it ``implementing``
    and merge nothing.
    """
    board.claim_lease_s, board.claim_poll_s = 0.6, 0.1
    board.add("Greet politely")
    started = time.monotonic()
    result = board.run()
    assert time.monotonic() - started < 25  # the sleeping session was cancelled
    assert result.status == "stopped"
    issue = board.store.issue(1)
    assert issue.state is IssueState.IMPLEMENTING and not issue.merge_sha
    return result
