"""git on the board treats the worktree as hostile (issue 9, Build item 4; SPEC B2, B4).

The attacks are played for real: real git repositories, the real board, the
real sandbox for ``run_command``, files written by the agent's own tools. A
git directory the agent makes carries commands (fsmonitor, hooks, a filter
driver) that would write a canary file and dump their environment on the
host; a ``git`` wrapper first on PATH records the environment of every git
process gg starts. Each test asserts the attack failed (no canary, no key in
any git process), the issue stopped with a reason naming the change, and
the other issue of the same board still merged.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import gg
from gg.board import Board, IssueState
from gg.board.errors import WorktreeChanged
from gg.board.git import GIT_IDENTITY, Git, conflict_markers
from gg.board.gitsafe import check_gitfile, write_gg_ignore
from gg.sandbox.host import Isolation
from gg.sandbox.isolation import _missing
from gg.testing import FunctionModel, call

SECRETS = {
    "OPENAI_API_KEY": "sk-canary-openai-0123456789",
    "ANTHROPIC_API_KEY": "sk-ant-canary-0123456789",
    "OPENAI_COMPAT_API_KEY": "canary-compat-0123456789",
    "GITHUB_TOKEN": "ghp_canary0123456789",
    "AWS_SECRET_ACCESS_KEY": "canary-aws-0123456789",
}
"""Secret-looking variables put in gg's own environment; no git process may see one."""

REAL_GIT = shutil.which("git") or "/usr/bin/git"
FIXED = 'def greet(name):\n    return f"Hello, {name}!"\n'
FAREWELL = 'def farewell(name):\n    return f"Goodbye, {name}."\n'
Calls = list[gg.Reply]


def plain_git(repo: Path, *args: str) -> str:
    """git for the test itself (a clean environment, gg's identity)."""
    env = {"PATH": os.defpath, "HOME": str(repo.parent), "GIT_CONFIG_NOSYSTEM": "1", **GIT_IDENTITY}
    done = subprocess.run(
        [REAL_GIT, *args], cwd=repo, env=env, check=True, text=True, capture_output=True
    )
    return done.stdout.strip()


def make_repo(path: Path) -> Path:
    """A repository on ``main`` with greet.py and a gg.toml (no hooks: not the point here)."""
    path.mkdir(parents=True)
    plain_git(path, "init", "-q", "-b", "main")
    (path / "greet.py").write_text('def greet(name):\n    return "hello " + name\n')
    (path / ".gitignore").write_text("__pycache__/\n")
    (path / "gg.toml").write_text("[ceilings]\nmax_turns = 12\n")
    plain_git(path, "add", "-A")
    plain_git(path, "commit", "-q", "-m", "initial")
    return path


