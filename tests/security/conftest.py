"""Fixtures shared by the security tests."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from gg.sandbox.tree import remove_tree


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A fresh world-searchable (0755) directory under /tmp, removed after the test at any
    depth. pytest's own tmp_path sits under a 0700 directory: the sandbox uid could not
    resolve absolute paths beneath it (git does), so workspaces the sandbox must reach by
    absolute path live here."""
    root = Path(tempfile.mkdtemp(prefix="gg-sec-", dir="/tmp"))
    os.chmod(root, 0o755)
    yield root
    remove_tree(root)
