"""Registry tools: the :class:`Tool` record, the :func:`tool` decorator, the :class:`Registry`.

A **registry tool** (SPEC §1, T1) is a named function the model may call.
Capabilities offer tools to the shared :class:`Registry`; a toolset arm
(:mod:`gg.tools.arms`) filters it. Ending calls (``finish``, ``approve``,
``request_changes`` / ``requestChanges``) are never registry tools: a tool by
one of those names is refused with :class:`gg.errors.UserError` (SPEC §1).

The contract of a call, as the session loop uses it::

    args = tool.validate(raw)        # ArgumentsError -> error turn `bad_arguments` (S5)
    text = await tool.call(args, ctx)  # ToolError -> failed tool result, model sees message

:meth:`FunctionTool.call` wraps *any* ``Exception`` raised by the user's
function into :class:`gg.errors.ToolError` (``"<name> raised ValueError: ..."``),
so the caller only ever handles ``ToolError``; ``BaseException`` such as
``asyncio.CancelledError`` passes through. Plain sync functions run inline on
the event loop (no thread: a call costs a few microseconds); a sync function
that blocks for long blocks the loop, so write slow tools as ``async def``.
"""

from __future__ import annotations

import copy
import inspect
import json
import keyword
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias, get_type_hints, overload

import docstring_parser
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model
from pydantic_core import SchemaValidator

from gg.config import Settings, ToolsSettings
from gg.endings import Ending, is_ending_name
from gg.errors import DiskFull, GGError, ToolError, UserError
from gg.guard import Snapshot
from gg.models.base import ToolSpec
from gg.stream import Event

if TYPE_CHECKING:  # an annotation only: the sandbox package is loaded by the run
    from gg.sandbox import Sandbox
from gg.text import cut

__all__ = [
    "ArgumentsError",
    "FunctionTool",
    "Registry",
    "RunServices",
    "SessionOutcome",
    "Tool",
    "ToolAccess",
    "ToolContext",
    "tool",
]

_MAX_NAME = 64

ToolAccess: TypeAlias = Literal["read", "write", "command"]
"""What a tool may do to the workspace (:attr:`Tool.access`)."""
_ENDING_REFUSAL = "ending calls are never registry tools (SPEC §1)"


class SessionOutcome(Protocol):
    """What a tool learns of a session it started (a subagent, SPEC T2).

    :class:`gg.SessionResult` is one.
    """

    @property
    def session_id(self) -> str:
        """The session's id in the run's stream."""

    @property
    def turns(self) -> int:
        """How many turns it took."""

    @property
    def ending(self) -> Ending | None:
        """Its ending when it ended; ``None`` when it was stopped."""

    @property
    def diagnosis(self) -> object:
        """Why it stopped (its ``str`` is the operator's text), ``None`` when it ended."""


class RunServices(Protocol):
    """What the run lends to tools, skills and memories.

    The one seam between a tool call and the :class:`gg.Run` it runs in
    (:class:`gg.Run` implements it).

    It promises nothing about sessions beyond :meth:`spawn`, and nothing about the
    stream beyond :meth:`emit`: a tool never sees the model, the gate or the budget.
    """

    @property
    def run_id(self) -> str:
        """The run's id."""

    @property
    def workspace(self) -> Path:
        """The run's workspace (resolved); a session's own may be a worktree beneath it."""

    @property
    def settings(self) -> Settings:
        """The run's effective settings (read-only by contract)."""

    @property
    def snapshot(self) -> Snapshot:
        """The digests of ``gg.toml`` and the hook scripts taken at run start (issue 9)."""

    subagents_started: int
    """Subagents started so far in this run, over every depth (``[agents]``, SPEC T2)."""

    def sandbox(self) -> Sandbox:
        """The run's sandbox, made on first use.

        Raises:
            gg.errors.SandboxError: no isolation layer works here.
        """

    def script_tools(self, *, session_id: str, read_only: bool) -> Sequence[Tool]:
        """The tools an on-use script's SDK offers (SPEC S13).

        The run's arm minus the ``agents``, ``skills`` and ``memory`` capabilities, with
        the run's ``pre_tool``/``post_tool`` hooks around them exactly as for the calling
        session ``session_id`` (a Review session's when ``read_only``): a script gets no
        way around a hook its session has (SPEC H1).
        """

    def emit(self, event: Event) -> None:
        """Write ``event`` on the run's stream."""

    async def spawn(
        self, task: str, *, parent: str | None, workspace: Path, depth: int
    ) -> SessionOutcome:
        """Run a Standard-role session of this run to its ending or a ceiling (SPEC T2).

        Args:
            task: the session's task.
            parent: the spawning session's id.
            workspace: where it works.
            depth: its depth (the parent's + 1).

        Returns:
            How it ended.

        Raises:
            gg.errors.GGError: the session could not start (e.g. a malformed skill).
        """


