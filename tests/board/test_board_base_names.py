"""A base branch that git would read as an option never reaches git (issue 9 item 4; SPEC B1).

Real repositories and the real ``gg board`` commands: a configured ``[board] base_branch``
or a HEAD on a branch whose name starts with ``-`` (``--output=FILE``) is a clear error
(exit 2), nothing is recorded, and no file the option names appears.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from board_support import git, make_repo
from typer.testing import CliRunner

import gg
from gg.board import Board
from gg.board.basebranch import BASE_FILE
from gg.board.cli import board_app
from gg.config import BoardSettings
from gg.refname import branch_problem
from gg.state import state_path

app = typer.Typer()
app.add_typer(board_app, name="board")


@app.callback()
def _root() -> None:
    """The gg command, as far as these tests need it."""


def gg_cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stderr


BAD = ["--output=/tmp/x", "-b", "a..b", "a b", "a~1", "x.lock", ".hidden", "a/", "a@{1}", "HEAD"]


@pytest.mark.parametrize("name", BAD)
def test_the_rule_refuses_what_git_refuses(name: str) -> None:
    assert branch_problem(name) is not None
    with pytest.raises(ValueError, match="not a branch name gg passes to git"):
        BoardSettings(base_branch=name)


@pytest.mark.parametrize("name", ["main", "release/2.0", "feature-x", "v1.2", "a-", "üñí"])
def test_the_rule_takes_ordinary_names(name: str) -> None:
    assert branch_problem(name) is None
    assert BoardSettings(base_branch=name).base_branch == name


def test_a_configured_option_shaped_base_is_a_config_error(tmp_path: Path) -> None:
    out = tmp_path / "written"
    repo = make_repo(tmp_path / "repo", toml=f'[board]\nbase_branch = "--output={out}"\n')
    code, err = gg_cli("board", "add", "Greet politely", "-w", str(repo))
    assert code == 2 and "base_branch" in err and "not a branch name" in err, err
    assert not out.exists()


def test_an_override_of_the_base_is_checked_too(tmp_path: Path) -> None:
    out = tmp_path / "written"
    repo = make_repo(tmp_path / "repo", toml="")
    with pytest.raises(gg.UserError, match="starts with '-'"):
        Board(repo, base_branch=f"--output={out}").add("Greet politely")
    assert not out.exists() and not (state_path(repo) / BASE_FILE).exists()


def test_a_head_on_an_option_shaped_branch_is_not_recorded(tmp_path: Path) -> None:
    out = tmp_path / "written"
    repo = make_repo(tmp_path / "repo", toml="")
    git(repo, "symbolic-ref", "HEAD", f"refs/heads/--output={out}")
    code, err = gg_cli("board", "add", "Greet politely", "-w", str(repo))
    assert code == 2 and "HEAD is on" in err and "starts with '-'" in err, err
    assert not (state_path(repo) / BASE_FILE).exists()
    assert not out.exists()
