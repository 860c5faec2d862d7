"""Git for the board: worktrees, commits and merges through the ``git`` CLI (SPEC B2, B4).

Every command runs as a subprocess (asyncio) with a fixed identity in its
environment (``GIT_AUTHOR_NAME=gg`` and friends), prompts off, commit
signing off and ``--no-verify`` on gg's own commits, so a board run never
depends on, nor changes, anyone's git configuration.

Layout under the workspace (the repository's top level)::

    .gg/worktrees/issue-N          the implementer's worktree, on branch gg/issue-N
    .gg/worktrees/issue-N-review   the reviewers' view: detached at the branch's tip
    .gg/worktrees/merge            the merge worktree: detached at the base branch's tip

What this module does not promise: anything about a repository another
program rewrites while a board runs (it checks the base branch did not move
before advancing it, and fails retryably if it did).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from gg import UserError
from gg.board.errors import BoardError

__all__ = [
    "GIT_IDENTITY",
    "Git",
    "GitResult",
    "branch_name",
    "conflict_markers",
    "worktree_path",
]

GIT_IDENTITY: dict[str, str] = {
    "GIT_AUTHOR_NAME": "gg",
    "GIT_AUTHOR_EMAIL": "gg@localhost",
    "GIT_COMMITTER_NAME": "gg",
    "GIT_COMMITTER_EMAIL": "gg@localhost",
}
"""The author and committer of every commit gg makes."""

_ARTIFACTS = ("__pycache__", "*.pyc", ".pytest_cache", ".mypy_cache", ".ruff_cache")
"""Build artifacts never committed by gg (a hook running the tests leaves them behind)."""


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


def conflict_markers(path: Path) -> bool:
    """True when ``path`` still holds a ``<<<<<<<`` or ``>>>>>>>`` conflict marker line."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return any(line.startswith(("<<<<<<< ", ">>>>>>> ")) or line in ("<<<<<<<", ">>>>>>>")
               for line in text.splitlines())