@dataclass(frozen=True, kw_only=True)
class ToolContext:
    """What a tool call may know about where it runs.

    The workspace is resolved once here (symlinks followed) so path checks can
    compare resolved paths.
    """

    workspace: Path
    """The session's workspace: absolute, resolved. Tool paths are relative to it."""
    output_cap: int = ToolsSettings().output_cap
    """Most characters of a tool's result text; longer results are cut with a marker."""
    run: RunServices | None = None
    """The run the calling session belongs to, through its narrow seam (``None`` outside
    a run)."""
    session_id: str | None = None
    """The calling session's id (the parent of any subagent it spawns, SPEC T2)."""
    depth: int = 0
    """How deep the calling session is: 0 for a root session, 1 for its subagents..."""
    turn: int | None = None
    """The calling turn (its number in the session), so events a tool causes (an on-use
    script's) carry it; ``None`` outside a turn."""
    read_only: bool = False
    """The workspace must not change through this call (a Review session, issue 16): a
    ``command`` tool runs its command in a read-only sandbox, a ``write`` tool refuses."""

    def __post_init__(self) -> None:
        if self.output_cap < 1:
            raise UserError(f"output_cap must be at least 1, got {self.output_cap!r}")
        object.__setattr__(self, "workspace", Path(self.workspace).resolve())

    def at_turn(self, turn: int | None) -> ToolContext:
        """This context for a call of ``turn``: the same fields, the workspace as resolved.

        One per tool call (``dataclasses.replace`` would resolve the workspace again,
        a walk of the file system each time).
        """
        context = copy.copy(self)
        object.__setattr__(context, "turn", turn)
        return context


class ArgumentsError(GGError):
    """A tool call's arguments do not fit the tool's schema (SPEC S5: ``bad_arguments``).

    The message is written for the model: one problem per field, then what the
    tool takes.

    Attributes:
        tool: the tool's name.
        problems: one line per problem, each naming its field.
    """

    def __init__(self, message: str, *, tool: str, problems: tuple[str, ...]) -> None:
        super().__init__(message)
        self.tool = tool
        self.problems = problems


def result_text(value: object) -> str:
    """Turn a tool function's return value into the text the model sees.

    ``str`` as is; ``None`` as ``"(no output)"``; ``bytes`` decoded as UTF-8;
    pydantic models and JSON-able values as JSON; anything else by ``str()``.
    """
    if isinstance(value, str):
        return value
    if value is None:
        return "(no output)"
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    if isinstance(value, dict | list | tuple | int | float | bool):
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)


def check_tool_name(name: str) -> None:
    """Refuse names a model or an SDK cannot call, and ending calls (SPEC §1).

    Raises:
        UserError: ``name`` is an ending call, not an identifier, a Python
            keyword, or longer than 64 characters.
    """
    if is_ending_name(name):
        raise UserError(f"a tool cannot be named {name!r}: {_ENDING_REFUSAL}")
    if not name.isidentifier() or not name.isascii() or keyword.iskeyword(name):
        raise UserError(
            f"tool name {name!r} is not usable: it must be an ASCII identifier "
            "(letters, digits, '_'; not starting with a digit) and not a Python keyword"
        )
    if len(name) > _MAX_NAME:
        raise UserError(f"tool name {name!r} is longer than {_MAX_NAME} characters")


