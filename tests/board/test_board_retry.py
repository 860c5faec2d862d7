"""The board's reports tell the truth; stuck issues can be retried, done ones reopened;
a git killed inside its lock window does not stall a rerun (issue 12 item 7)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import typer
from board_support import GREET_DOC, GREET_FIXED, git, show
from typer.testing import CliRunner

import gg
from gg.board import Board, IssueState
from gg.board.cli import board_app
from gg.board.locks import clear_stale_locks, git_processes_in
from gg.models.base import Reply
from gg.testing import ScriptedModel, call

app = typer.Typer()
app.add_typer(board_app, name="board")


@app.callback()
def _root() -> None:
    """The gg command, as far as these tests need it."""


def cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def _fix_and_merge() -> list[Reply]:
    """One issue, one reviewer: fix greet, finish, approve, merge."""
    return [
        call("write_file", path="greet.py", content=GREET_FIXED),
        call("finish", summary="greet says Hello, NAME! now."),
        call("approve"),
        call("finish", summary="Merged; tests pass."),
    ]


def _stuck_on_review(repo: Path) -> Board:
    """Issue #1 stuck: the only reviewer asks for changes in the one allowed round."""
    model = ScriptedModel(
        [
            call("write_file", path="greet.py", content=GREET_FIXED),
            call("finish", summary="Fixed greet."),
            call("request_changes", items=["Add a docstring to greet"]),
        ]
    )
    board = Board(repo, model=model, reviewers=1, max_rounds=1, concurrency=1)
    board.add("Greet politely")
    result = board.run()
    assert result.exit_code == 1 and board.show(1).issue.state is IssueState.STUCK
    return board


def test_a_rerun_with_a_stuck_issue_exits_1_and_says_how_to_retry(repo: Path) -> None:
    _stuck_on_review(repo)
    again = Board(repo, model=ScriptedModel([]), reviewers=1, max_rounds=1).run()
    assert again.issues == () and again.exit_code == 1 and again.status == "stopped"
    assert again.diagnosis is not None
    assert "already #1 stuck" in again.diagnosis and "gg board retry 1" in again.diagnosis


def test_retry_a_review_stuck_issue_gets_one_more_round_and_finishes(repo: Path) -> None:
    _stuck_on_review(repo)
    code, out, err = cli("board", "retry", "1", "-w", str(repo), "--json")
    assert code == 0, err
    retried = json.loads(out)
    assert retried["state"] == "implementing" and retried["round"] == 2
    assert retried["diagnosis"] is None
    model = ScriptedModel(
        [
            call("write_file", path="greet.py", content=GREET_DOC),
            call("finish", summary="Added the docstring."),
            call("approve"),
            call("finish", summary="Merged; tests pass."),
        ]
    )
    result = Board(repo, model=model, reviewers=1, max_rounds=1).run()
    model.assert_complete()
    assert result.exit_code == 0, result.diagnosis
    assert show(repo, "main", "greet.py") == GREET_DOC.strip()
    # the implementer was told what the reviewer asked for
    history = Board(repo).show(1).history
    retried_entry = [h for h in history if h.event == "retried"][-1]
    assert retried_entry.detail["items"] == ["Add a docstring to greet"]


def test_retry_and_reopen_refuse_the_wrong_state_in_one_line(repo: Path) -> None:
    Board(repo).add("Greet politely")
    code, _, err = cli("board", "retry", "1", "-w", str(repo))
    assert code == 2 and err.count("\n") == 1
    assert "cannot retry issue #1: it is open, not stuck" in err
    code, _, err = cli("board", "reopen", "1", "-w", str(repo))
    assert code == 2 and "it is open, not done" in err
    code, _, err = cli("board", "retry", "7", "-w", str(repo))
    assert code == 2 and "#7" in err and "Traceback" not in err


