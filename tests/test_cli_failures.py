"""Every CLI failure on bad input is one line on stderr and exit 2, nothing written
(issue 12 item 6; SPEC O3)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import gg
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


# --- strict config values (issue 12 item 6) ----------------------------------------------


def _finish_script(tmp_path: Path) -> Path:
    script = tmp_path / "finish.json"
    script.write_text(
        '{"replies": [{"tool_calls": [{"name": "finish", "arguments": {"summary": "ok"}}]}]}'
    )
    return script


def _nothing_written(ws: Path) -> None:
    runs = state_path(ws) / "runs"
    assert not runs.exists() or not any(runs.iterdir()), list(runs.iterdir())


@pytest.mark.parametrize(
    ("toml", "needle"),
    [
        (
            "[ceilings]\nmax_turns = true\n",
            "ceilings.max_turns: Input should be a valid integer (got true",
        ),
        ("[ceilings]\nmax_turns = false\n", "got false"),
        ('[ceilings]\nmax_turns = "3"\n', "got '3'"),
        ("[ceilings]\nmax_turns = 3.0\n", "a whole number from 1 to 1,000,000"),
        (
            "[ceilings]\nmax_seconds = inf\n",
            "ceilings.max_seconds: Input should be a finite number",
        ),
        ("[ceilings]\nmax_cost = nan\n", "ceilings.max_cost"),
        ("[ceilings]\nerror_rate = true\n", "ceilings.error_rate"),
        ("[model]\nmax_retries = 100000000\n", "a whole number from 0 to 100"),
        ("[model]\ntimeout_s = -inf\n", "model.timeout_s"),
        ("[model]\ntimeout_s = 1e12\n", "at most 86,400"),
        ("[model]\nconstrained = 1\n", "model.constrained: Input should be a valid boolean"),
        ("[sandbox]\nmemory_mb = 99999999999\n", "a whole number from 64 to 1,048,576"),
        ('[board]\nconcurrency = "2"\n', "board.concurrency"),
        ("[agents]\nmax_subagents = true\n", "agents.max_subagents"),
        (
            '[[hooks.agent_stop]]\ncommand = "true"\ntimeout_s = inf\n',
            "hooks.agent_stop.0.timeout_s",
        ),
        (
            '[model.prices."m"]\ninput_per_mtok = "1"\noutput_per_mtok = 1\n',
            "model.prices.m.input_per_mtok",
        ),
    ],
)
def test_a_config_value_of_the_wrong_kind_or_out_of_bounds(
    tmp_path: Path, toml: str, needle: str
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "gg.toml").write_text(toml)
    code, err = _gg("run", "hi", "-w", str(ws), "--model", f"scripted:{_finish_script(tmp_path)}")
    _one_line_exit_2(code, err, needle)
    _nothing_written(ws)


def test_good_values_still_load(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "gg.toml").write_text(
        "[ceilings]\nmax_turns = 7\nmax_seconds = 5\nerror_rate = 1\n"
        '[session]\nrole = "standard"\n'
        '[[hooks.agent_stop]]\ncommand = "true"\nroles = ["standard"]\n'
    )
    code, err = _gg("run", "hi", "-w", str(ws), "--model", f"scripted:{_finish_script(tmp_path)}")
    assert code == 0, err


@pytest.mark.parametrize("where", ["workspace", "--config"])
def test_a_gg_toml_that_is_a_directory(tmp_path: Path, where: str) -> None:
    ws = tmp_path / "ws"
    (ws / "gg.toml").mkdir(parents=True)
    args = ["run", "hi", "-w", str(ws), "--model", f"scripted:{_finish_script(tmp_path)}"]
    if where == "--config":
        (ws / "gg.toml").rmdir()
        args += ["--config", str(tmp_path)]
    code, err = _gg(*args)
    _one_line_exit_2(code, err, "is a directory")
    _nothing_written(ws)


@pytest.mark.parametrize(
    ("target", "needle"),
    [
        ("{dir}", "it is a directory"),
        ("{dir}/", "it is a directory"),
        ("", "it names no file"),
        ("/proc/no-such-dir/rec.json", "not a writable directory"),
        ("/proc/self/rec.json", "takes no new file"),
        ("/sys/kernel/rec.json", "takes no new file"),
        ("/dev/null/rec.json", "Not a directory"),
        ("/dev/null", "not a regular file"),
        ("{dir}/fifo", "not a regular file"),
    ],
)
def test_a_record_path_gg_cannot_write(tmp_path: Path, target: str, needle: str) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    os.mkfifo(tmp_path / "fifo")
    record = target.format(dir=tmp_path)
    script = _finish_script(tmp_path)
    code, err = _gg("run", "hi", "-w", str(ws), "--model", f"scripted:{script}", "--record", record)
    _one_line_exit_2(code, err, needle)
    assert err.startswith("gg: error: --record:"), err
    _nothing_written(ws)
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)  # never replaced by a recording


def test_a_record_path_that_works_still_records(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    record = tmp_path / "rec.json"
    code, err = _gg(
        "run",
        "hi",
        "-w",
        str(ws),
        "--model",
        f"scripted:{_finish_script(tmp_path)}",
        "--record",
        str(record),
    )
    assert code == 0, err
    assert '"finish"' in record.read_text()
    assert [p.name for p in tmp_path.iterdir() if "probe" in p.name] == []


def test_javascript_mode_without_deno(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    state = tmp_path / "state"
    env = {
        "PATH": "/usr/bin:/bin",
        "GG_DENO": str(tmp_path / "no-deno"),  # what the sandbox looks for first
        "GG_STATE_HOME": str(state),
        "HOME": str(tmp_path),
        "PYTHONPATH": str(Path(gg.__file__).parent.parent),
    }
    script = _finish_script(tmp_path)
    argv = [sys.executable, "-m", "gg", "run", "hi", "-w", str(ws), "--model", f"scripted:{script}"]
    done = subprocess.run(
        [*argv, "--mode", "code", "--language", "javascript"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    _one_line_exit_2(done.returncode, done.stderr, "JavaScript programs need Deno")
    assert "--language javascript" in done.stderr
    assert not (state / "workspaces").exists() or not list(
        (state / "workspaces").rglob("stream.jsonl")
    )


def test_a_local_model_file_that_is_not_there_is_bad_usage(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    code, err = _gg("run", "x", "-w", str(ws), "--model", f"local:{tmp_path}/nope.gguf")
    _one_line_exit_2(code, err, "does not exist")
    assert not (state_path(ws) / "runs").exists()


@pytest.mark.parametrize("flag", ["--json", "--chart"])
def test_gg_eval_checks_its_report_paths_before_running(tmp_path: Path, flag: str) -> None:
    code, err = _gg("eval", "--model", f"scripted:{tmp_path}", flag, "/no/such/dir/out.x")
    _one_line_exit_2(code, err, f"{flag}: cannot write")
