"""gg's own state, kept outside every workspace (issue 9 item 2; ARCHITECTURE, the trust boundary).

Everything under a workspace is written by the agent, so nothing gg must be
able to trust lives there: the runs' streams, the board store and its lock,
memories, the config snapshot of the last run. They live in a per-workspace
**state directory**::

    $GG_STATE_HOME/workspaces/<name>-<hash>/       (mode 0700, owned by gg's user)
        runs/<run_id>/stream.jsonl                 the stream (SPEC O1)
        runs/<run_id>/seal.key                     the run's HMAC key and nonce (gg.seal)
        runs/<run_id>/seal.head                    the last sealed event: seq, chain, closed
        board.sqlite3, board.lock                  the board store and its run lock (SPEC B1)
        gg.sqlite3                                 memories (SPEC T3)

``GG_STATE_HOME`` defaults to ``$XDG_STATE_HOME/gg``, and that to
``~/.local/state/gg``. ``<name>`` is the workspace directory's own name (for
people reading the tree) and ``<hash>`` the first 16 hex digits of the SHA-256
of its resolved absolute path, so two workspaces never share a directory.

Every layer of the sandbox keeps a program's writes inside its workspace, so
a program cannot reach this directory; gg still checks, each time it opens
one, that every directory it made is a real directory (not a symbolic link),
owned by gg's user and closed to group and others, and refuses to use one
that is not.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
import sys
from pathlib import Path

from gg.errors import UserError

__all__ = [
    "LEGACY_NAMES",
    "RUN_ID_PATTERN",
    "StateError",
    "check_run_id",
    "existing_state",
    "open_private",
    "private_dir",
    "private_file",
    "run_dir",
    "state_home",
    "state_path",
    "warn_legacy",
    "workspace_state",
]

_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")
RUN_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,79}")
"""What a run id may be: it names a directory of the state dir, so no ``/`` and no ``..``."""
LEGACY_NAMES = ("runs", "board.sqlite3", "board.lock", "gg.sqlite3")
"""What gg 0.1 kept in ``<workspace>/.gg/``; never read now (:func:`warn_legacy`)."""
_WARNED: set[str] = set()


class StateError(UserError):
    """gg's state directory is unusable (not ours, a symlink, open to others). Exit 2."""


def state_home() -> Path:
    """The root of gg's state, as an absolute path (not created here).

    ``$GG_STATE_HOME``, else ``$XDG_STATE_HOME/gg``, else ``~/.local/state/gg``.
    """
    explicit = os.environ.get("GG_STATE_HOME")
    if explicit:
        return Path(explicit).expanduser().absolute()
    xdg = os.environ.get("XDG_STATE_HOME")
    base = (
        Path(xdg).expanduser()
        if xdg and os.path.isabs(os.path.expanduser(xdg))
        else (Path.home() / ".local" / "state")
    )
    return (base / "gg").absolute()


def private_dir(path: Path) -> Path:
    """Make ``path`` (and missing parents) as gg-private directories and check it.

    Parents that already exist are used as they are (they are the operator's,
    e.g. ``~/.local``); every directory this creates gets mode 0700. The final
    directory must be a real directory owned by gg's effective user with no
    group or other access; otherwise it is refused, never repaired.

    Returns:
        ``path``.

    Raises:
        StateError: the directory cannot be made, is a symbolic link, belongs
            to another user, or is open to group or others.
    """
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise StateError(f"cannot create gg's state directory {str(path)!r}: {exc}") from exc
    _check_private(path)
    return path


def _check_private(path: Path) -> None:
    try:
        st = os.lstat(path)
    except OSError as exc:
        raise StateError(f"cannot use gg's state directory {str(path)!r}: {exc}") from exc
    if not stat.S_ISDIR(st.st_mode):
        raise StateError(
            f"gg's state directory {str(path)!r} is not a directory (a symbolic "
            "link?); remove it and run again"
        )
    if st.st_uid != os.geteuid():
        raise StateError(
            f"gg's state directory {str(path)!r} belongs to uid {st.st_uid}, not "
            f"to gg's user ({os.geteuid()}); gg will not use it"
        )
    if st.st_mode & 0o077:
        raise StateError(
            f"gg's state directory {str(path)!r} is open to other users (mode "
            f"{stat.S_IMODE(st.st_mode):o}); run 'chmod 700' on it"
        )


def state_path(workspace: Path) -> Path:
    """Where the state directory of ``workspace`` is (see the module doc).

    Nothing is created or checked. ``workspace`` is resolved here; it need not exist.
    """
    real = workspace.resolve()
    digest = hashlib.sha256(os.fsencode(real)).hexdigest()[:16]
    name = _SAFE_NAME.sub("_", real.name)[:40] or "root"
    return state_home() / "workspaces" / f"{name}-{digest}"


