"""A trusted hook's script cannot be swapped between gg's check and its start (adversary F18).

A trusted agent-stop hook runs a workspace script on the host. A concurrent
session of the same run (a subagent started by ``spawn_all``) keeps swapping
the script's directory with one holding the agent's own script, in a loop,
from a sandboxed command. gg runs a trusted hook only while none of the run's
sandboxed processes is alive, so the agent's script never runs on the host.
The operator's script always blocks, so the finishing subagent's gate runs
it again and again while the swap goes on: each run is a chance to lose the
race (without the quiet moment, it is lost within a few hundred tries).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import gg
from gg.config import settings_from_dict
from gg.models.base import Message, Reply, ToolSpec
from gg.sandbox.host import Isolation
from gg.sandbox.isolation import _missing
from gg.testing import FunctionModel, call

SWAP = (
    "end=$(($(date +%s) + 3)); while [ $(date +%s) -lt $end ]; do "
    "mv scripts held; mv evil scripts; mv scripts evil; mv held scripts; done; echo swapped"
)


@pytest.fixture
def ws(open_dir: Path) -> Path:
    """The workspace: world-searchable (see the ``open_dir`` fixture)."""
    return open_dir


def test_a_concurrent_swap_never_runs_the_agents_script_as_the_trusted_hook(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # under bwrap the script's directory is a mount point and cannot be moved at all; under
    # unshare (no read-only binds) the swap lands, and the quiet sandbox is what holds
    if _missing(Isolation.UNSHARE):
        pytest.skip("unshare is not available here")
    monkeypatch.setenv("GG_SANDBOX", "unshare")
    canary = tmp_path / "agent-script-ran"
    (ws / "scripts").mkdir()
    (ws / "scripts" / "check.sh").write_text("exit 2\n")  # blocks: the gate runs again
    (ws / "evil").mkdir()
    (ws / "evil" / "check.sh").write_text(f"touch {canary}\nexit 0\n")

    def answer(messages: list[Message], tools: list[ToolSpec]) -> Reply:
        task = next(m.content for m in messages if m.role == "user")
        done = sum(1 for m in messages if m.role == "assistant")
        if "swap" in task and done == 0:
            return call("run_command", command=SWAP, timeout_s=30)
        if "start both" in task and done == 0:
            return call("spawn_all", tasks=["swap the scripts", "just finish"])
        return call("finish", summary="done")

    settings = settings_from_dict(
        {  # many endings, so many races: the ceilings allow them. Without the quiet moment
            # the gate's runs come back to back through the 3 s swap (well under 150 of
            # them); with it they all wait for the swap's end, then run on to the ceiling
            "ceilings": {"gate_blocks": 150, "max_turns": 1000, "consecutive_errors": 1000},
            "tools": {"capabilities": ["files", "shell", "agents"]},
            "hooks": {
                "agent_stop": [
                    {"command": "sh ./scripts/check.sh", "trusted": True, "timeout_s": 30}
                ]
            },
        }
    )
    result = gg.Agent(model=FunctionModel(answer), workspace=ws, settings=settings).run(
        "start both"
    )
    assert not canary.exists(), "the agent's script ran as the trusted hook"
    events = list(gg.stream.read_events(result.stream))
    assert any(e.type == "tool_result" and "swapped" in e.excerpt for e in events)
    blocked = sum(1 for e in events if e.type == "gate_blocked")
    assert blocked >= 2  # the gate ran the (blocking) hook again and again
    assert result.status == "stopped"  # the operator's hook never passes: a ceiling
