"""A run: one stream, its ceilings and budget, its gate, and its sessions (SPEC §1, O1).

:class:`Run` wires the parts; the loop lives in :mod:`gg.session`. Sessions of
one run may run concurrently (``asyncio.gather``); they share the model, the
stream, the budget and the gate, and each keeps its own ceiling counts.
"""

from __future__ import annotations

import itertools
import os
import secrets
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from gg import trust
from gg.ceilings import Budget, Ceilings
from gg.config import Settings, ToolsSettings
from gg.endings import Language, Role
from gg.errors import UserError
from gg.guard import (
    Snapshot,
    changed_since_last_run,
    git_changes,
    git_state,
    install_inside,
    make_undumpable,
    nested_repos,
)
from gg.hooks import CommandHook, Gate, HookPlace
from gg.models.base import Model
from gg.modes.base import Mode
from gg.modes.tool_calling import ToolCallingMode
from gg.session import SessionResult, run_session
from gg.state import run_dir, warn_legacy
from gg.stream import RunEnded, RunStarted, StreamWriter
from gg.terminal import inert
from gg.tools.arms import ToolsetArm
from gg.tools.registry import Registry, ToolContext

__all__ = ["Run", "arm_from_settings", "new_run_id", "stream_path"]


def new_run_id() -> str:
    """A sortable, unique run id: ``YYYYMMDD-HHMMSS-xxxxxx`` (UTC)."""
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(3)


def stream_path(workspace: Path, run_id: str) -> Path:
    """``<state>/runs/<run_id>/stream.jsonl`` in the workspace's gg-private state
    directory, outside the workspace (SPEC §10; issue 9 item 2). The run's
    directory is created (mode 0700).

    Raises:
        UserError: a bad run id (:func:`gg.state.check_run_id`).
        gg.state.StateError: the state directory is unusable.
    """
    return run_dir(workspace, run_id) / "stream.jsonl"


def arm_from_settings(tools: ToolsSettings) -> ToolsetArm:
    """The toolset arm named by ``[tools] arm`` (``"all"``: every configured capability).

    Raises:
        UserError: no arm of that name in ``[tools.arms]``.
    """
    if tools.arm == "all" and "all" not in tools.arms:
        return ToolsetArm(name="all", capabilities=tuple(tools.capabilities))
    if tools.arm not in tools.arms:
        raise UserError(f"tools.arm: no toolset arm named {tools.arm!r} in [tools.arms]")
    spec = tools.arms[tools.arm]
    caps = spec.capabilities if spec.capabilities is not None else tools.capabilities
    return ToolsetArm(
        name=tools.arm,
        capabilities=tuple(caps),
        offer=None if spec.offer is None else tuple(spec.offer),
        withhold=tuple(spec.withhold),
    )


