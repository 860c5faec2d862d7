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
path (``sqlite:PATH``) or a server; ``[board] executor = "ray"`` (issue 17: the
issues, the workspace and the model's credentials go to the cluster); an MCP
server (``[[tools.mcp]]``) that runs on the host
(``sandboxed = false``), gets ``pass_env``, has host files bound into the sandbox
(:func:`gg.mcp.binds.server_binds`), or is reached at a ``url`` (tool arguments,
with workspace content, and its headers go there).

A trusted hook's scripts count with its setting (a rewritten script runs on
the host next time), and so does **the gate**: an agent-stop hook the last
approved config had that is gone now, made ``on_error = "pass"``, or bound to
fewer roles (:func:`gate`); the same for a pre-tool hook (or its ``matcher`` changed).
Session-start, pre-tool and post-tool hooks with ``trusted = true`` or ``pass_env`` are
weakening settings as agent-stop hooks are.

**The rule** (:func:`check`): gg keeps, per workspace, in its state directory
(``approved.json``, never in the workspace), one digest of the config files
inside the workspace (``gg.toml``, and ``--config`` when it lies there) and
of every hook's scripts, with the weakening settings and the hooks of the last
run that started. A run is refused when all of these hold: such a record
exists (the workspace had a run, so an agent may have written since; a
workspace's first run counts as having one when it lies inside a workspace
that had runs), the digest differs, and the settings now hold a weakening one
the record does not, or lack one of its hooks. A first run elsewhere, an
unchanged digest, or a change that weakens nothing start as before (the change
is still named by the warning of :func:`gg.guard.changed_since_last_run`).

What this does not promise: it cannot tell the operator's edits from the
agent's (hence the confirmation), and settings given by the operator on the
command line or to the API count like the file's.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gg.config import Settings
from gg.errors import ConfigError
from gg.guard import Snapshot
from gg.mcp.binds import server_binds
from gg.state import state_path, workspace_state

__all__ = ["Approval", "check", "gate", "weakening"]

_NAME = "approved.json"
_MAX = 1 << 20


def weakening(settings: Settings, snapshot: Snapshot | None = None) -> list[str]:
    """The settings in ``settings`` that weaken the boundary, as sorted readable lines.

    Example: ``['[sandbox] commands = "host"', '[[hooks.agent_stop]] trusted = true:
    ./check.sh']``. With ``snapshot``, a trusted hook's line also names the digests of the
    scripts its command names, so a rewritten script is a new weakening setting (it runs
    on the host). See the module docstring for the list.
    """
    out: list[str] = []
    box = settings.sandbox
    if box.commands == "host":
        out.append('[sandbox] commands = "host"')
    if box.isolation != "auto":
        out.append(f"[sandbox] isolation = {box.isolation!r}")
    hooks = settings.hooks
    for kind, entries in (
        ("agent_stop", hooks.agent_stop), ("session_start", hooks.session_start),
        ("pre_tool", hooks.pre_tool), ("post_tool", hooks.post_tool),
    ):  # fmt: skip
        for hook in entries:
            if hook.trusted:
                scripts = (
                    ""
                    if snapshot is None
                    else "".join(
                        f" [{key} {snapshot.digests.get(key)}]"
                        for key in snapshot.hooks.get(hook.command, ())
                    )
                )
                out.append(f"[[hooks.{kind}]] trusted = true: {hook.command}{scripts}")
            if hook.pass_env:
                out.append(f"[[hooks.{kind}]] pass_env = {sorted(hook.pass_env)}: {hook.command}")
    out += _mcp_weakening(settings)
    if "@" in settings.model.spec:
        out.append(f"[model] spec = {settings.model.spec!r}")
    spec = settings.model.spec
    local = spec.removeprefix("local:") if spec.startswith("local:") else ""
    if settings.model.path or "/" in local or local.endswith(".gguf"):  # any file llama.cpp parses
        out.append(f"[model] local file = {settings.model.path or local!r}")
    if settings.board.store != "sqlite":
        out.append(f"[board] store = {settings.board.store!r}")
    if settings.board.executor != "local":  # the work and the model's keys leave this machine
        out.append(f"[board] executor = {settings.board.executor!r}: {settings.board.ray_address}")
    return sorted(out)


def _mcp_weakening(settings: Settings) -> list[str]:
    """MCP servers on the host, given ``pass_env``, binding host files, or at a ``url``."""
    out: list[str] = []
    for server in settings.tools.mcp:
        if server.command is not None and not server.sandboxed:
            out.append(f"[[tools.mcp]] sandboxed = false: {server.name} ({server.command})")
        if server.pass_env:
            out.append(f"[[tools.mcp]] pass_env = {sorted(server.pass_env)}: {server.name}")
        if binds := server_binds(server):  # host files made visible in the sandbox
            out.append(f"[[tools.mcp]] binds {binds}: {server.name}")
        if server.url is not None:
            out.append(f"[[tools.mcp]] url = {server.url!r}: {server.name}")
    return out


