"""Config protection and gg's own hardening (issue 9, Build items 2 and 5).

Everything in the workspace is written by the agent, ``gg.toml`` and hook
scripts included. What this module gives the run:

- :func:`make_undumpable`: gg's process becomes non-dumpable once a run
  starts, so a process of the same (non-root) uid cannot read
  ``/proc/<gg pid>/environ`` or ``mem`` (the provider keys). Children are
  dumpable again after ``exec``; nothing gg starts needs gg's own ``/proc``.
- :func:`hook_scripts`: the files a hook command names (``./scripts/check.sh``,
  ``python3 hooks/gate.py``): the words of the command that are existing files.
- :class:`Snapshot`: SHA-256 digests of ``gg.toml`` and every hook's scripts,
  taken at run start. The gate asks :meth:`Snapshot.tampered` before it runs
  a command hook, in the workspace the hook runs in: a script changed (or
  appeared, or went, or replaced by a link) is not run, and the gate blocks
  naming it. In a board worktree the files at the same relative paths are
  compared with the run-start digests of the repository's (finding F6).
- :func:`host_command`: a command run on the host as root (trusted hooks,
  ``run_command`` with ``commands = "host"``) loses ``CAP_SYS_PTRACE``,
  ``CAP_SYS_ADMIN`` and ``CAP_PERFMON``, so it cannot read gg's ``environ``.
- :func:`changed_since_last_run`: compares the snapshot with the one the last
  run of this workspace kept in ``gg.state.workspace_state(ws)/protected.json``
  (opened with ``O_NOFOLLOW``), and keeps the new one.

Files are read beneath the workspace by an fd-relative walk (each component
``O_NOFOLLOW``), regular files only, at most :data:`MAX_BYTES` each.

What this module does not promise: that a script's own imports or sourced
files are covered (only the files the command names are), or that a file
outside the workspace is safe from someone else on the host.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import json
import os
import shlex
import shutil
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gg.state import workspace_state

__all__ = [
    "MAX_BYTES",
    "Snapshot",
    "changed_since_last_run",
    "git_changes",
    "git_state",
    "hook_scripts",
    "host_command",
    "install_inside",
    "make_undumpable",
    "nested_repos",
]

MAX_BYTES = 16 << 20
"""A protected file larger than this is recorded by its size only (``"large:<bytes>"``)."""
_PR_SET_DUMPABLE = 4
_PR_GET_DUMPABLE = 3
_SNAPSHOT_NAME = "protected.json"
_STRIP_LEFT = "$(`{<>"
_STRIP_RIGHT = ";)&|`}"
_SCRIPT_SUFFIXES = (".sh", ".bash", ".py", ".js", ".mjs", ".ts", ".pl", ".rb", ".lua")
_SYSTEM = ("/usr/", "/bin/", "/sbin/", "/lib", "/etc/", "/proc/", "/dev/", "/sys/")


def make_undumpable() -> bool:
    """Make gg's process non-dumpable (``prctl(PR_SET_DUMPABLE, 0)``), once; idempotent.

    Returns:
        True when the process is non-dumpable afterwards (False where ``prctl`` is missing).
    """
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_GET_DUMPABLE, 0, 0, 0, 0) == 0:
            return True
        return bool(libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


_NO_PEEKING = "-sys_ptrace,-sys_admin,-perfmon"
"""Capabilities a host command loses from its bounding set as root (:func:`host_command`)."""


def host_command(command: str) -> str:
    """``command`` as gg runs it on the host, without the capabilities that read gg's keys.

    As root, the command runs without ``CAP_SYS_PTRACE``, ``CAP_SYS_ADMIN`` and
    ``CAP_PERFMON`` in its bounding set (issue 9 item 5, finding F1). Each of the three
    lets root read a non-dumpable process's ``/proc/<pid>/environ`` (gg's provider
    keys). The one place this is done: trusted agent-stop hooks and ``run_command``
    under ``[sandbox] commands = "host"``.

    A speed bump, not a boundary: a root command keeps every other capability (it can
    still rewrite gg itself, or its configuration). Without ``setpriv`` nothing is dropped.

    Args:
        command: a ``/bin/sh`` command line.

    Returns:
        ``exec setpriv --bounding-set=... -- /bin/sh -c <command>`` when gg is root and
        ``setpriv`` is installed (``/usr/bin`` or ``/bin``); ``command`` unchanged when gg
        is not root (non-dumpability alone keeps gg's ``/proc`` closed to its own uid).
    """
    setpriv = shutil.which("setpriv", path="/usr/bin:/bin")
    if os.geteuid() != 0 or setpriv is None:
        return command
    return f"exec {setpriv} --bounding-set={_NO_PEEKING} -- /bin/sh -c {shlex.quote(command)}"


def _words(command: str) -> list[str]:
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    out: list[str] = []
    for word in words:
        inner = word.split() if any(c.isspace() for c in word) else [word]
        for piece in inner:  # one level of `sh -c "..."`
            out += [piece, *piece.split("=")[1:]]
    return [w.lstrip(_STRIP_LEFT).rstrip(_STRIP_RIGHT) for w in out]


def hook_scripts(command: str, workspace: Path) -> tuple[str, ...]:
    """The files a hook command names: keys of :class:`Snapshot` (issue 9 item 2).

    Args:
        command: the hook's ``/bin/sh`` command line.
        workspace: the resolved workspace (relative words are taken from it).

    Returns:
        Sorted keys: a path relative to the workspace for a file inside it, an
        absolute path for one outside; only words that name an existing regular
        file (inside the workspace: reached without a symlink).
    """
    found: set[str] = set()
    for word in _words(command):
        if not word or word.startswith("-") or "\0" in word:
            continue
        key = _key(word, workspace)
        if key is not None and _digest(workspace, key) is not None:
            found.add(key)
    return tuple(sorted(found))


def _script_like(key: str) -> bool:
    """Whether a word reads as a script path (``./check.sh``, ``hooks/gate``).

    A file of this name appearing during a run counts as a changed hook script.
    """
    return "/" in key or key.endswith(_SCRIPT_SUFFIXES)


def _key(word: str, workspace: Path) -> str | None:
    path = Path(os.path.normpath(word if os.path.isabs(word) else workspace / word))
    if path == workspace or str(path).startswith(_SYSTEM):
        return None
    try:
        return path.relative_to(workspace).as_posix()
    except ValueError:
        return str(path) if os.path.isabs(word) else None


def _open_beneath(workspace: Path, key: str) -> int:
    """An fd of ``workspace/key`` opened for reading with no symlink followed, or OSError."""
    parts = Path(key).parts
    if Path(key).is_absolute():
        return os.open(key, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    fd = os.open(workspace, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts[:-1]:
            nxt = os.open(part, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                          dir_fd=fd)  # fmt: skip
            os.close(fd)
            fd = nxt
        flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
        return os.open(parts[-1], flags, dir_fd=fd)
    finally:
        os.close(fd)


def _digest(workspace: Path, key: str) -> str | None:
    """``sha256:<hex>`` of a regular file (``large:<n>`` past the cap), ``None`` if none."""
    try:
        fd = _open_beneath(workspace, key)
    except (OSError, ValueError, IndexError):
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        if info.st_size > MAX_BYTES:
            return f"large:{info.st_size}"
        digest = hashlib.sha256()
        while chunk := os.read(fd, 1 << 20):
            digest.update(chunk)
        return f"sha256:{digest.hexdigest()}"
    except OSError:
        return None
    finally:
        os.close(fd)


@dataclass(frozen=True, kw_only=True)
class Snapshot:
    """Digests of ``gg.toml`` and the hook scripts at run start (issue 9 item 2)."""

    workspace: Path
    """The resolved workspace."""
    digests: Mapping[str, str | None]
    """Key (see :func:`hook_scripts`) -> digest; ``None``: no such regular file."""
    hooks: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Hook command -> the keys of the scripts it named at run start."""

    @classmethod
    def take(cls, workspace: Path, *, configs: Iterable[str], commands: Iterable[str]) -> Snapshot:
        """Hash ``configs`` (keys, e.g. ``"gg.toml"``) and the scripts of each command."""
        ws = workspace.resolve()
        hooks = {c: hook_scripts(c, ws) for c in commands}
        keys = {*configs, *(k for ks in hooks.values() for k in ks)}
        return cls(workspace=ws, digests={k: _digest(ws, k) for k in sorted(keys)}, hooks=hooks)

    def inside(self) -> tuple[Path, ...]:
        """The protected files inside the workspace (bound read-only under bubblewrap)."""
        return tuple(self.workspace / k for k, d in self.digests.items()
                     if d is not None and not os.path.isabs(k))  # fmt: skip

    def outside(self) -> tuple[str, ...]:
        """Hook scripts outside the workspace (made visible read-only to sandboxed hooks)."""
        return tuple(k for k, d in self.digests.items() if d is not None and os.path.isabs(k))

    def tampered(self, command: str, *, workspace: Path | None = None) -> list[str]:
        """The scripts of ``command`` that differ from the ones hashed at run start.

        The scripts are taken as ``command`` would run in ``workspace``; one differs when
        it changed, went, appeared, or was replaced by a link.

        Args:
            command: the hook's command line (a key of :attr:`hooks`).
            workspace: where the hook runs (its cwd); default the run's workspace. In
                another directory (a board worktree) a word relative to it names the file
                there, read beneath it without following a link, and is compared with the
                run-start digest of the same relative path in the run's workspace.

        Returns:
            Sentences such as ``"'scripts/check.sh' changed during this run"``; empty when
            every script is as it was (or the command names none).
        """
        here = self.workspace if workspace is None else Path(workspace).resolve()
        then = self.hooks.get(command, ())
        problems: list[str] = []
        located = _located(command, here, self.workspace)
        for key, base in located:
            before = self.digests.get(key)
            after = _digest(base, key)
            if key not in then and (after is None or not _script_like(key)):
                continue  # not a script at start, and not a script-like file now
            where = "" if base == self.workspace else " in this session's workspace"
            if key not in then or before is None:
                problems.append(f"{key!r} appeared{where} during this run")
            elif after is None:
                problems.append(
                    f"{key!r}{where} was removed or replaced by a non-file "
                    "(or a link) during this run"
                )
            elif after != before:
                problems.append(
                    f"{key!r}{where} differs from the one this run started with"
                    if where
                    else f"{key!r} changed during this run"
                )
        seen = {key for key, _ in located}
        for key in (k for k in then if k not in seen):  # a start word now keyed otherwise
            if _digest(here, key) != self.digests.get(key):
                problems.append(f"{key!r} is not the file this run started with")
        return list(dict.fromkeys(problems))


def _located(command: str, here: Path, root: Path) -> list[tuple[str, Path]]:
    """Each file word of ``command`` run in ``here``, as ``(key, directory)`` pairs.

    The key is the word's snapshot key, the directory the one it is read beneath. A
    relative word inside ``here`` is keyed relative to ``here`` (the same relative path as
    in ``root``); an absolute word (or one leading out of ``here``) into ``root`` is keyed
    relative to ``root``; other absolute paths are keyed as they are.
    """
    found: dict[tuple[str, Path], None] = {}
    for word in _words(command):
        if not word or word.startswith("-") or "\0" in word:
            continue
        key = _key(word, here)
        base = here
        if key is not None and os.path.isabs(key):
            inner = _key(key, root)
            key, base = (inner, root) if inner is not None else (key, root)
        elif key is None and not os.path.isabs(word) and here != root:
            key, base = _key(os.path.normpath(here / word), root), root
            if key is not None and os.path.isabs(key):
                key = None
        if key is not None:
            found[(key, base)] = None
    return sorted(found)


def _read_last(path: Path) -> dict[str, str | None]:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return {}
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return {}
        try:
            data = json.loads(f.read(MAX_BYTES))
        except ValueError:
            return {}
    digests = data.get("digests") if isinstance(data, dict) else None
    if not isinstance(digests, dict):
        return {}
    return {str(k): v if isinstance(v, str) else None for k, v in digests.items()}


def _write(path: Path, digests: Mapping[str, str | None]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(tmp, flags, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump({"digests": dict(digests)}, f, sort_keys=True)
    os.replace(tmp, path)


def changed_since_last_run(snapshot: Snapshot) -> list[str]:
    """The protected files that differ from the last run's snapshot; keeps this one.

    A file counts when the last run knew it and its digest is different now (changed,
    removed). The first run of a workspace, or files new in this run, warn of nothing
    (a new hook shows up as a change of ``gg.toml``).

    Returns:
        Sorted keys (``"gg.toml"``, ``"scripts/check.sh"``). A state directory that cannot
        be written is not an error (the next run then compares with an older snapshot).
    """
    try:
        path = workspace_state(snapshot.workspace) / _SNAPSHOT_NAME
    except OSError:
        return []
    last = _read_last(path)
    changed = sorted(k for k, d in last.items()
                     if k in snapshot.digests and snapshot.digests[k] != d)  # fmt: skip
    merged = {**last, **snapshot.digests}
    with contextlib.suppress(OSError):
        _write(path, merged)
    return changed


_GIT_FILES = (
    ".git",
    ".git/config",
    ".git/config.worktree",
    ".git/info/attributes",
    ".git/info/exclude",
    ".git/commondir",
    ".git/gitdir",
)
"""What of a workspace's ``.git`` runs or redirects the operator's own git (adversary F22)."""


def git_state(workspace: Path) -> dict[str, str | None]:
    """Digests of the parts of ``workspace/.git`` that make git run programs or look elsewhere.

    Those parts are its config files, ``.git`` itself when it is a file (a worktree's
    ``gitdir:``), and every file in ``.git/hooks`` (names and contents). Read beneath the
    workspace without following a link; ``{}`` when there is no ``.git``.

    The sandbox can write ``.git`` under the layers that cannot make it read-only
    (unshare, rlimit); :class:`gg.run.Run` compares this at the run's end and warns, so
    the operator's next ``git status`` does not run what an agent planted.
    """
    ws = workspace.resolve()
    if not os.path.lexists(ws / ".git"):
        return {}
    out = {key: _digest(ws, key) for key in _GIT_FILES}
    try:
        fd = _open_beneath(ws, ".git/hooks")
    except (OSError, ValueError, IndexError):
        return out
    try:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            with os.scandir(fd) as entries:
                names = sorted(e.name for e in entries)[:1000]
            for name in names:
                out[f".git/hooks/{name}"] = _digest(ws, f".git/hooks/{name}") or "not a file"
    finally:
        os.close(fd)
    return out


def git_changes(before: Mapping[str, str | None], after: Mapping[str, str | None]) -> list[str]:
    """The keys of :func:`git_state` that differ (changed, new or gone), sorted."""
    return sorted(k for k in {*before, *after} if before.get(k) != after.get(k))


def install_inside(workspace: Path) -> Path | None:
    """The outermost directory of gg's own installation inside ``workspace``, else ``None``.

    gg's installation is its interpreter prefix and the directory holding the ``gg``
    package. An agent that can write gg's installation (a ``.pth`` file in site-packages, gg's own
    modules), or any directory on gg's import path (``python -m gg`` started inside the
    workspace puts it first), runs code in the next gg, with gg's rights and keys
    (adversary F21, N4). The workspace itself is returned when it is on the path.
    """
    import sys

    ws = workspace.resolve()
    own = [
        Path(sys.prefix).resolve(),
        Path(__file__).resolve().parents[1],
        Path(sys.executable).resolve().parent,
    ]
    for entry in sys.path:  # ``python -m gg`` puts the current directory first (finding N4)
        with contextlib.suppress(OSError):
            own.append(Path(entry or os.getcwd()).resolve())
    inside = sorted(
        (p for p in own if p.is_relative_to(ws) and p != ws), key=lambda p: len(p.parts)
    )
    if any(p == ws for p in own):
        return ws
    return inside[0] if inside else None


_SCAN_MAX = 200_000
"""Entries :func:`nested_repos` looks at, at most (a bound on a huge workspace)."""


def nested_repos(workspace: Path) -> set[str]:
    """Relative paths of every ``.git`` (directory, file or link) below the workspace's top.

    They are found by a walk that follows no link and stops after :data:`_SCAN_MAX`
    entries. A repository an agent makes inside the workspace carries its own configuration
    (``core.fsmonitor``, hooks); the operator's git runs it when it works there, or when
    the top repository records it (adversary N3). :class:`gg.run.Run` names the new ones
    at the run's end. The ``.git`` file at the top of each board worktree
    (``.gg/worktrees/<name>/.git``) is gg's own (checked by
    :func:`gg.board.gitsafe.check_gitfile` before git uses it) and not named.
    """
    ws = workspace.resolve()
    found: set[str] = set()
    todo, seen = [ws], 0
    while todo and seen < _SCAN_MAX:
        here = todo.pop()
        try:
            with os.scandir(here) as entries:
                for entry in entries:
                    seen += 1
                    if entry.name == ".git" and here != ws:
                        rel = Path(entry.path).relative_to(ws)
                        if rel.parts[:2] != (".gg", "worktrees") or len(rel.parts) != 4:
                            found.add(rel.as_posix())
                    elif entry.name != ".git" and entry.is_dir(follow_symlinks=False):
                        todo.append(Path(entry.path))
        except OSError:
            continue
    return found