class Run:
    """One invocation of gg: a stream, ceilings, a budget, a gate and sessions.

    Args:
        workspace: the directory agents work in (must exist).
        model: the model every session of the run asks.
        settings: the effective configuration.
        registry: the shared tool registry.
        gate: the ending gate with the run's agent-stop hooks.
        run_id: an id to use (default: a new one).
        listeners: callables that get every event as it is written (live display).
        isolation: the sandbox layer in force, for ``run_started``.
        configs: the config files the run's settings came from (the workspace's
            ``gg.toml`` is always protected): hashed at start with the hook scripts,
            bound read-only in the sandbox, compared with the last run (issue 9 item 2).
        trust_config: accept a changed ``gg.toml`` that newly weakens the boundary
            (:mod:`gg.trust`; the operator's ``--trust-config``).

    Raises:
        gg.errors.ConfigError: ``gg.toml`` changed since the workspace's last run and newly
            asks for a weakening setting (:func:`gg.trust.check`); nothing is written.

    Starting a run makes gg's process non-dumpable (issue 9 item 5) and warns on
    stderr when ``gg.toml`` or a hook script changed since the workspace's last run.
    """

    def __init__(
        self,
        *,
        workspace: Path,
        model: Model,
        settings: Settings,
        registry: Registry,
        gate: Gate,
        run_id: str | None = None,
        listeners: Sequence[Callable[[Any], None]] = (),
        isolation: str | None = None,
        configs: Sequence[Path] = (),
        trust_config: bool = False,
    ) -> None:
        make_undumpable()
        self.workspace = workspace.resolve()
        self.model = model
        self.settings = settings
        self.registry = registry
        self.gate = gate
        self.run_id = run_id or new_run_id()
        self._sandbox: Any = None
        self.sandbox_facts: dict[str, Any] = {}
        approval = trust.check(
            self.workspace, settings, configs=self._config_keys(configs), trust=trust_config
        )
        self.snapshot = self._snapshot(configs)
        """Digests of gg.toml and the hook scripts at run start (issue 9 item 2)."""
        self.config_changed = changed_since_last_run(self.snapshot)
        if self.config_changed:
            print(
                f"gg: warning: changed since this workspace's last run: "
                f"{inert(', '.join(self.config_changed))} (check them before trusting this run's "
                "settings and hooks)",
                file=sys.stderr,
            )
        self._install = install_inside(self.workspace)  # before the probe makes the sandbox
        self.isolation = isolation or self._probe()
        if self._install == self.workspace:
            raise UserError(
                "the workspace is on gg's import path (python -m gg started inside it, or "
                "PYTHONPATH): a module an agent writes there would run in the next gg, with "
                "your keys. Run the gg command, or start Python outside the workspace"
            )
        if self._install is not None and not self.isolation.startswith("bwrap"):
            raise UserError(
                f"gg's own installation ({self._install}) is inside the workspace, and the "
                f"sandbox layer in force ({self.isolation}) cannot make it read-only: an agent "
                "could change gg itself and run code in the next gg, with your keys. Install "
                "gg outside the workspace (or run where bubblewrap works)"
            )
        self._git_before = git_state(self.workspace)
        self._repos_before = nested_repos(self.workspace)
        self.ceilings = Ceilings.from_settings(settings.ceilings)
        self.budget = Budget(self.ceilings)
        self.stream = StreamWriter(  # gg writes nothing in the workspace (issue 9 item 2)
            stream_path(self.workspace, self.run_id),
            fsync=settings.stream.fsync,
            listeners=list(listeners),
        )
        approval.record()  # the run started: its config is the workspace's approved one
        warn_legacy(self.workspace)
        self._sessions = 0
        self._overviews: dict[Path, str] = {}
        self.stream.emit(
            RunStarted(
                run_id=self.run_id,
                settings=settings.model_dump(mode="json"),
                isolation=self.isolation,
                sandbox=self.sandbox_facts,
                pid=os.getpid(),
                workspace=str(self.workspace),
                commands=settings.sandbox.commands,
                config_changed=list(self.config_changed),
            )
        )

    def _config_keys(self, configs: Sequence[Path]) -> list[str]:
        """``gg.toml`` and the ``--config`` files: relative to the workspace when inside it
        (agent-writable), absolute otherwise."""
        keys = {"gg.toml"}
        for path in configs:
            real = Path(path).resolve()
            keys.add(
                real.relative_to(self.workspace).as_posix()
                if real.is_relative_to(self.workspace)
                else str(real)
            )
        return sorted(keys)

    def _snapshot(self, configs: Sequence[Path]) -> Snapshot:
        keys = set(self._config_keys(configs))
        commands = [h.command for h in self.gate.hooks if isinstance(h, CommandHook)]
        return Snapshot.take(self.workspace, configs=sorted(keys), commands=commands)

    def hook_place(self) -> HookPlace:
        """Where the run's command hooks run: its sandbox, checked against its snapshot."""
        return HookPlace(sandbox=self.sandbox, snapshot=self.snapshot)

    def _probe(self) -> str:
        """Name the sandbox layer in force (SPEC M3), or why there is none."""
        try:
            description = self.sandbox().describe()
        except Exception as e:  # reported on run_started; code mode then fails clearly
            self.sandbox_facts = {}
            return f"unavailable ({type(e).__name__}: {e})"
        self.sandbox_facts = description
        return str(description["isolation"])

    def sandbox(self) -> Any:
        """The run's sandbox (responses as code, ``run_command``, on-use scripts).

        Raises:
            gg.errors.SandboxError: if no isolation layer works here.
            gg.errors.UserError: ``GG_SANDBOX`` names no layer.
        """
        if self._sandbox is None:
            from gg.sandbox import Isolation, Limits, Sandbox

            cfg = self.settings.sandbox
            forced = None if cfg.isolation == "auto" else Isolation(cfg.isolation)
            self._sandbox = Sandbox(limits=Limits.from_settings(cfg), isolation=forced)
            # read-only under bubblewrap: gg.toml, hook scripts, .git (the operator's git
            # runs what is in it), and gg's own installation if it lies in the workspace
            extra = [self.workspace / ".git", *([self._install] if self._install else [])]
            self._sandbox.protect([*self.snapshot.inside(), *extra], root=self.workspace)
        return self._sandbox

    async def aclose(self) -> None:
        """Release the sandbox's resources, if one was made."""
        if self._sandbox is not None:
            await self._sandbox.aclose()

    def new_session_id(self) -> str:
        """The next session id of this run: ``s1``, ``s2``, ..."""
        self._sessions += 1
        return f"s{self._sessions}"

    def tool_context(
        self, workspace: Path | None = None, *, session_id: str | None = None, depth: int = 0
    ) -> ToolContext:
        """What registry tools of a session get: its workspace, the run, its id and depth."""
        return ToolContext(
            workspace=workspace or self.workspace,
            output_cap=self.settings.tools.output_cap,
            run=self,
            session_id=session_id,
            depth=depth,
        )

    def arm(self) -> ToolsetArm:
        """The toolset arm the run uses (``[tools] arm``), a filter over the registry."""
        return arm_from_settings(self.settings.tools)

    def make_mode(
        self,
        *,
        role: Role,
        mode: str,
        language: Language,
        workspace: Path | None = None,
        session_id: str | None = None,
        depth: int = 0,
    ) -> Mode:
        """Build the execution mode of a session (SPEC M1, M2)."""
        arm = self.arm()
        tools = arm.select(self.registry)
        context = self.tool_context(workspace, session_id=session_id, depth=depth)
        if mode == "code":
            from gg.modes.code import CodeMode

            return CodeMode(
                role=role,
                language=language,
                tools=tools,
                context=context,
                sandbox=self.sandbox(),
                arm=arm.name,
            )
        return ToolCallingMode(role=role, tools=tools, context=context, arm=arm.name)

    async def session(
        self,
        task: str,
        *,
        role: Role | str | None = None,
        mode: str | None = None,
        language: Language | None = None,
        parent: str | None = None,
        extra_prompt: str = "",
        workspace: Path | None = None,
        resume: SessionResult | None = None,
        depth: int = 0,
    ) -> SessionResult:
        """Run one session of this run to its ending or a ceiling.

        Args:
            task: the task text.
            role: ``standard`` or ``review``; default from ``[session] role``.
            mode: ``tool-calling`` or ``code``; default from ``[session] mode``.
            language: ``python`` or ``javascript``; default from ``[session] language``.
            parent: the spawning session's id (subagents).
            extra_prompt: appended to the system prompt.
            workspace: the session's own workspace (default: the run's).
            resume: continue this earlier session with ``task`` as the next message.
            depth: 0 for a root session; a subagent's is its parent's + 1 (SPEC T2).
        """
        s = self.settings.session
        r = Role(role) if role is not None else s.role
        ws = workspace.resolve() if workspace is not None else self.workspace
        sid = resume.session_id if resume is not None else self.new_session_id()
        m = self.make_mode(
            role=r,
            mode=mode or s.mode,
            language=language or s.language,
            workspace=ws,
            session_id=sid,
            depth=depth,
        )
        extra = "\n\n".join(p for p in (self.workspace_overview(ws), extra_prompt) if p)
        return await run_session(
            self,
            task=task,
            role=r,
            mode=m,
            parent=parent,
            extra_prompt=extra,
            workspace=ws,
            resume=resume,
            session_id=sid,
        )

    def workspace_overview(self, workspace: Path, limit: int = 40) -> str:
        """A short listing of ``workspace``'s top level for the system prompt (cached)."""
        if workspace not in self._overviews:
            try:  # names only, never following a link the agent planted (issue 9 item 1)
                with os.scandir(workspace) as entries:
                    names = sorted(
                        e.name + ("/" if e.is_dir(follow_symlinks=False) else "")
                        for e in itertools.islice(entries, 10_000)
                        if not e.name.startswith(".")
                    )
            except OSError:
                names = []
            more = f" (and {len(names) - limit} more)" if len(names) > limit else ""
            self._overviews[workspace] = (
                "## Workspace\nPaths are relative to the workspace root (e.g. 'README.md'). "
                f"Its top level: {', '.join(names[:limit]) or '(empty)'}{more}."
            )
        return self._overviews[workspace]

    def end(
        self,
        status: Literal["ended", "stopped"],
        diagnosis: str | None = None,
        *,
        exit_code: int | None = None,
    ) -> int:
        """Write ``run_ended`` and close the stream. Returns the exit code (SPEC O3):
        0 ended, 1 stopped; ``exit_code`` overrides it (130: interrupted by the operator)."""
        code = exit_code if exit_code is not None else (0 if status == "ended" else 1)
        changed = git_changes(self._git_before, git_state(self.workspace))
        changed += sorted(nested_repos(self.workspace) - self._repos_before)
        if changed and not self.stream.closed:
            print(
                f"gg: warning: this run changed or made {inert(', '.join(changed))} (git "
                "configuration, hooks or repositories in the workspace): git runs what is "
                "configured there (hooks, fsmonitor, filters). Review them before you run "
                "git in this workspace",
                file=sys.stderr,
            )
        if not self.stream.closed:
            self.stream.emit(
                RunEnded(run_id=self.run_id, status=status, exit_code=code, diagnosis=diagnosis)
            )
            self.stream.close()
        return code
