"""A full disk under the sandbox's state directory stops a run with a diagnosis (issue 12).

Each sandboxed process gets a run directory of its own, filled by gg before it starts
(``runner.js``, the compiled guest code ``boot.pyc``, ``zygote.pyc``, ``runner.pyc``, a
git config): about 100 KB a run since the guest boots from compiled code. When that
filesystem is full, the run raises :class:`gg.errors.DiskFull` naming it (not a bare
``OSError``), and leaves no half-filled run directory behind, cold or warm.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_support import Arena, Recorder

from gg.errors import DiskFull
from gg.sandbox import Sandbox
from support import fill_disk, small_tmpfs


@pytest.fixture
def full_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """``$TMPDIR`` (the sandbox's state directory's parent) on a small tmpfs."""
    with small_tmpfs(tmp_path / "disk", "1m") as mnt:
        os.chmod(mnt, 0o755)
        monkeypatch.setattr(tempfile, "tempdir", str(mnt))
        yield mnt


def _left(mnt: Path) -> list[str]:
    state = mnt / f"gg-sandbox-{os.geteuid()}"
    return sorted(p.name for p in state.iterdir() if p.name != "slots")


async def test_a_full_run_dir_disk_is_disk_full(full_tmp: Path, arena: Arena) -> None:
    box = Sandbox()
    shell = await box.run_shell("echo hi", workspace=arena.workspace, timeout_s=20)
    assert shell.output == "hi\n"  # the disk works before it is full
    filler = fill_disk(full_tmp)
    with open(filler, "r+b") as f:  # room for the directories, not for the files
        f.truncate(os.path.getsize(filler) - 12_000)
    with pytest.raises(DiskFull) as info:
        await box.run_shell("echo hi", workspace=arena.workspace, timeout_s=20)
    assert str(full_tmp) in str(info.value) and "full" in str(info.value)
    for language in ("python", "javascript"):  # a zygote or a spare wants its run dir too
        with pytest.raises(DiskFull):
            await box.run("print(1)" if language == "python" else "console.log(1)",
                          language=language, workspace=arena.workspace, tools=[],
                          handler=Recorder())  # fmt: skip
    assert _left(full_tmp) == []
    filler.unlink()
    after = await box.run(
        "print(6 * 7)", language="python", workspace=arena.workspace, tools=[], handler=Recorder()
    )
    assert (after.output, after.error) == ("42\n", None)
