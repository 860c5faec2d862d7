"""The Python API: build an agent in a few lines and run it (SPEC C2).

Example::

    import gg

    agent = gg.Agent(model="scripted:replies.json", workspace="examples/tiny")
    result = agent.run("Make the failing test pass.")
    print(result.status, result.ending, result.diagnosis)

Everything ``gg run`` does goes through :class:`Agent`: the CLI parses its
flags into the same keyword arguments. Bad settings raise
:class:`gg.errors.UserError` (or its subclass ``ConfigError``) from the
constructor, before anything is written.

Beyond ``run``/``arun`` (issue 14 item 4): :meth:`Agent.stream` yields the run's typed
events as they happen, then its :class:`RunResult`; ``Agent(output_type=Model)`` makes
``finish`` carry a validated ``output`` (``result.output``); :meth:`Agent.tool`
registers a function as a registry tool. ``Agent(otel=True)``, or the standard
``OTEL_*`` environment, traces runs as OpenTelemetry spans (:mod:`gg.otel`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal, TypeAlias, TypedDict, TypeVar, overload

from gg.ceilings import Diagnosis
from gg.config import Settings, load_settings, settings_from_dict, with_claude_hooks
from gg.disk import is_disk_full
from gg.endings import Ending, Finish, Language, OutputType, Role
from gg.errors import ConfigError, ToolError, UserError
from gg.hooks import CallableHook, CommandHook, Gate
from gg.mcp import names as mcp_names
from gg.memory import MEMORY_TOOLS
from gg.models.base import Model
from gg.models.factory import model_from_spec, spec_has_price
from gg.models.recording import RecordingModel, check_target
from gg.run import Run
from gg.sandbox.host import host_facts
from gg.session import SessionResult
from gg.signals import Interrupt, cancel_on_signals
from gg.skills import SKILL_TOOLS, skills_section
from gg.stream import Event
from gg.telemetry import otel_listeners
from gg.tools.agents import AGENT_TOOLS
from gg.tools.arms import Toolset, resolve_toolset
from gg.tools.builtins import default_registry
from gg.tools.registry import Registry, Tool, ToolAccess, tool
from gg.tools.safefs import open_beneath

__all__ = ["Agent", "AgentOptions", "RunResult", "StreamItem"]

Hook = CommandHook | CallableHook | Callable[..., Any]
_F = TypeVar("_F", bound=Callable[..., Any])


@dataclass(frozen=True, slots=True, kw_only=True)
class RunResult:
    """The outcome of a run (the ``--json`` object of SPEC §10).

    Attributes:
        run_id: the run's id.
        status: ``"ended"`` or ``"stopped"``.
        ending: the root session's typed ending, ``None`` when stopped.
        diagnosis: why it stopped, ``None`` when ended.
        stream: the stream file.
        session: the root session's result.
    """

    type: ClassVar[Literal["result"]] = "result"
    """Tells the result from the events :meth:`Agent.stream` yields before it."""
    run_id: str
    status: Literal["ended", "stopped"]
    ending: Ending | None
    diagnosis: str | None
    stream: Path
    session: SessionResult
    signal: int | None = None
    """The stop signal that interrupted the run (:mod:`gg.signals`), else ``None``."""

    @property
    def output(self) -> Any:
        """The validated ``output`` of the root session's ``finish`` (``Agent(output_type=...)``).

        An instance of the agent's ``output_type``; ``None`` when the run stopped or the
        agent has no output type (issue 14 item 4).
        """
        return self.ending.output if isinstance(self.ending, Finish) else None

    @property
    def exit_code(self) -> int:
        """The process exit code (SPEC O3, issue 12).

        0 when ended by an ending, 1 when stopped, ``128 + signal`` when a signal
        stopped it: 130 SIGINT, 143 SIGTERM, 129 SIGHUP.
        """
        if self.signal is not None:
            return 128 + self.signal
        return 0 if self.status == "ended" else 1

    def to_json(self) -> dict[str, Any]:
        """``{"run_id", "status", "ending", "diagnosis", "stream"}`` exactly as SPEC §10."""
        return {
            "run_id": self.run_id,
            "status": self.status,
            "ending": None if self.ending is None else self.ending.record(),
            "diagnosis": self.diagnosis,
            "stream": str(self.stream),
        }


StreamItem: TypeAlias = Event | RunResult
"""What :meth:`Agent.stream` yields: the run's events as they are written, then its result."""


