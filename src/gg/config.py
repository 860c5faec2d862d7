"""``gg.toml``: the schema, defaults and loading (SPEC C1, §10).

Every setting has a default, so an empty file (or none) is valid. An unknown
key or a bad value raises :class:`gg.errors.ConfigError` whose message names
the dotted key (``ceilings.max_turns: Input should be greater than 0``); the
CLI turns it into exit 2 before anything is written.

Ending calls are never registry tools (SPEC §1): a capability or toolset arm
that names ``finish``, ``approve`` or ``request_changes`` is a configuration
error that says so.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import tomllib
import typing
from pathlib import Path
from typing import Annotated, Any, Literal

from annotated_types import Ge, Gt, Le, Lt
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    Strict,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.fields import FieldInfo

from gg.claude_settings import claude_hooks
from gg.endings import Role, is_ending_name
from gg.errors import ConfigError
from gg.refname import branch_problem

__all__ = [
    "AgentsSettings",
    "ArmSettings",
    "BoardSettings",
    "CeilingSettings",
    "HookSettings",
    "HooksSettings",
    "McpServerSettings",
    "MemorySettings",
    "ModelSettings",
    "Price",
    "SandboxSettings",
    "SessionSettings",
    "Settings",
    "StopHookSettings",
    "StreamSettings",
    "ToolHookSettings",
    "ToolsSettings",
    "default_toml",
    "load_settings",
    "with_claude_hooks",
]

CONFIG_NAME = "gg.toml"


_DAY_S = 86_400
"""Seconds in a day: the bound of every per-request or per-hook timeout."""


class _Section(BaseModel):
    """A ``gg.toml`` table: unknown keys refused, values strict (issue 12 item 6).

    Strict: a number is never read from a boolean (``max_turns = true``) or a
    string (``"3"``), a boolean never from a number; an integer is whole; no
    ``inf`` or ``nan``. Every number has bounds, quoted in the error.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


_Role = Annotated[Role, Strict(False)]
"""A role given by its value (``"standard"``, ``"review"``), as TOML writes it."""


class Price(_Section):
    """Price of a model per million tokens, in any currency unit (SPEC S6 budget).

    Overrides the maintained price table (:mod:`gg.models.pricing`). The cache rates
    default to ``input_per_mtok``; reasoning tokens are output tokens.
    """

    input_per_mtok: float = Field(ge=0, le=1_000_000)
    output_per_mtok: float = Field(ge=0, le=1_000_000)
    cache_read_per_mtok: float | None = Field(default=None, ge=0, le=1_000_000)
    cache_write_per_mtok: float | None = Field(default=None, ge=0, le=1_000_000)


class ModelSettings(_Section):
    """``[model]``: which model drives sessions (SPEC M4, M5, §10 ``--model``)."""

    spec: str = "local"
    local: str = ""
    """Embedded model: a catalogue model's name (``gg.models.catalogue``); ``""`` = the default."""
    path: str = ""
    """Embedded model: any GGUF file to run instead of a catalogue model."""
    constrained: bool = True
    """Embedded model: constrain output to valid calls by grammar (SPEC M5)."""
    threads: int = Field(default=0, ge=0, le=1024)
    """Embedded model: CPU threads for llama.cpp (0 = gg's default, see gg.models.local)."""
    text_tool_calls: bool = True
    """openai-compat: parse tool calls written in the reply text when it has no native ones."""
    timeout_s: float = Field(default=120, gt=0, le=_DAY_S)
    max_retries: int = Field(default=3, ge=0, le=100)
    max_output_tokens: int = Field(default=0, ge=0, le=10_000_000)
    """Most tokens per reply (0 = the provider's or the local model's own default)."""
    prices: dict[str, Price] = {}
    """Overrides of the maintained price table (genai-prices), by the provider's model name."""
    prompt_cache: bool = True
    """anthropic: mark the prompt for the provider's prompt cache (``cache_control``)."""
    tool_choice: Literal["default", "required", "auto"] = "default"
    """Ask the provider to require a tool call (``required``) or leave it free (``auto``);
    ``default``: required for openai, openai-responses and anthropic, not sent to
    openai-compat servers. A reply without a call is an error turn either way (SPEC S5)."""


