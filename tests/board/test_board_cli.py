"""``gg board add|list|show|run`` through the typer sub-app (mounted here as the lead will)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from board_support import GREET_FIXED, show
from typer.testing import CliRunner

from gg.board.cli import board_app
from support import write_script

app = typer.Typer()
app.add_typer(board_app, name="board")


@app.callback()
def _root() -> None:
    """The gg command, as far as these tests need it."""


def gg(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), input=stdin)
    return result.exit_code, result.stdout, result.stderr


def test_add_list_show_run(repo: Path, tmp_path: Path) -> None:
    body = tmp_path / "body.md"
    body.write_text("greet('Ann') must return 'Hello, Ann!'.\n")
    code, out, _ = gg("board", "add", "Greet politely", "--body-file", str(body), "-w", str(repo))
    assert code == 0 and out.strip() == "added #1: Greet politely"
    code, out, _ = gg(
        "board", "add", "Second", "--body-file", "-", "-w", str(repo), "--json", stdin="from stdin"
    )
    assert code == 0 and json.loads(out)["number"] == 2

    code, out, _ = gg("board", "list", "-w", str(repo), "--json")
    assert code == 0
    assert [(i["number"], i["state"]) for i in json.loads(out)] == [(1, "open"), (2, "open")]
    code, out, _ = gg("board", "list", "-w", str(repo))
    assert "Greet politely" in out and "open" in out

    script = write_script(
        tmp_path / "replies.json",
        [
            {
                "tool_calls": [
                    {
                        "name": "write_file",
                        "arguments": {"path": "greet.py", "content": GREET_FIXED},
                    }
                ]
            },
            {"tool_calls": [{"name": "finish", "arguments": {"summary": "Fixed greet."}}]},
            {"tool_calls": [{"name": "approve", "arguments": {}}]},
            {"tool_calls": [{"name": "finish", "arguments": {"summary": "Merged."}}]},
            # issue 2: the implementer only talks; the session stops on a ceiling
            {"text": "I will do it."},
            {"text": "Done."},
            {"text": "Really done."},
        ],
    )
    code, out, err = gg(
        "board",
        "run",
        "-w",
        str(repo),
        "--model",
        f"scripted:{script}",
        "--concurrency",
        "1",
        "--json",
    )
    assert code == 1, err
    result = json.loads(out)
    assert result["status"] == "stopped"
    states = {i["number"]: i["state"] for i in result["issues"]}
    assert states == {1: "done", 2: "stuck"}
    assert "never called a tool" in result["issues"][1]["diagnosis"]
    assert "#2 stuck" in result["diagnosis"]
    assert Path(result["stream"]).is_file()
    assert "#1" in err and "done" in err  # the progress lines went to stderr
    assert show(repo, "main", "greet.py") == GREET_FIXED.strip()

    code, out, _ = gg("board", "show", "1", "-w", str(repo), "--json")
    detail = json.loads(out)
    assert detail["state"] == "done" and detail["merge_sha"]
    assert detail["body"].startswith("greet('Ann')")
    assert [s["kind"] for s in detail["sessions"]] == ["implementer", "reviewer", "merge"]
    assert detail["verdicts"] == [
        {
            "round": 1,
            "reviewer": 1,
            "call": "approve",
            "items": [],
            "session": 2,
            "at": detail["verdicts"][0]["at"],
        }
    ]
    assert detail["history"][-1]["to_state"] == "done"
    code, out, _ = gg("board", "show", "2", "-w", str(repo))
    assert code == 0 and "stuck" in out and "history" in out


def test_run_again_with_nothing_left_is_quick_and_ok(repo: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "none.json", [])
    code, out, err = gg("board", "run", "-w", str(repo), "--model", f"scripted:{script}")
    assert code == 0, err
    assert "the board has no issues yet" in out and "all 0" not in out


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["board", "show", "7"], "no issue #7"),
        (["board", "add", "   "], "needs a title"),
        (["board", "add", "x", "--body-file", "/nonexistent/body"], "--body-file"),
        (["board", "run", "--concurrency", "0"], "--concurrency"),
    ],
)
def test_bad_usage_exit_2(repo: Path, args: list[str], needle: str) -> None:
    code, _, err = gg(*args, "-w", str(repo))
    assert code == 2 and needle in err


def test_run_needs_a_git_repository(tmp_path: Path) -> None:
    code, _, err = gg("board", "run", "-w", str(tmp_path), "--model", "scripted:/dev/null")
    assert code == 2 and "needs a git repository" in err
    assert not (tmp_path / ".gg").exists()  # nothing written


def test_list_outside_a_repository_says_so(tmp_path: Path, repo: Path) -> None:
    """No board and no git repository: most likely the wrong directory, so not an empty
    table with exit 0. A repository without a board yet lists nothing, exit 0."""
    code, out, err = gg("board", "list", "-w", str(tmp_path))
    assert code == 2 and "needs a git repository" in err, err
    assert out == "" and not (tmp_path / ".gg").exists()
    (repo / "sub").mkdir()
    code, _, err = gg("board", "list", "-w", str(repo / "sub"))
    assert code == 2 and "top level" in err, err
    code, out, _ = gg("board", "list", "-w", str(repo), "--json")
    assert (code, out.strip()) == (0, "[]")


def test_run_needs_the_base_branch(repo: Path) -> None:
    (repo / "gg.toml").write_text('[board]\nbase_branch = "trunk"\n')
    code, _, err = gg("board", "run", "-w", str(repo))
    assert code == 2 and "no branch 'trunk'" in err and "board.base_branch" in err


def test_bad_board_setting_names_the_key(repo: Path) -> None:
    (repo / "gg.toml").write_text("[board]\nreviewers = 0\n")
    code, _, err = gg("board", "list", "-w", str(repo))
    assert code == 2 and "board.reviewers" in err


@pytest.mark.parametrize(
    "command", sorted(c.name or "" for c in board_app.registered_commands if c.name)
)
def test_every_board_command_takes_trust_config(command: str) -> None:
    """Each opens the board through gg.toml, so each can be told to trust a changed one
    (README: every gg board command takes --trust-config)."""
    done = CliRunner().invoke(board_app, [command, "--help"], env={"COLUMNS": "200"})
    assert done.exit_code == 0, done.output
    assert "--trust-config" in done.output, command
