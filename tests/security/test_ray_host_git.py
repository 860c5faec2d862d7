"""The Ray driver's and workers' host git keep the board's git safety (issue 9 item 4, issue 17).

Real repositories: a bare remote, the driver's checkout and an agent's clone that
pushes a ``.gitattributes`` naming a filter. Each attack would write a canary
file; each test asserts none appears, and the safe path still works.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import pytest

import gg
from gg.board import raydispatch as rd
from gg.board.errors import BoardError

_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "u",
    "GIT_AUTHOR_EMAIL": "u@x",
    "GIT_COMMITTER_NAME": "u",
    "GIT_COMMITTER_EMAIL": "u@x",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def _sh(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, env=_ENV, check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture
def repos(tmp_path: Path) -> tuple[Path, Path, Path]:
    """``(remote.git, driver's checkout, canary)``: the remote holds an agent's commit."""
    remote, ws, agent = tmp_path / "remote.git", tmp_path / "ws", tmp_path / "agent"
    _sh(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    _sh(tmp_path, "clone", "-q", str(remote), str(ws))
    _sh(ws, "commit", "-q", "--allow-empty", "-m", "init")
    _sh(ws, "push", "-q", "origin", "main")
    _sh(tmp_path, "clone", "-q", str(remote), str(agent))
    (agent / ".gitattributes").write_text("* filter=pwn merge=pwn\n")
    (agent / "f.txt").write_text("data\n")
    _sh(agent, "add", ".")
    _sh(agent, "commit", "-q", "-m", "agent")
    _sh(agent, "push", "-q", "origin", "main")
    return remote, ws, tmp_path / "CANARY"


def test_pull_runs_no_filter_the_checkout_config_defines(repos: tuple[Path, Path, Path]) -> None:
    remote, ws, canary = repos
    run = f"sh -c {shlex.quote(f'id > {canary}; cat')}"
    _sh(ws, "config", "filter.pwn.smudge", run)
    _sh(ws, "config", "filter.pwn.process", run)
    url = rd._remote_of(ws, "origin")
    rd._pull(ws, url, "main")
    assert (ws / "f.txt").read_text() == "data\n"  # pulled, the file as committed
    assert not canary.exists()


@pytest.mark.parametrize(
    "url",
    ["ext::sh -c {cmd}", "fd::3", "EXT::sh -c {cmd}", "svn::x", "http://h/x", "git://h/x"],
)
def test_a_helper_or_other_scheme_remote_url_is_refused(
    repos: tuple[Path, Path, Path], url: str
) -> None:
    _, ws, canary = repos
    _sh(ws, "config", "remote.origin.url", url.format(cmd=shlex.quote(f"touch {canary}")))
    with pytest.raises(gg.UserError, match="remote URL"):
        rd._remote_of(ws, "origin")
    with pytest.raises(gg.UserError, match="remote URL"):
        rd._pull(ws, url.format(cmd=f"touch {canary}"), "main")
    assert not canary.exists()


def test_an_insteadof_rewrite_to_ext_reaches_no_helper(repos: tuple[Path, Path, Path]) -> None:
    remote, ws, canary = repos
    _sh(ws, "config", f"url.ext::sh -c touch% {canary}.insteadOf", str(remote))
    with pytest.raises((BoardError, gg.UserError)):
        rd._pull(ws, str(remote), "main")
    assert not canary.exists()


def test_an_option_shaped_argument_stays_a_name(repos: tuple[Path, Path, Path]) -> None:
    remote, ws, canary = repos
    script = ws.parent / "x.sh"
    script.write_text(f"#!/bin/sh\nid > {canary}\nexit 1\n")
    script.chmod(0o755)
    with pytest.raises(gg.UserError):
        rd._pull(ws, f"--upload-pack={script}", "main")
    with pytest.raises(gg.UserError):
        rd._pull(ws, str(remote), f"--upload-pack={script}")
    with pytest.raises(BoardError):
        rd._git(
            ws,
            "fetch",
            "--end-of-options",
            str(remote),
            f"--upload-pack={script}",
            remote=str(remote),
        )
    assert not canary.exists()


def test_remote_protocols() -> None:
    assert rd.remote_protocol("/srv/repo.git") == "file"
    assert rd.remote_protocol("file:///srv/repo.git") == "file"
    assert rd.remote_protocol("./a:b") == "file"
    assert rd.remote_protocol("git@host:org/repo.git") == "ssh"
    assert rd.remote_protocol("ssh://git@host/repo") == "ssh"
    assert rd.remote_protocol("https://host/repo.git") == "https"
    for bad in ("-u", "a\nb", "", "ext::x", "ftp://h/x"):
        with pytest.raises(gg.UserError):
            rd.remote_protocol(bad)


def test_a_worker_clone_fetch_and_reset_work_with_only_file_allowed(
    repos: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    remote, _, canary = repos
    root = tmp_path / "worker"
    root.mkdir()
    clone = root / "repo"
    url = str(remote)
    rd._git(None, "clone", "--quiet", "--branch=main", "--end-of-options", url, str(clone),
            remote=url, cwd=root)  # fmt: skip
    assert (clone / "f.txt").read_text() == "data\n"
    _sh(clone, "config", "filter.pwn.smudge", f"sh -c 'touch {canary}; cat'")
    (clone / "f.txt").write_text("changed\n")
    rd._git(clone, "fetch", "--quiet", "--end-of-options", url, "refs/heads/main", remote=url)
    rd._git(clone, "reset", "--quiet", "--hard", "FETCH_HEAD")
    assert (clone / "f.txt").read_text() == "data\n"
    assert not canary.exists()
    with pytest.raises(BoardError):  # no remote named: no protocol allowed
        rd._git(clone, "fetch", "--quiet", url)


def test_a_linked_worktree_checkout_works_and_a_linked_git_dir_is_refused(
    repos: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    remote, ws, canary = repos
    linked = tmp_path / "linked"
    _sh(ws, "worktree", "add", "-q", "--detach", str(linked))
    assert rd._remote_of(linked, "origin") == str(remote)  # a .git file: resolved by git
    other = tmp_path / "other"
    other.mkdir()
    (other / ".git").symlink_to(ws / ".git")
    with pytest.raises(BoardError, match="not a git checkout"):
        rd._git(other, "status")
    assert not canary.exists()
