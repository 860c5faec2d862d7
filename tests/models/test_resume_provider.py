"""A run stopped by a signal while its provider stalls is resumed with the same
conversation (issue 12 items 3, 4): a real loopback OpenAI-compatible server, a real
``gg run`` process signalled mid-request, then ``gg resume`` against the same server."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from _servers import Sse, Stall, serve, sse_event

from gg.state import state_path
from gg.stream import RunResumed, read_events
from support import ended_output

GG = [sys.executable, "-m", "gg"]
USAGE = {"prompt_tokens": 40, "completion_tokens": 9, "total_tokens": 49}


def _calls(name: str, arguments: dict[str, Any]) -> Sse:
    call = {"index": 0, "id": f"call_{name}", "type": "function"}
    call["function"] = {"name": name, "arguments": json.dumps(arguments)}
    delta = {"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}
    stop = {"index": 0, "delta": {}, "finish_reason": "tool_calls"}
    frames = [sse_event({"choices": [delta]}), sse_event({"choices": [stop]})]
    frames.append(sse_event({"choices": [], "usage": USAGE}))
    return Sse(frames=[*frames, sse_event("[DONE]")])


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGKILL])
def test_a_run_signalled_while_the_provider_stalls_resumes_the_same_conversation(
    workspace: Path, sig: signal.Signals
) -> None:
    (workspace / "gg.toml").write_text("[model]\nmax_retries = 0\ntimeout_s = 60\n")
    script: list[Sse | Stall] = [
        _calls("write_file", {"path": "a.txt", "content": "one"}),
        Stall(seconds=60),
        _calls("finish", {"summary": "written"}),
    ]
    with serve(script) as server:
        model = f"openai-compat:m@{server.url}/v1"
        proc = subprocess.Popen(
            [*GG, "run", "t", "-w", str(workspace), "--model", model, "--json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while len(server.requests) < 2:
            assert proc.poll() is None, ended_output(proc)
            assert time.monotonic() < deadline, "the second request never came"
            time.sleep(0.05)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
        assert "Traceback" not in err
        if sig != signal.SIGKILL:
            assert proc.returncode == 128 + sig
            stopped = json.loads(out)
            assert stopped["status"] == "stopped" and sig.name in stopped["diagnosis"]
        (stream,) = (state_path(workspace) / "runs").glob("*/stream.jsonl")
        p = subprocess.run(
            [*GG, "resume", stream.parent.name, "-w", str(workspace), "--json"],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert p.returncode == 0, p.stderr
        sent = [r.body["messages"] for r in server.requests]
    result = json.loads(p.stdout)
    assert result["ending"] == {"call": "finish", "summary": "written"}
    assert len(sent) == 3 and sent[2] == sent[1]  # the cut request, asked again as it was
    assert (workspace / "a.txt").read_text() == "one"
    events = list(read_events(Path(result["stream"])))
    assert [e.from_run for e in events if isinstance(e, RunResumed)] == [stream.parent.name]
