"""``gg board run`` ends cleanly on SIGTERM and SIGHUP, and kills what it started (issue 12)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from board_support import make_repo

from gg.state import state_path
from support import write_script
from test_signals import _marker, _none_survive, _wait_for

GG = [sys.executable, "-m", "gg"]


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_a_signal_stops_a_board_run_cleanly(tmp_path: Path, sig: signal.Signals, code: int) -> None:
    marker = _marker()
    toml = f'[[hooks.agent_stop]]\ncommand = "sleep 300 {marker} & sleep 300 {marker}"\n'
    repo = make_repo(tmp_path / "repo", toml=toml)
    added = subprocess.run(
        [*GG, "board", "add", "Greet politely", "-w", str(repo)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    script = write_script(
        tmp_path / "r.json",
        [{"tool_calls": [{"name": "finish", "arguments": {"summary": "done"}}]}],
    )
    proc = subprocess.Popen(
        [*GG, "board", "run", "-w", str(repo), "--model", f"scripted:{script}", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    _wait_for(marker, proc)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert "Traceback" not in err
    result = json.loads(out)
    assert result["status"] == "stopped" and sig.name in result["diagnosis"]
    (stream,) = (state_path(repo) / "runs").glob("*/stream.jsonl")
    last = json.loads(stream.read_text().splitlines()[-1])
    assert last["type"] == "run_ended" and last["exit_code"] == code
    _none_survive(marker)