@dataclass(frozen=True, kw_only=True)
class Tool:
    """A registry tool: name, description, JSON Schema parameters; validate, then call.

    This base class is the interface; :class:`FunctionTool` (made by
    :func:`tool`) implements it for Python functions. Other kinds (MCP) subclass it.
    """

    name: str
    """What the model calls it: an ASCII identifier, never an ending call."""
    description: str
    """What it does, for the model."""
    parameters: dict[str, Any]
    """JSON Schema (``"type": "object"``) of its arguments. Do not mutate."""
    access: ToolAccess = "write"
    """What it may do to the workspace: ``"read"`` (never changes it), ``"command"`` (runs
    commands: changes it unless its :class:`ToolContext` is ``read_only``, where it runs
    them in a read-only sandbox) or ``"write"`` (may change it; the default for any tool
    that does not say). A Review session is offered ``read`` and ``command`` tools only
    (SPEC S2, issue 16); a ``write`` or ``command`` call that succeeds counts as a change
    of the workspace for the repeated-call check (:mod:`gg.progress`)."""

    def __post_init__(self) -> None:
        check_tool_name(self.name)

    def spec(self) -> ToolSpec:
        """The tool as offered to a model (SPEC M4)."""
        return ToolSpec(name=self.name, description=self.description, parameters=self.parameters)

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Check and convert a call's arguments.

        Returns:
            The arguments by name, converted to the parameter types, defaults filled in.

        Raises:
            ArgumentsError: the arguments do not fit the schema (SPEC S5).
        """
        raise NotImplementedError

    async def call(self, arguments: dict[str, Any], ctx: ToolContext) -> str:
        """Run the tool on arguments returned by :meth:`validate`.

        Returns:
            The result text, at most ``ctx.output_cap`` characters.

        Raises:
            gg.errors.ToolError: the tool failed; the message is for the model.
        """
        raise NotImplementedError


@dataclass(frozen=True, kw_only=True)
class FunctionTool(Tool):
    """A registry tool backed by a Python function (sync or async). Made by :func:`tool`."""

    fn: Callable[..., Any] = field(repr=False, compare=False)
    """The user's function, called with the validated arguments by keyword."""
    validator: SchemaValidator = field(repr=False, compare=False)
    """Precomputed pydantic validator of the argument model."""
    ctx_param: str | None = field(default=None, compare=False)
    """The name of the function's :class:`ToolContext` parameter, if it takes one."""
    renames: tuple[tuple[str, str], ...] = field(default=(), repr=False, compare=False)
    """``(model field, parameter)`` pairs, for parameters pydantic cannot name as fields."""

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Check and convert arguments with the precomputed pydantic validator (SPEC S5).

        Raises:
            ArgumentsError: not an object, a missing or unexpected argument, a wrong type.
        """
        if not isinstance(arguments, Mapping):
            problem = f"the arguments must be a JSON object, got {type(arguments).__name__}"
            raise self._arguments_error((problem,))
        try:
            values: dict[str, Any] = self.validator.validate_python(arguments).__dict__.copy()
        except ValidationError as exc:
            raise self._arguments_error(_problems(exc)) from None
        for internal, external in self.renames:
            values[external] = values.pop(internal)
        return values

    async def call(self, arguments: dict[str, Any], ctx: ToolContext) -> str:
        """Call the function; an ``Exception`` from it becomes a :class:`ToolError`.

        Raises:
            gg.errors.ToolError: raised by the function, or wrapping what it raised
                as ``"<tool> raised <Type>: <message>"``.
        """
        if self.ctx_param is not None:
            arguments = {**arguments, self.ctx_param: ctx}
        try:
            value = self.fn(**arguments)
            if type(value) is not str and inspect.isawaitable(value):
                value = await value
        except (ToolError, DiskFull):  # a full disk stops the run (issue 12 item 1)
            raise
        except Exception as exc:
            raise ToolError(f"{self.name} raised {type(exc).__name__}: {exc}") from exc
        return cut(result_text(value), ctx.output_cap, keep="middle")

    def _arguments_error(self, problems: tuple[str, ...]) -> ArgumentsError:
        props: dict[str, Any] = self.parameters.get("properties", {})
        required = set(self.parameters.get("required", ()))
        takes = ", ".join(f"{p} ({'required' if p in required else 'optional'})" for p in props)
        message = (
            f"bad arguments for tool {self.name!r}: {'; '.join(problems)}. "
            f"{self.name} takes: {takes or 'no arguments'}."
        )
        return ArgumentsError(message, tool=self.name, problems=problems)


def _problems(exc: ValidationError) -> tuple[str, ...]:
    out: list[str] = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(part) for part in err["loc"])
        if err["type"] == "missing":
            out.append(f"missing required argument {loc!r}")
        elif err["type"] == "extra_forbidden":
            out.append(f"unexpected argument {loc!r}")
        elif loc:
            out.append(f"argument {loc!r}: {err['msg']}")
        else:
            out.append(err["msg"])
    return tuple(out)


@overload
def tool(fn: Callable[..., Any], /) -> FunctionTool: ...
@overload
def tool(
    fn: None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    access: ToolAccess = "write",
) -> Callable[[Callable[..., Any]], FunctionTool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    access: ToolAccess = "write",
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Make a registry tool from a function (SPEC T1). Use as ``@tool`` or ``@tool(name=...)``.

    The schema comes from the type hints and the docstring (Google, numpy or
    reST): each parameter's description, default and whether it is required.
    A parameter annotated :class:`ToolContext` is left out of the schema and
    receives the call's context. Parameters may carry pydantic constraints
    (``Annotated[int, Field(ge=0)]``).

    Args:
        fn: a sync or async function taking its arguments by keyword.
        name: the tool's name; defaults to the function's ``__name__``.
        description: what it does; defaults to the docstring's text before its
            sections (``Args:``, ``Returns:``...).
        access: what it may do to the workspace (:attr:`Tool.access`); ``"write"``
            unless you say so: a tool said to be ``"read"`` is offered to reviewers.

    Returns:
        A :class:`FunctionTool` (or, without ``fn``, a decorator making one).

    Raises:
        UserError: the name is an ending call (SPEC §1) or not an identifier; a
            parameter is positional-only or ``*args``/``**kwargs``; a type hint
            cannot be resolved or has no JSON schema.
    """

    def make(f: Callable[..., Any]) -> FunctionTool:
        return _function_tool(f, name=name, description=description, access=access)

    return make if fn is None else make(fn)


