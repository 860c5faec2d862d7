"""``gg resume`` of a run killed while subagents ran (issue 12 item 4, SPEC T2).

A real ``gg run`` subprocess (scripted model file) is killed while its second
subagent's command sleeps: the first subagent had ended, the second had done one
turn. Resumed, the root's cut turn is done again: the ended subagent is replayed
as it ended (the model is not asked for it again, its work is not redone), the
other goes on from its checkpoint, and the result equals an uninterrupted run's.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import gg
import resume_driver
from gg.resume import load_resume_point, resume_run
from gg.state import state_path
from gg.stream import RunResumed, SessionEnded, SessionStarted, TurnEvent, read_events
from gg.testing import FunctionModel
from support import ended_output, write_script

GG = [sys.executable, "-m", "gg"]
TOML = '[tools]\ncapabilities = ["files", "shell", "agents"]\n'


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


REPLIES: list[dict[str, Any]] = [
    {"tool_calls": [_call("write_file", path="root.txt", content="root")]},
    {"tool_calls": [_call("spawn", task="task A"), _call("spawn", task="task B")]},
    # subagent A (s2): ends at once, its file written
    {"tool_calls": [_call("write_file", path="a.txt", content="A")]},
    {"tool_calls": [_call("finish", summary="A done")]},
    # subagent B (s3): a file, then a slow command (the kill point), then its finish
    {"tool_calls": [_call("write_file", path="b.txt", content="B")]},
    {"tool_calls": [_call("run_command", command="sleep 3; echo slept >> slept.txt")]},
    {"tool_calls": [_call("finish", summary="B done")]},
    {"tool_calls": [_call("finish", summary="root done")]},
]


def _files(ws: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(ws.iterdir()) if p.is_file()}


def _workspace(path: Path) -> Path:
    path.mkdir()
    (path / "gg.toml").write_text(TOML)
    return path


def _interrupt(ws: Path, script: Path, sig: signal.Signals) -> Path:
    """Start ``gg run``; signal it while subagent B's command sleeps; its stream."""
    proc = subprocess.Popen(
        [*GG, "run", "t", "-w", str(ws), "--model", f"scripted:{script}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    runs = state_path(ws) / "runs"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        streams = sorted(runs.glob("*/stream.jsonl")) if runs.exists() else []
        if streams and b'"name":"run_command"' in streams[0].read_bytes():
            break
        assert proc.poll() is None, ended_output(proc, 2000)
        time.sleep(0.05)
    else:
        proc.kill()
        raise AssertionError("the run never reached subagent B's command")
    proc.send_signal(sig)
    proc.wait(timeout=60)
    return streams[0]


@pytest.fixture
def uninterrupted(tmp_path: Path) -> gg.RunResult:
    ws = _workspace(tmp_path / "clean")
    script = write_script(tmp_path / "clean.json", REPLIES)
    result = gg.Agent(model=f"scripted:{script}", workspace=ws).run("t")
    assert result.status == "ended", result.diagnosis
    return result


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_subagents_are_continued_not_run_again(
    tmp_path: Path, uninterrupted: gg.RunResult, sig: signal.Signals
) -> None:
    ws = _workspace(tmp_path / "ws")
    script = write_script(tmp_path / "r.json", REPLIES)
    stream = _interrupt(ws, script, sig)
    assert "slept.txt" not in _files(ws) and "b.txt" in _files(ws)
    (ws / "a.txt").write_text("A, as the earlier run left it")  # replayed: not written again

    point = load_resume_point(stream)
    assert point.replies == 4  # root turn 1, both of A's, B's turn 1
    result = resume_run(point)
    assert result.status == "ended" and result.ending == gg.Finish(summary="root done")
    assert result.session.messages == uninterrupted.session.messages
    clean = _files(Path(uninterrupted.session.workspace))
    assert _files(ws) == {**clean, "a.txt": "A, as the earlier run left it"}

    events = list(read_events(result.stream))
    resumed = [e for e in events if isinstance(e, RunResumed)]
    assert [(e.session_id, e.resumed_session, e.turns) for e in resumed] == [
        (None, "s1", 1),
        ("s2", "s2", 1),
        ("s3", "s3", 1),
    ]
    asked = [(e.session_id, e.turn) for e in events if isinstance(e, TurnEvent)]
    assert asked == [("s1", 2), ("s3", 2), ("s3", 3), ("s1", 3)]  # A and turn 1s not again
    ended = {e.session_id: e for e in events if isinstance(e, SessionEnded)}
    assert ended["s2"].ending == {"call": "finish", "summary": "A done"}
    assert (ended["s2"].turns, ended["s3"].turns, ended["s1"].turns) == (2, 3, 3)
    started = [e for e in events if isinstance(e, SessionStarted)]
    assert all(s.resumed for s in started)


def test_a_subagent_the_resumed_model_does_not_ask_for_starts_afresh(tmp_path: Path) -> None:
    """Another model on resume spawns another task: no earlier subagent matches it."""
    ws = _workspace(tmp_path / "ws")
    script = write_script(tmp_path / "r.json", REPLIES)
    stream = _interrupt(ws, script, signal.SIGKILL)
    other = write_script(
        tmp_path / "other.json",
        [
            {"tool_calls": [_call("spawn", task="task C")]},
            {"tool_calls": [_call("finish", summary="C done")]},
            {"tool_calls": [_call("finish", summary="root done")]},
        ],
    )
    result = resume_run(load_resume_point(stream), model=f"scripted:{other}")
    assert result.status == "ended"
    events = list(read_events(result.stream))
    assert len([e for e in events if isinstance(e, RunResumed)]) == 1
    sub = [e for e in events if isinstance(e, SessionStarted) and e.parent == "s1"]
    assert len(sub) == 1 and not sub[0].resumed and sub[0].task == "task C"
    tool_results = [json.loads(e.model_dump_json()) for e in events if e.type == "tool_result"]
    assert any("C done" in json.dumps(r) for r in tool_results)


@pytest.mark.parametrize(
    "kill_on",
    ["session_started:3", "checkpoint:4", "checkpoint:6", "session_ended:1", "session_ended:2"],
)
def test_concurrent_subagents_killed_at_any_event_resume_as_uninterrupted(
    tmp_path: Path, kill_on: str
) -> None:
    """spawn_all's subagents, the process SIGKILLed right after an event: resumed (a
    function model, answering by conversation), the root's conversation, the files and
    each command's effects equal an uninterrupted run's."""
    clean = tmp_path / "clean"
    clean.mkdir()
    plain = resume_driver.agent(clean).run("coordinate")
    assert plain.status == "ended"
    ws = tmp_path / "ws"
    ws.mkdir()
    proc = subprocess.run(
        [sys.executable, resume_driver.__file__, str(ws)],
        env={**os.environ, "GG_TEST_KILL_ON": kill_on}, capture_output=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()[-2000:]
    (stream,) = (state_path(ws) / "runs").glob("*/stream.jsonl")
    result = resume_run(load_resume_point(stream), model=FunctionModel(resume_driver.answer))
    assert result.status == "ended" and result.ending == plain.ending
    assert result.session.messages == plain.session.messages
    assert _files(ws) == _files(clean)
    events = list(read_events(result.stream))
    for e in events:  # no session was asked again for a turn its checkpoint held
        if isinstance(e, RunResumed):
            sid = e.session_id or "s1"
            asked = [
                t.turn or 0 for t in events if isinstance(t, TurnEvent) and t.session_id == sid
            ]
            assert all(t > e.turns for t in asked), (sid, e.turns, asked)