class Traps:
    """Canary files the planted commands would write, and the git wrapper's env logs."""

    def __init__(self, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.dir = tmp / "canaries"
        self.logs = tmp / "git-env"
        self.dir.mkdir()
        self.logs.mkdir()
        bin_dir = tmp / "bin"
        bin_dir.mkdir()
        wrapper = bin_dir / "git"
        wrapper.write_text(f'#!/bin/sh\nenv > "{self.logs}/$$.env"\nexec {REAL_GIT} "$@"\n')
        wrapper.chmod(0o755)
        monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
        for name, value in SECRETS.items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("GIT_DIR", str(tmp / "nowhere"))
        monkeypatch.setenv("GIT_CONFIG_PARAMETERS", f"'core.fsmonitor={self.command('env')}'")
        monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
        monkeypatch.setenv("GIT_CONFIG_KEY_0", "core.hooksPath")
        monkeypatch.setenv("GIT_CONFIG_VALUE_0", str(tmp / "hooks-from-env"))

    def command(self, name: str) -> str:
        """Shell text that leaves canary ``name`` and the environment it ran with."""
        return f"touch {self.dir}/{name}; env > {self.dir}/{name}.env"

    def check(self) -> None:
        """No planted command ran; git ran, and never with a secret or gg's GIT_* variables."""
        fired = sorted(p.name for p in self.dir.iterdir())
        assert fired == [], f"planted commands ran on the host: {fired}"
        logs = list(self.logs.iterdir())
        assert len(logs) >= 10, "the git wrapper saw no git process"
        for log in logs:
            env = log.read_text()
            for name, value in SECRETS.items():
                assert value not in env and f"{name}=" not in env, f"{name} reached git"
            for name in ("GIT_DIR=", "GIT_CONFIG_PARAMETERS=", "GIT_CONFIG_KEY_0=core.hooks"):
                assert f"\n{name}" not in f"\n{env}", f"{name} reached git"
            assert "GIT_CONFIG_GLOBAL=/dev/null" in env and "GIT_CONFIG_NOSYSTEM=1" in env


def evil_gitdir(at: str, config: str) -> Calls:
    """A run_command that makes a git directory at ``at`` holding ``config``.

    The agent's own shell (the sandbox: under unshare and rlimit it can write there); gg's
    file tools refuse to write into a git directory (tests/security/test_git_writes.py).
    """
    script = (
        f"mkdir -p {at}/objects/info {at}/refs/heads && "
        f"printf 'ref: refs/heads/main\\n' > {at}/HEAD && printf '%s' {shlex.quote(config)} "
        f"> {at}/config && ls {at}"
    )
    return [call("run_command", command=script)]


def gitfile(target: str) -> gg.Reply:
    """A run_command writing the worktree's ``.git`` file as ``gitdir: <target>``."""
    return call("run_command", command=f"printf 'gitdir: {target}\\n' > .git && cat .git")


def fsmonitor_config(traps: Traps, name: str) -> str:
    return f'[core]\n\tfsmonitor = "{traps.command(name)}"\n'


HOOKS = (
    "pre-commit",
    "prepare-commit-msg",
    "commit-msg",
    "post-commit",
    "post-checkout",
    "post-merge",
    "post-index-change",
    "reference-transaction",
    "pre-auto-gc",
)


def attack_fsmonitor(traps: Traps) -> Calls:
    return [
        *evil_gitdir("evil", fsmonitor_config(traps, "fsmonitor")),
        gitfile("evil"),
    ]


def attack_fsmonitor_with_file_tools(traps: Traps) -> Calls:
    """The fsmonitor attack through write_file (refused for every role: a git directory)."""
    return [
        call("write_file", path="evil/HEAD", content="ref: refs/heads/main\n"),
        call("write_file", path="evil/objects/info/keep", content=""),
        call("write_file", path="evil/config", content=fsmonitor_config(traps, "tools")),
        call("write_file", path=".git", content="gitdir: evil\n"),
    ]


def attack_hooks(traps: Traps) -> Calls:
    script = f"#!/bin/sh\\n{traps.command('hook')}\\ncat >/dev/null\\nexit 0\\n"
    make = "; ".join(f"printf '{script}' > evil/hooks/{h}; chmod 755 evil/hooks/{h}" for h in HOOKS)
    return [
        *evil_gitdir("evil", "[core]\n\tbare = false\n"),
        call("run_command", command="mkdir -p evil/hooks"),
        call("run_command", command=make),
        gitfile("evil"),
    ]


def attack_filter(traps: Traps) -> Calls:
    config = (
        f'[filter "evil"]\n\tclean = "{traps.command("filter-clean")}; cat"\n'
        f'\tsmudge = "{traps.command("filter-smudge")}; cat"\n\trequired = true\n'
    )
    return [
        *evil_gitdir("evil", config),
        call("write_file", path=".gitattributes", content="* filter=evil\n"),
        gitfile("evil"),
    ]


def attack_symlink(traps: Traps) -> Calls:
    return [
        *evil_gitdir("evil", fsmonitor_config(traps, "symlink")),
        call("run_command", command="rm -f .git && ln -s evil .git && ls -l .git"),
    ]


def attack_directory(traps: Traps) -> Calls:
    return [
        *evil_gitdir("evil", fsmonitor_config(traps, "directory")),
        call("run_command", command="rm -f .git && mv evil .git && ls -ld .git"),
    ]


def attack_absolute(traps: Traps) -> Calls:
    """An absolute ``gitdir:`` to a git directory elsewhere in the worktree, hooks config."""
    config = fsmonitor_config(traps, "absolute") + "\thooksPath = /dev/null/x\n"
    return [
        *evil_gitdir("sub/dir/g", config),
        call("run_command", command='printf "gitdir: %s/sub/dir/g\\n" "$PWD" > .git'),
    ]


ATTACKS: dict[str, tuple[Callable[[Traps], Calls], str]] = {
    "fsmonitor": (attack_fsmonitor, "its .git file was rewritten: it reads 'gitdir: evil'"),
    "hooks": (attack_hooks, "its .git file was rewritten"),
    "filter": (attack_filter, "its .git file was rewritten"),
    "symlink": (attack_symlink, "its .git was replaced by a symbolic link (to 'evil')"),
    "directory": (attack_directory, "its .git was replaced by a directory"),
    "absolute": (attack_absolute, "its .git file was rewritten: it reads 'gitdir: /"),
}


def board_model(attack: Calls, *, job: str = "implement") -> FunctionModel:
    """Issue 1's ``job`` session plays ``attack`` then ends; everything else works normally."""

    def answer(messages: list[Any], tools: list[gg.ToolSpec]) -> gg.Reply:
        first = next(m.content for m in messages if m.role == "user")
        kind, number = first.split(" issue #", 1)[0].lower(), int(first.split("#")[1][:1])
        k = sum(1 for m in messages if m.role == "assistant")
        end = call("approve") if kind == "review" else call("finish", summary="done")
        if number == 1 and kind == job and k < len(attack):
            return attack[k]
        if kind == "implement" and k == 0:
            path, text = ("greet.py", FIXED) if number == 1 else ("farewell.py", FAREWELL)
            return call("write_file", path=path, content=text)
        return end

    return FunctionModel(answer)


def run_board(repo: Path, model: FunctionModel, *, reviewers: int = 1) -> Any:
    board = Board(repo, model=model, reviewers=reviewers, max_rounds=1, concurrency=1)
    board.add("Greet politely")
    board.add("Say farewell")
    return board, board.run()


def assert_first_stuck_second_merged(repo: Path, board: Board, result: Any, why: str) -> None:
    one, two = result.issues
    assert one.state is IssueState.STUCK, one
    assert "was tampered with" in (one.diagnosis or "") and why in (one.diagnosis or ""), (
        one.diagnosis
    )
    assert two.state is IssueState.DONE and two.merge_sha, two
    assert plain_git(repo, "rev-parse", "main") == two.merge_sha
    assert plain_git(repo, "show", "main:farewell.py") == FAREWELL.strip()
    assert plain_git(repo, "show", "main:greet.py") != FIXED.strip()  # issue 1 not merged
    # the stuck issue's worktree is kept for inspection, its .git as the agent left it
    assert os.path.lexists(repo / ".gg" / "worktrees" / "issue-1" / ".git")
    events = list(gg.read_events(result.stream))
    assert events[-1].type == "run_ended" and events[-1].exit_code == 1


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_implementer_changing_git_is_refused_and_nothing_it_planted_runs(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    traps = Traps(tmp_path, monkeypatch)
    # under rlimit the agent's own commands can rewrite .git (under bwrap it is read-only:
    # see the next test), so gg's check of the .git file is what stops the issue
    monkeypatch.setenv("GG_SANDBOX", "rlimit")
    repo = make_repo(tmp_path / "repo")
    attack, why = ATTACKS[name]
    board, result = run_board(repo, board_model(attack(traps)))
    traps.check()
    assert_first_stuck_second_merged(repo, board, result, why)


@pytest.mark.parametrize("name", ["absolute", "directory", "symlink"])
def test_under_bwrap_the_worktrees_git_is_read_only_to_the_agents_commands(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if _missing(Isolation.BWRAP):
        pytest.skip("bwrap is not available here")
    traps = Traps(tmp_path, monkeypatch)
    monkeypatch.setenv("GG_SANDBOX", "bwrap")
    repo = make_repo(tmp_path / "repo")
    attack, _ = ATTACKS[name]
    board, result = run_board(repo, board_model(attack(traps)))
    traps.check()  # nothing planted ran, no key reached git
    first = result.issues[0]
    assert first.state is IssueState.DONE, first  # the rewrite failed; the work went on


def test_a_reviewer_changing_the_views_git_stops_the_issue(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    traps = Traps(tmp_path, monkeypatch)
    repo = make_repo(tmp_path / "repo")
    model = board_model(attack_fsmonitor_with_file_tools(traps), job="review")
    board, result = run_board(repo, model, reviewers=2)
    traps.check()
    # a reviewer is offered no write_file (issue 16): its rewrite of the view's .git is
    # refused outright, so the reviewer stops on its error turns and the issue with it
    one, two = result.issues
    assert one.state is IssueState.STUCK and "unknown_tool x3" in (one.diagnosis or ""), one
    assert "tampered" not in (one.diagnosis or "")  # nothing was rewritten to detect
    assert two.state is IssueState.DONE and two.merge_sha, two
    assert plain_git(repo, "rev-parse", "main") == two.merge_sha


def test_a_merge_agent_changing_the_merge_worktree_stops_only_its_issue(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    traps = Traps(tmp_path, monkeypatch)
    monkeypatch.setenv("GG_SANDBOX", "rlimit")  # the merge agent's shell can write .git
    repo = make_repo(tmp_path / "repo")
    board, result = run_board(repo, board_model(attack_fsmonitor(traps), job="merge"))
    traps.check()
    assert_first_stuck_second_merged(repo, board, result, "it reads 'gitdir: evil'")
    assert "worktrees/merge" in (result.issues[0].diagnosis or "")
    # the shared merge worktree was thrown away, not reused: issue 2 merged in a fresh one
    assert not os.path.lexists(repo / ".gg" / "worktrees" / "merge" / "evil")


def test_drivers_the_repository_defines_never_run_from_agent_attributes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The repository's own config names a relative filter command; the agent writes the
    script and a .gitattributes that applies it. gg's git turns the driver off: files are
    committed as written, the issue merges, the script never runs."""
    traps = Traps(tmp_path, monkeypatch)
    repo = make_repo(tmp_path / "repo")
    plain_git(repo, "config", "filter.fmt.clean", "sh ./tools/clean.sh")
    plain_git(repo, "config", "filter.fmt.smudge", "sh ./tools/clean.sh")
    plain_git(repo, "config", "filter.fmt.required", "true")
    attack = [
        call("write_file", path="tools/clean.sh", content=f"{traps.command('repo-filter')}\ncat\n"),
        call("write_file", path=".gitattributes", content="*.py filter=fmt\n"),
    ]
    board, result = run_board(repo, board_model(attack))
    traps.check()
    assert [i.state for i in result.issues] == [IssueState.DONE, IssueState.DONE], result.diagnosis
    assert plain_git(repo, "show", "main:tools/clean.sh").startswith("touch ")


# -- unit level: the environment, the .git check, the reads of agent files --------------------


def test_git_env_has_no_secret_and_no_inherited_git_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    traps = Traps(tmp_path, monkeypatch)
    monkeypatch.setenv("MY_SERVICE_PASSWORD", "hunter2")
    monkeypatch.setenv("GIT_WORK_TREE", "/")
    monkeypatch.setenv("GIT_EXEC_PATH", str(tmp_path))
    repo = make_repo(tmp_path / "repo")
    git = Git(repo)
    env = git.env({"filter.x.clean": ""})
    allowed = {"PATH", "HOME", "XDG_CONFIG_HOME", "LC_ALL", "LANG", "TZ", "PAGER"}
    assert set(env) - allowed == {k for k in env if k.startswith("GIT_")}
    assert not any(v in env.values() for v in [*SECRETS.values(), "hunter2"])
    assert {"GIT_DIR", "GIT_WORK_TREE", "GIT_EXEC_PATH", "GIT_CONFIG_PARAMETERS"} & set(
        env
    ) == set()
    assert env["GIT_CONFIG_GLOBAL"] == os.devnull and env["GIT_CONFIG_NOSYSTEM"] == "1"
    assert env["GIT_TERMINAL_PROMPT"] == "0" and env["GIT_OPTIONAL_LOCKS"] == "0"
    assert env["GIT_CONFIG_COUNT"] == "1" and env["GIT_CONFIG_KEY_0"] == "filter.x.clean"
    home = Path(env["HOME"])
    assert home.is_dir() and list(home.iterdir()) == [] and not home.is_relative_to(repo)
    assert home.stat().st_mode & 0o077 == 0
    # a real command: gg's GIT_DIR / GIT_CONFIG_* do not steer it, the wrapper saw it
    sha = asyncio.run(git.rev("HEAD"))
    assert sha == plain_git(repo, "rev-parse", "HEAD")
    logs = [p.read_text() for p in traps.logs.iterdir()]
    assert logs and all("hunter2" not in t and "GIT_WORK_TREE=" not in t for t in logs)
    traps.logs.rename(tmp_path / "seen")
    traps.logs.mkdir()
    for _ in range(10):  # enough processes for check()
        asyncio.run(git.ref("main"))
    traps.check()


def test_every_git_command_gets_the_overrides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "repo")
    plain_git(repo, "config", "core.fsmonitor", "touch canary-from-repo-config")
    plain_git(repo, "config", "core.hooksPath", ".hooks")
    plain_git(repo, "config", "core.pager", "touch canary-pager")
    git = Git(repo)
    for key, want in [
        ("core.fsmonitor", "false"),
        ("core.hooksPath", "/dev/null"),
        ("core.pager", "cat"),
        ("protocol.file.allow", "never"),
        ("credential.helper", ""),
        ("gpg.program", "false"),
    ]:
        got = asyncio.run(git.run("config", "--get-all", key, check=False)).out.splitlines()
        assert got[-1:] == [want] or (want == "" and got[-1:] == [""]), (key, got)
    assert not list(repo.glob("canary*"))


def test_repository_merge_driver_becomes_a_text_merge(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    canary = tmp_path / "merge-driver-ran"
    plain_git(repo, "config", "merge.evil.driver", f"touch {canary}; exit 0")
    (repo / ".gitattributes").write_text("*.txt merge=evil\n")
    (repo / "a.txt").write_text("one\n")
    plain_git(repo, "add", "-A")
    plain_git(repo, "commit", "-qm", "base")
    plain_git(repo, "checkout", "-qb", "side")
    (repo / "a.txt").write_text("side\n")
    plain_git(repo, "commit", "-qam", "side")
    plain_git(repo, "checkout", "-q", "main")
    (repo / "a.txt").write_text("main\n")
    plain_git(repo, "commit", "-qam", "main")
    git = Git(repo)
    conflicted = asyncio.run(git.start_merge(repo, "side"))
    assert conflicted == ["a.txt"] and not canary.exists()
    assert conflict_markers(repo, "a.txt")


def _worktree(tmp_path: Path) -> tuple[Path, Path, Git]:
    repo = make_repo(tmp_path / "repo")
    git = Git(repo)
    path = repo / ".gg" / "worktrees" / "issue-7"
    asyncio.run(git.branch_worktree(path, "gg/issue-7", "main"))
    return repo, path, git


def _replaced(make: Callable[[Path], object]) -> Callable[[Path], object]:
    """A change that removes the worktree's .git file, then makes ``make(path)`` there."""

    def change(worktree: Path) -> None:
        (worktree / ".git").unlink()
        make(worktree / ".git")

    return change


CHANGES: dict[str, tuple[Callable[[Path], object], str]] = {
    "removed": (lambda p: (p / ".git").unlink(), "its .git file was removed"),
    "symlink": (_replaced(lambda g: g.symlink_to("/etc")), "symbolic link (to '/etc')"),
    "directory": (_replaced(Path.mkdir), "replaced by a directory"),
    "fifo": (_replaced(os.mkfifo), "replaced by a FIFO"),
    "rewritten": (
        lambda p: (p / ".git").write_text("gitdir: ../../../.git\n"),
        "it reads 'gitdir: ../../../.git'",
    ),
    "huge": (lambda p: (p / ".git").write_text("gitdir: x\n" * 10_000), "was rewritten"),
}


@pytest.mark.parametrize("name", sorted(CHANGES))
def test_a_changed_git_file_is_refused_before_git_runs(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    traps = Traps(tmp_path, monkeypatch)
    repo, path, git = _worktree(tmp_path)
    change, why = CHANGES[name]
    change(path)
    before = len(list(traps.logs.iterdir()))
    started = time.monotonic()
    with pytest.raises(WorktreeChanged) as err:
        asyncio.run(git.commit_all(path, "x"))
    assert why in str(err.value) and err.value.code == "worktree" and not err.value.retryable
    assert len(list(traps.logs.iterdir())) - before <= 1  # at most the repo lookup, not in it
    assert time.monotonic() - started < 10  # a FIFO never blocks the check
    # removing it never goes through it either, and a fresh one can be made again
    asyncio.run(git.remove_worktree(path))
    assert not os.path.lexists(path)
    asyncio.run(git.branch_worktree(path, "gg/issue-7", "main"))
    check_gitfile(path, repo / ".git" / "worktrees" / "issue-7")


def test_conflict_markers_reads_no_link_fifo_or_outside_file(tmp_path: Path) -> None:
    root = tmp_path / "wt"
    (root / "d").mkdir(parents=True)
    outside = tmp_path / "outside.txt"
    outside.write_text("<<<<<<< ours\nx\n=======\ny\n>>>>>>> theirs\n")
    (root / "d" / "real.txt").write_text(outside.read_text())
    (root / "link.txt").symlink_to(outside)
    (root / "dirlink").symlink_to(tmp_path)
    os.mkfifo(root / "pipe")
    assert conflict_markers(root, "d/real.txt")
    assert not conflict_markers(root, "link.txt")
    assert not conflict_markers(root, "dirlink/outside.txt")
    assert not conflict_markers(root, "../outside.txt")
    result: list[bool] = []
    reader = threading.Thread(target=lambda: result.append(conflict_markers(root, "pipe")))
    reader.start()
    reader.join(5)
    assert result == [False], "conflict_markers blocked on a FIFO"


def test_gg_dirs_in_the_repository_are_not_followed_through_links(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (repo / ".gg").symlink_to(elsewhere)
    with pytest.raises(gg.UserError, match="symbolic link"):
        write_gg_ignore(repo)
    git = Git(repo)
    with pytest.raises(gg.UserError, match="symbolic link"):
        asyncio.run(
            git.branch_worktree(repo / ".gg" / "worktrees" / "issue-1", "gg/issue-1", "main")
        )
    assert list(elsewhere.iterdir()) == []
    (repo / ".gg").unlink()
    (repo / ".gg").mkdir()
    target = tmp_path / "target"
    (repo / ".gg" / ".gitignore").symlink_to(target)
    write_gg_ignore(repo)
    assert not target.exists()


@pytest.mark.parametrize("committed", [False, True])
def test_a_nested_repository_in_the_worktree_runs_nothing(
    committed: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worktree's .git is left alone; a repository made inside it carries fsmonitor,
    hooks and a filter of its own. gg's git never runs git in it with that config."""
    traps = Traps(tmp_path, monkeypatch)
    repo = make_repo(tmp_path / "repo")
    config = (
        fsmonitor_config(traps, "nested-fsmonitor")
        + f'[filter "evil"]\n\tclean = "{traps.command("nested-filter")}; cat"\n'
        + f"[core]\n\thooksPath = {traps.dir}/../hooks\n"
    )
    init = (
        "cd sub && git init -q . && git -c user.name=a -c user.email=a@b commit -q "
        "--allow-empty -m x && git log --oneline"
    )
    write_config = call(
        "run_command", command=f"printf '%s' {shlex.quote(config)} >> sub/.git/config"
    )
    attack = [
        call("write_file", path="sub/a.txt", content="a\n"),
        *(
            [call("run_command", command=init), write_config]
            if committed
            else evil_gitdir("sub/.git", config)
        ),
        call("write_file", path="sub/.gitattributes", content="* filter=evil\n"),
    ]
    board, result = run_board(repo, board_model(attack))
    traps.check()
    one, two = result.issues
    assert two.state is IssueState.DONE, result.diagnosis
    if not committed:  # git itself refuses to add a nested repository with no commit
        assert one.state is IssueState.STUCK and "sub/" in (one.diagnosis or ""), one
    else:  # added as a gitlink, merged like any change
        assert one.state is IssueState.DONE, result.diagnosis
        assert plain_git(repo, "ls-tree", "main", "sub").startswith("160000 commit")