class SessionSettings(_Section):
    """``[session]``: execution mode, language arm and role of the root session."""

    mode: Literal["tool-calling", "code"] = "tool-calling"
    language: Literal["python", "javascript"] = "python"
    role: _Role = Role.STANDARD


class CeilingSettings(_Section):
    """``[ceilings]`` (SPEC S6, §10). Budgets of 0 mean none."""

    consecutive_errors: int = Field(default=3, ge=1, le=10_000)
    error_rate: float = Field(default=0.5, gt=0, le=1)
    error_window: int = Field(default=10, ge=1, le=10_000)
    gate_blocks: int = Field(default=8, ge=1, le=10_000)
    max_turns: int = Field(default=50, ge=1, le=1_000_000)
    repeated_calls: int = Field(default=2, ge=0, le=10_000)
    """Times one identical call (same tool and arguments; in code mode the same program) may
    be made while the workspace does not change; the next is a ``repeated_call`` error
    turn. 0 = no limit."""
    max_tokens: int = Field(default=0, ge=0, le=10**12)
    max_seconds: float = Field(default=0, ge=0, le=30 * _DAY_S)
    max_cost: float = Field(default=0, ge=0, le=1_000_000_000)


class HookSettings(_Section):
    """One ``[[hooks.agent_stop]]`` entry (SPEC H1, §10)."""

    command: str = Field(min_length=1)
    timeout_s: float = Field(default=600, gt=0, le=_DAY_S)
    roles: list[_Role] = [Role.STANDARD, Role.REVIEW]
    on_error: Literal["block", "pass"] = "block"
    pass_env: list[str] = []
    """Environment variables passed to the hook (hooks get a scrubbed environment)."""
    trusted: bool = False
    """Run on the host as gg's user (scrubbed env) instead of in the run's sandbox with the
    workspace read-only (issue 9 item 5)."""


class StopHookSettings(HookSettings):
    """One ``[[hooks.agent_stop]]`` entry (SPEC H1, §10): a hook's fields and its sessions."""

    sessions: Literal["all", "root", "subagents"] = "all"
    """Which sessions it checks: every one, root sessions only (Claude Code's ``Stop``),
    or subagents only (``SubagentStop``, sessions a ``spawn`` tool started, SPEC T2)."""


class ToolHookSettings(HookSettings):
    """One ``[[hooks.pre_tool]]`` or ``[[hooks.post_tool]]`` entry (SPEC H1).

    An agent-stop hook's fields and a ``matcher`` on the tool's name.
    """

    matcher: str = "*"
    """A regular expression the whole tool name must match (``"run_command|write_file"``);
    ``"*"`` or ``""``: every registry tool. Ending calls are never matched."""
    timeout_s: float = Field(default=60, gt=0)

    @field_validator("matcher")
    @classmethod
    def _compiles(cls, value: str) -> str:
        if value not in ("", "*"):
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"matcher {value!r} is not a regular expression: {exc}") from None
        return value


class HooksSettings(_Section):
    """``[hooks]``: hooks by event.

    ``agent_stop`` runs in the ending gate (SPEC S12); ``session_start`` before a
    session's first turn; ``pre_tool`` and ``post_tool`` around each registry tool call
    (SPEC H1).
    """

    agent_stop: list[StopHookSettings] = []
    session_start: list[HookSettings] = []
    pre_tool: list[ToolHookSettings] = []
    post_tool: list[ToolHookSettings] = []
    claude_settings: list[str] = []
    """Claude Code ``settings.json`` files (relative to the workspace) whose ``hooks``
    section is loaded into the lists above (:mod:`gg.claude_settings`)."""
    claude_on_error: Literal["block", "pass"] = "pass"
    """``on_error`` of the hooks loaded from ``claude_settings``: ``"pass"`` as Claude Code
    does (exit 1 lets things through), ``"block"`` as gg's own hooks do."""


def _no_endings(names: list[str] | None, what: str) -> list[str] | None:
    for name in names or []:
        if is_ending_name(name):
            raise ValueError(
                f"{name!r} is an ending call, and ending calls are never registry tools: "
                f"no capability offers them and no toolset arm {what} them"
            )
    return names


