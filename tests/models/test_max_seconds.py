"""``max_seconds`` is a hard wall-clock bound inside a turn (issue 12 item 2).

A real loopback server trickles a reply (one chunk every 0.2 s, never
stalling long enough for the per-chunk timeout), and a real hook sleeps: in
both, the run stops at its deadline with the ``budget`` ceiling's diagnosis.
"""

from __future__ import annotations

import time
from pathlib import Path

from _servers import Sse, serve, sse_event

import gg
from gg.stream import read_events


def _chunk(text: str) -> str:
    body = {
        "id": "c1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}],
    }
    return sse_event(body)


def _stopped_by_the_deadline(result: gg.RunResult, seconds: float, limit: float) -> None:
    assert result.status == "stopped" and result.ending is None
    assert result.diagnosis is not None and "max_seconds" in result.diagnosis
    assert limit <= seconds < limit + 4, f"the run went on for {seconds:.1f} s"
    events = list(read_events(result.stream))
    tripped = [e for e in events if e.type == "ceiling_tripped"]
    assert [e.ceiling for e in tripped] == ["budget"]
    assert events[-1].type == "run_ended" and events[-1].exit_code == 1


def test_a_trickling_server_cannot_outlast_max_seconds(workspace: Path) -> None:
    trickle = Sse(frames=[_chunk("a")] * 500, delay_s=0.2)  # 100 s of reply in all
    with serve([trickle]) as server:
        agent = gg.Agent(
            model=f"openai-compat:m@{server.url}/v1",
            workspace=workspace,
            ceilings={"max_seconds": 2},
        )
        start = time.monotonic()
        result = agent.run("say a lot")
        took = time.monotonic() - start
    _stopped_by_the_deadline(result, took, 2)


def test_a_sleeping_hook_is_cancelled_at_max_seconds(workspace: Path, tmp_path: Path) -> None:
    marker = tmp_path / "hook-ran-to-its-end"
    (workspace / "gg.toml").write_text(
        f'[[hooks.agent_stop]]\ncommand = "sleep 30; touch {marker}"\ntrusted = true\n'
    )
    script = tmp_path / "r.json"
    script.write_text('{"replies": [{"tool_calls": [{"name": "finish", "arguments": '
                      '{"summary": "x"}}]}]}')  # fmt: skip
    agent = gg.Agent(model=f"scripted:{script}", workspace=workspace, ceilings={"max_seconds": 1.5})
    start = time.monotonic()
    result = agent.run("t")
    took = time.monotonic() - start
    _stopped_by_the_deadline(result, took, 1.5)
    time.sleep(0.5)
    assert not marker.exists()  # the hook was killed, not left to finish