def workspace_state(workspace: Path) -> Path:
    """The state directory of ``workspace`` (created, mode 0700): see the module doc.

    Args:
        workspace: the workspace (resolved here; it need not exist yet).

    Raises:
        StateError: the directory is unusable (see :func:`private_dir`), or the state
            home lies inside the workspace.
    """
    home = state_home()
    _outside(home, workspace)
    private_dir(home)
    private_dir(home / "workspaces")
    return private_dir(state_path(workspace))


def _outside(home: Path, workspace: Path) -> None:
    """Refuse a state home inside the workspace: the agent could write it.

    That is ``gg run -w ~`` with the default ``~/.local/state/gg``, or a relative
    ``GG_STATE_HOME``.

    Raises:
        StateError: ``home`` lies inside ``workspace``.
    """
    ws = workspace.resolve()
    if home.resolve().is_relative_to(ws):
        raise StateError(
            f"gg's state directory {str(home)!r} lies inside the workspace {str(ws)!r}, where "
            "an agent could change it (its stream keys, approved config): set GG_STATE_HOME "
            "to a directory outside the workspace"
        )


def existing_state(workspace: Path) -> Path | None:
    """The state directory of ``workspace``, checked, or ``None`` if it does not exist.

    An existing directory must pass the checks of :func:`private_dir`. Creates nothing.

    Raises:
        StateError: it exists but is not gg-private (a symlink, another user's, open).
    """
    path = state_path(workspace)
    if not os.path.lexists(path):
        return None
    _check_private(path)
    return path


def check_run_id(run_id: str) -> str:
    """``run_id`` if it fits :data:`RUN_ID_PATTERN` (it names a directory here).

    Raises:
        UserError: it is empty, too long, or holds a ``/``, a leading dot or other characters.
    """
    if not RUN_ID_PATTERN.fullmatch(run_id):
        raise UserError(
            f"bad run id {run_id!r}: letters, digits, '.', '_' and '-' only "
            "(at most 80, not starting with '.' or '-')"
        )
    return run_id


def run_dir(workspace: Path, run_id: str) -> Path:
    """``<state>/runs/<run_id>/`` (created, gg-private) for a new or existing run.

    Raises:
        UserError: a bad run id (:func:`check_run_id`).
        StateError: a directory on the way is unusable.
    """
    runs = private_dir(workspace_state(workspace) / "runs")
    return private_dir(runs / check_run_id(run_id))


def open_private(path: Path, flags: int, *, create: bool = False) -> int:
    """Open a file of gg's state with ``O_NOFOLLOW | O_CLOEXEC`` and return its fd.

    Args:
        path: a file in a directory made by :func:`private_dir`.
        flags: ``os.O_RDONLY``, ``os.O_WRONLY | os.O_APPEND``, ``os.O_RDWR`` ...
        create: make a new file (``O_CREAT | O_EXCL``, mode 0600); an existing
            file, or a symbolic link in its place, is refused.

    Raises:
        FileExistsError: ``create`` and something is already there.
        StateError: not a regular file (a link, a FIFO), or not gg's user's.
        OSError: any other failure to open.
    """
    extra = os.O_CREAT | os.O_EXCL if create else 0
    try:
        fd = os.open(path, flags | extra | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # the last component is a symbolic link
            raise StateError(
                f"gg's state file {str(path)!r} is a symbolic link; gg will not follow it"
            ) from None
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
        os.close(fd)
        raise StateError(f"gg's state file {str(path)!r} is not a regular file of gg's user")
    os.set_blocking(fd, True)
    return fd


def private_file(path: Path) -> Path:
    """Make sure ``path`` is a regular file of gg's user, creating it if absent.

    ``path`` lies in a gg-private directory. It must be absent or a regular file of gg's
    user; an absent one is created empty (mode 0600). For stores opened by name (SQLite).

    Raises:
        StateError: it is a symbolic link or not a regular file of gg's user.
    """
    try:
        fd = open_private(path, os.O_RDWR, create=True)
    except FileExistsError:
        fd = open_private(path, os.O_RDWR)
    os.close(fd)
    return path


def warn_legacy(workspace: Path) -> list[Path]:
    """Say once per process, on stderr, which of gg 0.1's state files are left.

    They are looked for in ``<workspace>/.gg/`` (:data:`LEGACY_NAMES`): gg ignores them.
    Reads nothing in them.

    Returns:
        The paths warned about now (empty when none, or already warned).
    """
    found = []
    for name in LEGACY_NAMES:
        path = workspace / ".gg" / name
        if os.path.lexists(path) and str(path) not in _WARNED:
            _WARNED.add(str(path))
            found.append(path)
    if found:
        names = ", ".join(str(p) for p in found)
        sys.stderr.write(
            f"gg: warning: ignored {names}: written by gg 0.1 inside the "
            "workspace, where agents could edit it; gg's state now lives in "
            f"{state_path(workspace)}\n"
        )
    return found