def test_all_done_says_so_and_exits_0(repo: Path, tmp_path: Path) -> None:
    board = Board(repo, model=ScriptedModel(_fix_and_merge()), reviewers=1)
    board.add("Greet politely")
    assert board.run().exit_code == 0
    script = tmp_path / "none.json"
    script.write_text('{"replies": []}')
    code, out, err = cli("board", "run", "-w", str(repo), "--model", f"scripted:{script}")
    assert code == 0, err
    assert "all 1 issue(s) on the board are done" in out
    assert "no issues yet" not in out and "all 0" not in out


def test_a_run_that_finishes_the_board_counts_the_whole_board(repo: Path, tmp_path: Path) -> None:
    """The all-done line names the board's count, and what this run took of it."""
    board = Board(repo, model=ScriptedModel(_fix_and_merge()), reviewers=1)
    board.add("Greet politely")
    assert board.run().exit_code == 0
    board.add("Document greet")
    write = {"path": "greet.py", "content": GREET_DOC}
    replies = [  # reviewers = 1, the default
        {"tool_calls": [{"name": "write_file", "arguments": write}]},
        {"tool_calls": [{"name": "finish", "arguments": {"summary": "Documented greet."}}]},
        {"tool_calls": [{"name": "approve", "arguments": {}}]},
        {"tool_calls": [{"name": "finish", "arguments": {"summary": "Merged."}}]},
    ]
    script = tmp_path / "second.json"
    script.write_text(json.dumps({"replies": replies}))
    code, out, err = cli("board", "run", "-w", str(repo), "--model", f"scripted:{script}")
    assert code == 0, out + err
    text = " ".join(out.split())
    assert "all 2 issue(s) on the board are done (1 by this run)" in text, out


def test_reopen_works_the_issue_again_from_the_current_base(repo: Path) -> None:
    board = Board(repo, model=ScriptedModel(_fix_and_merge()), reviewers=1, max_rounds=1)
    board.add("Greet politely")
    assert board.run().exit_code == 0
    first_merge = board.show(1).issue.merge_sha
    (repo / "NOTES.md").write_text("a commit on main after the merge\n")
    git(repo, "add", "NOTES.md")
    git(repo, "commit", "-q", "-m", "notes")

    reopened = Board(repo).reopen(1)
    assert reopened.state is IssueState.OPEN and reopened.merge_sha is None
    model = ScriptedModel(
        [
            call("write_file", path="greet.py", content=GREET_DOC),
            call("finish", summary="Added the docstring."),
            # one round allowed per go: this request_changes would make it stuck,
            # but the first go's round is not counted: the reviewer approves here
            call("approve"),
            call("finish", summary="Merged; tests pass."),
        ]
    )
    result = Board(repo, model=model, reviewers=1, max_rounds=1).run()
    model.assert_complete()
    assert result.exit_code == 0, result.diagnosis
    done = Board(repo).show(1).issue
    assert done.state is IssueState.DONE and done.round == 2
    assert done.merge_sha and done.merge_sha != first_merge
    assert show(repo, "main", "greet.py") == GREET_DOC.strip()
    assert show(repo, "main", "NOTES.md").startswith("a commit on main")  # nothing lost


def test_reopened_issue_counts_max_rounds_for_this_go_only(repo: Path) -> None:
    board = Board(repo, model=ScriptedModel(_fix_and_merge()), reviewers=1, max_rounds=1)
    board.add("Greet politely")
    assert board.run().exit_code == 0
    Board(repo).reopen(1)
    model = ScriptedModel(
        [
            call("write_file", path="greet.py", content=GREET_DOC),
            call("finish", summary="Added the docstring."),
            call("request_changes", items=["Also handle None"]),
        ]
    )
    result = Board(repo, model=model, reviewers=1, max_rounds=1).run()
    issue = Board(repo).show(1).issue
    assert result.exit_code == 1 and issue.state is IssueState.STUCK
    assert issue.diagnosis and "after 1 round(s)" in issue.diagnosis


