"""Smoke run of the board with the embedded local model on examples/tiny-calc (slow, in CI).

A 270M model rarely fixes code, so the issue may end stuck: the point is that
the whole board runs on the real model and reports what happened.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from board_support import git
from typer.testing import CliRunner

import gg
from gg.board import Board
from gg.board.cli import board_app
from support import REPO


@pytest.mark.slow
def test_board_smoke_on_tiny_calc_with_the_local_model(tmp_path: Path) -> None:
    repo = tmp_path / "tiny-calc"
    shutil.copytree(REPO / "examples" / "tiny-calc", repo)
    with (repo / "gg.toml").open("a") as f:
        f.write("\n[board]\nreviewers = 1\nmax_rounds = 1\nconcurrency = 1\n")
    (repo / ".gitignore").write_text("__pycache__/\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "tiny-calc")
    Board(repo).add(
        "Make divide return None when b is zero",
        body="test_divide_by_zero_is_none fails: fix divide in calc.py.",
    )

    result = CliRunner().invoke(
        board_app, ["run", "-w", str(repo), "--model", "local", "--max-turns", "4", "--json"]
    )

    assert result.exit_code in (0, 1), result.stderr
    out = json.loads(result.stdout)
    [issue] = out["issues"]
    assert issue["state"] in ("done", "stuck"), issue
    if issue["state"] == "stuck":
        assert issue["diagnosis"] and out["status"] == "stopped" and result.exit_code == 1
    else:
        assert issue["merge_sha"] == git(repo, "rev-parse", "main")
    events = list(gg.read_events(Path(out["stream"])))
    assert events[0].type == "run_started" and events[-1].type == "run_ended"
    assert any(e.type == "session_started" and e.model == "local" for e in events)
    assert "#1" in result.stderr  # progress was reported
