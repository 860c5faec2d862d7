"""A run: one stream, its ceilings and budget, its gate, and its sessions (SPEC §1, O1).

:class:`Run` wires the parts; the loop lives in :mod:`gg.session`. Sessions of
one run may run concurrently (``asyncio.gather``); they share the model, the
stream, the budget and the gate, and each keeps its own ceiling counts.

Seams: the loop gets the run as a :class:`~gg.session.SessionEnv` and each
session as one :class:`~gg.session.SessionSpec`; tools, skills and memories get
it as :class:`~gg.tools.registry.RunServices` (which :class:`Run` implements).
The toolset arm is resolved once per run (:attr:`Run.toolset`; again as ``async with
run:`` starts the ``[[tools.mcp]]`` servers and their tools join it). ``async with
run:`` ends the run on the way out, whatever happened (:meth:`Run.__aexit__`).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import secrets
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from gg import trust
from gg.ceilings import Budget, Ceilings
from gg.checkpoint import Continuations, Restored
from gg.config import Settings
from gg.disk import disk_full, is_disk_full
from gg.endings import Language, OutputType, Role
from gg.errors import DiskFull, UserError
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
from gg.mcp.hub import McpServers
from gg.mcp.names import capability
from gg.models.base import Model
from gg.modes.base import Mode
from gg.modes.code import CodeMode
from gg.modes.tool_calling import ToolCallingMode
from gg.onuse import NO_SCRIPT_CAPABILITIES
from gg.prompts import session_prompt
from gg.sandbox import Isolation, Limits, Sandbox
from gg.session import SessionEnv, SessionResult, SessionSpec, run_session
from gg.signals import caught, interrupted_diagnosis
from gg.skills import skills_section
from gg.state import run_dir, warn_legacy
from gg.stream import Event, RunEnded, RunStarted, StreamWriter
from gg.terminal import inert
from gg.toolhooks import StartEvent, ToolHooks, hooked, session_context
from gg.tools.arms import Toolset, ToolsetArm, arm_from_settings, resolve_toolset
from gg.tools.registry import Registry, Tool, ToolContext

__all__ = ["Run", "arm_from_settings", "new_run_id", "stream_path"]


def new_run_id() -> str:
    """A sortable, unique run id: ``YYYYMMDD-HHMMSS-xxxxxx`` (UTC)."""
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(3)


def _more_hooks(settings: Settings) -> tuple[ToolHooks, tuple[CommandHook, ...]]:
    """The run's pre-tool/post-tool hooks and its session-start hooks (SPEC H1)."""
    hooks = settings.hooks
    start = tuple(CommandHook.from_settings(h) for h in hooks.session_start)
    return ToolHooks.from_settings(hooks.pre_tool, hooks.post_tool), start


