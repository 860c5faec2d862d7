"""Fixtures for board tests: real git repositories in temp dirs."""

from __future__ import annotations

from pathlib import Path

import pytest
from board_support import make_repo


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository on ``main`` with a failing test and an agent-stop hook running it."""
    return make_repo(tmp_path / "repo")
