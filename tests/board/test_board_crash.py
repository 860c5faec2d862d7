"""SIGKILL during a review, then run again: the same end as a run never interrupted (B5)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from board_support import git, make_repo

from gg.board import Board, IssueState
from gg.state import state_path
from support import ended_output

DRIVER = Path(__file__).with_name("board_driver.py")


def drive(repo: Path, *, slow: str = "") -> subprocess.Popen[bytes]:
    env = {**os.environ, "GG_TEST_SLOW_REVIEW": slow}
    return subprocess.Popen(
        [sys.executable, str(DRIVER), str(repo)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def running_review(repo: Path, number: int, round: int) -> bool:
    db = state_path(repo) / "board.sqlite3"  # gg's state, outside the repository
    if not db.exists():
        return False
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            row = con.execute(
                "SELECT COUNT(*) FROM sessions s JOIN issues i ON s.issue_id = i.id "
                "WHERE i.number = ? AND s.kind = 'reviewer' AND s.round = ? "
                "AND s.status = 'running' AND s.session_id IS NOT NULL",
                (number, round),
            ).fetchone()
        finally:
            con.close()
    except sqlite3.OperationalError:
        return False  # tables not made yet
    return bool(row[0])


def final_state(repo: Path) -> dict[str, object]:
    with Board(repo) as board:
        issues = board.list()
        verdicts = [
            (i.number, v.round, v.call, v.items)
            for i in issues
            for v in board.show(i.number).verdicts
        ]
    return {
        "tree": git(repo, "rev-parse", "main^{tree}"),
        "states": [(i.number, i.state, i.round) for i in issues],
        "merges": len(git(repo, "rev-list", "--merges", "main").split()),
        "verdicts": verdicts,
    }


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    repo = make_repo(tmp_path_factory.mktemp("plain") / "repo")
    proc = drive(repo)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err.decode()[-2000:]
    state = final_state(repo)
    assert state["states"] == [(1, IssueState.DONE, 2), (2, IssueState.DONE, 1)]
    assert state["merges"] == 2
    return state


@pytest.mark.parametrize("round", [1, 2])
def test_sigkill_during_review_then_resume(
    tmp_path: Path, uninterrupted: dict[str, object], round: int
) -> None:
    repo = make_repo(tmp_path / "repo")
    proc = drive(repo, slow=f"1:{round}")
    deadline = time.monotonic() + 30
    while not running_review(repo, 1, round):
        assert proc.poll() is None, ended_output(proc, 2000)
        assert time.monotonic() < deadline, "the review never started"
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    with Board(repo) as board:
        assert board.show(1).issue.state is IssueState.REVIEWING

    again = drive(repo)
    out, err = again.communicate(timeout=60)
    assert again.returncode == 0, err.decode()[-2000:]

    assert final_state(repo) == uninterrupted
    with Board(repo) as board:
        sessions = board.show(1).sessions
    abandoned = [s for s in sessions if s.status == "abandoned"]
    assert [(s.kind, s.round) for s in abandoned] == [("reviewer", round)]
    assert git(repo, "status", "--porcelain") == ""