class ArmSettings(_Section):
    """``[tools.arms.NAME]``: a toolset arm, a selection over the offered tools."""

    capabilities: list[str] | None = None
    offer: list[str] | None = None
    withhold: list[str] = []

    @field_validator("offer")
    @classmethod
    def _offer(cls, v: list[str] | None) -> list[str] | None:
        return _no_endings(v, "offers")

    @field_validator("withhold")
    @classmethod
    def _withhold(cls, v: list[str]) -> list[str]:
        return _no_endings(v, "withholds") or []


_MCP_NAME = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class McpServerSettings(_Section):
    """One ``[[tools.mcp]]`` entry: an MCP server whose tools become registry tools (SPEC T1).

    Either ``command`` (a stdio server gg starts per run, in the run's sandbox unless
    ``sandboxed = false``) or ``url`` (a streamable-HTTP server), never both.
    """

    name: str
    """Lowercase letters, digits and single ``_`` (at most 24 characters): its tools are
    ``mcp__<name>__<tool>`` (Claude Code's form) and its capability ``mcp:<name>``."""
    command: str | None = Field(default=None, min_length=1)
    """The stdio server's program (found on ``PATH`` or an absolute path)."""
    args: list[str] = []
    pass_env: list[str] = []
    """Variables of gg's environment the stdio server gets (its environment is scrubbed)."""
    sandboxed: bool = True
    """Run the stdio server in the run's sandbox (no network, the workspace its only
    writable place); ``false`` runs it on the host as gg's user (scrubbed environment)."""
    url: str | None = Field(default=None, min_length=1)
    """A streamable-HTTP endpoint (``http://`` or ``https://``)."""
    headers: dict[str, str] = {}
    """HTTP headers; ``${NAME}`` in a value is replaced by gg's environment variable NAME."""
    timeout_s: float = Field(default=60, gt=0, le=_DAY_S)
    """Seconds one tool call may take; past it the call is a tool error."""
    start_timeout_s: float = Field(default=30, gt=0, le=_DAY_S)
    """Seconds the server has to start and list its tools at run start."""
    access: Literal["read", "write"] = "write"
    """What its tools may do to the workspace (:attr:`gg.tools.Tool.access`): ``"read"``
    is the operator's word that they never change it, and offers them to reviewers."""

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if len(v) > 24 or not _MCP_NAME.fullmatch(v):
            raise ValueError(
                f"{v!r} must be 1-24 lowercase letters, digits and single '_', a letter first"
            )
        return v

    @field_validator("pass_env")
    @classmethod
    def _env_names(cls, v: list[str]) -> list[str]:
        for name in v:
            if not _ENV_NAME.fullmatch(name):
                raise ValueError(f"{name!r} is not an environment variable name")
        return v

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerSettings:
        if (self.command is None) == (self.url is None):
            raise ValueError(f"MCP server {self.name!r} needs exactly one of command or url")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ValueError(f"MCP server {self.name!r}: url must start with http:// or https://")
        if self.url is not None and (self.args or self.pass_env):
            raise ValueError(f"MCP server {self.name!r}: args and pass_env need a command")
        if self.command is not None and self.headers:
            raise ValueError(f"MCP server {self.name!r}: headers need a url")
        return self


class ToolsSettings(_Section):
    """``[tools]``: capabilities offered and the toolset arm in use (SPEC T1)."""

    capabilities: list[str] = ["files", "shell"]
    arm: str = "all"
    arms: dict[str, ArmSettings] = {}
    output_cap: int = Field(default=64_000, ge=1_000, le=100_000_000)
    mcp: list[McpServerSettings] = []
    """``[[tools.mcp]]``: MCP servers started per run (their capabilities join the default
    arm's, as ``user`` tools do)."""

    @field_validator("capabilities")
    @classmethod
    def _caps(cls, v: list[str]) -> list[str]:
        return _no_endings(v, "offers") or []

    @field_validator("mcp")
    @classmethod
    def _unique_servers(cls, v: list[McpServerSettings]) -> list[McpServerSettings]:
        names = [server.name for server in v]
        for name in names:
            if names.count(name) > 1:
                raise ValueError(f"two MCP servers are named {name!r}")
        return v