def _output_type(kind: object | None, role: Role) -> OutputType | None:
    """The :class:`gg.endings.OutputType` of ``Agent(output_type=...)``.

    Raises:
        UserError: pydantic cannot validate the type or make its JSON Schema; the agent's
            role is Review (it ends with a verdict, not ``finish``: SPEC S2).
    """
    if kind is None:
        return None
    if role is Role.REVIEW:
        raise UserError(
            "output_type needs the standard role: its output rides on finish, and a "
            "reviewer ends with approve or request_changes (SPEC S2)"
        )
    try:
        return OutputType(kind)
    except TypeError as e:
        raise UserError(str(e)) from None


def _merge(settings: Settings, overrides: dict[str, dict[str, Any]]) -> Settings:
    data = settings.model_dump(mode="json")
    for section, values in overrides.items():
        data.setdefault(section, {}).update({k: v for k, v in values.items() if v is not None})
    return settings_from_dict(data, source="settings")


def _writable(path: Path) -> Path:
    """``path`` if a recording can be written there (for ``--record``), else UserError."""
    return check_target(path)


def _need_runtime(settings: Settings) -> None:
    """UserError before anything is written when the language arm's runtime is missing."""
    session = settings.session
    if session.mode == "code" and session.language == "javascript" and host_facts().deno is None:
        raise UserError(
            "--language javascript: JavaScript programs need Deno and none was found: "
            "install the PyPI package 'deno' (or set GG_DENO to a deno binary)"
        )


def _record_dir(workspace: Path, path: Path) -> int | None:
    """Open ``--record``'s directory beneath ``workspace`` when the path lies in it.

    No link leaving the workspace is followed (an agent may have planted one); ``None``
    when the path is outside the workspace.

    Raises:
        UserError: the directory is missing, not a directory, or reached through a link
            that leaves the workspace.
    """
    absolute = Path(os.path.normpath(Path.cwd() / path)).parent
    if not absolute.is_relative_to(workspace):
        return None
    try:
        return open_beneath(
            workspace, absolute.relative_to(workspace).as_posix() or ".", kind="directory"
        )
    except ToolError as e:
        raise UserError(f"--record: cannot write {str(path)!r}: {e}") from None


def _hook(h: Hook) -> CommandHook | CallableHook:
    if isinstance(h, CommandHook | CallableHook):
        return h
    if callable(h):
        return CallableHook(fn=h, name=getattr(h, "__name__", "hook"))
    raise UserError(f"a hook must be a CommandHook, a CallableHook or a callable, not {h!r}")


class AgentOptions(TypedDict, total=False):
    """The :class:`Agent` options another driver passes through unchanged (issue 10 item 4).

    :class:`gg.board.Board` takes these as keywords (``Board(repo, model=..., mode="code")``)
    and hands them to the :class:`Agent` it runs its sessions with, so it declares none
    of them again; ``tests/test_seams.py`` pins every key to :class:`Agent`'s own
    parameter of the same name and type. ``workspace`` and ``role`` are the driver's.
    """

    model: str | Model | None
    settings: Settings | None
    config: str | Path | None
    mode: str | None
    language: Language | None
    ceilings: dict[str, Any] | None
    tools: Sequence[Callable[..., Any] | Tool]
    hooks: Sequence[Hook]
    listeners: Sequence[Callable[[Any], None]]
    record: str | Path | None
    progress: Callable[[str], None] | None
    constrained: bool | None
    on_delta: Callable[[str], None] | None
    trust_config: bool
    otel: bool | None


