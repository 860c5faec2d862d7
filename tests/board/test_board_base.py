"""The board's base branch: the repository's own, settled once and kept (SPEC B1, B4).

Real repositories on branches other than ``main``, the real ``gg board`` commands (typer's
runner) and the real board with a function model: issues merge into the branch that was
checked out when the board was made, later runs agree after the checkout moved, a detached
HEAD with nothing configured is a clear error, and ``gg board add`` outside a repository
is one too.
"""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from typing import Any

import typer
from board_support import GREET_FIXED, git, job_of, make_repo, replies_so_far, show
from typer.testing import CliRunner

import gg
from gg.board import Board, IssueState
from gg.board.basebranch import BASE_FILE
from gg.board.cli import board_app
from gg.state import state_path, workspace_state
from gg.testing import FunctionModel, call

app = typer.Typer()
app.add_typer(board_app, name="board")


@app.callback()
def _root() -> None:
    """The gg command, as far as these tests need it."""


def gg_cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def repo_on(path: Path, branch: str) -> Path:
    """A repository whose only branch is ``branch`` (no ``main`` at all)."""
    repo = make_repo(path, files={"greet.py": 'def greet(name):\n    return "hi"\n'}, toml="")
    git(repo, "branch", "-m", "main", branch)
    return repo


def model(path: str = "greet.py", text: str = GREET_FIXED) -> FunctionModel:
    """Implementers write ``path``; reviewers approve; merge agents finish."""

    def answer(messages: list[Any], tools: list[gg.ToolSpec]) -> gg.Reply:
        job, _ = job_of(messages)
        k = replies_so_far(messages)
        if job == "implement" and k == 0:
            return call("write_file", path=path, content=text)
        return call("approve") if job == "review" else call("finish", summary="done")

    return FunctionModel(answer)


def test_the_default_base_is_the_branch_checked_out_when_the_board_was_made(
    tmp_path: Path,
) -> None:
    repo = repo_on(tmp_path / "repo", "master")
    code, out, err = gg_cli("board", "add", "Greet politely", "-w", str(repo))
    assert code == 0, err
    assert (state_path(repo) / BASE_FILE).read_text() == "master\n"
    git(repo, "checkout", "-q", "-b", "elsewhere")  # the checkout moves; the board does not
    result = Board(repo, model=model(), concurrency=1).run()
    assert [i.state for i in result.issues] == [IssueState.DONE], result.diagnosis
    assert show(repo, "master", "greet.py") == GREET_FIXED.strip()
    assert git(repo, "rev-parse", "elsewhere") != git(repo, "rev-parse", "master")
    # a second issue, added from the other branch, still merges into master
    board = Board(repo, model=model("farewell.py", "bye\n"), concurrency=1)
    board.add("Say farewell")
    assert board.settings.board.base_branch == "master"
    assert [i.state for i in board.run().issues] == [IssueState.DONE]
    assert show(repo, "master", "farewell.py") == "bye"


def test_a_first_run_without_add_settles_the_base_too(tmp_path: Path) -> None:
    repo = repo_on(tmp_path / "repo", "trunk")
    board = Board(repo, model=model(), concurrency=1)
    assert board.run().issues == ()  # nothing to do, but the base is settled
    assert (state_path(repo) / BASE_FILE).read_text() == "trunk\n"


def test_a_configured_base_wins_over_the_recorded_one(tmp_path: Path) -> None:
    repo = repo_on(tmp_path / "repo", "master")
    git(repo, "branch", "release")
    Board(repo).add("Greet politely")  # records master
    board = Board(repo, model=model(), concurrency=1, base_branch="release")
    assert [i.state for i in board.run().issues] == [IssueState.DONE]
    assert show(repo, "release", "greet.py") == GREET_FIXED.strip()
    assert show(repo, "master", "greet.py") != GREET_FIXED.strip()


def test_a_detached_head_with_no_base_configured_is_a_clear_error(tmp_path: Path) -> None:
    repo = repo_on(tmp_path / "repo", "master")
    git(repo, "checkout", "-q", "--detach")
    code, _, err = gg_cli("board", "add", "Greet politely", "-w", str(repo))
    assert code == 2 and "HEAD is detached" in err and "base_branch" in err, err
    code, _, err = gg_cli("board", "run", "-w", str(repo), "--model", "scripted:/dev/null")
    assert code == 2 and "HEAD is detached" in err, err
    assert not (state_path(repo) / BASE_FILE).exists()
    (repo / "gg.toml").write_text('[board]\nbase_branch = "master"\n')  # configured: fine
    code, _, err = gg_cli("board", "add", "Greet politely", "-w", str(repo))
    assert code == 0, err


def test_board_add_outside_a_git_repository_is_a_clear_error(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    code, _, err = gg_cli("board", "add", "Greet politely", "-w", str(plain))
    assert code == 2 and "needs a git repository" in err, err
    assert not (state_path(plain) / "board.sqlite3").exists()  # no board was made
    sub = repo_on(tmp_path / "repo", "main") / "sub"
    sub.mkdir()
    code, _, err = gg_cli("board", "add", "Greet politely", "-w", str(sub))
    assert code == 2 and "top level" in err, err


def test_a_repository_with_no_commit_yet_is_a_clear_error(tmp_path: Path) -> None:
    repo = tmp_path / "fresh"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "trunk")
    code, _, err = gg_cli("board", "add", "Greet politely", "-w", str(repo))
    assert code == 0, err  # an issue may be added before the first commit
    code, _, err = gg_cli("board", "run", "-w", str(repo), "--model", "scripted:/dev/null")
    assert code == 2 and "no commit on 'trunk' yet" in err and "git commit" in err, err
    assert "set [board] base_branch" not in err  # the branch is right; it has no commit


def test_the_recorded_base_is_gg_state_not_a_followed_link(tmp_path: Path) -> None:
    repo = repo_on(tmp_path / "repo", "master")
    decoy = tmp_path / "decoy"
    decoy.write_text("evil\n")
    (workspace_state(repo) / BASE_FILE).symlink_to(decoy)
    code, _, err = gg_cli("board", "add", "Greet politely", "-w", str(repo))
    assert code == 2 and "symbolic link" in err, err
    assert decoy.read_text() == "evil\n"
    assert subprocess.run(["git", "-C", str(repo), "rev-parse", "master"]).returncode == 0


def test_add_from_inside_an_event_loop_settles_the_base_too(tmp_path: Path) -> None:
    """A caller with a running loop (a web handler) can add: git runs on a thread of its own."""
    repo = repo_on(tmp_path / "repo", "develop")

    async def add() -> int:
        return Board(repo).add("Greet politely").number

    assert asyncio.run(add()) == 1
    assert (state_path(repo) / BASE_FILE).read_text() == "develop\n"
