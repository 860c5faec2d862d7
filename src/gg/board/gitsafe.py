"""How gg runs git on a board: nothing in a worktree is trusted (issue 9 item 4; SPEC B2, B4).

Everything under a worktree is written by an agent (ARCHITECTURE, the trust
boundary), and git reads a lot from a working tree: the ``.git`` file that
says where the repository is, ``.gitattributes`` naming filter and merge
drivers, nested repositories with configuration of their own. What every git
process gg starts gets, so that none of it runs a command:

- **An environment built from nothing** (:func:`git_env`): ``PATH`` (system
  directories and git's own), ``TZ``, gg's identity, ``HOME`` and
  ``XDG_CONFIG_HOME`` in an empty gg-private directory, ``LC_ALL=C``; no
  provider key, no inherited ``GIT_*`` variable. System and global
  configuration are off (``GIT_CONFIG_NOSYSTEM``, ``GIT_CONFIG_GLOBAL=/dev/null``),
  as are prompts, pagers, editors and optional locks.
- **Command-line configuration** (:data:`SAFE_CONFIG`, highest precedence):
  no fsmonitor, no hooks, no signing programs, no credential helpers, no ssh
  or proxy commands, no transport, no submodule recursion, no auto-gc.
- **Drivers turned off**: git reads the configuration of the repository
  (the user's ``.git/config`` and what it includes) and the command line
  only, so an agent cannot define a driver; but its ``.gitattributes`` can
  name one the repository defines. Every ``filter.<name>.*`` command the
  configuration defines is emptied and every ``merge.<name>.driver``
  becomes git's own text merge (:func:`driver_overrides`, read again before
  each command); diffs run with ``--no-ext-diff --no-textconv``.
- **A git dir gg owns**: ``--git-dir`` and ``--work-tree`` on every command
  (see :class:`gg.board.git.Git`); a worktree's ``.git`` is never read by git,
  and gg refuses a worktree whose ``.git`` is no longer the file it wrote
  (:func:`check_gitfile`).
- **No question to a nested repository**: gg runs no ``git status`` and no
  worktree-to-index diff (unmerged files come from ``ls-files``), so git never
  starts a git process inside a repository the agent made in the worktree
  (which would read that repository's configuration); one is committed as a
  gitlink, like any change.

Host-side reads of agent files (:func:`read_regular`) walk beneath the
worktree with ``O_NOFOLLOW`` and read regular files only, capped; the
``.gg/`` directories gg creates in the repository are never followed
through a symbolic link (:func:`real_dirs`).

What this does not promise: the repository's own configuration is the
user's and is trusted (an ``include.path`` it names is read); a git binary
earlier on ``PATH`` than the system's is used as found (it must not be
inside the repository).
"""

from __future__ import annotations

import os
import shlex
import stat
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from gg import UserError
from gg.board.errors import WorktreeChanged

__all__ = [
    "GIT_IDENTITY",
    "SAFE_CONFIG",
    "check_gitfile",
    "config_args",
    "driver_overrides",
    "git_env",
    "read_regular",
    "real_dirs",
    "write_gg_ignore",
]

GIT_IDENTITY: dict[str, str] = {
    "GIT_AUTHOR_NAME": "gg",
    "GIT_AUTHOR_EMAIL": "gg@localhost",
    "GIT_COMMITTER_NAME": "gg",
    "GIT_COMMITTER_EMAIL": "gg@localhost",
}
"""The author and committer of every commit gg makes."""

SAFE_CONFIG: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", os.devnull),
    ("core.pager", "cat"),
    ("core.editor", ":"),
    ("sequence.editor", ":"),
    ("core.askPass", ""),
    ("core.sshCommand", "false"),
    ("core.gitProxy", ""),
    ("core.alternateRefsCommand", ""),
    ("core.attributesFile", os.devnull),
    ("core.excludesFile", os.devnull),
    ("core.quotepath", "off"),
    ("core.untrackedCache", "false"),
    ("core.protectNTFS", "true"),
    ("core.protectHFS", "true"),
    ("credential.helper", ""),
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    ("merge.verifySignatures", "false"),
    ("log.showSignature", "false"),
    ("gpg.program", "false"),
    ("gpg.openpgp.program", "false"),
    ("gpg.ssh.program", "false"),
    ("gpg.x509.program", "false"),
    ("gpg.ssh.defaultKeyCommand", "false"),
    ("protocol.allow", "never"),
    ("protocol.file.allow", "never"),
    ("submodule.recurse", "false"),
    ("fetch.recurseSubmodules", "false"),
    ("status.submoduleSummary", "false"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
    ("rerere.enabled", "false"),
    ("color.ui", "false"),
    ("worktree.useRelativePaths", "false"),
    ("advice.detachedHead", "false"),
)
"""``-c`` overrides on every git command gg runs: nothing configured runs a program, reads
a path of the agent's or reaches a network (issue 9 item 4). Command-line configuration
wins over every file, and git passes it on to the git processes it starts."""

