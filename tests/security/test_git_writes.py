"""The file tools never write into a git directory (issue 9, Build items 1 and 4).

A repository's ``.git`` holds what makes git run programs (``config``: ``core.fsmonitor``,
``core.hooksPath``, filter drivers, aliases; ``hooks/``; ``info/attributes``), for whoever
runs git there next: the operator, or a host-side git that still honours the repository's
config. gg's file tools run on the host as gg's user, so they refuse to write, edit, make or
replace anything in a git directory, at any depth, however the path spells it, and judged
on the directory they opened (a link, ``..``, a nested repository, a bare one, a worktree's
git dir, one assembled piece by piece). Reading stays allowed. Real repositories made by
real git, the real registry tools, bytes compared before and after.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

import gg
from gg.errors import ToolError
from gg.sandbox.host import Isolation
from gg.sandbox.isolation import _missing
from gg.testing import ScriptedModel, call
from gg.tools import ToolContext, default_registry

GIT_ENV = {"PATH": os.defpath, "HOME": "/nonexistent", "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": os.devnull}  # fmt: skip
EVIL = '[core]\n\tfsmonitor = "touch /tmp/gg-test-fsmonitor-ran"\n'


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=cwd, env=GIT_ENV, check=True, text=True, capture_output=True,
    )  # fmt: skip
    return done.stdout


async def tool(name: str, ws: Path, **arguments: Any) -> str:
    t = default_registry().get(name)
    assert t is not None
    return await t.call(t.validate(arguments), ToolContext(workspace=ws))


def snapshot(root: Path) -> dict[str, str]:
    """Every entry under ``root`` (links not followed): its kind and content digest."""
    out: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            out[rel] = "link:" + os.readlink(path)
        elif path.is_dir():
            out[rel] = "dir"
        else:
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A real repository with one commit, a nested repository, a bare one, a worktree of
    its own, a submodule-like ``.git`` file, and links into its ``.git``."""
    ws = tmp_path / "ws"
    ws.mkdir()
    git(ws, "init", "-q", "-b", "main")
    (ws / "a.txt").write_text("a\n")
    git(ws, "add", "a.txt")
    git(ws, "commit", "-q", "-m", "one")
    (ws / "sub").mkdir()
    git(ws / "sub", "init", "-q")
    git(ws, "init", "-q", "--bare", "bare.git")
    git(ws, "worktree", "add", "-q", "wt", "-b", "side")  # wt/.git is a file; gitdir in .git
    (ws / "store").mkdir()
    git(ws / "store", "init", "-q", "--separate-git-dir", str(ws / "moved"))  # store/.git: a file
    (ws / "dir").mkdir()
    (ws / "dir/lnk").symlink_to("../.git")
    (ws / "abs").symlink_to(ws / ".git")
    (ws / "cfg").symlink_to(".git/config")
    (ws / "hooks").symlink_to(".git/hooks")
    return ws


REFUSED = [
    ".git/config",
    "./.git/config",
    "a/../.git/config",
    "dir/../.git//config",
    ".git/./hooks/pre-commit",
    ".git/hooks/post-checkout",
    ".git/info/attributes",
    ".git/info/exclude",
    ".git/objects/ab/cdef",
    ".git/refs/heads/evil",
    ".git/HEAD",
    ".git/newdir/deeper/file",  # would mkdir inside .git
    ".git/worktrees/wt/config.worktree",
    ".git/modules/m/config",
    "dir/lnk/config",  # a relative link to .git
    "abs/hooks/pre-commit",  # an absolute link to .git
    "cfg",  # a link straight to .git/config
    "hooks/pre-commit",  # a link to .git/hooks
    "sub/.git/config",  # a nested repository
    "sub/.git/hooks/pre-commit",
    "bare.git/config",  # a bare repository (no .git in the path at all)
    "bare.git/hooks/post-update",
    "moved/config",  # a separate git dir named by store/.git
    "sub/.git",  # replace a repository's .git (by a file)
    "wt/.git",  # a worktree's gitdir: file
    "store/.git",
    "fresh/.git",  # a new .git file (gitdir: redirect) where there was none
    "fresh/.git/config",  # a new repository's .git
    "a.txt/../.git/config",
]


@pytest.mark.parametrize("path", REFUSED)
async def test_write_file_refuses_every_path_into_a_git_directory(ws: Path, path: str) -> None:
    before = snapshot(ws)
    with pytest.raises(ToolError, match="git directory") as caught:
        await tool("write_file", ws, path=path, content="gitdir: /tmp/evil\n" + EVIL)
    assert "Nothing was written" in str(caught.value)
    assert snapshot(ws) == before  # not one byte, file or directory changed


@pytest.mark.parametrize(
    "path", [".git/config", "./.git/config", "cfg", "sub/.git/config", "bare.git/config"]
)
async def test_edit_file_refuses_git_directories_but_reads_them(ws: Path, path: str) -> None:
    before = snapshot(ws)
    text = await tool("read_file", ws, path=path)  # reads of .git stay allowed
    assert "[core]" in text
    with pytest.raises(ToolError, match="git directory"):
        await tool("edit_file", ws, path=path, old="[core]", new=EVIL)
    assert snapshot(ws) == before
    listed = await tool("list_dir", ws, path=".git")
    assert "config" in listed


