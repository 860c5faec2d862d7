"""A full disk stops a whole run cleanly, naming the disk (issue 12 item 1).

Real small tmpfs mounts (the tests run as root, like CI): one holds gg's state
(``GG_STATE_HOME``) and is filled mid-run by a host-mode command; one holds
the workspace, which is full when the agent writes a file. Neither ends in a
traceback: ``gg run`` prints the diagnosis, exits 1 and prints ``--json``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import gg
from gg.stream import read_events
from support import fill_disk, small_tmpfs, write_script

GG = [sys.executable, "-m", "gg"]


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    """A 1m tmpfs mounted at a fresh directory."""
    with small_tmpfs(tmp_path / "disk", "1m") as mnt:
        yield mnt


def test_the_state_disk_filling_mid_run_stops_it_with_the_disk_named(
    workspace: Path, tmp_path: Path, disk: Path
) -> None:
    slow = f"sleep 3; echo {'x' * 3000}"  # the disk fills while it sleeps
    script = write_script(
        tmp_path / "r.json",
        [
            {"tool_calls": [{"name": "run_command", "arguments": {"command": slow}}]},
            *[  # each a few KiB of stream: past the slack of the file's last page
                {"tool_calls": [{"name": "run_command", "arguments": {"command": slow[9:]}}]}
            ]
            * 10,
            {"tool_calls": [{"name": "finish", "arguments": {"summary": "never reached"}}]},
        ],
    )
    env = {**os.environ, "GG_STATE_HOME": str(disk / "state")}
    proc = subprocess.Popen(
        [*GG, "run", "t", "-w", str(workspace), "--model", f"scripted:{script}", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        streams = list((disk / "state").glob("workspaces/*/runs/*/stream.jsonl"))
        if streams and b'"tool_call"' in streams[0].read_bytes():
            break
        time.sleep(0.05)
    fill_disk(disk)
    out, err = proc.communicate(timeout=120)
    p = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    assert p.returncode == 1, p.stderr
    assert "Traceback" not in p.stderr
    result = json.loads(p.stdout)
    assert result["status"] == "stopped" and result["ending"] is None
    assert "disk is full" in result["diagnosis"] and str(disk) in result["diagnosis"]
    assert "disk is full" in p.stderr and str(disk) in p.stderr
    (disk / "filler").unlink()  # space again: the stream is whole lines, sealed
    shown = subprocess.run(
        [*GG, "show", result["stream"]], capture_output=True, text=True, timeout=60,
        env={**os.environ, "GG_STATE_HOME": str(disk / "state")},
    )  # fmt: skip
    assert shown.returncode == 0, shown.stdout + shown.stderr
    types = [e.type for e in read_events(Path(result["stream"]))]
    assert types[0] == "run_started" and "tool_call" in types


def test_a_full_workspace_disk_stops_the_run_not_the_model(tmp_path: Path, disk: Path) -> None:
    ws = disk / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("# demo\n")
    fill_disk(disk)
    script = write_script(
        tmp_path / "r.json",
        [
            {
                "tool_calls": [
                    {"name": "write_file", "arguments": {"path": "a.txt", "content": "a"}}
                ]
            },
            {"tool_calls": [{"name": "finish", "arguments": {"summary": "never reached"}}]},
        ],
    )
    result = gg.Agent(model=f"scripted:{script}", workspace=ws).run("write a file")
    assert result.status == "stopped" and result.exit_code == 1
    assert result.diagnosis is not None
    assert "disk is full" in result.diagnosis and str(disk) in result.diagnosis
    assert "a.txt" in result.diagnosis
    events = list(read_events(result.stream))
    assert events[-1].type == "run_ended" and events[-1].diagnosis == result.diagnosis
    assert not any(e.type == "tool_result" for e in events)  # not fed back to the model


def test_a_full_workspace_disk_stops_a_code_mode_run(tmp_path: Path, disk: Path) -> None:
    ws = disk / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("# demo\n")
    fill_disk(disk)
    program = 'gg.tools.write_file(path="a.txt", content="a")\ngg.session.finish("x")'
    script = write_script(
        tmp_path / "r.json",
        [{"tool_calls": [{"name": "submit_program", "arguments": {"program": program}}]}],
    )
    result = gg.Agent(model=f"scripted:{script}", workspace=ws, mode="code").run("write")
    assert result.status == "stopped" and result.ending is None
    assert result.diagnosis is not None
    assert "disk is full" in result.diagnosis and str(disk) in result.diagnosis
    events = list(read_events(result.stream))
    assert events[-1].type == "run_ended" and events[-1].diagnosis == result.diagnosis