class SandboxSettings(_Section):
    """``[sandbox]``: isolation layer and limits for programs (SPEC M3)."""

    isolation: Literal["auto", "bwrap", "unshare", "rlimit"] = "auto"
    wall_s: float = Field(default=30, gt=0, le=_DAY_S)
    cpu_s: float = Field(default=20, gt=0, le=_DAY_S)
    memory_mb: int = Field(default=1024, ge=64, le=1 << 20)
    processes: int = Field(default=64, ge=1, le=100_000)
    output_bytes: int = Field(default=200_000, ge=1_000, le=1 << 30)
    write_bytes: int = Field(default=1 << 30, ge=1 << 20, le=1 << 40)
    """Bytes one program, on-use script or sandboxed command may add to the workspace; past
    it gg stops it with a runtime error naming ``write_bytes`` (issue 9, item 7)."""
    write_files: int = Field(default=100_000, ge=100, le=100_000_000)
    """Files and directories one program or command may make or change in the workspace."""
    program_bytes: int = Field(default=1_000_000, ge=1_000, le=1 << 30)
    """The largest program gg compiles and runs, in UTF-8 bytes; a larger one is an error
    turn (``compile_error``), never run (issue 9 item 6)."""
    commands: Literal["sandbox", "host"] = "sandbox"
    """Where ``run_command`` runs: in the sandbox (default), or on the host as a plain
    subprocess with a scrubbed environment (when commands need host tools)."""


class StreamSettings(_Section):
    """``[stream]``: durability of the stream file (SPEC O1)."""

    fsync: Literal["turn", "never"] = "turn"


class BoardSettings(_Section):
    """``[board]``: the issue workflow (SPEC B1-B5)."""

    reviewers: int = Field(default=1, ge=1, le=100)
    max_rounds: int = Field(default=3, ge=1, le=1_000)
    concurrency: int = Field(default=2, ge=1, le=1_000)
    base_branch: str = ""
    """The branch issues merge into; ``""``: the branch checked out when the board was
    made (its first ``gg board add`` or ``run``), recorded with the board."""
    store: str = "sqlite"
    executor: Literal["local", "ray"] = "local"
    """Where ``gg board run`` runs the issues (issue 17): ``local`` (this process, in this
    checkout) or ``ray`` (board runners as Ray tasks at ``ray_address``; as ``--ray``)."""
    ray_address: str | None = None
    """The Ray cluster of ``executor = "ray"``: ``ray://HOST:PORT``, ``HOST:PORT`` or
    ``local`` (a cluster of this machine on 127.0.0.1)."""

    @field_validator("base_branch")
    @classmethod
    def _base_branch(cls, v: str) -> str:
        problem = branch_problem(v) if v else None
        if problem is not None:
            raise ValueError(f"{v[:200]!r} is not a branch name gg passes to git: it {problem}")
        return v

    @field_validator("ray_address")
    @classmethod
    def _address(cls, v: str | None) -> str | None:
        if v is not None and not RAY_ADDRESS.fullmatch(v):
            raise ValueError(f"{v!r} is not a Ray address (ray://HOST:PORT, HOST:PORT or 'local')")
        return v

    @model_validator(mode="after")
    def _ray_needs_address(self) -> BoardSettings:
        if self.executor == "ray" and self.ray_address is None:
            raise ValueError('executor = "ray" needs ray_address (e.g. "ray://head:10001")')
        return self


RAY_ADDRESS = re.compile(
    r"local|(ray://)?[A-Za-z0-9._-]{1,253}:[0-9]{1,5}|ray://[A-Za-z0-9._-]{1,253}"
)
"""What ``[board] ray_address`` and ``--ray`` accept (issue 17)."""


class AgentsSettings(_Section):
    """``[agents]``: limits on subagents started by ``spawn`` / ``spawn_all`` (SPEC T2)."""

    max_depth: int = Field(default=2, ge=0, le=100)
    """Deepest subagent: the root session is depth 0, its subagents 1... 0 = no spawning."""
    max_subagents: int = Field(default=16, ge=0, le=100_000)
    """Most subagents started in one run, at every depth together."""


