"""The ``gg`` command: exit codes, --json, bad input, show, watch, init, record (SPEC O2, O3)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from gg.run import stream_path
from gg.state import state_path
from support import write_script

GG = [sys.executable, "-m", "gg"]


def gg(
    *args: str,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*GG, *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env={**os.environ, **(env or {})},
    )


def test_json_result_and_exit_0(workspace: Path, tmp_path: Path) -> None:
    script = write_script(
        tmp_path / "r.json",
        [
            {"text": "looking", "tool_calls": [{"name": "list_dir", "arguments": {}}]},
            {"tool_calls": [{"name": "finish", "arguments": {"summary": "Listed it."}}]},
        ],
    )
    p = gg(
        "run",
        "list the workspace",
        "--workspace",
        str(workspace),
        "--model",
        f"scripted:{script}",
        "--json",
    )
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert set(out) == {"run_id", "status", "ending", "diagnosis", "stream"}
    assert out["status"] == "ended" and out["diagnosis"] is None
    assert out["ending"] == {"call": "finish", "summary": "Listed it."}
    assert Path(out["stream"]).is_file()
    assert Path(out["stream"]) == stream_path(workspace, out["run_id"])  # gg's state, outside
    assert not (workspace / ".gg").exists()  # gg wrote nothing in the workspace


def test_stopped_run_exit_1_with_diagnosis(workspace: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "r.json", [{"text": "I am done."}] * 3)
    p = gg("run", "t", "-w", str(workspace), "--model", f"scripted:{script}")
    assert p.returncode == 1
    assert "replied with prose 3 times in a row" in p.stdout
    p = gg("run", "t", "-w", str(workspace), "--model", f"scripted:{script}", "--json")
    out = json.loads(p.stdout)
    assert out["status"] == "stopped" and out["ending"] is None
    assert "never called a tool" in out["diagnosis"]


def test_review_role_request_changes_json(workspace: Path, tmp_path: Path) -> None:
    script = write_script(
        tmp_path / "r.json",
        [{"tool_calls": [{"name": "request_changes", "arguments": {"items": [" a ", " "]}}]}],
    )
    p = gg(
        "run",
        "review",
        "-w",
        str(workspace),
        "--model",
        f"scripted:{script}",
        "--role",
        "review",
        "--json",
    )
    assert json.loads(p.stdout)["ending"] == {"call": "request_changes", "items": ["a"]}


@pytest.mark.parametrize(
    ("args", "files", "needle"),
    [
        (["--model", "nope:x"], {}, "--model"),
        (["--model", "scripted:{tmp}/bad.json"], {"bad.json": "{not json"}, "bad.json"),
        (["--model", "scripted:{tmp}/missing.json"], {}, "missing.json"),
        (
            ["--config", "{tmp}/gg.toml"],
            {"gg.toml": "[ceilings]\nmax_turns = 'x'\n"},
            "ceilings.max_turns",
        ),
        (
            ["--config", "{tmp}/gg.toml"],
            {"gg.toml": "[ceilings]\nmax_turnz = 3\n"},
            "ceilings.max_turnz",
        ),
        (["--config", "{tmp}/gg.toml"], {"gg.toml": "[[[bad toml"}, "not valid TOML"),
        (
            ["--config", "{tmp}/gg.toml"],
            {"gg.toml": "[tools.arms.x]\nwithhold = ['finish']\n"},
            "ending calls are never registry tools",
        ),
        (["--mode", "fast"], {}, "--mode"),
        (["--role", "boss"], {}, "--role"),
    ],
)
def test_bad_input_exit_2_nothing_written(
    workspace: Path,
    tmp_path: Path,
    args: list[str],
    files: dict[str, str],
    needle: str,
) -> None:
    for name, content in files.items():
        (tmp_path / name).write_text(content)
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    if "--model" not in args:
        args += ["--model", f"scripted:{write_script(tmp_path / 'ok.json', [])}"]
    p = gg("run", "task", "-w", str(workspace), *args)
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert needle in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1  # a one-line error, no traceback
    assert not (workspace / ".gg").exists()


def test_missing_workspace_exit_2(tmp_path: Path) -> None:
    p = gg("run", "task", "-w", str(tmp_path / "nope"), "--model", "local")
    assert p.returncode == 2 and "does not exist" in p.stderr


def test_show_replays_and_watch_follows(workspace: Path, tmp_path: Path) -> None:
    script = write_script(
        tmp_path / "r.json",
        [{"tool_calls": [{"name": "finish", "arguments": {"summary": "All good."}}]}],
    )
    out = json.loads(
        gg("run", "t", "-w", str(workspace), "--model", f"scripted:{script}", "--json").stdout
    )
    shown = gg("show", out["run_id"], "-w", str(workspace))
    assert shown.returncode == 0
    assert "finish declared" in shown.stdout and "run ended" in shown.stdout
    assert "sessions" in shown.stdout  # the summary table
    watched = gg("watch", out["stream"])
    assert watched.returncode == 0 and "run ended" in watched.stdout
    assert gg("show", "no-such-run", "-w", str(workspace)).returncode == 2
    by_dir = gg("show", str(Path(out["stream"]).parent))  # a run's directory: its stream
    assert by_dir.returncode == 0 and "run ended" in by_dir.stdout, by_dir.stderr
    nowhere = gg("show", str(tmp_path), "-w", str(workspace))  # a directory with no stream
    assert nowhere.returncode == 2, nowhere.stderr
    assert "not a stream file or a run's directory" in nowhere.stderr
    assert "RUN_ID/" not in nowhere.stderr, nowhere.stderr  # never a made-up path


def test_record_then_replay(workspace: Path, tmp_path: Path) -> None:
    script = write_script(
        tmp_path / "r.json",
        [
            {
                "text": "hm",
                "tool_calls": [{"name": "read_file", "arguments": {"path": "README.md"}}],
            },
            {"tool_calls": [{"name": "finish", "arguments": {"summary": "Read it."}}]},
        ],
    )
    rec = tmp_path / "rec.json"
    first = json.loads(
        gg(
            "run",
            "t",
            "-w",
            str(workspace),
            "--model",
            f"scripted:{script}",
            "--record",
            str(rec),
            "--json",
        ).stdout
    )
    assert json.loads(rec.read_text())["replies"][1]["tool_calls"][0]["name"] == "finish"
    again = json.loads(
        gg("run", "t", "-w", str(workspace), "--model", f"scripted:{rec}", "--json").stdout
    )
    assert again["ending"] == first["ending"] == {"call": "finish", "summary": "Read it."}


def test_init_writes_a_valid_commented_default(tmp_path: Path) -> None:
    p = gg("init", "-w", str(tmp_path))
    assert p.returncode == 0
    text = (tmp_path / "gg.toml").read_text()
    assert text.count("#") > 10
    from gg.config import Settings, load_settings

    assert load_settings(tmp_path / "gg.toml") == Settings()
    assert gg("init", "-w", str(tmp_path)).returncode == 2  # exists


def test_help_answers() -> None:
    p = gg("run", "--help")
    assert p.returncode == 0
    for flag in (
        "--workspace",
        "--model",
        "--mode",
        "--language",
        "--role",
        "--config",
        "--json",
        "--record",
    ):
        assert flag in p.stdout


def test_missing_api_key_is_exit_2(workspace: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    p = subprocess.run(
        [*GG, "run", "t", "-w", str(workspace), "--model", "openai:gpt-4o-mini"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert p.returncode == 2 and "OPENAI_API_KEY" in p.stderr
    assert not (workspace / ".gg").exists()


def test_more_bad_input_is_exit_2(workspace: Path, tmp_path: Path) -> None:
    ok = write_script(tmp_path / "ok.json", [])
    (tmp_path / "bin.json").write_bytes(b"\xff\xfe{")
    (tmp_path / "bin.toml").write_bytes(b"\xff\xfe[model]")
    cases = [
        (["--model", f"scripted:{ok}", "--max-turns", "0"], "--max-turns"),
        (["--model", f"scripted:{tmp_path / 'bin.json'}"], "not UTF-8"),
        (["--model", f"scripted:{ok}", "--config", str(tmp_path / "bin.toml")], "not UTF-8"),
        (["--model", f"scripted:{ok}", "--record", "/nonexistent/dir/rec.json"], "--record"),
    ]
    for args, needle in cases:
        p = gg("run", "task", "-w", str(workspace), *args)
        assert p.returncode == 2, (args, p.stderr)
        assert needle in p.stderr and len(p.stderr.strip().splitlines()) == 1
        assert not (workspace / ".gg").exists()


def test_show_a_malformed_stream_is_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "stream.jsonl"
    bad.write_text('garbage\n{"type": "turn"}\n')
    p = gg("show", str(bad))
    assert p.returncode == 2 and "line 1 is not a gg stream event" in p.stderr
    assert "Traceback" not in p.stderr


def _run_until_gate(
    workspace: Path,
    tmp_path: Path,
    **popen: Any,
) -> tuple[subprocess.Popen[Any], Path]:
    """Start a run whose agent-stop hook sleeps 30 s; return once its ending is declared."""
    script = write_script(
        tmp_path / "r.json", [{"tool_calls": [{"name": "finish", "arguments": {"summary": "x"}}]}]
    )
    (workspace / "gg.toml").write_text('[[hooks.agent_stop]]\ncommand = "sleep 30"\n')
    proc = subprocess.Popen(
        [*GG, "run", "t", "-w", str(workspace), "--model", f"scripted:{script}"], **popen
    )
    runs = state_path(workspace) / "runs"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        streams = list(runs.glob("*/stream.jsonl")) if runs.exists() else []
        if streams and "ending_declared" in streams[0].read_text():
            return proc, streams[0]
        time.sleep(0.1)
    proc.kill()
    raise AssertionError("the run never declared its ending")


def test_watch_stops_when_the_run_process_is_gone(workspace: Path, tmp_path: Path) -> None:
    import signal

    proc, stream = _run_until_gate(
        workspace,
        tmp_path,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    p = gg("watch", str(stream))
    assert p.returncode == 1 and "without run_ended" in p.stdout
    shown = gg("show", str(stream))
    assert shown.returncode == 0 and "unfinished" in shown.stdout


def test_secrets_never_shown(workspace: Path, tmp_path: Path) -> None:
    secret = "sk-proj-VALUELEAK-1234567890"
    script = write_script(
        tmp_path / "r.json",
        [
            {
                "text": f"the key is {secret}",
                "tool_calls": [{"name": "finish", "arguments": {"summary": f"done with {secret}"}}],
            }
        ],
    )
    for extra in ([], ["--json"]):
        p = gg(
            "run",
            "t",
            "-w",
            str(workspace),
            "--model",
            f"scripted:{script}",
            *extra,
            env={"OPENAI_API_KEY": secret},
        )
        assert p.returncode == 0
        assert secret not in p.stdout and secret not in p.stderr
        assert "[redacted]" in p.stdout + p.stderr
    streams = list((state_path(workspace) / "runs").glob("*/stream.jsonl"))
    assert len(streams) == 2
    for stream in streams:
        assert secret not in stream.read_text()


def test_ctrl_c_is_exit_130_and_recorded(workspace: Path, tmp_path: Path) -> None:
    import signal

    proc, stream = _run_until_gate(
        workspace, tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=60)
    assert proc.returncode == 130
    last = json.loads(stream.read_text().splitlines()[-1])
    assert last["type"] == "run_ended" and last["exit_code"] == 130
    assert "interrupted" in last["diagnosis"]


def test_show_and_watch_refuse_what_is_not_a_stream(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    noise = tmp_path / "noise.jsonl"
    noise.write_bytes(b"\xff\xfe\x00")
    for f in (empty, noise):
        p = gg("show", str(f))
        assert p.returncode == 2 and "not a gg stream" in p.stderr
    started = time.monotonic()
    p = gg("watch", str(empty))
    assert p.returncode == 2 and "not a gg stream" in p.stderr
    assert time.monotonic() - started < 60