def _killed_in_lock_window(repo: Path, ref: str) -> Path:
    """Start a real git transaction that takes ``ref``'s lock, SIGKILL it there."""
    head = git(repo, "rev-parse", "HEAD")
    proc = subprocess.Popen(
        ["git", "update-ref", "--stdin"],
        cwd=repo,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(f"start\nupdate {ref} {head}\nprepare\n")
    proc.stdin.flush()
    assert proc.stdout.readline().strip() == "start: ok"
    assert proc.stdout.readline().strip() == "prepare: ok"  # the lock is held now
    lock = repo / ".git" / f"{ref}.lock"
    assert lock.is_file()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert lock.is_file()  # left behind, as after a crash
    return lock


def test_a_git_killed_in_its_ref_lock_window_does_not_stall_the_rerun(repo: Path) -> None:
    Board(repo).add("Greet politely")
    lock = _killed_in_lock_window(repo, "refs/heads/gg/issue-1")
    time.sleep(0.05)  # the lock is older than the next run's start
    model = ScriptedModel(_fix_and_merge())
    result = Board(repo, model=model, reviewers=1).run()
    model.assert_complete()
    assert result.exit_code == 0, result.diagnosis
    assert not lock.exists()
    assert show(repo, "main", "greet.py") == GREET_FIXED.strip()


def test_a_killed_commit_leaves_index_lock_and_the_rerun_clears_it(
    repo: Path, tmp_path: Path
) -> None:
    Board(repo).add("Greet politely")
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "pre-commit").write_text("#!/bin/sh\nsleep 60\n")
    (hooks / "pre-commit").chmod(0o755)
    (repo / "test_greet.py").write_text("# changed\n", "utf-8")
    # `commit -a` holds index.lock while its pre-commit hook runs
    argv = ["git", "-c", f"core.hooksPath={hooks}", "commit", "-qam", "x"]
    proc = subprocess.Popen(argv, cwd=repo, start_new_session=True)
    lock = repo / ".git" / "index.lock"
    deadline = time.monotonic() + 10
    while not lock.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert lock.exists() and proc.poll() is None
    assert proc.pid in git_processes_in([repo])
    # a live git works in the repository: nothing is removed
    assert clear_stale_locks(repo, repo / ".git", older_than=time.time() + 1) == []
    assert lock.exists()
    os.killpg(proc.pid, signal.SIGKILL)  # git and its editor, inside the lock window
    proc.wait()
    assert lock.exists() and git_processes_in([repo]) == []
    removed = clear_stale_locks(repo, repo / ".git", older_than=time.time() + 1)
    assert removed == [lock] and not lock.exists()
    git(repo, "checkout", "--", "test_greet.py")  # git works again
    model = ScriptedModel(_fix_and_merge())
    assert Board(repo, model=model, reviewers=1).run().exit_code == 0


def test_stale_lock_clearing_follows_no_link_and_keeps_young_locks(
    repo: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "precious.lock"
    outside.write_text("keep me\n")
    heads = repo / ".git" / "refs" / "heads"
    (heads / "evil.lock").symlink_to(outside)
    (repo / ".git" / "refs" / "linked").symlink_to(tmp_path, target_is_directory=True)
    young = heads / "young.lock"
    young.write_text("")
    old = heads / "old.lock"
    old.write_text("")
    past = time.time() - 3600
    os.utime(old, (past, past))
    removed = clear_stale_locks(repo, repo / ".git", older_than=time.time() - 60)
    assert removed == [old]
    assert outside.read_text() == "keep me\n" and young.exists()
    assert (heads / "evil.lock").is_symlink()


@pytest.mark.parametrize("verb", ["retry", "reopen"])
def test_retry_and_reopen_on_a_workspace_without_a_board(tmp_path: Path, verb: str) -> None:
    with pytest.raises(gg.UserError, match="no board yet"):
        getattr(Board(tmp_path), verb)(1)


def test_a_board_run_does_not_warn_about_its_own_worktrees(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    board = Board(repo, model=ScriptedModel(_fix_and_merge()), reviewers=1)
    board.add("Greet politely")
    assert board.run().exit_code == 0
    assert "changed or made" not in capsys.readouterr().err