class MemorySettings(_Section):
    """``[memory]``: the memory store of ``remember`` / ``recall`` (SPEC T3, S13)."""

    on_recall: str | None = None
    """An on-use script (``.py`` or ``.js``, relative to the workspace) run on every recall."""

    @field_validator("on_recall")
    @classmethod
    def _script(cls, v: str | None) -> str | None:
        if v is not None and not v.endswith((".py", ".js")):
            raise ValueError(f"{v!r} must be a .py or .js script")
        if v is not None and (v.startswith("/") or ".." in v.split("/")):
            # read beneath the workspace only (issue 9): gg.toml is agent-writable
            raise ValueError(f"{v!r} must be a path inside the workspace, relative to it")
        return v


class Settings(_Section):
    """The whole ``gg.toml``. Every key has a default (SPEC C1)."""

    model: ModelSettings = ModelSettings()
    session: SessionSettings = SessionSettings()
    ceilings: CeilingSettings = CeilingSettings()
    hooks: HooksSettings = HooksSettings()
    tools: ToolsSettings = ToolsSettings()
    sandbox: SandboxSettings = SandboxSettings()
    stream: StreamSettings = StreamSettings()
    board: BoardSettings = BoardSettings()
    agents: AgentsSettings = AgentsSettings()
    memory: MemorySettings = MemorySettings()


def _key_error(e: ValidationError, source: str) -> ConfigError:
    err = e.errors()[0]
    key = ".".join(str(p) for p in err["loc"])
    msg = err["msg"].removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        msg = "unknown key"
    info = _field_at(err["loc"])
    if info is not None and info.annotation in (int, float):
        msg = f"{msg} (got {_shown(err.get('input'))}; {_takes(info)})"
    return ConfigError(f"{source}: {key}: {msg}", key=key)


def _field_at(loc: tuple[int | str, ...]) -> FieldInfo | None:
    """The field a validation error's location names, or ``None`` (a list item, a dict key)."""
    model: Any = Settings
    info: FieldInfo | None = None
    for part in loc:
        if isinstance(model, type) and issubclass(model, BaseModel):
            info = model.model_fields.get(str(part))
            if info is None:
                return None
            model = info.annotation
        else:  # list[...] or dict[str, ...]: this part is an index or a key
            args = typing.get_args(model)
            model, info = (args[-1] if args else None), None
    return info