_SYSTEM_PATH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
_PASSED = ("TZ",)
"""The only variables of gg's own environment a git process sees (none is a secret)."""

_FILTER_COMMANDS = ("clean", "smudge", "process")
_GITFILE_CAP = 4096
_KIND = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a device",
    stat.S_IFBLK: "a device",
}


def config_args() -> list[str]:
    """``["-c", "core.fsmonitor=false", ...]``: :data:`SAFE_CONFIG` as git arguments."""
    args: list[str] = []
    for key, value in SAFE_CONFIG:
        args += ["-c", f"{key}={value}"]
    return args


def git_env(
    *,
    git: str,
    home: Path,
    overrides: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The whole environment of a git process gg starts, built from nothing (issue 9 item 4).

    Args:
        git: the git binary's absolute path (its directory joins the system ``PATH``).
        home: an empty gg-private directory for ``HOME`` and ``XDG_CONFIG_HOME``.
        overrides: more command-scope configuration (``GIT_CONFIG_COUNT`` and
            ``GIT_CONFIG_KEY_n``/``GIT_CONFIG_VALUE_n``: any key, even one with ``=``
            in its subsection), e.g. from :func:`driver_overrides`.

    Returns:
        The environment: no provider key or other variable of gg's but ``TZ``,
        no inherited ``GIT_*`` variable.
    """
    path = [str(Path(git).parent)] + [d for d in _SYSTEM_PATH if d != str(Path(git).parent)]
    env = {name: os.environ[name] for name in _PASSED if name in os.environ}
    env.update(GIT_IDENTITY)
    env.update(
        {
            "PATH": os.pathsep.join(path),
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home),
            "LC_ALL": "C",
            "LANG": "C",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_SYSTEM": os.devnull,
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_ATTR_NOSYSTEM": "1",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_PAGER": "cat",
            "PAGER": "cat",
            "GIT_EDITOR": ":",
            "GIT_SEQUENCE_EDITOR": ":",
            "GIT_OPTIONAL_LOCKS": "0",
            "GIT_PROTOCOL_FROM_USER": "0",
            "GIT_NO_REPLACE_OBJECTS": "1",
        }
    )
    items = list((overrides or {}).items())
    if items:
        env["GIT_CONFIG_COUNT"] = str(len(items))
        for i, (key, value) in enumerate(items):
            env[f"GIT_CONFIG_KEY_{i}"] = key
            env[f"GIT_CONFIG_VALUE_{i}"] = value
    return env


def driver_overrides(listing: bytes, *, git: str) -> dict[str, str]:
    r"""Overrides that turn off every filter and merge driver a configuration defines.

    An agent's ``.gitattributes`` can name any driver the repository's
    configuration defines (a relative command would run the agent's script):
    filters get empty commands and ``required = false`` (files pass through
    as they are); merge drivers become ``git merge-file`` (git's own text merge,
    conflict markers and all). Diff drivers are left to ``--no-ext-diff
    --no-textconv`` on gg's diffs.

    Args:
        listing: the output of ``git config --list -z`` (``key\nvalue`` records, NUL-separated).
        git: the git binary's absolute path (for the merge command).

    Returns:
        ``{key: value}`` for :func:`git_env`'s ``overrides`` (empty when nothing is defined).
    """
    merge = f"{shlex.quote(git)} merge-file --marker-size=%L -L ours -L base -L theirs %A %O %B"
    out: dict[str, str] = {}
    for record in listing.split(b"\0"):
        key = record.split(b"\n", 1)[0].decode("utf-8", "surrogateescape")
        section, _, rest = key.partition(".")
        sub, _, var = rest.rpartition(".")
        if not sub:
            continue
        section, var = section.lower(), var.lower()
        if section == "filter" and var in _FILTER_COMMANDS:
            out[key] = ""
            out[f"filter.{sub}.required"] = "false"
        elif section == "merge" and var == "driver":
            out[key] = merge
    return out


def _gitfile_change(dotgit: Path, expected: str) -> str | None:
    """How ``dotgit`` differs from the ``.git`` file gg wrote, or ``None`` when it does not."""
    try:
        st = os.lstat(dotgit)
    except FileNotFoundError:
        return "its .git file was removed"
    except OSError as exc:
        return f"its .git cannot be checked ({exc.strerror})"
    if stat.S_ISLNK(st.st_mode):
        try:
            target = os.readlink(dotgit)
        except OSError:
            target = "?"
        return f"its .git was replaced by a symbolic link (to {target[:300]!r})"
    if stat.S_ISDIR(st.st_mode):
        return "its .git was replaced by a directory (a git directory made in the worktree)"
    if not stat.S_ISREG(st.st_mode):
        return f"its .git was replaced by {_KIND.get(stat.S_IFMT(st.st_mode), 'a special file')}"
    try:
        fd = os.open(dotgit, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        return f"its .git cannot be read ({exc.strerror})"
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return "its .git was replaced while being checked"
        data = os.read(fd, _GITFILE_CAP + 1)
    finally:
        os.close(fd)
    text = data.decode("utf-8", "replace")
    if len(data) > _GITFILE_CAP or text.removesuffix("\n") != expected:
        first = text.splitlines()[0] if text.strip() else text
        return f"its .git file was rewritten: it reads {first[:300]!r}, not {expected!r}"
    return None


def check_gitfile(worktree: Path, admin: Path) -> None:
    """Check that ``worktree/.git`` is still the file ``git worktree add`` wrote (issue 9 item 4).

    The check takes no link: ``lstat`` first, then an ``O_NOFOLLOW`` read of
    a regular file (``O_NONBLOCK``, at most 4 KiB) whose text must be exactly
    ``gitdir: <admin>``.

    Args:
        worktree: the worktree's top level.
        admin: its administrative directory, ``<common dir>/worktrees/<name>`` (real path).

    Raises:
        WorktreeChanged: ``.git`` was removed, rewritten, symlinked, made a
            directory or a special file; the message names the change.
    """
    how = _gitfile_change(worktree / ".git", f"gitdir: {admin}")
    if how is not None:
        raise WorktreeChanged(
            f"the worktree {str(worktree)!r} was tampered with: {how}. gg runs git only "
            "through the git directory it made, so it will not work in this worktree; "
            "inspect it, then remove it (the branch is kept)",
            operation=f"check {worktree / '.git'}",
        )


def read_regular(root: Path, rel: str, *, cap: int) -> bytes | None:
    """The first ``cap`` bytes of the regular file ``rel`` beneath ``root``, taking no link.

    Each component is opened relative to the previous one with ``O_NOFOLLOW``
    (the last one ``O_NONBLOCK`` too), so a symbolic link anywhere on the way,
    a FIFO, a socket or a device is never followed nor read.

    Args:
        root: a directory gg trusts the path of (a worktree's top level).
        rel: a relative path from git (``/``-separated; ``..`` refused).
        cap: most bytes to read.

    Returns:
        The bytes, or ``None`` for anything that is not a regular file beneath ``root``.
    """
    parts = PurePosixPath(rel).parts
    if not parts or PurePosixPath(rel).is_absolute() or ".." in parts:
        return None
    try:
        dfd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        for part in parts[:-1]:
            nfd = os.open(
                part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dfd
            )
            os.close(dfd)
            dfd = nfd
        if not stat.S_ISREG(os.stat(parts[-1], dir_fd=dfd, follow_symlinks=False).st_mode):
            return None
        return _read_capped(parts[-1], dfd, cap)
    except OSError:
        return None
    finally:
        os.close(dfd)


def _read_capped(name: str, dfd: int, cap: int) -> bytes | None:
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dfd)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks: list[bytes] = []
        left = cap
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def real_dirs(top: Path, path: Path) -> None:
    """Make ``path`` and the directories between ``top`` and it, following no link.

    Args:
        top: a directory whose path gg trusts (the repository's top level).
        path: a directory beneath it (e.g. ``top/.gg/worktrees``).

    Raises:
        UserError: one of them is a symbolic link or not a directory (named).
    """
    current = top
    for part in path.relative_to(top).parts:
        current = current / part
        try:
            os.mkdir(current, 0o755)
        except FileExistsError:
            pass
        except OSError as exc:
            raise UserError(f"cannot create {str(current)!r}: {exc.strerror}") from exc
        if not stat.S_ISDIR(os.lstat(current).st_mode):
            raise UserError(
                f"{str(current)!r} is a symbolic link or not a directory; gg will "
                "not create the board's files through it (remove it)"
            )


def write_gg_ignore(workspace: Path) -> None:
    """Create ``.gg/.gitignore`` (``*``) unless something is there; no link is followed.

    Raises:
        UserError: ``.gg`` is a symbolic link or not a directory.
    """
    real_dirs(workspace, workspace / ".gg")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(workspace / ".gg" / ".gitignore", flags, 0o644)
    except FileExistsError:
        return  # already there (or a link: never written through)
    try:
        os.write(fd, b"# written by gg: nothing in .gg/ belongs in the repository\n*\n")
    finally:
        os.close(fd)
