"""Git for the board: worktrees, commits and merges through the ``git`` CLI (SPEC B2, B4).

Every git command gg runs goes through :meth:`Git.run`, which treats the
worktree as hostile (issue 9 item 4; how, in :mod:`gg.board.gitsafe`): an
environment built from nothing (no provider key, no inherited ``GIT_*``, no
system or global configuration, ``HOME`` in an empty gg-private directory),
``-c`` overrides so that nothing configured runs a program, every driver the
repository defines turned off, and ``--git-dir``/``--work-tree`` given
explicitly: the repository's own git dir, or a worktree's administrative
directory ``<common dir>/worktrees/<name>``, which no sandbox can write.
git never reads a worktree's ``.git``; gg checks it is still the file git
wrote (``lstat``, no link followed) before every command in that worktree and
refuses one that was changed (:class:`~gg.board.errors.WorktreeChanged`). gg's
own commits have a fixed identity, no signing, ``--no-verify``.

Layout under the workspace (the repository's top level)::

    .gg/worktrees/issue-N          the implementer's worktree, on branch gg/issue-N
    .gg/worktrees/issue-N-review   the reviewers' view: detached at the branch's tip
    .gg/worktrees/merge            the merge worktree: detached at the base branch's tip

What this module does not promise: anything about a repository another
program rewrites while a board runs (it checks the base branch did not move
before advancing it, and fails retryably if it did). The repository's own
configuration is the user's and is trusted.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
from dataclasses import dataclass
from pathlib import Path

from gg import UserError
from gg.board.errors import BoardError, WorktreeChanged
from gg.board.gitsafe import (
    GIT_IDENTITY,
    check_gitfile,
    config_args,
    driver_overrides,
    git_env,
    read_regular,
    real_dirs,
)
from gg.board.locks import clear_stale_locks
from gg.sandbox.tree import remove_tree
from gg.shell import drop_pipes, exited
from gg.state import private_dir, workspace_state

__all__ = [
    "GIT_IDENTITY",
    "Git",
    "GitResult",
    "branch_name",
    "conflict_markers",
    "worktree_path",
]

_ARTIFACTS = ("__pycache__", "*.pyc", ".pytest_cache", ".mypy_cache", ".ruff_cache")
"""Build artifacts never committed by gg (a hook running the tests leaves them behind)."""

_NO_CONTENT = frozenset(
    {"rev-parse", "rev-list", "merge-base", "symbolic-ref", "update-ref", "ls-files", "config"}
)
"""Subcommands that read no file content, so no driver can run: no driver scan first."""

_MARKER_CAP = 16 << 20
"""Most bytes of a file :func:`conflict_markers` reads (16 MiB)."""


@dataclass(frozen=True, slots=True)
class GitResult:
    """A finished git command: exit code, stdout and stderr (text)."""

    code: int
    out: str
    err: str


def branch_name(number: int) -> str:
    """An issue's branch: ``gg/issue-N``."""
    return f"gg/issue-{number}"


_WORKTREE_LOCKS: dict[tuple[int, Path], asyncio.Lock] = {}


def worktree_path(workspace: Path, name: str) -> Path:
    """``<workspace>/.gg/worktrees/<name>``."""
    return workspace / ".gg" / "worktrees" / name


def conflict_markers(worktree: Path, rel: str) -> bool:
    """True when the file ``rel`` in ``worktree`` still holds a conflict marker line.

    The file is written by the merge agent: it is read beneath ``worktree``
    with no link followed, only when it is a regular file
    (:func:`~gg.board.gitsafe.read_regular`); a link, FIFO or device has no
    markers, and a file over 16 MiB counts as still holding one (it is not read
    whole, so it is never taken as resolved).
    """
    data = read_regular(worktree, rel, cap=_MARKER_CAP + 1)
    if data is None:
        return False
    if len(data) > _MARKER_CAP:
        return True  # too large to check whole: never merged as resolved unread
    text = data.decode("utf-8", errors="replace")
    return any(
        line.startswith(("<<<<<<< ", ">>>>>>> ")) or line in ("<<<<<<<", ">>>>>>>")
        for line in text.splitlines()
    )


def _find_git(repo: Path) -> str:
    """The git binary on gg's ``PATH`` (absolute).

    Raises:
        UserError: none, or one inside the repository (the agent's to write).
    """
    found = shutil.which("git")
    if found is None:
        raise UserError("the board needs git, and `git` is not on PATH")
    found = os.path.abspath(found)
    if Path(os.path.realpath(found)).is_relative_to(repo):
        raise UserError(
            f"the git on PATH ({found!r}) is inside the repository; gg will not "
            "run it (put a system git first on PATH)"
        )
    return found