class Agent:
    """An agent: a model, a workspace, tools, hooks and settings, ready to run tasks.

    Args:
        model: a model spec (``"local"``, ``"scripted:PATH"``, ``"openai:MODEL"``,
            ``"anthropic:MODEL"``, ``"openai-compat:MODEL@URL"``) or a :class:`Model`.
            Default: ``[model] spec`` from settings (``"local"``).
        workspace: the directory the agent works in; must exist.
        settings: explicit settings; default: ``gg.toml`` in the workspace or ``config``.
        config: a ``gg.toml`` path (instead of the workspace's).
        role, mode, language: override ``[session]`` (SPEC §10).
        ceilings: overrides for ``[ceilings]``, e.g. ``{"max_turns": 10}``.
        tools: extra registry tools: functions (schema from hints and docstring) or
            :class:`Tool` objects, offered under the ``user`` capability.
        hooks: extra agent-stop hooks: callables ``(StopEvent) -> None|bool|str|dict``
            or hook objects (SPEC H1), run after the ``gg.toml`` ones.
        listeners: callables that get every stream event as it is written.
        record: write the run's replies to this file in the scripted format.
        progress: called with short status lines while a local model loads.
        constrained: override ``[model] constrained`` (local model grammar, SPEC M5).
        on_delta: called with reply text as a streaming provider sends it (progress).
        trust_config: accept a ``gg.toml`` that changed since the workspace's last run and
            newly weakens the boundary (:mod:`gg.trust`; the CLI's ``--trust-config``).
        output_type: the type the root session's ``finish`` must carry as ``output``
            beside its summary (a pydantic model, a dataclass, ``list[str]``...): the
            offered ``finish`` schema includes it, an output that does not validate is
            refused by shape (SPEC S4), and ``RunResult.output`` is the validated value.
            Subagents and reviewers are not affected.
        otel: trace runs as OpenTelemetry GenAI spans (:mod:`gg.otel`, the ``otel``
            extra); ``None`` (the default): on only when the ``OTEL_*`` environment asks
            for traces (:func:`gg.telemetry.otel_wanted`). For your own tracer provider, pass
            ``gg.otel.OtelListener(tracer_provider=...)`` in ``listeners`` instead.

    Raises:
        UserError: a missing workspace, a bad model spec, a bad setting, an output type
            with no JSON Schema, OpenTelemetry on but not installed.
        ConfigError: a bad ``gg.toml`` key (names it).

    Example::

        agent = gg.Agent(model="scripted:replies.json", workspace="examples/tiny")

        @agent.tool
        def word_count(text: str) -> int:
            '''Count the words in a text.'''
            return len(text.split())

        result = agent.run("How many words are in README.md?")
    """

    def __init__(
        self,
        *,
        model: str | Model | None = None,
        workspace: str | Path = ".",
        settings: Settings | None = None,
        config: str | Path | None = None,
        role: Role | str | None = None,
        mode: str | None = None,
        language: Language | None = None,
        ceilings: dict[str, Any] | None = None,
        tools: Sequence[Callable[..., Any] | Tool] = (),
        hooks: Sequence[Hook] = (),
        listeners: Sequence[Callable[[Any], None]] = (),
        record: str | Path | None = None,
        progress: Callable[[str], None] | None = None,
        constrained: bool | None = None,
        on_delta: Callable[[str], None] | None = None,
        trust_config: bool = False,
        output_type: object | None = None,
        otel: bool | None = None,
    ) -> None:
        ws = Path(workspace).expanduser()
        if not ws.is_dir():
            raise UserError(f"workspace {str(ws)!r} does not exist or is not a directory")
        self.workspace = ws.resolve()
        self.configs: tuple[Path, ...] = (Path(config).expanduser(),) if config else ()
        base = settings or load_settings(Path(config) if config else None, workspace=self.workspace)
        base = with_claude_hooks(base, self.workspace)  # idempotent: settings given as objects
        spec = model if isinstance(model, str) else getattr(model, "name", None)
        self.settings = _merge(
            base,
            {
                "model": {"spec": spec, "constrained": constrained},
                "session": {"role": role, "mode": mode, "language": language},
                "ceilings": dict(ceilings or {}),
            },
        )
        self._spec_given = model is not None
        self.trust_config = trust_config
        self.output: OutputType | None = _output_type(output_type, self.settings.session.role)
        """The root session's ``finish`` output type (``output_type``), if any."""
        self.registry: Registry = self._registry(tools)
        self._check_budget()
        _need_runtime(self.settings)
        self.model: Model = self._model(model, record, progress, on_delta)
        self.hooks: list[CommandHook | CallableHook] = [
            self._toml_hook(h) for h in self.settings.hooks.agent_stop
        ]
        self.hooks += [_hook(h) for h in hooks]
        self.listeners = [*listeners, *otel_listeners(otel)]
        self.toolset: Toolset = self._check_arm()
        """The toolset arm resolved once (SPEC §1); every run of this agent offers it."""
        skills_section(self.toolset, self.workspace)  # a malformed skill: UserError now

    def _registry(self, tools: Sequence[Callable[..., Any] | Tool]) -> Registry:
        """The built-ins, the opt-in capabilities the settings name, and ``tools``."""
        registry = default_registry()
        wanted = {
            *self.settings.tools.capabilities,
            *(c for a in self.settings.tools.arms.values() for c in a.capabilities or ()),
        }
        for cap, extra in (
            ("agents", AGENT_TOOLS),
            ("skills", SKILL_TOOLS),
            ("memory", MEMORY_TOOLS),
        ):
            for extra_tool in extra if cap in wanted else ():  # opt-in: no name clashes
                registry.register(extra_tool, capability=cap)
        for t in tools:
            registry.register(t if isinstance(t, Tool) else tool(t), capability="user")
        for server in self.settings.tools.mcp:  # their tools come when a run starts (gg.mcp)
            registry.declare(
                mcp_names.capability(server.name), prefix=mcp_names.prefix(server.name)
            )
        return registry

    def _model(
        self,
        model: str | Model | None,
        record: str | Path | None,
        progress: Callable[[str], None] | None,
        on_delta: Callable[[str], None] | None,
    ) -> Model:
        """The model given or made from the spec, recording to ``record`` when set."""
        target = None if record is None else _writable(Path(record))
        made = (
            model
            if model is not None and not isinstance(model, str)
            else self._make_model(progress, on_delta)
        )
        if target is None:
            return made
        return RecordingModel(made, target, dir_fd=_record_dir(self.workspace, target))

    def _make_model(
        self, progress: Callable[[str], None] | None, on_delta: Callable[[str], None] | None
    ) -> Model:
        m = self.settings.model
        extra: dict[str, Any] = {"max_tokens": m.max_output_tokens} if m.max_output_tokens else {}
        extra |= {"model": m.local} if m.local else {}
        extra |= {"model_path": m.path} if m.path else {}
        extra |= {"n_threads": m.threads} if m.threads and m.spec.startswith("local") else {}
        if m.spec.startswith("openai-compat:"):
            extra["text_tools"] = "auto" if m.text_tool_calls else False
        if on_delta is not None:
            extra["on_delta"] = on_delta
        try:
            return model_from_spec(
                m.spec,
                prices={k: v.model_dump(exclude_none=True) for k, v in m.prices.items()},
                constrained=m.constrained,
                progress=progress,
                timeout_s=m.timeout_s,
                max_retries=m.max_retries,
                prompt_cache=m.prompt_cache,
                tool_choice=m.tool_choice,
                **extra,
            )
        except UserError as e:  # name the key when the spec came from gg.toml
            raise UserError(str(e) if self._spec_given else f"model.spec: {e}") from None

    @staticmethod
    def _toml_hook(h: Any) -> CommandHook:
        return CommandHook.from_settings(h)

    def _check_arm(self) -> Toolset:
        tools = self.settings.tools
        if self.registry.capabilities.get("user") and "user" not in tools.capabilities:
            self.settings = _merge(
                self.settings, {"tools": {"capabilities": [*tools.capabilities, "user"]}}
            )
        try:
            return resolve_toolset(self.settings.tools, self.registry)
        except UserError as e:
            raise UserError(f"[tools]: {e}") from None

    def _check_budget(self) -> None:
        c, m = self.settings.ceilings, self.settings.model
        if c.max_cost and not spec_has_price(
            m.spec, {k: v.model_dump() for k, v in m.prices.items()}
        ):
            raise ConfigError(
                "ceilings.max_cost is set but neither [model.prices] nor the price table "
                "(genai-prices, the providers extra) prices the model, so every reply would "
                "cost 0 and the budget could never trip: add a price for the model",
                key="ceilings.max_cost",
            )

    @overload
    def tool(self, fn: _F, /) -> _F: ...
    @overload
    def tool(
        self,
        fn: None = None,
        /,
        *,
        name: str | None = None,
        description: str | None = None,
        access: ToolAccess = "write",
    ) -> Callable[[_F], _F]: ...

    def tool(
        self,
        fn: _F | None = None,
        /,
        *,
        name: str | None = None,
        description: str | None = None,
        access: ToolAccess = "write",
    ) -> _F | Callable[[_F], _F]:
        """Register a function as a registry tool of this agent (SPEC T1; issue 14 item 4).

        Use as ``@agent.tool`` or ``@agent.tool(name=..., access="read")``. The schema
        comes from the signature and the docstring as for :func:`gg.tool`; the tool is
        offered under the ``user`` capability in both execution modes (tool-calling: a
        tool; responses as code: ``gg.tools.<name>(...)``) from the next run on. The
        function is returned unchanged, so it stays callable from Python.

        Args:
            fn: a sync or async function taking its arguments by keyword.
            name: the tool's name (default: the function's).
            description: what it does (default: the docstring's text before its sections).
            access: ``"read"``, ``"command"`` or ``"write"`` (:attr:`gg.Tool.access`):
                only ``"read"`` and ``"command"`` tools are offered to reviewers.

        Returns:
            ``fn`` (or, without it, a decorator that registers and returns its function).

        Raises:
            UserError: the name is an ending call or taken, a parameter has no schema, or
                the ``[tools]`` arm no longer resolves.
        """

        def register(f: _F) -> _F:
            made = tool(name=name, description=description, access=access)(f)
            self.registry.register(made, capability="user")
            self.toolset = self._check_arm()
            return f

        return register if fn is None else register(fn)

    def new_run(
        self, *, run_id: str | None = None, listeners: Sequence[Callable[[Event], None]] = ()
    ) -> Run:
        """A new :class:`Run` with this agent's model, settings, tools and hooks.

        Use it as ``async with agent.new_run() as run:`` (then ``run.conclude(...)``):
        the run ends on the way out however the block left (:meth:`Run.__aexit__`).
        ``listeners`` get this run's events besides the agent's own listeners.
        """
        return Run(
            workspace=self.workspace,
            model=self.model,
            settings=self.settings,
            registry=self.registry,
            gate=Gate(self.hooks),
            run_id=run_id,
            listeners=[*self.listeners, *listeners],
            toolset=self.toolset,
            configs=self.configs,
            trust_config=self.trust_config,
        )

    async def arun(self, task: str, *, signals: bool = False) -> RunResult:
        """Run ``task`` in a new run's root session (async). Never raises for model output.

        Args:
            task: the task text.
            signals: let SIGINT, SIGTERM and SIGHUP stop the run cleanly (the CLI's
                way, :mod:`gg.signals`): the result is then ``stopped`` with the signal
                in its diagnosis and exit code ``128 + signal``.

        A full disk (the stream, the workspace) stops the run too: ``stopped``, the
        diagnosis naming the disk (issue 12 item 1).

        Raises:
            UserError: an empty task, or a bad setting found when the run starts.
        """
        if not task.strip():
            raise UserError("the task is empty")
        return await self.arun_session(
            lambda run: run.session(task, output=self.output), signals=signals
        )

    def stream(self, task: str) -> AsyncGenerator[StreamItem, None]:
        """Run ``task`` and yield its typed events as they happen, then its :class:`RunResult`.

        Every event the run's stream records (SPEC O1: ``gg.stream`` types such as
        ``TurnEvent``, ``ToolCalled``, ``GateBlocked``...) is yielded in order once it is
        written, then the result, last. The run starts on the first iteration and
        goes on while the caller is busy (events wait in an unbounded queue).
        Closing the iterator early (``aclose()``, or leaving an
        ``async with contextlib.aclosing(...)`` block) cancels the run cleanly: it
        ends ``stopped`` as interrupted (``run_ended`` written, sandbox released).

        Args:
            task: the task text.

        Returns:
            An async generator of :data:`StreamItem` (``aclose()`` stops the run).

        Raises:
            UserError: an empty task (at once), or a bad setting found when the run
                starts (from the iteration).

        Example::

            async with contextlib.aclosing(agent.stream("Fix the test.")) as items:
                async for item in items:
                    if isinstance(item, gg.RunResult):
                        print(item.status)
                    else:
                        print(item.type)
        """
        if not task.strip():
            raise UserError("the task is empty")
        return self._stream(task)

    async def _stream(self, task: str) -> AsyncGenerator[StreamItem, None]:
        """The generator behind :meth:`stream`: a run in its own task, its events relayed."""
        queue: asyncio.Queue[Event | None] = asyncio.Queue()
        runner = asyncio.ensure_future(
            self.arun_session(
                lambda run: run.session(task, output=self.output), listeners=[queue.put_nowait]
            )
        )
        runner.add_done_callback(lambda _: queue.put_nowait(None))  # after its last event
        try:
            while (event := await queue.get()) is not None:
                yield event
            yield runner.result()  # the run's own exception, if it raised
        finally:
            if not runner.done():  # closed early: cancel the run and let it end cleanly
                runner.cancel()
                await asyncio.wait([runner])

    async def arun_session(
        self,
        start: Callable[[Run], Awaitable[SessionResult]],
        *,
        signals: bool = False,
        listeners: Sequence[Callable[[Event], None]] = (),
    ) -> RunResult:
        """Run the root session ``start(run)`` gives, in a new run.

        ``arun``, ``stream`` and ``gg resume`` share it; signals and a full disk as in
        :meth:`arun`; ``listeners`` get this run's events (:meth:`new_run`).
        """
        run = self.new_run(listeners=listeners)
        with cancel_on_signals() if signals else contextlib.nullcontext(Interrupt()) as caught:
            try:
                async with run:
                    session = await start(run)
                    diagnosis = str(session.diagnosis) if session.diagnosis else None
                    run.conclude(session.status, diagnosis)
            except asyncio.CancelledError:
                if caught.signum is None:
                    raise
                _uncancel()
                return self._stopped(run, signal=caught.signum)
            except Exception as e:
                if not is_disk_full(e):
                    raise
                return self._stopped(run, signal=None)
        return RunResult(
            run_id=run.run_id,
            status=session.status,
            ending=session.ending,
            diagnosis=diagnosis,
            stream=run.stream.path,
            session=session,
        )

    def _stopped(self, run: Run, *, signal: int | None) -> RunResult:
        """The result of a run that a signal or a full disk stopped (``run.end`` wrote it)."""
        diagnosis = run.ended[1] if run.ended else "the run stopped"
        session = SessionResult(
            session_id="s1",
            role=self.settings.session.role,
            status="stopped",
            ending=None,
            diagnosis=Diagnosis(ceiling=None, message=diagnosis or "the run stopped"),
            turns=0,
            workspace=self.workspace,
        )
        return RunResult(
            run_id=run.run_id,
            status="stopped",
            ending=None,
            diagnosis=diagnosis,
            stream=run.stream.path,
            session=session,
            signal=signal,
        )

    def run(self, task: str, *, signals: bool = False) -> RunResult:
        """Run ``task`` to its ending or a ceiling (blocking wrapper of :meth:`arun`)."""
        return asyncio.run(self.arun(task, signals=signals))


def _uncancel() -> None:
    """The signal's cancellation was handled: the task goes on as not cancelled."""
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()