def stream_path(workspace: Path, run_id: str) -> Path:
    """The stream file of run ``run_id``: ``<state>/runs/<run_id>/stream.jsonl``.

    In the workspace's gg-private state directory, outside the workspace (SPEC §10;
    issue 9 item 2). The run's directory is created (mode 0700).

    Raises:
        UserError: a bad run id (:func:`gg.state.check_run_id`).
        gg.state.StateError: the state directory is unusable.
    """
    return run_dir(workspace, run_id) / "stream.jsonl"


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
        toolset: ``registry`` already resolved by ``[tools] arm``
            (:func:`gg.tools.arms.resolve_toolset`); default: resolved here, once.
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
        toolset: Toolset | None = None,
        configs: Sequence[Path] = (),
        trust_config: bool = False,
    ) -> None:
        make_undumpable()
        self.workspace = workspace.resolve()
        self.model = model
        self.settings = settings
        self.registry = registry
        self.gate = gate
        self.tool_hooks, self.start_hooks = _more_hooks(settings)  # SPEC H1 (gg.toolhooks)
        self.run_id = run_id or new_run_id()
        self.toolset = toolset or resolve_toolset(settings.tools, registry)
        """The run's toolset arm, resolved once: every session is offered these tools."""
        self.subagents_started = 0
        """Subagents started so far in this run, over every depth (SPEC T2)."""
        self._sandbox: Sandbox | None = None
        self._mcp: McpServers | None = None
        self.sandbox_facts: dict[str, Any] = {}
        approval = trust.check(
            self.workspace, settings, configs=self._config_keys(configs), trust=trust_config
        )
        self.snapshot = self._snapshot(configs)
        """Digests of gg.toml and the hook scripts at run start (issue 9 item 2)."""
        self.config_changed = changed_since_last_run(self.snapshot)
        self._warn_changed()
        self._install = install_inside(self.workspace)  # before the probe makes the sandbox
        self.isolation = isolation or self._probe()
        self._check_install()
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
        self._init_bookkeeping()
        self.env = self._session_env()
        """What the turn loop gets of this run (:mod:`gg.session` knows no more of it)."""
        self._started()

    def _init_bookkeeping(self) -> None:
        """Counters and caches of a new run: sessions, overviews, skills, its outcome."""
        self._sessions = 0
        self.continuations = Continuations()
        """Earlier sessions this run goes on with (``gg resume``, a board run; issue 12)."""
        self._overviews: dict[Path, str] = {}
        self._skills: dict[Path, str] = {}
        self.ended: tuple[Literal["ended", "stopped"], str | None, int] | None = None
        self._outcome: tuple[Literal["ended", "stopped"], str | None] = (
            "stopped",
            "the run ended before an outcome was given",
        )

    def _session_env(self) -> SessionEnv:
        """The parts of this run the turn loop gets (one for every session)."""
        return SessionEnv(
            run_id=self.run_id,
            model=self.model,
            stream=self.stream,
            gate=self.gate,
            hook_place=self.hook_place(),
            ceilings=self.ceilings,
            budget=self.budget,
        )

    def _warn_changed(self) -> None:
        """Warn on stderr when ``gg.toml`` or a hook script changed since the last run."""
        if self.config_changed:
            print(
                f"gg: warning: changed since this workspace's last run: "
                f"{inert(', '.join(self.config_changed))} (check them before trusting this run's "
                "settings and hooks)",
                file=sys.stderr,
            )

    def _check_install(self) -> None:
        """Refuse a gg installation the agent could change (issue 9 item 5).

        Raises:
            UserError: the workspace is on gg's import path, or gg is installed inside it
                and the sandbox layer in force cannot make it read-only.
        """
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

    def _started(self) -> None:
        """Write ``run_started`` (SPEC O1)."""
        self.stream.emit(
            RunStarted(
                run_id=self.run_id,
                settings=self.settings.model_dump(mode="json"),
                isolation=self.isolation,
                sandbox=self.sandbox_facts,
                pid=os.getpid(),
                workspace=str(self.workspace),
                commands=self.settings.sandbox.commands,
                config_changed=list(self.config_changed),
            )
        )

    def _config_keys(self, configs: Sequence[Path]) -> list[str]:
        """Name ``gg.toml``, the ``--config`` files and the Claude settings files as keyed.

        Relative to the workspace when inside it (agent-writable), absolute otherwise.
        """
        keys = {"gg.toml"}
        claude = [self.workspace / p for p in self.settings.hooks.claude_settings]  # abs stays
        for path in [*configs, *claude]:
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
        commands += self.tool_hooks.commands()  # pre-tool and post-tool (SPEC H1)
        commands += [h.command for h in self.start_hooks]
        return Snapshot.take(self.workspace, configs=sorted(keys), commands=commands)

    def hook_place(self) -> HookPlace:
        """Where the run's command hooks run: its sandbox, checked against its snapshot."""
        transcripts = run_dir(self.workspace, self.run_id) / "transcripts"  # gg-private
        return HookPlace(sandbox=self.sandbox, snapshot=self.snapshot, transcripts=transcripts)

    def _probe(self) -> str:
        """Name the sandbox layer in force (SPEC M3), or why there is none."""
        try:
            description = self.sandbox().describe()
        except Exception as e:  # reported on run_started; code mode then fails clearly
            self.sandbox_facts = {}
            return f"unavailable ({type(e).__name__}: {e})"
        self.sandbox_facts = description
        return str(description["isolation"])

    def sandbox(self) -> Sandbox:
        """The run's sandbox (responses as code, ``run_command``, on-use scripts).

        Raises:
            gg.errors.SandboxError: if no isolation layer works here.
            gg.errors.UserError: ``GG_SANDBOX`` names no layer.
        """
        if self._sandbox is None:
            cfg = self.settings.sandbox
            forced = None if cfg.isolation == "auto" else Isolation(cfg.isolation)
            self._sandbox = Sandbox(limits=Limits.from_settings(cfg), isolation=forced)
            # read-only under bubblewrap: gg.toml, hook scripts, .git (the operator's git
            # runs what is in it), and gg's own installation if it lies in the workspace
            extra = [self.workspace / ".git", *([self._install] if self._install else [])]
            self._sandbox.protect([*self.snapshot.inside(), *extra], root=self.workspace)
        return self._sandbox

    async def aclose(self) -> None:
        """Stop the run's MCP servers, then release the sandbox's resources, if one was made."""
        if self._mcp is not None:
            await self._mcp.aclose()
        if self._sandbox is not None:
            await self._sandbox.aclose()

    async def _start_mcp(self) -> None:
        """Start the ``[[tools.mcp]]`` servers; their tools join the run's toolset (SPEC T1).

        The run's registry becomes a copy of the agent's with the servers' tools, and the
        arm is resolved again against it.

        Raises:
            gg.errors.ConfigError: a server could not start; UserError: the arm names an
                MCP tool no server lists. The run is ended (exit 2) before it raises; any
                other exception ends it as :meth:`__aexit__` does.
        """
        drawn = arm_from_settings(self.settings.tools).capabilities  # None: every capability
        wanted = [
            s for s in self.settings.tools.mcp if drawn is None or capability(s.name) in drawn
        ]
        self._mcp = McpServers(wanted)  # a server the arm draws nothing from is not started
        try:
            registry = self.registry.copy()
            for cap, mcp_tool in await self._mcp.start(
                workspace=self.workspace, sandbox=self.sandbox
            ):
                registry.register(mcp_tool, capability=cap)
            try:
                self.toolset = resolve_toolset(self.settings.tools, registry)
            except UserError as e:
                raise UserError(f"[tools]: {e}") from None
            self.registry = registry
        except UserError as e:
            await self.aclose()
            self.end("stopped", f"gg could not start: {e}", exit_code=2)
            raise
        except BaseException as e:  # interrupted, or gg failed: as a run's block ending so
            await self.__aexit__(type(e), e, e.__traceback__)
            raise

    def new_session_id(self) -> str:
        """The next session id of this run: ``s1``, ``s2``, ..."""
        self._sessions += 1
        return f"s{self._sessions}"

    def tool_context(
        self,
        workspace: Path | None = None,
        *,
        session_id: str | None = None,
        depth: int = 0,
        read_only: bool = False,
    ) -> ToolContext:
        """What registry tools of a session get.

        Its workspace, the run, its id and depth, and whether it may change the
        workspace (not a reviewer's, issue 16).
        """
        return ToolContext(
            workspace=workspace or self.workspace,
            output_cap=self.settings.tools.output_cap,
            run=self,
            session_id=session_id,
            depth=depth,
            read_only=read_only,
        )

    def arm(self) -> ToolsetArm:
        """The toolset arm the run uses (``[tools] arm``), resolved once at start."""
        return self.toolset.arm

    def script_tools(self, *, session_id: str, read_only: bool) -> Sequence[Tool]:
        """The tools an on-use script's SDK offers (SPEC S13), hooked as its session's.

        The arm minus the capabilities of :data:`gg.onuse.NO_SCRIPT_CAPABILITIES`, wrapped
        in the run's tool hooks for the calling session (SPEC H1): a skill's or a
        memory's script cannot call around a ``pre_tool`` deny.
        """
        role = Role.REVIEW if read_only else Role.STANDARD
        tools = [
            t
            for t in self.toolset.without(NO_SCRIPT_CAPABILITIES)
            if t in self.toolset.tools_for(role)
        ]
        return hooked(
            tools, self.tool_hooks, role=role, session_id=session_id, place=self.hook_place()
        )

    def emit(self, event: Event) -> None:
        """Write ``event`` on the run's stream (:class:`~gg.tools.registry.RunServices`)."""
        self.stream.emit(event)

    def make_mode(self, spec: SessionSpec) -> Mode:
        """Build the execution mode of the session ``spec`` describes (SPEC M1, M2)."""
        read_only = spec.role is Role.REVIEW  # a reviewer's tools: read-only (issue 16)
        tools = hooked(
            list(self.toolset.tools_for(spec.role)), self.tool_hooks, role=spec.role,
            session_id=spec.session_id, place=self.hook_place(),
        )  # fmt: skip
        context = self.tool_context(
            spec.workspace, session_id=spec.session_id, depth=spec.depth, read_only=read_only
        )
        arm = self.toolset.arm.name
        repeats = self.ceilings.repeated_calls
        if spec.mode == "code":
            return CodeMode(
                role=spec.role,
                language=spec.language,
                tools=tools,
                context=context,
                sandbox=self.sandbox(),
                arm=arm,
                repeat_limit=repeats,
                output=spec.output,
            )
        return ToolCallingMode(
            role=spec.role,
            tools=tools,
            context=context,
            arm=arm,
            repeat_limit=repeats,
            output=spec.output,
        )

    def system_prompt(self, spec: SessionSpec, mode: Mode) -> str:
        """The whole system prompt of the session ``spec`` describes.

        The same for every session alike (root, subagent, board), by
        :func:`gg.prompts.session_prompt`.

        Raises:
            UserError: a malformed skill in the session's workspace (SPEC T3).
        """
        ws = spec.workspace
        if ws not in self._skills:
            self._skills[ws] = skills_section(self.toolset, ws)
        return session_prompt(
            spec.role,
            mode=mode.name,
            language=mode.language,
            mode_part=mode.prompt_part(),
            overview=self.workspace_overview(ws),
            parent=spec.parent,
            skills=self._skills[ws],
            instructions=spec.instructions,
        )

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
        output: OutputType | None = None,
        session_id: str | None = None,
        restored: Restored | None = None,
    ) -> SessionResult:
        """Run one session of this run to its ending or a ceiling.

        Builds the session's :class:`~gg.session.SessionSpec` (defaults from
        ``[session]``) and runs it with :meth:`start`.

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
            output: the type a Standard session's ``finish`` must carry as ``output``
                (issue 14 item 4; :class:`gg.endings.OutputType`).
            session_id: its id, taken with :meth:`new_session_id` (default: a new one).
            restored: go on from an interrupted session's checkpoints (the board, issue 12).
        """
        s = self.settings.session
        if session_id is None:
            session_id = resume.session_id if resume is not None else self.new_session_id()
        spec = SessionSpec(
            task=task,
            role=Role(role) if role is not None else s.role,
            mode=mode or s.mode,
            language=language or s.language,
            workspace=workspace.resolve() if workspace is not None else self.workspace,
            session_id=session_id,
            parent=parent,
            resume=resume,
            depth=depth,
            instructions=extra_prompt,
            output=output,
            restored=restored,
        )
        return await self.start(spec)

    async def start(self, spec: SessionSpec) -> SessionResult:
        """Run the session ``spec`` describes to its ending or a ceiling (SPEC S1).

        Raises:
            UserError: a malformed skill; gg.errors.SandboxError: code mode without a
                working sandbox.
        """
        spec = self._continued(spec)
        mode = self.make_mode(spec)
        replayed = spec.restored is not None and spec.restored.over is not None
        if self.start_hooks and not replayed:  # they add to the system prompt (SPEC H1)
            again = spec.resume is not None or spec.restored is not None
            event = StartEvent(role=spec.role, session_id=spec.session_id, workspace=spec.workspace,
                               task=spec.task, resumed=again)  # fmt: skip
            added = await session_context(self.start_hooks, event, place=self.hook_place())
            if added:
                spec = replace(spec, instructions=f"{spec.instructions}\n\n{added}".strip())
        return await run_session(self.env, spec, mode=mode, prompt=self.system_prompt(spec, mode))

    def _continued(self, spec: SessionSpec) -> SessionSpec:
        """``spec``, continuing the earlier subagent it stands for, if any (issue 12 item 4).

        A subagent of a session that continues an interrupted one, spawned with the
        same task as one the earlier session had spawned, goes on from that one's
        last checkpoint (or ends as it had ended) instead of starting again
        (:class:`gg.checkpoint.Continuations`); a ``run_resumed`` event says so.
        """
        if spec.restored is not None or spec.resume is not None:
            return spec
        earlier = self.continuations.claim(
            parent=spec.parent, task=spec.task, session_id=spec.session_id
        )
        if earlier is None:
            return spec
        self.subagents_started -= 1  # the interrupted run's count has it already
        self.emit(self.continuations.event(self.run_id, spec.session_id))
        return replace(spec, restored=earlier.restored)

    async def spawn(
        self, task: str, *, parent: str | None, workspace: Path, depth: int
    ) -> SessionResult:
        """A subagent: a Standard-role session of this run (SPEC T2; ``spawn`` tools).

        Args:
            task: its task.
            parent: the spawning session's id.
            workspace: where it works.
            depth: its depth (the parent's + 1).
        """
        return await self.session(
            task, role=Role.STANDARD, parent=parent, workspace=workspace, depth=depth
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

    ended: tuple[Literal["ended", "stopped"], str | None, int] | None
    """How :meth:`end` ended the run: status, diagnosis, exit code (``None`` before)."""

    def end(
        self,
        status: Literal["ended", "stopped"],
        diagnosis: str | None = None,
        *,
        exit_code: int | None = None,
    ) -> int:
        """Write ``run_ended`` and close the stream.

        Returns the exit code (SPEC O3): 0 ended, 1 stopped; ``exit_code`` overrides it
        (130: interrupted by the operator).
        """
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
        self.ended = (status, diagnosis, code)
        if not self.stream.closed:
            with contextlib.suppress(DiskFull):  # a full disk: the stream ends without it
                self.stream.emit(
                    RunEnded(run_id=self.run_id, status=status, exit_code=code, diagnosis=diagnosis)
                )
            with contextlib.suppress(OSError, DiskFull):
                self.stream.close()
        return code

    def conclude(self, status: Literal["ended", "stopped"], diagnosis: str | None) -> None:
        """Give the outcome ``async with run:`` ends the run with (SPEC O3)."""
        self._outcome = (status, diagnosis)

    async def __aenter__(self) -> Run:
        """Start the run's MCP servers (``[[tools.mcp]]``), if any.

        Raises:
            gg.errors.ConfigError: a server could not start (the run is ended, exit 2).
        """
        if self.settings.tools.mcp:
            await self._start_mcp()
        return self

    async def __aexit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Release the sandbox, then end the run.

        With the outcome :meth:`conclude` gave, or, when the block raised, stopped as
        interrupted (``128 + signal``: 130 Ctrl-C or cancelled, 143 SIGTERM, 129 SIGHUP;
        :mod:`gg.signals`), by a full disk (1, the diagnosis names the disk; issue 12) or
        as failed in gg (1). The exception goes on.
        """
        await self.aclose()
        if e is None:
            self.end(*self._outcome)
            return
        if isinstance(e, asyncio.CancelledError | KeyboardInterrupt):
            signum = caught()
            self.end(
                "stopped", interrupted_diagnosis(signum, self.run_id), exit_code=128 + (signum or 2)
            )
        elif is_disk_full(e):
            full = e if isinstance(e, DiskFull) else disk_full(self.stream.path, "the stream", e)
            self.end("stopped", str(full), exit_code=1)
        else:
            self.end("stopped", f"gg failed: {type(e).__name__}: {e}", exit_code=1)