def gate(settings: Settings) -> list[str]:
    """The run's agent-stop hooks as lines (command, roles, ``on_error``, ``sessions``).

    A line the last approved config had and this one lacks is a weakened gate (removed,
    made to pass on failure, or bound to fewer roles or sessions).
    """
    lines = [  # sessions only when narrowed, so the lines of earlier records stay the same
        f"[[hooks.agent_stop]] {h.command} (roles {sorted(r.value for r in h.roles)}, "
        f"on_error {h.on_error}{'' if h.sessions == 'all' else ', sessions ' + h.sessions})"
        for h in settings.hooks.agent_stop
    ]
    lines += [  # a pre-tool policy removed or loosened is a weakened gate too (SPEC H1)
        f"[[hooks.pre_tool]] {h.command} (matcher {h.matcher!r}, roles "
        f"{sorted(r.value for r in h.roles)}, on_error {h.on_error})"
        for h in settings.hooks.pre_tool
    ]
    return sorted(lines)


@dataclass(frozen=True, kw_only=True)
class Approval:
    """What :func:`check` found; :meth:`record` keeps it once the run has started."""

    workspace: Path
    digest: str
    """One digest of the config files inside the workspace and every hook's scripts."""
    settings: tuple[str, ...]
    """The weakening settings in force now (:func:`weakening`)."""
    hooks: tuple[str, ...] = ()
    """The agent-stop hooks in force now (:func:`gate`)."""

    def record(self) -> None:
        """Keep this as the workspace's approved config (``approved.json``, 0600).

        It is written through a fresh temp file renamed over it. A state directory that
        cannot be written is not an error: the next run then compares with the older record.
        """
        with contextlib.suppress(OSError):
            folder = workspace_state(self.workspace)
            tmp = folder / f".{_NAME}.{os.getpid()}"
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
            with os.fdopen(os.open(tmp, flags, 0o600), "w", encoding="utf-8") as f:
                json.dump(
                    {
                        "digest": self.digest,
                        "settings": list(self.settings),
                        "hooks": list(self.hooks),
                    },
                    f,
                )
            os.replace(tmp, folder / _NAME)


@dataclass(frozen=True, kw_only=True)
class _Record:
    digest: str | None
    settings: frozenset[str]
    hooks: frozenset[str]


_INSIDE = "inside another workspace"
"""The digest a workspace's first run compares with when it lies inside a workspace
that had runs: an agent there could have written its gg.toml (adversary N6)."""


def _read(path: Path) -> _Record | None:
    try:
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
        return _Record(digest=None, settings=frozenset(), hooks=frozenset())  # damaged

    def strings(key: str) -> frozenset[str]:
        items = data.get(key)
        return frozenset(str(i) for i in items) if isinstance(items, list) else frozenset()

    digest = data.get("digest")
    return _Record(
        digest=digest if isinstance(digest, str) else None,
        settings=strings("settings"),
        hooks=strings("hooks"),
    )


def _last(workspace: Path) -> _Record | None:
    """This workspace's record, or what stands in for it on a first run.

    For a first run inside a workspace that had runs: an empty record that nothing
    matches. For a first run anywhere else: ``None``.
    """
    own = _read(state_path(workspace) / _NAME)
    if own is not None:
        return own
    for parent in workspace.parents:
        if os.path.lexists(state_path(parent) / _NAME):
            return _Record(digest=_INSIDE, settings=frozenset(), hooks=frozenset())
    return None


def check(
    workspace: Path,
    settings: Settings,
    *,
    configs: Sequence[str] = ("gg.toml",),
    trust: bool = False,
) -> Approval:
    """Refuse a changed config that newly weakens the boundary or the gate (the module's rule).

    Args:
        workspace: the run's workspace (resolved).
        settings: the run's effective settings.
        configs: the config files the settings came from, as keys relative to the
            workspace (absolute: outside it, the operator's, not hashed); ``gg.toml`` is
            always one.
        trust: the operator confirmed (``--trust-config``): never refuse.

    Returns:
        The :class:`Approval` to :meth:`~Approval.record` once the run starts.

    Raises:
        ConfigError: the rule refuses; the message lists the new weakening settings and
            the hooks gone, and says how to confirm them (exit 2, nothing written).
    """
    keys = sorted({"gg.toml", *(k for k in configs if not os.path.isabs(k))})
    hk = settings.hooks
    commands = [h.command for h in (*hk.agent_stop, *hk.session_start, *hk.pre_tool, *hk.post_tool)]
    snapshot = Snapshot.take(workspace, configs=keys, commands=commands)
    digest = (
        "sha256:"
        + hashlib.sha256(json.dumps(sorted(snapshot.digests.items())).encode()).hexdigest()
    )
    now, hooks = weakening(settings, snapshot), gate(settings)
    approval = Approval(workspace=workspace, digest=digest, settings=tuple(now), hooks=tuple(hooks))
    last = _last(workspace)
    if trust or last is None or last.digest == digest:
        return approval
    new = [item for item in now if item not in last.settings]
    lost = [f"{item} is gone" for item in sorted(last.hooks) if item not in hooks]
    if new or lost:
        raise ConfigError(
            f"{', '.join(keys)} or a hook's script changed since this workspace's last run "
            "(or this workspace lies inside one that had runs), and the settings now weaken "
            "the sandbox, the ending gate, or send data elsewhere: "
            + "; ".join(new + lost)
            + ". An agent of an earlier run could have written them: review them, then run "
            "again with --trust-config (Python: trust_config=True) to accept them",
            key="gg.toml",
        )
    return approval
