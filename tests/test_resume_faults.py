"""``gg resume`` after the other faults of issue 12: a full disk, a crash loop (item 4).

Real faults: a small tmpfs holding gg's state filled mid-run (the run stops,
its stream cut back to whole lines), then freed; a run killed, resumed, killed
again while resumed, and resumed again. Each time the resumed run ends as an
uninterrupted one does.
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

from gg.state import state_path
from gg.stream import RunResumed, read_events
from support import ended_output, fill_disk, small_tmpfs, write_script

GG = [sys.executable, "-m", "gg"]


def _cmd(command: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "run_command", "arguments": {"command": command}}]}


def _finish(summary: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "finish", "arguments": {"summary": summary}}]}


def _wait_for(streams: Path, needle: bytes, proc: subprocess.Popen[str], depth: str = "*/") -> Path:
    """The stream under ``streams`` that holds ``needle``, once one does."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = [s for s in streams.glob(f"{depth}stream.jsonl") if needle in s.read_bytes()]
        if found:
            return found[0]
        assert proc.poll() is None, ended_output(proc)
        time.sleep(0.05)
    raise AssertionError(f"the run never wrote {needle!r}")


def test_a_run_the_full_disk_stopped_is_resumed_once_there_is_space(
    workspace: Path, tmp_path: Path
) -> None:
    pad = "x" * 3000  # each reply a few KiB of stream: past the slack of its last page
    replies = [_cmd("echo one > one.txt"), _cmd(f"sleep 3; echo {pad}")]
    replies += [_cmd(f"echo {i} {pad}") for i in range(10)] + [_finish("all done")]
    script = write_script(tmp_path / "r.json", replies)
    with small_tmpfs(tmp_path / "disk", "1m") as disk:
        env = {**os.environ, "GG_STATE_HOME": str(disk / "state")}
        proc = subprocess.Popen(
            [*GG, "run", "t", "-w", str(workspace), "--model", f"scripted:{script}", "--json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip
        _wait_for(disk / "state" / "workspaces", b"sleep 3", proc, depth="*/runs/*/")
        filler = fill_disk(disk)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 1 and "disk is full" in err, err
        stopped = json.loads(out)
        filler.unlink()
        p = subprocess.run(
            [*GG, "resume", stopped["run_id"], "-w", str(workspace), "--json"],
            capture_output=True, text=True, timeout=180, env=env,
        )  # fmt: skip
        assert p.returncode == 0, p.stderr
        result = json.loads(p.stdout)
        assert result["status"] == "ended" and result["ending"]["summary"] == "all done"
        events = list(read_events(Path(result["stream"])))
        assert [e.from_run for e in events if isinstance(e, RunResumed)] == [stopped["run_id"]]
    assert (workspace / "one.txt").read_text() == "one\n"


def test_a_resumed_run_killed_again_is_resumed_again(workspace: Path, tmp_path: Path) -> None:
    replies = [
        _cmd("echo a >> log.txt"),
        _cmd("sleep 3; echo b >> log.txt"),  # the first kill
        _cmd("echo c >> log.txt"),
        _cmd("sleep 3; echo d >> log.txt"),  # the second kill, in the resumed run
        _finish("four lines"),
    ]
    script = write_script(tmp_path / "r.json", replies)
    env = {**os.environ}
    first = subprocess.Popen(
        [*GG, "run", "t", "-w", str(workspace), "--model", f"scripted:{script}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    runs = state_path(workspace) / "runs"
    stream = _wait_for(runs, b"echo b", first)
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=30)
    second = subprocess.Popen(
        [*GG, "resume", stream.parent.name, "-w", str(workspace)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    again = _wait_for(runs, b"echo d", second)
    assert again != stream
    second.send_signal(signal.SIGKILL)
    second.wait(timeout=30)
    p = subprocess.run(
        [*GG, "resume", again.parent.name, "-w", str(workspace), "--json"],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    result = json.loads(p.stdout)
    assert result["status"] == "ended" and result["ending"]["summary"] == "four lines"
    assert (workspace / "log.txt").read_text() == "a\nb\nc\nd\n"


def test_a_resume_killed_before_it_began_leaves_the_run_resumable(
    workspace: Path, tmp_path: Path
) -> None:
    """``gg resume`` killed in its session-start hook (before its first checkpoint): the
    run is not lost to a claim nobody can finish; a resume while one runs is refused."""
    (workspace / "gg.toml").write_text(
        '[[hooks.session_start]]\ncommand = "if [ -e slow-start ]; then sleep 30; fi"\n'
    )
    replies = [_cmd("echo a > a.txt"), _cmd("sleep 3; echo b > b.txt"), _finish("both")]
    script = write_script(tmp_path / "r.json", replies)
    runs = state_path(workspace) / "runs"
    first = subprocess.Popen(
        [*GG, "run", "t", "-w", str(workspace), "--model", f"scripted:{script}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    stream = _wait_for(runs, b"sleep 3;", first)
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=30)
    run_id = stream.parent.name
    (workspace / "slow-start").write_text("")
    resume = [*GG, "resume", run_id, "-w", str(workspace), "--json"]
    early = subprocess.Popen(resume, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _wait_for(runs, b'"type":"run_resumed"', early)
    time.sleep(0.5)  # in the session-start hook's sleep
    meanwhile = subprocess.run(resume, capture_output=True, text=True, timeout=60)
    assert meanwhile.returncode == 2 and "being resumed now" in meanwhile.stderr
    early.send_signal(signal.SIGKILL)
    early.wait(timeout=30)
    (workspace / "slow-start").unlink()
    p = subprocess.run(resume, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["ending"] == {"call": "finish", "summary": "both"}
    assert (workspace / "b.txt").read_text() == "b\n"
    again = subprocess.run(resume, capture_output=True, text=True, timeout=60)
    assert again.returncode == 2 and "resumed already" in again.stderr
    assert json.loads(p.stdout)["run_id"] in again.stderr
