"""gg's own state, kept outside every workspace (issue 9 item 2; ARCHITECTURE, the trust boundary).

Everything under a workspace is written by the agent, so nothing gg must be
able to trust lives there: the runs' streams, the board store and its lock,
memories, the config snapshot of the last run. They live in a per-workspace
**state directory**::

    $GG_STATE_HOME/workspaces/<name>-<hash>/       (mode 0700, owned by gg's user)
        runs/<run_id>/stream.jsonl                 the stream (SPEC O1)
        ...

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

import hashlib
import os
import re
import stat
from pathlib import Path

from gg.errors import UserError

__all__ = ["StateError", "private_dir", "state_home", "workspace_state"]

_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


class StateError(UserError):
    """gg's state directory is unusable (not ours, a symlink, open to others). Exit 2."""


def state_home() -> Path:
    """The root of gg's state: ``$GG_STATE_HOME``, else ``$XDG_STATE_HOME/gg``, else
    ``~/.local/state/gg`` (an absolute path; not created here)."""
    explicit = os.environ.get("GG_STATE_HOME")
    if explicit:
        return Path(explicit).expanduser().absolute()
    xdg = os.environ.get("XDG_STATE_HOME")
    base = Path(xdg).expanduser() if xdg and os.path.isabs(os.path.expanduser(xdg)) else (
        Path.home() / ".local" / "state")
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
        st = os.lstat(path)
    except OSError as exc:
        raise StateError(f"cannot create gg's state directory {str(path)!r}: {exc}") from exc
    if not stat.S_ISDIR(st.st_mode):
        raise StateError(f"gg's state directory {str(path)!r} is not a directory (a symbolic "
                         "link?); remove it and run again")
    if st.st_uid != os.geteuid():
        raise StateError(f"gg's state directory {str(path)!r} belongs to uid {st.st_uid}, not "
                         f"to gg's user ({os.geteuid()}); gg will not use it")
    if st.st_mode & 0o077:
        raise StateError(f"gg's state directory {str(path)!r} is open to other users (mode "
                         f"{stat.S_IMODE(st.st_mode):o}); run 'chmod 700' on it")
    return path


def workspace_state(workspace: Path) -> Path:
    """The state directory of ``workspace`` (created, mode 0700): see the module doc.

    Args:
        workspace: the workspace (resolved here; it need not exist yet).

    Raises:
        StateError: the directory is unusable (see :func:`private_dir`).
    """
    real = workspace.resolve()
    digest = hashlib.sha256(os.fsencode(real)).hexdigest()[:16]
    name = _SAFE_NAME.sub("_", real.name)[:40] or "root"
    home = state_home()
    private_dir(home)
    private_dir(home / "workspaces")
    return private_dir(home / "workspaces" / f"{name}-{digest}")