def _shown(value: object) -> str:
    """A bad value as the error quotes it: its TOML spelling for a boolean."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value)[:40]


def _takes(info: FieldInfo) -> str:
    """What a numeric field takes, e.g. ``a whole number from 1 to 1,000,000``."""
    kind = "a whole number" if info.annotation is int else "a finite number"
    low = high = ""
    for bound in info.metadata:
        if isinstance(bound, Ge):
            low = f"from {bound.ge:,}"
        elif isinstance(bound, Gt):
            low = f"above {bound.gt:,}"
        elif isinstance(bound, Le):
            high = f"to {bound.le:,}" if low.startswith("from") else f"at most {bound.le:,}"
        elif isinstance(bound, Lt):
            high = f"below {bound.lt:,}"
    if low.startswith("above") and high:
        high = f"and {high}"
    return " ".join(filter(None, [kind, low, high]))


def settings_from_dict(data: dict[str, Any], *, source: str = CONFIG_NAME) -> Settings:
    """Validate a parsed ``gg.toml``.

    Raises:
        ConfigError: naming the first bad key.
    """
    try:
        return Settings.model_validate(data)
    except ValidationError as e:
        raise _key_error(e, source) from None


_CONFIG_MAX = 1 << 20  # bytes: a gg.toml larger than this is refused


def load_settings(path: Path | None = None, *, workspace: Path | None = None) -> Settings:
    """Load settings from ``path``, else ``<workspace>/gg.toml`` if it exists, else defaults.

    The workspace's ``gg.toml`` is agent-writable (issue 9): it is opened without
    following a symbolic link, must be a regular file of at most 1 MiB, and is
    read once; a FIFO or device planted there is an error, never a hang. An
    explicit ``path`` (``--config``) may be a link.

    Raises:
        ConfigError: the file does not exist (when given), is not a regular file,
            is too large, is not UTF-8 TOML, or has a bad key.
    """
    follow = path is not None
    if path is None:
        candidate = (workspace or Path.cwd()) / CONFIG_NAME
        if not os.path.lexists(candidate):
            return Settings()
        path = candidate
    data = _parse_toml(_read_config(path, follow=follow), path)
    return with_claude_hooks(settings_from_dict(data, source=str(path)), workspace or path.parent)


def with_claude_hooks(settings: Settings, workspace: Path) -> Settings:
    """``settings`` with the hooks of its ``[hooks] claude_settings`` files added (SPEC H1).

    Each file is read as the workspace's ``gg.toml`` is (no symbolic link, a regular file
    of at most 1 MiB) and converted by :func:`gg.claude_settings.claude_hooks`. Idempotent:
    an entry already in ``settings`` is not added again.

    Args:
        settings: validated settings.
        workspace: the base of relative paths.

    Returns:
        The settings with the loaded hooks after their own, or ``settings`` itself.

    Raises:
        ConfigError: a file is missing, unreadable, not JSON, or malformed.
    """
    hooks = settings.hooks
    if not hooks.claude_settings:
        return settings
    merged = hooks.model_dump()
    for name in hooks.claude_settings:
        path = Path(name) if os.path.isabs(name) else workspace / name
        try:
            data = json.loads(_read_config(path, follow=False))
        except json.JSONDecodeError as e:
            raise ConfigError(f"{path}: not valid JSON: {e}", key="hooks.claude_settings") from None
        found = claude_hooks(data, source=str(path), on_error=hooks.claude_on_error)
        for kind, entries in found.items():
            kept = [
                HooksSettings.model_validate({kind: [e]}).model_dump()[kind][0] for e in entries
            ]
            merged[kind] += [e for e in kept if e not in merged[kind]]
    return settings.model_copy(update={"hooks": HooksSettings.model_validate(merged)})


def _parse_toml(text: str, path: Path) -> dict[str, Any]:
    """Parse ``text`` as TOML; errors name ``path``.

    Raises:
        ConfigError: not valid TOML.
    """
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not valid TOML: {e}") from None


def _read_config(path: Path, *, follow: bool) -> str:
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise ConfigError(
                f"{path}: is a symbolic link; gg reads the workspace's "
                "gg.toml only as a regular file (or pass --config)"
            ) from None
        raise ConfigError(f"cannot read config {str(path)!r}: {e.strerror}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):  # before fdopen, which refuses a directory with a traceback
            kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
            raise ConfigError(f"{path}: is {kind}; gg reads its settings from a regular file")
        with os.fdopen(os.dup(fd), "rb") as fh:
            raw = fh.read(_CONFIG_MAX + 1)
    except OSError as e:
        raise ConfigError(f"cannot read config {str(path)!r}: {e.strerror}") from None
    finally:
        os.close(fd)
    if len(raw) > _CONFIG_MAX:
        raise ConfigError(f"{path}: larger than {_CONFIG_MAX:,} bytes")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None


def default_toml() -> str:
    """A commented ``gg.toml`` holding every default (what ``gg init`` writes)."""
    return _DEFAULT_TOML


_DEFAULT_TOML = """\
# gg.toml: settings for gg runs in this workspace. Every key has a default;
# delete what you don't change. Reference: the README's gg.toml section.

[model]
spec = "local"            # local | local:NAME | scripted:PATH | openai:MODEL | anthropic:MODEL
                          # | openai-responses:MODEL
                          # | openai-compat:MODEL@BASE_URL  (keys from env vars only)
