"""Every CLI failure on bad input is one line on stderr and exit 2, nothing written
(issue 12 item 6; SPEC O3)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gg.cli import app
from gg.state import state_path


def _gg(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stderr


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    return path


def _one_line_exit_2(code: int, err: str, needle: str) -> None:
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("gg: error:"), err
    assert needle in err and "Traceback" not in err


def test_a_body_file_that_is_not_utf8(repo: Path, tmp_path: Path) -> None:
    body = tmp_path / "body.bin"
    body.write_bytes(b"\xff\xfe not text")
    code, err = _gg("board", "add", "x", "--body-file", str(body), "-w", str(repo))
    _one_line_exit_2(code, err, "is not UTF-8 text")
    assert not (state_path(repo) / "board.sqlite3").exists()


@pytest.mark.parametrize(
    ("store", "needle"),
    [
        ("sqlite:/proc/no/such/dir/board.db", "No such file or directory"),
        ("sqlite:notadb.txt", "not a database"),
        ("postgresql://x", "PostgreSQL"),
        ("redis", "unknown store"),
    ],
)
@pytest.mark.parametrize("command", [["list"], ["show", "1"], ["add", "t"], ["run"]])
def test_a_bad_board_store(
    repo: Path, tmp_path: Path, store: str, needle: str, command: list[str]
) -> None:
    (repo / "notadb.txt").write_text("hello, not SQLite\n" * 100)
    (repo / "gg.toml").write_text(f'[board]\nstore = "{store}"\n')
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "i"],
        check=True,
    )
    args = ["board", *command, "-w", str(repo)]
    if command == ["run"]:
        script = tmp_path / "script.json"
        script.write_text('{"replies": []}')
        args += ["--model", f"scripted:{script}", "--trust-config"]
    code, err = _gg(*args)
    _one_line_exit_2(code, err, needle)
    assert (repo / "notadb.txt").read_text().startswith("hello, not SQLite")