async def test_a_hard_link_to_git_config_is_replaced_never_written_through(ws: Path) -> None:
    os.link(ws / ".git/config", ws / "alias")
    config = (ws / ".git/config").read_bytes()
    assert "wrote" in await tool("write_file", ws, path="alias", content=EVIL)
    assert (ws / ".git/config").read_bytes() == config  # the name was replaced
    assert (ws / "alias").read_text() == EVIL and (ws / ".git/config").stat().st_nlink == 1


async def test_a_git_directory_cannot_be_assembled_piece_by_piece(ws: Path) -> None:
    """Each directory may gain at most two of git's markers through the tools, in any
    order; every git directory git accepts needs HEAD and two more (or HEAD + commondir,
    whose common dir needs three: objects, refs and the config that attacks)."""
    orders = [
        ["HEAD", "objects/k", "refs/heads/k", "config"],
        ["config", "objects/k", "refs/k", "HEAD"],
        ["objects/k", "refs/k", "HEAD", "config"],
        ["HEAD", "commondir", "config"],
    ]
    for n, order in enumerate(orders):
        done = []
        for name in order:
            try:
                await tool("write_file", ws, path=f"p{n}/{name}", content="x\n")
                done.append(name)
            except ToolError as exc:
                assert "git directory" in str(exc), exc
        assert len(done) == 2, (order, done)
        bad = subprocess.run(
            ["git", "--git-dir", str(ws / f"p{n}"), "rev-parse", "--git-dir"],
            env=GIT_ENV, capture_output=True, text=True,
        )  # fmt: skip
        assert bad.returncode != 0, (order, bad.stdout)  # git does not take it as a repository


async def test_ordinary_files_beside_git_directories_are_written(ws: Path) -> None:
    for path in ("a.txt", ".gitignore", ".gitattributes", "sub/x.py", "wt/a.txt",
                 "docs/HEAD", "gitdir/config", ".github/workflows/ci.yml", "x.git"):  # fmt: skip
        assert "wrote" in await tool("write_file", ws, path=path, content="ok\n")
        assert (ws / path).read_text() == "ok\n"
    assert "edited" in await tool("edit_file", ws, path="a.txt", old="ok", new="fine")


async def test_a_workspace_that_is_a_git_directory_is_read_only_to_the_tools(
    tmp_path: Path,
) -> None:
    bare = tmp_path / "bare.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    with pytest.raises(ToolError, match="the workspace is a git directory"):
        await tool("write_file", bare, path="hooks/post-receive", content="#!/bin/sh\n")
    assert not (bare / "hooks/post-receive").exists()
    assert "[core]" in await tool("read_file", bare, path="config")


async def test_a_link_swapped_to_git_mid_walk_is_still_refused(ws: Path) -> None:
    """The judgement is made on the opened directory: a link retargeted to .git between
    writes is refused by what it now reaches, never by what it was called."""
    (ws / "swap").symlink_to("docs")
    (ws / "docs").mkdir()
    assert "wrote" in await tool("write_file", ws, path="swap/config", content="ok\n")
    (ws / "swap").unlink()
    (ws / "swap").symlink_to(".git")
    config = (ws / ".git/config").read_bytes()
    with pytest.raises(ToolError, match="git directory"):
        await tool("write_file", ws, path="swap/config", content=EVIL)
    assert (ws / ".git/config").read_bytes() == config


def test_a_plain_run_starts_no_git_on_the_host_whatever_the_shell_planted(
    open_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under rlimit the agent's own shell can write ``.git/config`` (fsmonitor, hooksPath,
    a filter, an alias) and hooks; gg's host side never runs git in a plain run, so none of
    it runs until the operator's own git, and the run's end names the changed files.

    A ``git`` wrapper first on gg's PATH records every git process started on the host."""
    if _missing(Isolation.RLIMIT):
        pytest.skip("the rlimit layer is not available here")
    monkeypatch.setenv("GG_SANDBOX", "rlimit")
    canary = open_dir / "canaries"
    canary.mkdir(mode=0o777)
    canary.chmod(0o777)
    log = open_dir / "host-git.log"
    bin_dir = open_dir / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").write_text(f'#!/bin/sh\necho "$@" >> {log}\nexec /usr/bin/git "$@"\n')
    (bin_dir / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    ws = open_dir / "ws"
    ws.mkdir()
    subprocess.run(["/usr/bin/git", "init", "-q", str(ws)], check=True, env=GIT_ENV)
    (ws / "a.txt").write_text("a\n")
    plant = (
        f"git config core.fsmonitor 'touch {canary}/fsmonitor'; "
        f"git config core.hooksPath {canary}; git config alias.st '!touch {canary}/alias'; "
        f"git config filter.x.clean 'touch {canary}/filter'; "
        "echo '* filter=x' > .gitattributes; "
        f"printf '#!/bin/sh\\ntouch {canary}/hook\\n' > .git/hooks/post-checkout; echo rc=$?"
    )
    replies = [
        call("run_command", command=plant),
        call("write_file", path=".git/hooks/pre-commit", content="#!/bin/sh\n"),  # refused
        call("write_file", path="b.txt", content="b\n"),
        call("finish", summary="ok"),
    ]
    result = gg.Agent(model=ScriptedModel(replies), workspace=ws).run("plant")
    assert result.status == "ended"
    assert "fsmonitor" in (ws / ".git/config").read_text()  # the shell's write landed
    assert not (ws / ".git/hooks/pre-commit").exists()  # the file tool's did not
    assert not log.exists(), log.read_text()  # gg itself started no git at all
    assert sorted(p.name for p in canary.iterdir()) == []
