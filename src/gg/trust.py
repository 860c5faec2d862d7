"""Settings that weaken the boundary need the operator when gg.toml changed (issue 9 item 2).

An agent can write the workspace's ``gg.toml`` (under every layer but
bubblewrap it is writable; under bubblewrap it can still create one that did
not exist, and on a board an implementer's commit can change it and be
merged). A warning alone is not enough when the new file asks gg to give up
part of the boundary, so the next run refuses to start (exit 2, nothing
written) until the operator confirms with ``--trust-config``
(``Agent(trust_config=True)``, ``Board(..., trust_config=True)``).

**Weakening settings** (:func:`weakening`): ``[sandbox] commands = "host"``;
``[sandbox] isolation`` forced to a named layer; an agent-stop hook with
``trusted = true`` or a non-empty ``pass_env``; a ``[model] spec`` that names
its own server (``openai-compat:MODEL@URL``: the prompts, with workspace
content, and ``OPENAI_COMPAT_API_KEY`` go there); ``[board] store`` set to a
path (``sqlite:PATH``).

**The rule** (:func:`check`): gg keeps, per workspace, in its state directory
(``approved.json``, never in the workspace), the digest of the ``gg.toml`` and
the weakening settings of the last run that started. A run is refused when
all of these hold: such a record exists (the workspace had a run, so an agent
may have written since), ``gg.toml`` differs from the recorded digest
(changed, created or removed), and its weakening settings include one the
record does not. A workspace's first run, an unchanged ``gg.toml``, or a change
that weakens nothing, start as before (the change is still named by the
warning of :func:`gg.guard.changed_since_last_run`).

What this does not promise: it cannot tell the operator's edits from the
agent's (hence the confirmation), and settings given by the operator on the
command line or to the API count like the file's.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from gg.config import Settings
from gg.errors import ConfigError
from gg.guard import Snapshot
from gg.state import workspace_state

__all__ = ["Approval", "check", "weakening"]

_NAME = "approved.json"
_MAX = 1 << 20


def weakening(settings: Settings) -> list[str]:
    """The settings in ``settings`` that weaken the boundary, as sorted readable lines.

    Example: ``['[sandbox] commands = "host"', '[[hooks.agent_stop]] trusted = true:
    ./check.sh']``. See the module docstring for the list.
    """
    out: list[str] = []
    box = settings.sandbox
    if box.commands == "host":
        out.append('[sandbox] commands = "host"')
    if box.isolation != "auto":
        out.append(f"[sandbox] isolation = {box.isolation!r}")
    for hook in settings.hooks.agent_stop:
        if hook.trusted:
            out.append(f"[[hooks.agent_stop]] trusted = true: {hook.command}")
        if hook.pass_env:
            out.append(f"[[hooks.agent_stop]] pass_env = {sorted(hook.pass_env)}: {hook.command}")
    if "@" in settings.model.spec:
        out.append(f"[model] spec = {settings.model.spec!r}")
    if settings.board.store != "sqlite":
        out.append(f"[board] store = {settings.board.store!r}")
    return sorted(out)


@dataclass(frozen=True, kw_only=True)
class Approval:
    """What :func:`check` found; :meth:`record` keeps it once the run has started."""

    workspace: Path
    digest: str | None
    """``gg.toml``'s digest now (``None``: no such regular file)."""
    settings: tuple[str, ...]
    """The weakening settings in force now."""

    def record(self) -> None:
        """Keep this as the workspace's approved config (``approved.json``, 0600, written
        through a fresh temp file renamed over it). A state directory that cannot be
        written is not an error: the next run then compares with the older record."""
        with contextlib.suppress(OSError):
            folder = workspace_state(self.workspace)
            tmp = folder / f".{_NAME}.{os.getpid()}"
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
            with os.fdopen(os.open(tmp, flags, 0o600), "w", encoding="utf-8") as f:
                json.dump({"digest": self.digest, "settings": list(self.settings)}, f)
            os.replace(tmp, folder / _NAME)


def _last(workspace: Path) -> tuple[str | None, set[str]] | None:
    try:
        path = workspace_state(workspace) / _NAME
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return None
        try:
            data = json.loads(f.read(_MAX))
        except ValueError:
            data = None
    if not isinstance(data, dict):
        return (None, set())  # a damaged record: compare with nothing approved
    digest = data.get("digest")
    items = data.get("settings")
    return (digest if isinstance(digest, str) else None,
            {str(i) for i in items} if isinstance(items, list) else set())


def check(workspace: Path, settings: Settings, *, trust: bool = False) -> Approval:
    """Refuse a changed ``gg.toml`` that newly weakens the boundary (the module's rule).

    Args:
        workspace: the run's workspace (resolved).
        settings: the run's effective settings.
        trust: the operator confirmed (``--trust-config``): never refuse.

    Returns:
        The :class:`Approval` to :meth:`~Approval.record` once the run starts.

    Raises:
        ConfigError: the rule refuses; the message lists the new weakening settings
            and says how to confirm them (exit 2, nothing written).
    """
    digest = Snapshot.take(workspace, configs=["gg.toml"], commands=[]).digests["gg.toml"]
    now = weakening(settings)
    approval = Approval(workspace=workspace, digest=digest, settings=tuple(now))
    last = _last(workspace)
    if trust or last is None or last[0] == digest:
        return approval
    new = [item for item in now if item not in last[1]]
    if new:
        raise ConfigError(
            "gg.toml changed since this workspace's last run, and it now asks for settings "
            "that weaken the sandbox or send data elsewhere: " + "; ".join(new) + ". An agent "
            "of an earlier run could have written it: review gg.toml, then run again with "
            "--trust-config (Python: trust_config=True) to accept it",
            key="gg.toml")
    return approval