# local = "qwen2.5-coder-0.5b"  # local model from the catalogue (default: qwen2.5-coder-1.5b)
# path = "model.gguf"     # or any GGUF file for the local model
constrained = true        # local model: constrain output to valid tool calls
threads = 0               # local model: CPU threads for llama.cpp; 0 = gg's default
text_tool_calls = true    # openai-compat: parse calls written in reply text
timeout_s = 120           # per request to a provider
max_retries = 3           # on 429, 5xx, timeouts, dropped connections
max_output_tokens = 0     # most tokens per reply; 0 = the provider's default
prompt_cache = true       # anthropic: use the prompt cache (cache_control)
tool_choice = "default"   # default | required | auto: ask the provider to require a tool call
# Prices come from the genai-prices table (providers extra); override one model:
# [model.prices."gpt-4o-mini"]
# input_per_mtok = 0.15
# output_per_mtok = 0.60
# cache_read_per_mtok = 0.075   # optional; defaults to input_per_mtok

[session]
mode = "tool-calling"     # tool-calling | code (responses as code)
language = "python"       # python | javascript (code mode)
role = "standard"         # standard (ends with finish) | review (approve / request_changes)

[ceilings]
consecutive_errors = 3    # error turns in a row
error_rate = 0.5          # stop when more than this share of the window are error turns
error_window = 10         # turns in the sliding window
gate_blocks = 8           # endings blocked by agent-stop hooks in a row
max_turns = 50            # turns per session
repeated_calls = 2        # one identical call this often with nothing changed; then error turns
max_tokens = 0            # run budget; 0 = none
max_seconds = 0           # run budget; 0 = none
max_cost = 0              # run budget in price-table units; 0 = none

# Agent-stop hooks run before a session ends (the ending gate). Exit 0 passes;
# exit 2 (reason on stderr) or stdout {"decision": "block", "reason": "..."} blocks.
# [[hooks.agent_stop]]
# command = "python -m pytest -q -p no:cacheprovider"   # runs in the sandbox, workspace read-only
# timeout_s = 600
# roles = ["standard"]
# on_error = "block"      # or "pass": what a crashing or timed-out hook does
# pass_env = []           # env vars the hook may see (its environment is scrubbed)
# trusted = false         # true: run on the host as gg's user, not in the sandbox
# sessions = "all"        # or "root" (Claude Code's Stop), "subagents" (SubagentStop)
# [hooks]
# claude_settings = [".claude/settings.json"]   # load a Claude Code settings.json's hooks
# claude_on_error = "pass"                      # as Claude Code: exit 1 lets things through

[tools]
capabilities = ["files", "shell"]   # files: read/write/list/search; shell: run_command
arm = "all"                          # the toolset arm this run uses
output_cap = 64000                   # characters of a tool result shown to the model
# [tools.arms.readonly]
# withhold = ["write_file", "run_command"]
# [[tools.mcp]]                      # an MCP server: its tools are mcp__<name>__<tool>
# name = "docs"
# command = "docs-mcp-server"        # stdio, in the run's sandbox; or url = "https://..."
# args = []
# pass_env = []                      # env vars the server may see (its env is scrubbed)
# sandboxed = true                   # false: run it on the host (it needs the network)
# timeout_s = 60                     # per call

[sandbox]
isolation = "auto"        # auto | bwrap | unshare | rlimit
wall_s = 30
cpu_s = 20
memory_mb = 1024
processes = 64
output_bytes = 200000
write_bytes = 1073741824  # per program or command: bytes it may add to the workspace
write_files = 100000      # per program or command: files it may make or change there
program_bytes = 1000000   # largest program gg compiles (UTF-8 bytes); larger: an error turn
commands = "sandbox"      # run_command in the sandbox, or "host" (plain subprocess)

[stream]
fsync = "turn"            # turn | never

[board]
reviewers = 1
max_rounds = 3
concurrency = 2
base_branch = ""          # "": the branch checked out when the board was made (kept)
store = "sqlite"
executor = "local"        # local | ray (board runners as Ray tasks at ray_address)
# ray_address = "ray://head:10001"   # or "HOST:6379", or "local"

[agents]                  # subagents (capability "agents": spawn, spawn_all)
max_depth = 2             # the root session is depth 0; 0 = no spawning
max_subagents = 16        # per run, all depths together

[memory]                  # notes (capability "memory": remember, recall)
# on_recall = "scripts/on_recall.py"   # on-use script run on every recall (.py or .js)
"""
