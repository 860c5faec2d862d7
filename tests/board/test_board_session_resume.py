"""A board run killed mid-session continues that session on the next run (issue 12 item 4).

A real ``gg board run`` process (board_resume_driver.py) is SIGKILLed or
SIGTERMed while a command of the implementer, of its subagent or of the
reviewer runs. The next run continues the interrupted session from the killed
run's stream (its conversation and counts from its last checkpoint, its
subagent too) instead of starting it over, and the end state (the repository,
the issue's state history, the verdicts) equals an uninterrupted run's.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from board_support import gg_toml, git, make_repo

from gg.board import Board
from gg.state import state_path
from gg.stream import RunResumed, SessionStarted, TurnEvent, read_events
from support import ended_output

DRIVER = Path(__file__).with_name("board_resume_driver.py")
TOML = gg_toml(extra='\n[tools]\ncapabilities = ["files", "shell", "agents"]\n')


def _drive(repo: Path, slow: str, kill_on: str = "") -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, str(DRIVER), str(repo)],
        env={**os.environ, "GG_TEST_SLOW": slow, "GG_TEST_KILL_ON": kill_on},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _streams(repo: Path) -> list[Path]:
    runs = state_path(repo) / "runs"
    return sorted(runs.glob("*/stream.jsonl"), key=lambda p: p.stat().st_mtime)


def _final(repo: Path) -> dict[str, object]:
    with Board(repo) as board:
        detail = board.show(1)
    return {
        "tree": git(repo, "rev-parse", "main^{tree}"),
        "merges": len(git(repo, "rev-list", "--merges", "main").split()),
        "state": (detail.issue.state, detail.issue.round, detail.issue.summary),
        "verdicts": [(v.round, v.call, v.items) for v in detail.verdicts],
        "states": [(h.from_state, h.to_state) for h in detail.history if h.to_state],
    }


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    repo = make_repo(tmp_path_factory.mktemp("plain") / "repo", toml=TOML)
    proc = _drive(repo, "")
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode()[-3000:]
    return _final(repo)


@pytest.mark.parametrize(
    ("slow", "sig"),
    [
        ("implementer", signal.SIGKILL),
        ("subagent", signal.SIGKILL),
        ("reviewer", signal.SIGKILL),
        ("subagent", signal.SIGTERM),
    ],
)
def test_a_killed_session_is_continued_by_the_next_board_run(
    tmp_path: Path, uninterrupted: dict[str, object], slow: str, sig: signal.Signals
) -> None:
    repo = make_repo(tmp_path / "repo", toml=TOML)
    proc = _drive(repo, slow)
    deadline = time.monotonic() + 60
    while not any(b"sleep 2;" in s.read_bytes() for s in _streams(repo)):
        assert proc.poll() is None, ended_output(proc)
        assert time.monotonic() < deadline, "the slow command never started"
        time.sleep(0.05)
    proc.send_signal(sig)
    proc.wait(timeout=30)
    (killed,) = _streams(repo)

    again = _drive(repo, slow)
    _, err = again.communicate(timeout=120)
    assert again.returncode == 0, err.decode()[-3000:]
    assert _final(repo) == uninterrupted
    assert git(repo, "status", "--porcelain") == ""

    stream = next(s for s in _streams(repo) if s != killed)
    events = list(read_events(stream))
    resumed = [e for e in events if isinstance(e, RunResumed)]
    assert resumed and all(e.from_run == killed.parent.name for e in resumed)
    # the implementer is continued when it or its subagent was cut; so is that subagent
    kinds = {"implementer": 1, "subagent": 2, "reviewer": 1}
    assert len(resumed) == kinds[slow]
    started = {e.session_id: e for e in events if isinstance(e, SessionStarted)}
    for e in resumed:
        assert e.session_id is not None and started[e.session_id].resumed
        first = min(
            t.turn or 0 for t in events if isinstance(t, TurnEvent) and t.session_id == e.session_id
        )
        assert first == e.turns + 1  # no turn before the checkpoint was asked for again
    with Board(repo) as board:
        detail = board.show(1)
    rows = [h for h in detail.history if h.event == "session_resumed"]
    assert [r.detail["from_run"] for r in rows] == [killed.parent.name]
    assert [s.status for s in detail.sessions].count("abandoned") == 1


@pytest.mark.parametrize(
    ("kill_on", "continued"),
    [
        ("checkpoint:2", 1),  # the implementer's first turn recorded, no subagent yet
        ("checkpoint:3", 2),  # the subagent started and recorded its start
        ("session_started:2", 1),  # the subagent started, before its first checkpoint
        ("session_ended:1", 2),  # the subagent ended (replayed); its parent's turn not done
        ("session_ended:2", 1),  # the implementer ended on the stream, not in the store
        ("issue_state:2", 0),  # implemented and committed
        ("session_ended:3", 1),  # the reviewer ended, its verdict not yet stored
        ("gate_passed:4", 0),  # the merge agent's finish passed: the merge starts over
        ("issue_state:4", 0),  # the merge recorded (done), the run not yet ended
    ],
)
def test_a_board_run_killed_at_any_event_ends_as_an_uninterrupted_one(
    tmp_path: Path, uninterrupted: dict[str, object], kill_on: str, continued: int
) -> None:
    repo = make_repo(tmp_path / "repo", toml=TOML)
    proc = _drive(repo, "", kill_on)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGKILL, err.decode()[-3000:]
    (killed,) = _streams(repo)
    again = _drive(repo, "")
    _, err = again.communicate(timeout=120)
    assert again.returncode == 0, err.decode()[-3000:]
    assert b"Traceback" not in err
    assert _final(repo) == uninterrupted
    assert git(repo, "status", "--porcelain") == ""
    with Board(repo) as board:
        sessions = board.show(1).sessions
    kinds = [s.kind for s in sessions if s.status == "ended"]
    assert kinds.count("implementer") == 1 and kinds.count("reviewer") == 1
    events = list(read_events(next(s for s in _streams(repo) if s != killed)))
    resumed = [e for e in events if isinstance(e, RunResumed)]
    assert len(resumed) == continued
    for e in resumed:  # no turn a checkpoint recorded was asked for again
        turns = [t.turn or 0 for t in events if isinstance(t, TurnEvent)]
        mine = [
            t.turn or 0 for t in events if isinstance(t, TurnEvent) and t.session_id == e.session_id
        ]
        assert turns and all(t > e.turns for t in mine)


def test_gg_resume_refuses_a_board_run(tmp_path: Path) -> None:
    """A board run is continued by ``gg board run``, never by ``gg resume`` (which would
    work in an issue's worktree outside the board's store)."""
    repo = make_repo(tmp_path / "repo", toml=TOML)
    proc = _drive(repo, "", "checkpoint:2")
    proc.communicate(timeout=120)
    (killed,) = _streams(repo)
    p = subprocess.run(
        [sys.executable, "-m", "gg", "resume", killed.parent.name, "-w", str(repo)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert p.returncode == 2 and "gg board run" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr
    assert len(_streams(repo)) == 1


def test_an_implementer_whose_worktree_is_gone_starts_afresh(
    tmp_path: Path, uninterrupted: dict[str, object]
) -> None:
    """Its files went with the worktree: continuing its conversation would build on files
    that are not there, so the session starts again (the end state is the same)."""
    repo = make_repo(tmp_path / "repo", toml=TOML)
    proc = _drive(repo, "", "checkpoint:2")
    proc.communicate(timeout=120)
    (killed,) = _streams(repo)
    worktree = repo / ".gg" / "worktrees" / "issue-1"
    assert (worktree / "greet.py").read_text() != (repo / "greet.py").read_text()
    git(repo, "worktree", "remove", "--force", str(worktree))
    again = _drive(repo, "")
    _, err = again.communicate(timeout=120)
    assert again.returncode == 0, err.decode()[-3000:]
    assert _final(repo) == uninterrupted
    events = list(read_events(next(s for s in _streams(repo) if s != killed)))
    assert not [e for e in events if isinstance(e, RunResumed)]


@pytest.mark.parametrize(
    "kills",
    [
        ("checkpoint:2", "checkpoint:3"),
        ("checkpoint:3", "checkpoint:2"),
        ("checkpoint:2", "run_resumed:1"),  # killed as it began to continue the session
    ],
)
def test_a_board_killed_again_while_it_continues_a_session(
    tmp_path: Path, uninterrupted: dict[str, object], kills: tuple[str, str]
) -> None:
    """A crash loop: the run that continues a session is killed too; the third run
    continues it from the second run's stream and ends as an uninterrupted run."""
    repo = make_repo(tmp_path / "repo", toml=TOML)
    for kill_on in kills:
        proc = _drive(repo, "", kill_on)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == -signal.SIGKILL, err.decode()[-3000:]
    first, second = _streams(repo)
    last = _drive(repo, "")
    _, err = last.communicate(timeout=120)
    assert last.returncode == 0, err.decode()[-3000:]
    assert _final(repo) == uninterrupted
    third = next(s for s in _streams(repo) if s not in (first, second))
    resumed = [e for e in read_events(third) if isinstance(e, RunResumed)]
    source = first if kills[1].startswith("run_resumed") else second
    assert resumed and {e.from_run for e in resumed} == {source.parent.name}
    with Board(repo) as board:
        rows = [h for h in board.show(1).history if h.event == "session_resumed"]
    assert [r.detail["from_run"] for r in rows][:1] == [first.parent.name]
