"""Shared fixtures: a temp workspace, the corpora directory, a scripted-agent runner."""

from __future__ import annotations

import faulthandler
import os
import signal
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import gg
from gg.models.base import Reply
from gg.testing import ScriptedModel
from support import CORPORA, RunScripted

pytest_plugins = ["layers"]  # the `layer` fixture (tests/layers.py)

# SIGUSR1 writes every thread's stack to $GG_TEST_STACKS/PID.txt: scripts/test sends it to
# each pytest process when the whole run outlives its limit (a hang outside any one test's
# timeout), then prints the files. A file, not stderr: pytest captures fd 2 during a test.
if stacks := os.environ.get("GG_TEST_STACKS"):
    _STACKS = open(os.path.join(stacks, f"{os.getpid()}.txt"), "w")  # noqa: SIM115
    faulthandler.register(signal.SIGUSR1, file=_STACKS, all_threads=True)


@pytest.fixture(autouse=True)
def _state_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """gg's state (streams, stores: ``gg.state``) goes to a fresh directory per test."""
    home = tmp_path_factory.mktemp("gg-state")
    home.chmod(0o700)
    monkeypatch.setenv("GG_STATE_HOME", str(home))
    return home


@pytest.fixture
def corpora() -> Path:
    """``../shared/corpora`` beside the repository (missing: the test fails, never skips)."""
    assert CORPORA.is_dir(), f"corpora not found at {CORPORA}: shared/ must sit beside the repo"
    return CORPORA


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A fresh workspace directory with one file."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("# demo\n")
    return ws


@pytest.fixture
def run_scripted(workspace: Path) -> RunScripted:
    """Run a task with a scripted model: ``run_scripted([replies], role=..., hooks=...)``."""

    def go(
        replies: Sequence[Reply | dict[str, Any]], task: str = "do the task", **kwargs: Any
    ) -> tuple[gg.RunResult, ScriptedModel]:
        model = ScriptedModel(replies)
        agent = gg.Agent(model=model, workspace=workspace, **kwargs)
        return agent.run(task), model

    return go
