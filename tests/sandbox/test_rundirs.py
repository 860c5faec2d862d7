"""Run directories a dead gg left are swept; a live gg's never are (gg.sandbox.rundirs)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from gg.errors import DiskFull
from gg.sandbox import rundirs
from gg.sandbox.host import state_dir
from support import small_tmpfs

_MAKE = (
    "import sys, time\n"
    "from gg.sandbox.rundirs import new_run_dir\n"
    "print(new_run_dir(sys.argv[1]), flush=True)\n"
    "if sys.argv[2] == 'stay':\n"
    "    time.sleep(60)\n"
)


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A state directory of this test's own (the real one serves the other tests)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    return state_dir()


def _made_by_another(prefix: str, stay: bool) -> tuple[Path, subprocess.Popen[str]]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _MAKE, prefix, "stay" if stay else "go"],
        stdout=subprocess.PIPE, text=True, env={**os.environ},
    )  # fmt: skip
    assert proc.stdout is not None
    path = Path(proc.stdout.readline().strip())
    if not stay:
        proc.wait(timeout=30)
    return path, proc


def _age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then), follow_symlinks=False)


def test_a_dead_gg_s_directories_are_swept_a_live_one_s_never(root: Path) -> None:
    dead, _ = _made_by_another("zygote-", stay=False)  # exited without removing it
    (dead / "boot.pyc").write_bytes(b"x" * 1000)
    live, proc = _made_by_another("run-", stay=True)
    try:
        assert dead.is_dir() and live.is_dir() and dead.parent == root == live.parent
        _age(Path(f"{dead}.lock"), 120)
        _age(Path(f"{live}.lock"), 120)  # as old, but its gg holds the lock
        assert rundirs.sweep_stale(root) == 1
        assert not dead.exists() and not Path(f"{dead}.lock").exists()
        assert live.is_dir() and Path(f"{live}.lock").exists()
    finally:
        proc.kill()
        proc.wait()
    assert rundirs.sweep_stale(root) == 1 and not live.exists()  # killed: its lock is free


def test_a_young_lock_and_a_young_unowned_directory_are_kept(root: Path) -> None:
    dead, _ = _made_by_another("run-", stay=False)
    old_style = root / "run-oldgg1234"  # an older gg's: no lock file beside it
    old_style.mkdir()
    assert rundirs.sweep_stale(root) == 0
    assert dead.is_dir() and old_style.is_dir()
    _age(old_style, 2 * 86_400)
    assert rundirs.sweep_stale(root) == 1
    assert not old_style.exists() and dead.is_dir()


def test_the_sweep_follows_no_link(root: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("mine")
    os.symlink(victim, root / "run-link")
    _age(root / "run-link", 2 * 86_400)
    os.symlink(tmp_path / "victim-lock", root / "run-link2.lock")
    (tmp_path / "victim-lock").write_text("")
    _age(root / "run-link2.lock", 120)
    os.symlink(victim, root / "run-link2")
    assert rundirs.sweep_stale(root) == 0
    assert (victim / "keep.txt").read_text() == "mine" and (tmp_path / "victim-lock").exists()


def test_a_process_s_own_directory_goes_with_its_lock(root: Path) -> None:
    path = rundirs.new_run_dir("run-")
    assert path.is_dir() and oct(path.stat().st_mode & 0o777) == "0o700"
    assert oct(Path(f"{path}.lock").stat().st_mode & 0o777) == "0o600"
    _age(Path(f"{path}.lock"), 120)
    assert rundirs.sweep_stale(root) == 0  # this process holds it
    (path / "deep").mkdir()
    rundirs.remove_run_dir(path)
    assert not path.exists() and not Path(f"{path}.lock").exists()


def test_sweep_of_many_dead_dirs_keeps_to_its_budget(root: Path) -> None:
    """Thousands of a killed gg's directories do not stall the first run's caller for seconds.

    The sweep runs inside ``new_run_dir``, on the event loop for a zygote's start; 10,000
    stale directories took about 3 s there, 100,000 half a minute. The rest is left for a
    later sweep.
    """
    old = time.time() - 3600
    for i in range(3000):
        (root / f"run-{i:06x}" / "tmp").mkdir(parents=True)
        lock = root / f"run-{i:06x}.lock"
        lock.touch()
        os.utime(lock, (old, old))
    started = time.monotonic()
    first = rundirs.sweep_stale(root, budget_s=0.05)
    assert time.monotonic() - started < 0.5
    assert 0 < first < 3000
    assert first + rundirs.sweep_stale(root) == 3000


def test_a_full_disk_is_a_disk_full_error_naming_the_state_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Directories are made until the filesystem has no inode left: then DiskFull names
    it, and no lock file or directory is left without its other half."""
    with small_tmpfs(tmp_path / "disk", "1m", inodes=24) as mnt:
        os.chmod(mnt, 0o755)
        monkeypatch.setattr(tempfile, "tempdir", str(mnt))
        state = state_dir()
        made = []
        with pytest.raises(DiskFull, match="the sandbox's state directory") as info:
            for _ in range(50):
                made.append(rundirs.new_run_dir("run-"))
        assert made and str(mnt) in str(info.value)
        dirs = {p.name for p in state.iterdir() if p.is_dir() and p.name.startswith("run-")}
        locks = {p.name.removesuffix(".lock") for p in state.glob("run-*.lock")}
        assert dirs == locks == {p.name for p in made}
        for path in made:
            rundirs.remove_run_dir(path)
