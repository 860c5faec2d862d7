"""``gg resume`` continues a real run killed mid-session (issue 12 item 4).

A real ``gg run`` subprocess (scripted model file) is SIGKILLed (or SIGTERMed)
while a command of its second turn runs; ``gg resume`` then continues it, and
the ending, the files and the conversation equal an uninterrupted run's. A
stream altered after gg wrote it is refused, and nothing runs.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import gg
from gg.models.base import Message, ToolMessage
from gg.resume import load_resume_point, resume_run
from gg.state import state_path
from gg.stream import read_events
from support import write_script

GG = [sys.executable, "-m", "gg"]

REPLIES: list[dict[str, Any]] = [
    {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "one"}}]},
    {"tool_calls": [{"name": "run_command", "arguments": {"command": "sleep 3; echo slept"}}]},
    {"tool_calls": [{"name": "write_file", "arguments": {"path": "b.txt", "content": "two"}}]},
    {"text": "prose, an error turn", "tool_calls": []},
    {"tool_calls": [{"name": "finish", "arguments": {"summary": "both files written"}}]},
]


def _files(ws: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(ws.iterdir()) if p.is_file()}


def _streams(ws: Path) -> list[Path]:
    runs = state_path(ws) / "runs"
    return sorted(runs.glob("*/stream.jsonl")) if runs.exists() else []


def _interrupt(ws: Path, script: Path, sig: signal.Signals) -> Path:
    """Start ``gg run``; signal it while turn 2's command sleeps; its stream."""
    proc = subprocess.Popen(
        [*GG, "run", "t", "-w", str(ws), "--model", f"scripted:{script}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        streams = _streams(ws)
        if streams and b'"name":"run_command"' in streams[0].read_bytes():
            break
        time.sleep(0.05)
    else:
        proc.kill()
        raise AssertionError("the run never reached its command")
    proc.send_signal(sig)
    assert proc.wait(timeout=60) == (-9 if sig == signal.SIGKILL else 128 + sig)
    return streams[0]


@pytest.fixture
def uninterrupted(tmp_path: Path) -> gg.RunResult:
    ws = tmp_path / "clean"
    ws.mkdir()
    (ws / "README.md").write_text("# demo\n")
    script = write_script(tmp_path / "clean.json", REPLIES)
    return gg.Agent(model=f"scripted:{script}", workspace=ws).run("t")


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_a_killed_run_resumed_equals_an_uninterrupted_one(
    workspace: Path, tmp_path: Path, uninterrupted: gg.RunResult, sig: signal.Signals
) -> None:
    script = write_script(tmp_path / "r.json", REPLIES)
    stream = _interrupt(workspace, script, sig)
    assert "b.txt" not in _files(workspace)
    run_id = stream.parent.name
    p = subprocess.run(
        [*GG, "resume", run_id, "-w", str(workspace), "--json"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    result = json.loads(p.stdout)
    assert result["status"] == "ended" and result["run_id"] != run_id
    assert uninterrupted.ending is not None
    assert result["ending"] == uninterrupted.ending.record()
    assert _files(workspace) == _files(Path(uninterrupted.session.workspace))
    events = list(read_events(Path(result["stream"])))
    resumed = [e for e in events if e.type == "run_resumed"]
    assert len(resumed) == 1 and resumed[0].from_run == run_id and resumed[0].turns == 1
    ended = [e for e in events if e.type == "session_ended"]
    assert [e.turns for e in ended] == [uninterrupted.session.turns]
    again = subprocess.run(
        [*GG, "resume", run_id, "-w", str(workspace)], capture_output=True, text=True, timeout=60
    )  # the same run twice would repeat its side effects
    assert again.returncode == 2 and "resumed already" in again.stderr, again.stderr
    copy = workspace.parent / "copy-of-the-stream.jsonl"  # the mark is in gg's state
    shutil.copy(stream, copy)
    by_copy = subprocess.run([*GG, "resume", str(copy)], capture_output=True, text=True, timeout=60)
    assert by_copy.returncode == 2 and "resumed already" in by_copy.stderr, by_copy.stderr


def _without_reminders(messages: list[Message]) -> list[Message]:
    """The messages with the ending reminder (gg.prompts.ending_reminder) taken off results."""
    out: list[Message] = []
    for m in messages:
        if isinstance(m, ToolMessage) and "\n\nReminder: " in m.content:
            m = dataclasses.replace(m, content=m.content.split("\n\nReminder: ")[0])
        out.append(m)
    return out


def test_the_resumed_conversation_is_the_uninterrupted_one(
    workspace: Path, tmp_path: Path, uninterrupted: gg.RunResult
) -> None:
    script = write_script(tmp_path / "r.json", REPLIES)
    stream = _interrupt(workspace, script, signal.SIGKILL)
    point = load_resume_point(stream)
    result = resume_run(point)
    assert result.status == "ended"
    # the progress heuristics came back too: the ending reminders are the same
    assert result.session.messages == uninterrupted.session.messages
    reminded = _without_reminders(result.session.messages) != result.session.messages
    assert reminded  # the comparison covers a reminder given after the resume
    # the error turn before the kill point is not lost: counts came back from the stream
    assert result.session.turns == uninterrupted.session.turns


def test_counts_survive_a_resume(workspace: Path, tmp_path: Path) -> None:
    """Two prose turns, then a kill: one more prose turn after resuming trips the
    consecutive_errors ceiling (3), as it would have without the kill."""
    (workspace / "gg.toml").write_text("[ceilings]\nconsecutive_errors = 3\n")
    replies: list[dict[str, Any]] = [
        {"text": "prose 1"},
        {"text": "prose 2"},
        {"tool_calls": [{"name": "run_command", "arguments": {"command": "sleep 3"}}]},
    ]
    script = write_script(tmp_path / "r.json", replies)
    stream = _interrupt(workspace, script, signal.SIGKILL)
    other = write_script(tmp_path / "more.json", [{"text": "prose 3"}])
    result = resume_run(load_resume_point(stream), model=f"scripted:{other}")
    assert result.status == "stopped"
    assert result.session.diagnosis is not None
    assert result.session.diagnosis.ceiling == "consecutive_errors"


def test_an_altered_stream_is_refused_and_nothing_runs(workspace: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "r.json", REPLIES)
    stream = _interrupt(workspace, script, signal.SIGKILL)
    data = stream.read_bytes()
    assert data.count(b'"content":"one"') >= 1
    stream.write_bytes(data.replace(b'"content":"one"', b'"content":"ONE"'))
    before = _streams(workspace)
    p = subprocess.run(
        [*GG, "resume", stream.parent.name, "-w", str(workspace), "--json"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert p.returncode == 3, p.stderr
    assert "not resumed" in p.stderr and "Traceback" not in p.stderr
    assert p.stdout == ""
    assert _streams(workspace) == before
    assert "b.txt" not in _files(workspace)


def test_an_ended_run_is_not_resumed(uninterrupted: gg.RunResult) -> None:
    p = subprocess.run(
        [*GG, "resume", str(uninterrupted.stream)], capture_output=True, text=True, timeout=60
    )
    assert p.returncode == 2 and "already ended" in p.stderr


def test_resume_refuses_a_stream_without_its_key(workspace: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "r.json", REPLIES)
    stream = _interrupt(workspace, script, signal.SIGKILL)
    copy = tmp_path / "elsewhere.jsonl"
    shutil.copy(stream, copy)
    for name in ("seal.key",):
        os.unlink(stream.parent / name)
    p = subprocess.run([*GG, "resume", str(copy)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 4, p.stderr


def test_repeat_counts_survive_a_resume(workspace: Path, tmp_path: Path) -> None:
    """The same read twice, then a kill while the agent-stop hook runs: the same read once
    more after resuming is a repeated_call, as it would have been without the kill."""
    (workspace / "gg.toml").write_text(
        '[ceilings]\nrepeated_calls = 2\n\n[[hooks.agent_stop]]\ncommand = "sleep 30; exit 2"\n'
    )
    read = {"tool_calls": [{"name": "read_file", "arguments": {"path": "README.md"}}]}
    finish = {"tool_calls": [{"name": "finish", "arguments": {"summary": "read it"}}]}
    script = write_script(tmp_path / "r.json", [read, read, finish])
    proc = subprocess.Popen(
        [*GG, "run", "t", "-w", str(workspace), "--model", f"scripted:{script}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not any(b'"type":"ending_declared"' in s.read_bytes() for s in _streams(workspace)):
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    (stream,) = _streams(workspace)
    point = load_resume_point(stream)
    assert point.restored.turn == 2
    other = write_script(tmp_path / "more.json", [read])
    result = resume_run(point, model=f"scripted:{other}")
    events = list(read_events(result.stream))
    kinds = [e.kind for e in events if e.type == "error_turn"]
    assert kinds == ["repeated_call"], kinds