class Git:
    """The ``git`` CLI on one repository.

    Args:
        repo: the repository's top level (the board's workspace).
    """

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self._env = {**os.environ, **GIT_IDENTITY, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
        for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
            self._env.pop(name, None)

    async def run(self, *args: str, cwd: Path | None = None, check: bool = True) -> GitResult:
        """Run ``git ARGS`` in ``cwd`` (default: the repository).

        Raises:
            BoardError: exit code not 0 and ``check`` (code ``"git"``; retryable when
                another git process held a lock).
            UserError: git is not installed.
        """
        try:
            proc = await asyncio.create_subprocess_exec(
                "git", "-c", "commit.gpgsign=false", "-c", "core.quotepath=off", *args,
                cwd=cwd or self.repo, env=self._env, stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        except FileNotFoundError:
            raise UserError("the board needs git, and `git` is not on PATH") from None
        try:
            out, err = await proc.communicate()
        except asyncio.CancelledError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            raise
        result = GitResult(proc.returncode or 0, out.decode(errors="replace"),
                           err.decode(errors="replace"))
        if check and result.code != 0:
            op = "git " + " ".join(args)
            detail = (result.err.strip() or result.out.strip())[-1500:]
            raise BoardError(f"{op!r} failed (exit {result.code}): {detail}", code="git",
                             operation=op, retryable=".lock" in detail)
        return result

    # -- facts -------------------------------------------------------------------------

    async def check_repo(self, base: str) -> None:
        """Check the workspace is a repository's top level with branch ``base``.

        Raises:
            UserError: not a git repository, not its top level, or no branch ``base``.
        """
        top = await self.run("rev-parse", "--show-toplevel", check=False)
        if top.code != 0:
            raise UserError(f"the board needs a git repository: {str(self.repo)!r} is not one "
                            "(git init, then commit the base branch)")
        if Path(top.out.strip()).resolve() != self.repo.resolve():
            raise UserError(f"run the board from the repository's top level "
                            f"({top.out.strip()!r}), not {str(self.repo)!r}")
        if not await self.ref(f"refs/heads/{base}"):
            raise UserError(f"board.base_branch: the repository has no branch {base!r} "
                            "(set [board] base_branch in gg.toml)")

    async def ref(self, ref: str, *, cwd: Path | None = None) -> str | None:
        """The commit ``ref`` names, or ``None`` when it names none."""
        r = await self.run("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", cwd=cwd,
                           check=False)
        return r.out.strip() if r.code == 0 else None

    async def rev(self, ref: str, *, cwd: Path | None = None) -> str:
        """The commit ``ref`` names.

        Raises:
            BoardError: it names none.
        """
        sha = await self.ref(ref, cwd=cwd)
        if sha is None:
            raise BoardError(f"git: {ref!r} names no commit", code="git",
                             operation=f"git rev-parse {ref}")
        return sha

    async def is_ancestor(self, commit: str, of: str) -> bool:
        """Whether ``commit`` is ``of`` or an ancestor of it."""
        r = await self.run("merge-base", "--is-ancestor", commit, of, check=False)
        if r.code not in (0, 1):
            raise BoardError(f"git merge-base failed: {r.err.strip()}", code="git",
                             operation="git merge-base --is-ancestor")
        return r.code == 0

    async def diff(self, base: str, branch: str, *, limit: int = 12_000) -> str:
        """``git diff --stat`` and the patch of ``branch`` since it left ``base``, capped."""
        stat = (await self.run("diff", "--stat", f"{base}...{branch}")).out
        patch = (await self.run("diff", f"{base}...{branch}")).out
        if len(patch) > limit:
            patch = patch[:limit] + f"\n[... {len(patch) - limit} more characters of diff ...]"
        return (stat + "\n" + patch).strip() or "(no changes)"

    async def merge_commit_of(self, base: str, tip: str) -> str | None:
        """The oldest merge commit on ``base`` that has ``tip`` as a parent, if any."""
        r = await self.run("rev-list", "--merges", "--parents", "--reverse", f"{tip}..{base}")
        for line in r.out.splitlines():
            sha, *parents = line.split()
            if tip in parents:
                return sha
        return None

    # -- worktrees ---------------------------------------------------------------------

    async def _usable(self, path: Path) -> bool:
        """Whether ``path`` is a worktree of this repository git still knows."""
        if not (path / ".git").exists():
            return False
        r = await self.run("rev-parse", "--git-common-dir", cwd=path, check=False)
        if r.code != 0:
            return False
        common = Path(r.out.strip())
        common = common if common.is_absolute() else (path / common)
        return common.resolve() == (self.repo / ".git").resolve()

    async def _fresh(self, path: Path) -> None:
        """Remove whatever is at ``path`` and forget stale worktrees."""
        if path.exists():
            shutil.rmtree(path)
        await self.run("worktree", "prune")

    def _admin_lock(self) -> asyncio.Lock:
        """One lock per repository and event loop for ``git worktree`` add/prune/remove:
        a ``prune`` racing another issue's ``add`` removes the half-made admin dir."""
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
        if await self._usable(path):
            head = await self.run("symbolic-ref", "--quiet", "HEAD", cwd=path, check=False)
            if head.out.strip() == f"refs/heads/{branch}":
                return
        await self._fresh(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        if await self.ref(f"refs/heads/{branch}"):
            await self.run("worktree", "add", "--quiet", str(path), branch)
        else:
            await self.run("worktree", "add", "--quiet", "-b", branch, str(path), base)

    async def detached_worktree(self, path: Path, commit: str) -> None:
        """Make ``path`` a clean worktree detached at ``commit`` (reusing it when it exists)."""
        async with self._admin_lock():
            await self._detached_worktree(path, commit)

    async def _detached_worktree(self, path: Path, commit: str) -> None:
        if await self._usable(path):
            await self.reset_clean(path)
            await self.run("checkout", "--quiet", "--detach", "--force", commit, cwd=path)
            return
        await self._fresh(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        await self.run("worktree", "add", "--quiet", "--detach", str(path), commit)

    async def remove_worktree(self, path: Path) -> None:
        """Remove the worktree at ``path`` if there is one (best effort)."""
        async with self._admin_lock():
            if path.exists():
                await self.run("worktree", "remove", "--force", str(path), check=False)
            await self._fresh(path)

    def clear_stale_locks(self, under: Path) -> list[Path]:
        """Remove ``index.lock`` files of the worktrees below ``under`` (a killed git left them).

        Only call this while no git process can be using those worktrees (the
        board holds its run lock). Returns the files removed.
        """
        removed: list[Path] = []
        for admin in (self.repo / ".git" / "worktrees").glob("*"):
            try:
                target = Path((admin / "gitdir").read_text().strip()).parent
            except OSError:
                continue
            lock = admin / "index.lock"
            if target.resolve().is_relative_to(under.resolve()) and lock.exists():
                lock.unlink()
                removed.append(lock)
        return removed

    async def reset_clean(self, path: Path) -> None:
        """Throw away uncommitted work in ``path``: abort a merge, reset, remove untracked."""
        if await self.ref("MERGE_HEAD", cwd=path):
            await self.run("merge", "--abort", cwd=path, check=False)
        await self.run("reset", "--hard", "--quiet", cwd=path)
        await self.run("clean", "-fdq", cwd=path)

    # -- commits and merges ------------------------------------------------------------

    async def commit_all(self, path: Path, message: str) -> str | None:
        """Commit every change in ``path`` (build artifacts aside); the new sha, or ``None``."""
        excludes = [f":(exclude,glob)**/{pattern}" for pattern in _ARTIFACTS]
        excludes += [f":(exclude,glob)**/{pattern}/**" for pattern in _ARTIFACTS]
        await self.run("add", "--all", "--", ".", *excludes, cwd=path)
        staged = await self.run("diff", "--cached", "--quiet", cwd=path, check=False)
        if staged.code == 0 and not await self.ref("MERGE_HEAD", cwd=path):
            return None
        await self.run("commit", "--quiet", "--no-verify", "--allow-empty", "-m", message,
                       cwd=path)
        return await self.rev("HEAD", cwd=path)

    async def start_merge(self, path: Path, branch: str) -> list[str]:
        """``git merge --no-ff --no-commit BRANCH`` in ``path``; the conflicted files.

        Raises:
            BoardError: the merge could not even start.
        """
        r = await self.run("merge", "--no-ff", "--no-commit", branch, cwd=path, check=False)
        conflicted = await self.unmerged(path)
        if r.code != 0 and not conflicted:
            raise BoardError(f"git merge --no-ff {branch} failed: {r.err.strip() or r.out}",
                             code="merge", operation=f"git merge --no-ff {branch}")
        return conflicted

    async def unmerged(self, path: Path) -> list[str]:
        """Files with unresolved conflicts in ``path``'s index."""
        r = await self.run("diff", "--name-only", "--diff-filter=U", cwd=path)
        return [line for line in r.out.splitlines() if line]

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
            if await self.rev("HEAD", cwd=where) != old:
                raise BoardError(f"{branch!r} moved while the merge was being made",
                                 code="merge", operation="advance", retryable=True)
            r = await self.run("merge", "--ff-only", "--quiet", new, cwd=where, check=False)
        else:
            r = await self.run("update-ref", f"refs/heads/{branch}", new, old, check=False)
        if r.code != 0:
            raise BoardError(
                f"could not move {branch!r} to the merge commit: {r.err.strip() or r.out}",
                code="merge", operation="advance", retryable=True)