def _function_tool(
    fn: Callable[..., Any], *, name: str | None, description: str | None, access: ToolAccess
) -> FunctionTool:
    tool_name = name if name is not None else getattr(fn, "__name__", "")
    check_tool_name(tool_name)
    doc = docstring_parser.parse(inspect.getdoc(fn) or "")
    param_docs = {p.arg_name: (p.description or "").strip() for p in doc.params}
    fields, ctx_param, renames = _fields(fn, tool_name, param_docs)
    config = ConfigDict(extra="forbid", arbitrary_types_allowed=False)
    try:
        model = create_model(f"{tool_name}_arguments", __config__=config, **fields)
        schema = _clean_schema(model.model_json_schema())
    except Exception as exc:
        raise UserError(f"tool {tool_name!r}: its parameters have no JSON schema: {exc}") from exc
    if description is None:
        description = (doc.description or "").strip()
    return FunctionTool(
        name=tool_name,
        description=description,
        parameters=schema,
        access=access,
        fn=fn,
        validator=model.__pydantic_validator__,
        ctx_param=ctx_param,
        renames=renames,
    )


def _hints(fn: Callable[..., Any], tool_name: str) -> dict[str, Any]:
    target = fn if inspect.isfunction(fn) or inspect.ismethod(fn) else type(fn).__call__
    try:
        return get_type_hints(target, include_extras=True)
    except TypeError:
        return {}
    except Exception as exc:
        raise UserError(
            f"tool {tool_name!r}: cannot resolve its type hints ({type(exc).__name__}: {exc})"
        ) from exc


