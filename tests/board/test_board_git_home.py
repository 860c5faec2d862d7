"""The Ray dispatch's private git HOME is removed when its process ends (it leaked one
temp directory per driver and per Ray worker process)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_the_git_home_is_gone_once_its_process_exits(tmp_path: Path) -> None:
    code = (
        "from gg.board.raydispatch import _git_home\n"
        "home = _git_home()\n"
        "assert home == _git_home() and home.is_dir()\n"
        "print(home)\n"
    )
    env = {"TMPDIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    home = Path(done.stdout.strip())
    assert home.parent == tmp_path and home.name.startswith("gg-git-home-")
    assert not home.exists()
    assert list(tmp_path.iterdir()) == []
