"""Under bwrap a hook script's directory cannot be moved away with its read-only bind
(adversary N2, F18): each directory above a protected file is a mount point."""

from __future__ import annotations

from pathlib import Path

import pytest

import gg
from gg.sandbox.host import Isolation
from gg.sandbox.isolation import _missing
from gg.testing import ScriptedModel, call

MOVE = (
    "mv tools/hooks moved; echo mv=$?; mv tools moved2; echo mv2=$?; "
    "echo 'exit 0' > tools/hooks/check.sh; echo write=$?; "
    "touch tools/hooks/other && echo other=ok"
)


@pytest.fixture
def ws(open_dir: Path) -> Path:
    """The workspace: world-searchable (see the ``open_dir`` fixture)."""
    return open_dir


def test_a_protected_scripts_directories_cannot_be_moved(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if _missing(Isolation.BWRAP):
        pytest.skip("bwrap is not available here")
    monkeypatch.setenv("GG_SANDBOX", "bwrap")
    (ws / "tools" / "hooks").mkdir(parents=True)
    (ws / "tools" / "hooks" / "check.sh").write_text("exit 2\n")
    (ws / "gg.toml").write_text('[[hooks.agent_stop]]\ncommand = "sh tools/hooks/check.sh"\n')
    model = ScriptedModel([call("run_command", command=MOVE), call("finish", summary="x")])
    result = gg.Agent(model=model, workspace=ws, ceilings={"gate_blocks": 1}).run("t")
    out = next(e for e in gg.stream.read_events(result.stream) if e.type == "tool_result")
    assert "mv=1" in out.excerpt and "mv2=1" in out.excerpt, out.excerpt  # mount points
    assert "write=2" in out.excerpt  # the script itself is read-only
    assert "other=ok" in out.excerpt  # the rest of the directory stays writable
    assert (ws / "tools" / "hooks" / "check.sh").read_text() == "exit 2\n"
    assert result.status == "stopped"  # the operator's blocking hook ran, unchanged