def _fields(
    fn: Callable[..., Any], tool_name: str, param_docs: Mapping[str, str]
) -> tuple[dict[str, Any], str | None, tuple[tuple[str, str], ...]]:
    hints = _hints(fn, tool_name)
    fields: dict[str, Any] = {}
    renames: list[tuple[str, str]] = []
    ctx_param: str | None = None
    for i, param in enumerate(inspect.signature(fn).parameters.values()):
        if param.kind in (param.POSITIONAL_ONLY, param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise UserError(
                f"tool {tool_name!r}: parameter {param.name!r} must be passable by keyword "
                "(no positional-only parameters, *args or **kwargs)"
            )
        hint = hints.get(param.name, param.annotation)
        if hint is ToolContext or hint == "ToolContext":
            ctx_param = param.name
            continue
        if hint is inspect.Parameter.empty or isinstance(hint, str):
            hint = Any
        kwargs: dict[str, Any] = {}
        if param.default is not inspect.Parameter.empty:
            kwargs["default"] = param.default
        if param_docs.get(param.name):
            kwargs["description"] = param_docs[param.name]
        field_name = param.name
        if not _safe_field_name(param.name):
            field_name = f"arg{i}_"
            kwargs["alias"] = param.name
            renames.append((field_name, param.name))
        fields[field_name] = (hint, Field(**kwargs))
    return fields, ctx_param, tuple(renames)


def _safe_field_name(name: str) -> bool:
    return not name.startswith(("_", "model_")) and not hasattr(BaseModel, name)


_VALUE_KEYS = frozenset({"default", "const", "enum", "examples"})


def _clean_schema(node: Any) -> Any:
    """Drop pydantic's generated ``title`` keywords (not property names); ensure ``properties``."""
    if isinstance(node, list):
        return [_clean_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {
        key: value if key in _VALUE_KEYS else _clean_schema(value)
        for key, value in node.items()
        if not (key == "title" and isinstance(value, str))
    }
    if out.get("type") == "object" and "properties" not in out and "$ref" not in out:
        out.setdefault("properties", {})
    return out


class Registry:
    """The shared registry: capabilities offer tools; arms filter it (SPEC §1, T1).

    Tools keep their registration order, which is the order arms offer them in.
    """

    def __init__(self) -> None:
        self._tools: dict[str, Tool] = {}
        self._capability: dict[str, str] = {}
        self._pending: dict[str, str] = {}
        """capability -> the name prefix of its tools, for capabilities whose tools come
        when the run starts (MCP servers, :mod:`gg.mcp`)."""

    def declare(self, capability: str, *, prefix: str) -> None:
        """Make ``capability`` known before its tools exist (an MCP server's, SPEC T1).

        Until tools of it are registered, an arm may name the capability, and tools whose
        name starts with ``prefix``, without an unknown-name error; the run resolves the
        arm again once the tools are there (:meth:`expects`).

        Raises:
            UserError: the capability name is empty or already offers tools.
        """
        if not capability or capability in self._capability.values():
            raise UserError(f"capability {capability!r} cannot be declared: empty or in use")
        self._pending[capability] = prefix

    def expects(self, name: str) -> bool:
        """Whether ``name`` is a tool a declared capability may register later."""
        return name not in self._tools and any(
            name.startswith(prefix) for prefix in self._pending.values()
        )

    def copy(self) -> Registry:
        """A registry with the same tools, capabilities and declarations (a run's own)."""
        other = Registry()
        other._tools, other._capability = dict(self._tools), dict(self._capability)
        other._pending = dict(self._pending)
        return other

    def register(self, tool: Tool, *, capability: str = "user") -> None:
        """Add ``tool`` under ``capability``.

        Raises:
            UserError: not a :class:`Tool`; its name is an ending call (SPEC §1);
                the name is taken; the capability name is empty.
        """
        if not isinstance(tool, Tool):
            raise UserError(
                f"only Tool objects can be registered, got {type(tool).__name__}; "
                "make one with @gg.tools.tool"
            )
        check_tool_name(tool.name)
        if not capability:
            raise UserError(f"tool {tool.name!r}: the capability name must not be empty")
        if tool.name in self._tools:
            raise UserError(
                f"a tool named {tool.name!r} is already registered "
                f"(capability {self._capability[tool.name]!r})"
            )
        self._tools[tool.name] = tool
        self._capability[tool.name] = capability
        self._pending.pop(capability, None)

    def get(self, name: str) -> Tool | None:
        """The tool called ``name``, or ``None``."""
        return self._tools.get(name)

    def capability_of(self, name: str) -> str | None:
        """The capability that offers the tool ``name``, or ``None`` if unknown."""
        return self._capability.get(name)

    @property
    def names(self) -> tuple[str, ...]:
        """Every tool's name, in registration order."""
        return tuple(self._tools)

    @property
    def capabilities(self) -> dict[str, tuple[str, ...]]:
        """Each capability's tool names, capabilities and tools in registration order."""
        out: dict[str, list[str]] = {cap: [] for cap in self._pending}
        for name, cap in self._capability.items():
            out.setdefault(cap, []).append(name)
        return {cap: tuple(names) for cap, names in out.items()}

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)
