"""Trees an agent wrote are removed at any depth, never through a link (adversary F13, F14)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gg.sandbox.tree import remove_tree


def _deep(root: Path, depth: int, outside: Path) -> None:
    """``root/d/d/...`` ``depth`` levels deep (built by chdir: the path is too long to name)."""
    back = os.getcwd()
    root.mkdir()
    os.chdir(root)
    try:
        for i in range(depth):
            os.mkdir("d")
            os.chdir("d")
            if i % 500 == 0:
                Path("f").write_text("x")
                os.symlink(outside, "link")
                os.mkfifo("fifo")
    finally:
        os.chdir(back)


@pytest.mark.parametrize("depth", [1, 3000])
def test_remove_tree_handles_depth_links_and_fifos(tmp_path: Path, depth: int) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("keep")
    try:
        _deep(tmp_path / "tree", depth, outside)
    finally:  # even half-built, pytest's own clean-up (shutil.rmtree) could not remove it
        remove_tree(tmp_path / "tree")
    assert not (tmp_path / "tree").exists()
    assert (outside / "keep").read_text() == "keep"


def test_remove_tree_removes_a_link_not_its_target(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.mkdir()
    (target / "keep").write_text("keep")
    os.symlink(target, tmp_path / "link")
    remove_tree(tmp_path / "link")
    assert not os.path.lexists(tmp_path / "link") and (target / "keep").exists()
    remove_tree(tmp_path / "missing")  # nothing there: nothing to do