def _kill(proc: asyncio.subprocess.Process) -> None:
    """Kill ``proc``'s process group (git and whatever it started)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()


async def _reap(proc: asyncio.subprocess.Process, grace_s: float = 5.0) -> None:
    """Wait (at most ``grace_s``) for the killed ``proc`` to exit, then drop its pipes.

    Not ``proc.wait()``: on Python 3.11 it also waits for every pipe to close, and a
    process that left git's group (``setsid``) while holding them kept it waiting for
    ever, after the kill too.
    """
    try:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(exited(proc), grace_s)
    finally:  # cancelled too: else the loop keeps the pipes for as long as a holder lives
        drop_pipes(proc)


class Git:
    """The ``git`` CLI on one repository, run as :mod:`gg.board.gitsafe` says (issue 9 item 4).

    Args:
        repo: the repository's top level (the board's workspace).
        timeout_s: longest one git command may take before it is killed.

    Raises:
        UserError: git is not on PATH, or is inside the repository.
        StateError: gg's state directory (for git's empty ``HOME``) is unusable.
    """

    def __init__(self, repo: Path, *, timeout_s: float = 600) -> None:
        self.repo = Path(os.path.realpath(repo))
        self.timeout_s = timeout_s
        self._git = _find_git(self.repo)
        self._home = private_dir(workspace_state(self.repo) / "git-home")
        self._dirs: tuple[Path, Path] | None = None

    def env(self, overrides: dict[str, str] | None = None) -> dict[str, str]:
        """The whole environment of gg's git processes (:func:`~gg.board.gitsafe.git_env`)."""
        return git_env(git=self._git, home=self._home, overrides=overrides)

    async def run(self, *args: str, worktree: Path | None = None, check: bool = True) -> GitResult:
        """Run ``git ARGS`` in ``worktree`` (default: the repository's own checkout).

        The one place gg starts git: ``--git-dir``/``--work-tree`` explicit, the
        safe environment and ``-c`` overrides, drivers off, in its own process
        group, killed after ``timeout_s``.

        Raises:
            WorktreeChanged: ``worktree``'s ``.git`` is not the file git wrote, or git
                no longer knows the worktree (git is not run).
            BoardError: exit code not 0 and ``check`` (code ``"git"``; retryable when
                another git process held a lock), or git timed out.
        """
        git_dir, work = await self._context(worktree)
        base = [self._git, f"--git-dir={git_dir}", f"--work-tree={work}", *config_args()]
        overrides: dict[str, str] = {}
        if args and args[0] not in _NO_CONTENT:
            listing = await self._exec(
                [*base, "config", "--list", "-z"],
                cwd=work,
                env=self.env(),
                check=True,
                op="git config --list",
            )
            overrides = driver_overrides(
                listing.out.encode("utf-8", "surrogateescape"), git=self._git
            )
        return await self._exec(
            [*base, *args],
            cwd=work,
            env=self.env(overrides),
            check=check,
            op=" ".join(("git", *args)),
        )

    async def _exec(
        self, argv: list[str], *, cwd: Path, env: dict[str, str], check: bool, op: str
    ) -> GitResult:
        """Start ``argv`` (a git command line) and wait for it under the timeout.

        ``op`` names the command in errors.
        """
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                cwd=cwd,
                env=env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
            )
        except FileNotFoundError:
            raise UserError(f"cannot run git ({self._git!r}) in {str(cwd)!r}") from None
        try:
            out, err = await asyncio.wait_for(proc.communicate(), self.timeout_s)
        except TimeoutError:
            _kill(proc)
            await _reap(proc)
            raise BoardError(
                f"{op!r} did not finish in {self.timeout_s:g} s (killed)", code="git", operation=op
            ) from None
        except asyncio.CancelledError:
            _kill(proc)
            drop_pipes(proc)
            raise
        _kill(proc)  # whatever git left running in its group goes with it
        result = GitResult(
            proc.returncode or 0, out.decode(errors="surrogateescape"), err.decode(errors="replace")
        )
        if check and result.code != 0:
            detail = (result.err.strip() or result.out.strip())[-1500:]
            raise BoardError(
                f"{op!r} failed (exit {result.code}): {detail}",
                code="git",
                operation=op,
                retryable=".lock" in detail,
            )
        return result

    async def _locate(self) -> GitResult:
        """``git rev-parse`` found by discovery in the repository (the user's, trusted)."""
        argv = [
            self._git,
            *config_args(),
            "-c",
            f"safe.directory={self.repo}",
            "rev-parse",
            "--path-format=absolute",
            "--show-toplevel",
            "--absolute-git-dir",
            "--git-common-dir",
        ]
        return await self._exec(
            argv, cwd=self.repo, env=self.env(), check=False, op="git rev-parse --show-toplevel"
        )

    async def _main(self) -> tuple[Path, Path]:
        """The repository's git dir and common dir (real paths), found once.

        Raises:
            UserError: the workspace is not a git repository's top level.
        """
        if self._dirs is None:
            found = await self._locate()
            lines = found.out.splitlines()
            if found.code != 0 or len(lines) != 3:
                raise UserError(
                    f"the board needs a git repository: {str(self.repo)!r} is not "
                    "one (git init, then commit the base branch)"
                )
            if Path(os.path.realpath(lines[0])) != self.repo:
                raise UserError(
                    f"run the board from the repository's top level "
                    f"({lines[0]!r}), not {str(self.repo)!r}"
                )
            self._dirs = (Path(os.path.realpath(lines[1])), Path(os.path.realpath(lines[2])))
        return self._dirs

    async def _context(self, worktree: Path | None) -> tuple[Path, Path]:
        """``(git dir, work tree)`` for a command in ``worktree`` (``None``: the repository)."""
        git_dir, common = await self._main()
        if worktree is None or Path(os.path.realpath(worktree)) == self.repo:
            return git_dir, self.repo
        admin = self._admin_of(common, worktree)
        if admin is None:
            raise WorktreeChanged(
                f"the worktree {str(worktree)!r} is not one git knows any more (was its .git "
                "removed?); gg will not work in it",
                operation=f"check {worktree / '.git'}",
            )
        check_gitfile(worktree, admin)
        return admin, worktree

    @staticmethod
    def _admin_of(common: Path, worktree: Path) -> Path | None:
        """The administrative directory whose ``gitdir`` names ``worktree/.git``, if any."""
        want = str(worktree / ".git")
        root = common / "worktrees"
        try:
            entries = sorted(os.scandir(root), key=lambda e: e.name)
        except OSError:
            return None
        for entry in entries:
            if not entry.is_dir(follow_symlinks=False):
                continue
            data = read_regular(root, f"{entry.name}/gitdir", cap=8192)
            if data is not None and data.decode("utf-8", "replace").strip() == want:
                return root / entry.name
        return None

    # -- facts -------------------------------------------------------------------------

    async def check_repo(self, base: str) -> None:
        """Check the workspace is a repository's top level with branch ``base``.

        Raises:
            UserError: not a git repository, not its top level, or no branch ``base`` (an
                unborn one, before the first commit, said so).
        """
        await self._main()
        if not await self.ref(f"refs/heads/{base}"):
            if await self.current_branch() == base:  # HEAD names it: an unborn branch
                raise UserError(
                    f"the repository has no commit on {base!r} yet: commit the base branch "
                    "first (git add, git commit), then run the board again"
                )
            raise UserError(
                f"board.base_branch: the repository has no branch {base!r} "
                "(set [board] base_branch in gg.toml)"
            )

    async def current_branch(self) -> str | None:
        """The branch the repository's own checkout is on (short name), ``None`` if detached.

        Raises:
            UserError: the workspace is not a git repository's top level.
        """
        await self._main()
        r = await self.run("symbolic-ref", "--quiet", "--short", "HEAD", check=False)
        name = r.out.strip()
        return name if r.code == 0 and name else None

    async def ref(self, ref: str, *, worktree: Path | None = None) -> str | None:
        """The commit ``ref`` names, or ``None`` when it names none."""
        r = await self.run(
            "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", worktree=worktree, check=False
        )
        return r.out.strip() if r.code == 0 else None

    async def rev(self, ref: str, *, worktree: Path | None = None) -> str:
        """The commit ``ref`` names.

        Raises:
            BoardError: it names none.
        """
        sha = await self.ref(ref, worktree=worktree)
        if sha is None:
            raise BoardError(
                f"git: {ref!r} names no commit", code="git", operation=f"git rev-parse {ref}"
            )
        return sha

    async def is_ancestor(self, commit: str, of: str) -> bool:
        """Whether ``commit`` is ``of`` or an ancestor of it."""
        r = await self.run("merge-base", "--is-ancestor", commit, of, check=False)
        if r.code not in (0, 1):
            raise BoardError(
                f"git merge-base failed: {r.err.strip()}",
                code="git",
                operation="git merge-base --is-ancestor",
            )
        return r.code == 0

    async def diff(self, base: str, branch: str, *, limit: int = 12_000) -> str:
        """``git diff --stat`` and the patch of ``branch`` since it left ``base``, capped."""
        flags = ("--no-ext-diff", "--no-textconv", "--no-color")
        revs = ("--end-of-options", f"{base}...{branch}")
        stat = (await self.run("diff", *flags, "--stat", *revs)).out
        patch = (await self.run("diff", *flags, *revs)).out
        if len(patch) > limit:
            patch = patch[:limit] + f"\n[... {len(patch) - limit} more characters of diff ...]"
        return (stat + "\n" + patch).strip() or "(no changes)"

    async def merge_commit_of(self, base: str, tip: str) -> str | None:
        """The oldest merge commit on ``base`` that has ``tip`` as a parent, if any."""
        r = await self.run(
            "rev-list", "--merges", "--parents", "--reverse", "--end-of-options", f"{tip}..{base}"
        )
        for line in r.out.splitlines():
            sha, *parents = line.split()
            if tip in parents:
                return sha
        return None

    # -- worktrees ---------------------------------------------------------------------

    async def _intact(self, path: Path) -> bool:
        """Whether ``path`` is a worktree git knows with its ``.git`` as git wrote it.

        ``False`` when there is nothing at ``path`` git knows (leftovers: made anew).

        Raises:
            WorktreeChanged: git knows the worktree and its ``.git`` was changed.
        """
        if not os.path.lexists(path):
            return False
        _, common = await self._main()
        admin = self._admin_of(common, path)
        if admin is None:
            return False
        check_gitfile(path, admin)
        return True

    async def _fresh(self, path: Path) -> None:
        """Remove whatever is at ``path`` (no link followed) and forget stale worktrees."""
        with contextlib.suppress(FileNotFoundError):
            remove_tree(path)  # any depth, no link followed (an agent wrote this tree)
        await self.run("worktree", "prune")

    async def _add(self, path: Path, *args: str) -> None:
        """``git worktree add`` at ``path``, its parents made without following a link."""
        real_dirs(self.repo, path.parent)
        await self.run("worktree", "add", "--quiet", *args)

    def _admin_lock(self) -> asyncio.Lock:
        """One lock per repository and event loop for ``git worktree`` add/prune/remove.

        Without it, a ``prune`` racing another issue's ``add`` removes the half-made
        admin dir.
        """
        key = (id(asyncio.get_running_loop()), self.repo.resolve())
        lock = _WORKTREE_LOCKS.get(key)
        if lock is None:
            lock = _WORKTREE_LOCKS[key] = asyncio.Lock()
        return lock

    async def branch_worktree(self, path: Path, branch: str, base: str) -> None:
        """Make ``path`` a worktree on ``branch``, creating the branch from ``base`` if new."""
        async with self._admin_lock():
            await self._branch_worktree(path, branch, base)

    async def _branch_worktree(self, path: Path, branch: str, base: str) -> None:
        if await self._intact(path):
            head = await self.run("symbolic-ref", "--quiet", "HEAD", worktree=path, check=False)
            if head.out.strip() == f"refs/heads/{branch}":
                return
        await self._fresh(path)
        if await self.ref(f"refs/heads/{branch}"):
            await self._add(path, "--end-of-options", str(path), branch)
        else:
            await self._add(path, "-b", branch, "--end-of-options", str(path), base)

    async def detached_worktree(
        self, path: Path, commit: str, *, discard_changed: bool = False
    ) -> None:
        """Make ``path`` a clean worktree detached at ``commit`` (reusing it when it exists).

        Args:
            path: the worktree's directory (an intact worktree there is reused: reset
                clean and checked out at ``commit``).
            commit: the commit the worktree is detached at.
            discard_changed: a worktree whose ``.git`` was changed is removed and made
                anew (gg's scratch worktrees), instead of refused.

        Raises:
            WorktreeChanged: its ``.git`` was changed (and not ``discard_changed``).
        """
        async with self._admin_lock():
            await self._detached_worktree(path, commit, discard_changed)

    async def _detached_worktree(self, path: Path, commit: str, discard_changed: bool) -> None:
        try:
            intact = await self._intact(path)
        except WorktreeChanged:
            if not discard_changed:
                raise
            intact = False
        if intact:
            await self.reset_clean(path)
            await self.run("checkout", "--quiet", "--detach", "--force", commit, worktree=path)
            return
        await self._fresh(path)
        await self._add(path, "--detach", "--end-of-options", str(path), commit)

    async def remove_worktree(self, path: Path) -> None:
        """Remove the worktree at ``path`` if there is one (best effort).

        One whose ``.git`` was changed is never handed to git: it is deleted
        (no link followed) and git forgets it.
        """
        async with self._admin_lock():
            try:
                intact = await self._intact(path)
            except WorktreeChanged:
                intact = False
            if intact:
                await self.run("worktree", "remove", "--force", str(path), check=False)
            await self._fresh(path)

    async def clear_stale_locks(self, older_than: float) -> list[Path]:
        """Remove the git lock files a killed git left (:mod:`gg.board.locks`).

        Only locks older than ``older_than`` (Unix seconds: when the board took
        its run lock) go, and none while any git process works in the
        repository. Returns the files removed.
        """
        _git_dir, common = await self._main()
        return clear_stale_locks(self.repo, common, older_than=older_than)

    async def reset_clean(self, path: Path) -> None:
        """Throw away uncommitted work in ``path``: abort a merge, reset, remove untracked."""
        if await self.ref("MERGE_HEAD", worktree=path):
            await self.run("merge", "--abort", worktree=path, check=False)
        await self.run("reset", "--hard", "--quiet", worktree=path)
        await self.run("clean", "-fdq", worktree=path)

    # -- commits and merges ------------------------------------------------------------

    async def commit_all(self, path: Path, message: str) -> str | None:
        """Commit every change in ``path`` (build artifacts aside); the new sha, or ``None``."""
        excludes = [f":(exclude,glob)**/{pattern}" for pattern in _ARTIFACTS]
        excludes += [f":(exclude,glob)**/{pattern}/**" for pattern in _ARTIFACTS]
        await self.run("add", "--all", "--", ".", *excludes, worktree=path)
        staged = await self.run(
            "diff", "--cached", "--quiet", "--no-ext-diff", worktree=path, check=False
        )
        if staged.code == 0 and not await self.ref("MERGE_HEAD", worktree=path):
            return None
        await self.run(
            "commit", "--quiet", "--no-verify", "--allow-empty", "-m", message, worktree=path
        )
        return await self.rev("HEAD", worktree=path)

    async def start_merge(self, path: Path, branch: str) -> list[str]:
        """``git merge --no-ff --no-commit BRANCH`` in ``path``; the conflicted files.

        Raises:
            BoardError: the merge could not even start.
        """
        r = await self.run(
            "merge",
            "--no-ff",
            "--no-commit",
            "--end-of-options",
            branch,
            worktree=path,
            check=False,
        )
        conflicted = await self.unmerged(path)
        if r.code != 0 and not conflicted:
            raise BoardError(
                f"git merge --no-ff {branch} failed: {r.err.strip() or r.out}",
                code="merge",
                operation=f"git merge --no-ff {branch}",
            )
        return conflicted

    async def unmerged(self, path: Path) -> list[str]:
        """Files with unresolved conflicts in ``path``'s index.

        Read from the index only: no file of the worktree's is read, no nested
        repository is asked.
        """
        r = await self.run("ls-files", "--unmerged", "-z", worktree=path)
        names: list[str] = []
        for record in r.out.split("\0"):
            name = record.partition("\t")[2]
            if name and name not in names:
                names.append(name)
        return names

    async def checked_out_at(self, branch: str) -> Path | None:
        """The worktree that has ``branch`` checked out, if any."""
        r = await self.run("worktree", "list", "--porcelain")
        current: Path | None = None
        for line in r.out.splitlines():
            if line.startswith("worktree "):
                current = Path(line.removeprefix("worktree "))
            elif line == f"branch refs/heads/{branch}":
                return current
        return None

    async def advance(self, branch: str, new: str, old: str) -> None:
        """Move ``branch`` from ``old`` to ``new`` (a descendant), only if it is still at ``old``.

        Where ``branch`` is checked out (the workspace, usually), this is
        ``git merge --ff-only`` there, so that checkout follows; elsewhere
        ``git update-ref`` with ``old`` as the expected value.

        Raises:
            BoardError: retryable: the branch moved, or its checkout has local
                changes in the way.
        """
        where = await self.checked_out_at(branch)
        if where is not None:
            if await self.rev("HEAD", worktree=where) != old:
                raise BoardError(
                    f"{branch!r} moved while the merge was being made",
                    code="merge",
                    operation="advance",
                    retryable=True,
                )
            r = await self.run(
                "merge",
                "--ff-only",
                "--quiet",
                "--end-of-options",
                new,
                worktree=where,
                check=False,
            )
        else:
            r = await self.run("update-ref", f"refs/heads/{branch}", new, old, check=False)
        if r.code != 0:
            raise BoardError(
                f"could not move {branch!r} to the merge commit: {r.err.strip() or r.out}",
                code="merge",
                operation="advance",
                retryable=True,
            )
