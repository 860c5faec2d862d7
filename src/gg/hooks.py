"""Agent-stop hooks and the ending gate (SPEC S12, H1, §10 gg.toml and Hooks).

Before a session ends, the :class:`Gate` runs the hooks bound to the
session's role, in order, and stops at the first that blocks. A block hands
its reason back to the model and the session continues (S12).

A hook is a shell command (:class:`CommandHook`) or a Python callable
(:class:`CallableHook`). What a command answers:

======================================  ==========================================
exit 0                                  pass
exit 0, stdout ``{"decision": "block",  block with that reason
"reason": ...}``
exit 2                                  block; the reason is stderr (else stdout's tail)
any other exit, no start, a timeout     a failure, handled by ``on_error``
======================================  ==========================================

This module is the one place that classifies an outcome
(:attr:`HookOutcome.status`, SPEC H1, §10 Hooks): ``passed``; ``blocked`` (the
hook's own answer: exit 2, a JSON or callable block); or ``failed`` (the hook
itself failed: any other exit, 1 included, a signal, no start, a timeout, an
unreadable answer, a callable that raised, a script changed since run start).
A failed hook is recorded with ``failed=True``; the stream's ``gate_blocked``,
the live view and the ceiling diagnosis all read that one flag, so all three
blame the hook, not the model (S6). A check that means to block (a test
command) exits 2 or answers ``{"decision": "block"}``. With
``on_error="block"`` (the default, H1) a failure blocks with the failure as
the reason; with ``"pass"`` it passes.

Where a command hook runs (issue 9 item 5). Inside a run (the gate is given
a :class:`HookPlace`), by default in the run's sandbox: the workspace
read-only, the event JSON on stdin, the hook's timeout, as the sandbox uid
when gg is root, with an environment built from nothing but ``PATH`` (gg's
interpreter prefix first, bound read-only), the sandbox's own variables and
the ``pass_env`` names. ``trusted=True`` runs it on the host as gg's user
with :func:`gg.shell.scrubbed_env` plus ``pass_env``. A gate checked
without a place (a caller running it on its own) runs hooks on the host so.
As root, a host hook runs without ``CAP_SYS_PTRACE``, ``CAP_SYS_ADMIN`` and
``CAP_PERFMON`` (:func:`gg.guard.host_command`). Before running a command hook
the gate checks its scripts against the run's :class:`gg.guard.Snapshot`, as
they are in the workspace the hook runs in (a board worktree: its files at the
same relative paths, compared with the run-start digests of the repository's):
a script changed, removed, replaced or linked is not run and the gate blocks
naming it (a failed hook, so a diagnosis blames it).

What this module does not promise: a sync callable that times out cannot be
stopped; its thread runs on in the background while the gate moves on.
Callable hooks run in gg's own process, with gg's rights and environment.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, TypeAlias

from gg import bounded
from gg.config import HookSettings, StopHookSettings
from gg.endings import Ending, EndingRecord, Role
from gg.errors import GGError, UserError
from gg.guard import Snapshot, host_command
from gg.models.base import AssistantMessage, Message, ToolMessage
from gg.sandbox.host import SYSTEM_PATH
from gg.shell import ShellResult, run_shell, scrubbed_env
from gg.text import cut, redact

__all__ = [
    "CallableHook",
    "CommandHook",
    "Gate",
    "GateResult",
    "Hook",
    "HookAnswer",
    "HookEvent",
    "HookOutcome",
    "HookPlace",
    "HookStatus",
    "StopEvent",
    "last_text",
    "write_transcript",
]

_REASON_CAP = 4_000  # characters of a reason kept (the tail: where test summaries are)
_CAPTURE = 256_000  # bytes of each of a command hook's stdout and stderr kept
_PASS_DECISIONS = frozenset({"pass", "approve"})
_HOOK_DEFAULTS: dict[str, Any] = {
    name: info.default for name, info in HookSettings.model_fields.items() if not info.is_required()
}
"""``[[hooks.agent_stop]]``'s defaults: the one source of a hook's timeout, roles, on_error."""

HookAnswer: TypeAlias = bool | str | Mapping[str, Any] | None
"""What a callable hook returns: ``None``/``True`` pass; ``False`` or a string
block (the string is the reason); a dict ``{"decision": "pass"|"block", "reason": str}``."""


HookStatus: TypeAlias = Literal["passed", "blocked", "failed", "stopped"]
"""How one hook's outcome is classified (SPEC H1): it let the ending through; it blocked
it by its own answer; the hook itself failed (whatever ``on_error`` then decided); or it
answered ``{"continue": false}`` (Claude Code's stop: the session stops with a diagnosis
naming the hook; no ending, SPEC S1, S6)."""


class HookEvent(Protocol):
    """What a command hook runs on: an event with a workspace and a stdin object.

    :class:`StopEvent` and :class:`gg.toolhooks.ToolEvent` are ones.
    """

    @property
    def workspace(self) -> Path:
        """The session's workspace: the hook's cwd and ``$CLAUDE_PROJECT_DIR``."""
        ...

    @property
    def transcript_path(self) -> Path | None:
        """The session's transcript file (bound read-only into a sandboxed hook), if any."""
        ...

    def as_json(self) -> dict[str, Any]:
        """The object the hook reads on stdin."""
        ...


@dataclass(frozen=True, kw_only=True)
class StopEvent:
    """The ``agent-stop`` event: a session is about to end with ``ending`` (SPEC §10)."""

    event: Literal["agent-stop"] = "agent-stop"
    """The event's name; always ``"agent-stop"``."""
    role: Role
    """The session's role."""
    ending: EndingRecord
    """The declared ending's record: ``{"call": "finish", "summary": ...}`` and so on."""
    session_id: str
    """The session about to end."""
    workspace: Path
    """The session's workspace; a command hook runs there."""
    blocked_before: int = 0
    """How many times this session's gate has blocked already."""
    transcript_path: Path | None = None
    """The session's JSONL transcript so far (:func:`write_transcript`), written by gg
    outside the workspace; ``None`` when the gate runs outside a run."""
    last_assistant_message: str = ""
    """The text of the model's last reply that had text (Claude Code's field)."""
    subagent: bool = False
    """The session is a subagent (SPEC T2): Claude Code's event is then ``SubagentStop``."""

    @classmethod
    def for_ending(
        cls,
        ending: Ending,
        *,
        role: Role,
        session_id: str,
        workspace: Path,
        blocked_before: int = 0,
        transcript_path: Path | None = None,
        last_assistant_message: str = "",
        subagent: bool = False,
    ) -> StopEvent:
        """Build the event for a typed ending: the one way gg builds it.

        Its ``ending`` is :meth:`gg.endings.Finish.record` and its peers.
        """
        return cls(
            role=role,
            ending=ending.record(),
            session_id=session_id,
            workspace=workspace,
            blocked_before=blocked_before,
            transcript_path=transcript_path,
            last_assistant_message=last_assistant_message,
            subagent=subagent,
        )

    def as_json(self) -> dict[str, Any]:
        """The object a command hook reads on stdin.

        SPEC §10's, plus Claude Code's Stop hook fields (issue 13 item 3), so Claude
        Code Stop hooks run unchanged.

        Returns:
            SPEC §10's ``{"event", "role", "ending", "session_id", "workspace",
            "blocked_before"}`` (the role as its value, the workspace as a string), and
            ``"hook_event_name": "Stop"`` (``"SubagentStop"`` for a subagent), ``"cwd"``
            (the workspace), ``"stop_hook_active"``
            (``blocked_before > 0``), ``"transcript_path"`` (a string, ``None`` outside a
            run) and ``"last_assistant_message"``.
        """
        return {
            "event": self.event,
            "role": Role(self.role).value,
            "ending": dict(self.ending),
            "session_id": self.session_id,
            "workspace": str(self.workspace),
            "blocked_before": self.blocked_before,
            "hook_event_name": "SubagentStop" if self.subagent else "Stop",
            "cwd": str(self.workspace),
            "stop_hook_active": self.blocked_before > 0,
            "transcript_path": None if self.transcript_path is None else str(self.transcript_path),
            "last_assistant_message": self.last_assistant_message,
        }


@dataclass(frozen=True, kw_only=True)
class HookOutcome:
    """What one hook decided about one ending."""

    hook: str
    """The hook's display name: the command, or the callable's name."""
    decision: Literal["pass", "block"]
    """Whether the hook let the ending through."""
    reason: str = ""
    """Why it blocked (handed to the model), or what went wrong when ``failed``."""
    failed: bool = False
    """True when the hook itself failed: crashed, timed out, could not start, exited other
    than 0 or 2, answered nonsense, or its script changed (S6 blame; see :attr:`status`)."""
    exit_code: int | None = None
    """A command hook's exit status (``None`` for callables, timeouts, no start)."""
    seconds: float = 0.0
    """How long the hook ran."""
    script_changed: bool = False
    """True when gg did not run the hook because a script it names changed since the run
    started (issue 9 item 2); the diagnosis then says so, not the hook's own words."""
    stop: bool = False
    """True when the hook answered ``{"continue": false, "stopReason": ...}`` (Claude
    Code): the session stops (no ending); :attr:`reason` is the stop reason."""
    context: str = ""
    """The hook's ``hookSpecificOutput.additionalContext``: handed to the model with a
    block (a passed gate ends the session, so it has no one to go to)."""
    updated_input: Mapping[str, Any] | None = None
    """A pre-tool hook's ``hookSpecificOutput.updatedInput``: the call's new arguments."""
    stdout: str = ""
    """A command hook's prose on stdout after exit 0 (its tail; not a JSON answer): a
    session-start hook's context (Claude Code's SessionStart)."""

    @property
    def status(self) -> HookStatus:
        """The one classification of this outcome (SPEC H1).

        ``"failed"`` whenever the hook itself failed (even when ``on_error="pass"`` let
        the ending through), else ``"stopped"`` for a ``continue: false`` answer, else
        ``"blocked"`` or ``"passed"`` by its answer. The stream, the live view and the
        diagnosis read it (through :attr:`failed`).
        """
        if self.failed:
            return "failed"
        if self.stop:
            return "stopped"
        return "blocked" if self.decision == "block" else "passed"


def _tail(text: str, cap: int = _REASON_CAP) -> str:
    return cut(text.strip(), cap, keep="tail")


def _roles(value: Iterable[Role | str]) -> tuple[Role, ...]:
    if isinstance(value, str):
        value = (value,)
    try:
        roles = tuple(Role(r) for r in value)
    except ValueError as exc:
        raise UserError(f"hook roles: {exc}; use 'standard' and/or 'review'") from None
    if not roles:
        raise UserError("a hook needs at least one role")
    return roles


@dataclass(frozen=True, kw_only=True)
class _HookBase:
    timeout_s: float = _HOOK_DEFAULTS["timeout_s"]
    """Seconds the hook may run; past that it is a failure."""
    roles: tuple[Role, ...] = tuple(_HOOK_DEFAULTS["roles"])
    """The roles whose sessions it checks (strings are accepted and converted)."""
    on_error: Literal["block", "pass"] = _HOOK_DEFAULTS["on_error"]
    """What a failure of the hook itself decides (SPEC H1: block by default)."""
    sessions: Literal["all", "root", "subagents"] = StopHookSettings.model_fields[
        "sessions"
    ].default
    """Which sessions an agent-stop hook checks: all, root sessions only (Claude Code's
    ``Stop``), or subagents only (``SubagentStop``; :class:`gg.config.StopHookSettings`)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "roles", _roles(self.roles))
        if not self.timeout_s > 0:
            raise UserError(f"hook timeout_s must be more than 0, got {self.timeout_s!r}")
        if self.on_error not in ("block", "pass"):
            raise UserError(f"hook on_error must be 'block' or 'pass', got {self.on_error!r}")
        if self.sessions not in ("all", "root", "subagents"):
            raise UserError(
                f"hook sessions must be 'all', 'root' or 'subagents', got {self.sessions!r}"
            )

    def _display(self) -> str:
        raise NotImplementedError

    def applies_to(self, role: Role, *, subagent: bool = False) -> bool:
        """Whether this hook checks sessions of ``role`` (a subagent's when ``subagent``)."""
        wanted = {"all": True, "root": not subagent, "subagents": subagent}[self.sessions]
        return role in self.roles and wanted

    def _outcome(
        self, decision: Literal["pass", "block"], reason: str = "", **extra: Any
    ) -> HookOutcome:
        return HookOutcome(hook=self._display(), decision=decision, reason=reason, **extra)

    def _failure(self, reason: str, **extra: Any) -> HookOutcome:
        return self._outcome(self.on_error, reason, failed=True, **extra)

    def _judge(self, answer: object, *, seconds: float, **extra: Any) -> HookOutcome:
        """Turn an answer (callable return or parsed stdout JSON) into an outcome."""
        if isinstance(answer, _Unreadable):
            return self._failure(
                f"hook {self._display()!r} answered something gg cannot read: {answer.why}; "
                'expected exit 0 with no JSON, or one object such as {"decision": "block", '
                '"reason": "..."}',
                seconds=seconds,
                **extra,
            )
        if answer is None or answer is True:
            return self._outcome("pass", seconds=seconds, **extra)
        if answer is False:
            return self._outcome("block", self._no_reason(), seconds=seconds, **extra)
        if isinstance(answer, str):
            return self._outcome(
                "block", _tail(answer) or self._no_reason(), seconds=seconds, **extra
            )
        if isinstance(answer, Mapping):
            return self._judge_object(answer, seconds=seconds, **extra)
        return self._failure(
            f"hook {self._display()!r} answered {type(answer).__name__}; expected None, a bool, "
            "a reason string or {'decision': ..., 'reason': ...}",
            seconds=seconds,
            **extra,
        )

    def _judge_object(
        self, answer: Mapping[str, Any], *, seconds: float, **extra: Any
    ) -> HookOutcome:
        """Read a JSON/dict answer.

        SPEC §10's ``decision``/``reason`` and Claude Code's ``continue``/``stopReason``
        (wins over a decision) and ``hookSpecificOutput.additionalContext``; a field of
        the wrong type is unreadable.
        """
        problem = _object_problem(answer)
        if problem:
            return self._failure(
                f"hook {self._display()!r} answered something gg cannot read: {problem}",
                seconds=seconds,
                **extra,
            )
        specific = answer.get("hookSpecificOutput") or {}
        extra["context"] = _tail(specific.get("additionalContext") or "")
        if answer.get("continue") is False:
            why = _tail(answer.get("stopReason") or "")
            return self._outcome(
                "block",
                why or f"hook {self._display()!r} stopped the run without giving a reason",
                stop=True,
                seconds=seconds,
                **extra,
            )
        if isinstance(specific.get("updatedInput"), Mapping):
            extra["updated_input"] = dict(specific["updatedInput"])
        permission = specific.get("permissionDecision")
        if permission in ("deny", "ask"):
            why = _tail(specific.get("permissionDecisionReason") or "")
            if permission == "ask":  # no one to ask in a run
                why = f"the hook asks for approval, and no one can give it here. {why}".strip()
            return self._outcome("block", why or self._no_reason(), seconds=seconds, **extra)
        decision, reason = answer.get("decision"), answer.get("reason")
        if decision is None and permission == "allow":
            decision = "approve"
        if decision == "block":
            text = _tail(reason) if isinstance(reason, str) else ""
            return self._outcome("block", text or self._no_reason(), seconds=seconds, **extra)
        if decision is None or decision in _PASS_DECISIONS:
            return self._outcome("pass", seconds=seconds, **extra)
        return self._failure(
            f"hook {self._display()!r} answered an unknown decision {decision!r}; "
            "expected 'block' or 'pass'",
            seconds=seconds,
            **extra,
        )

    def _no_reason(self) -> str:
        return f"hook {self._display()!r} blocked the ending without giving a reason"


@dataclass(frozen=True, kw_only=True)
class HookPlace:
    """Where a run's command hooks run and what they are checked against (issue 9 item 5).

    A :class:`~gg.run.Run` gives its gate one; without one, command hooks run on the host.
    """

    sandbox: Callable[[], Any] | None = None
    """Returns the run's :class:`gg.sandbox.Sandbox` (may raise ``SandboxError``);
    ``None``: untrusted hooks run on the host too (no sandbox offered)."""
    snapshot: Snapshot | None = None
    """The digests taken at run start; a hook whose script differs now is not run."""
    transcripts: Path | None = None
    """gg's private directory (the run's state directory, outside the workspace) where
    each session's transcript is written for its hooks (``transcript_path``); ``None``:
    no transcript."""

    def transcript(self, session_id: str, messages: Sequence[Message]) -> Path | None:
        """Write ``session_id``'s transcript so far and return its path (issue 13 item 3).

        Args:
            session_id: the session; the file is ``<transcripts>/<session_id>.jsonl``.
            messages: its conversation so far, oldest first.

        Returns:
            The file's path, or ``None`` without a :attr:`transcripts` directory.

        Raises:
            OSError: the file could not be written.
        """
        if self.transcripts is None:
            return None
        return write_transcript(self.transcripts / f"{session_id}.jsonl", messages, session_id)


def _transcript_line(message: Message, session_id: str) -> dict[str, Any]:
    """One message as a Claude-Code-shaped transcript record (README "Hooks")."""
    content: str | list[dict[str, Any]]
    if isinstance(message, AssistantMessage):
        content = [{"type": "text", "text": message.content}] if message.content else []
        content += [
            {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}
            for c in message.tool_calls
        ]
        kind = "assistant"
    elif isinstance(message, ToolMessage):
        content = [{"type": "tool_result", "tool_use_id": message.call_id,
                    "name": message.name, "content": message.content}]  # fmt: skip
        kind = "user"
    else:
        content, kind = message.content, message.role
    role = "assistant" if kind == "assistant" else kind
    return {"type": kind, "session_id": session_id, "message": {"role": role, "content": content}}


def write_transcript(path: Path, messages: Sequence[Message], session_id: str) -> Path:
    """Write a session's conversation as JSON Lines at ``path`` (whole, replaced atomically).

    One object a line, oldest first, shaped as Claude Code's transcripts:
    ``{"type": "system"|"user"|"assistant", "session_id", "message": {"role", "content"}}``;
    an assistant's ``content`` is a list of ``{"type": "text", "text"}`` and
    ``{"type": "tool_use", "id", "name", "input"}`` blocks; a tool result is a ``user``
    record whose content is ``[{"type": "tool_result", "tool_use_id", "name", "content"}]``.
    Secrets are redacted (:func:`gg.text.redact`, SPEC C3). The directory is made private
    (``0700``); the file is ``0644`` so a sandboxed hook (bound read-only) can read it.

    Args:
        path: the file to write.
        messages: the conversation.
        session_id: the session's id, on every record.

    Returns:
        ``path``.

    Raises:
        OSError: the directory or file could not be written.
    """
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    lines = [json.dumps(_transcript_line(m, session_id), ensure_ascii=False) for m in messages]
    body = redact("".join(f"{line}\n" for line in lines))
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(body)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)
    return path


def last_text(messages: Sequence[Message]) -> str:
    """The text of the last assistant message that has any, or ``""``.

    Claude Code's ``last_assistant_message``.
    """
    for message in reversed(messages):
        if isinstance(message, AssistantMessage) and message.content.strip():
            return message.content
    return ""


def _tool_prefixes() -> tuple[str, ...]:
    """The interpreter prefixes of gg (the venv and its base).

    They are bound read-only for sandboxed hooks, so that ``python -m pytest`` finds the
    packages gg's environment has.
    """
    found: list[str] = []
    for raw in (sys.prefix, sys.base_prefix, os.path.dirname(os.path.dirname(
            os.path.realpath(sys.executable)))):  # fmt: skip
        path = os.path.realpath(raw)
        if path != "/" and not path.startswith("/usr") and path not in found:
            found.append(path)
    return tuple(found)


@dataclass(frozen=True, kw_only=True)
class CommandHook(_HookBase):
    """A shell command bound to ``agent-stop`` (SPEC H1, §10 ``[[hooks.agent_stop]]``)."""

    command: str
    """A ``/bin/sh`` command line, run in the workspace with the event JSON on stdin."""
    pass_env: tuple[str, ...] = ()
    """Names of gg's environment variables the command may see beyond the scrubbed set."""
    trusted: bool = _HOOK_DEFAULTS["trusted"]
    """Run on the host as gg's user (scrubbed env) instead of in the run's sandbox."""

    @classmethod
    def from_settings(cls, settings: HookSettings) -> CommandHook:
        """The hook one ``[[hooks.agent_stop]]`` entry describes (same field names).

        Args:
            settings: the validated entry.

        Returns:
            The command hook.

        Raises:
            gg.errors.UserError: as the constructor.
        """
        data = settings.model_dump()
        return cls(**{**data, "roles": tuple(data["roles"]), "pass_env": tuple(data["pass_env"])})

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.command.strip():
            raise UserError("a command hook needs a non-empty command")
        object.__setattr__(self, "pass_env", tuple(self.pass_env))

    @property
    def name(self) -> str:
        """The display name: the command line."""
        return self.command

    def _display(self) -> str:
        return self.command

    async def run(self, event: HookEvent, *, place: HookPlace | None = None) -> HookOutcome:
        """Run the command on ``event``; never raises for the command's own failures.

        Args:
            event: the event (its JSON is the command's stdin): agent-stop, or a tool
                event (:mod:`gg.toolhooks`).
            place: the run's sandbox and snapshot; ``None``: on the host, unchecked.

        Returns:
            The outcome: exit 0 passes unless stdout is a JSON block decision;
            exit 2 blocks with stderr; anything else is a failure (``on_error``).
            A script changed since run start blocks, as a failure, whatever ``on_error``.
            A trusted hook runs only while none of the run's sandboxed processes is alive
            (:class:`gg.sandbox.quiet.Quiet`: none can swap its script between gg's check
            and its start); if they keep running for ``timeout_s``, it blocks, saying so.
        """
        quiet = None
        if self.trusted and place is not None and place.sandbox is not None:
            with contextlib.suppress(GGError):  # no sandbox here: no sandboxed process either
                quiet = place.sandbox().quiet
        if quiet is not None:
            try:
                async with quiet.exclusive(timeout_s=self.timeout_s):
                    return await self._checked(event, place)
            except TimeoutError:
                return self._outcome(
                    "block",
                    (
                        f"trusted hook {self._display()!r} was not run: it runs only while none of "
                        "the run's programs or commands runs (they could change its script as it "
                        f"starts), and they kept running for {self.timeout_s:g} s"
                    ),
                    failed=True,
                )
        return await self._checked(event, place)

    async def _checked(self, event: HookEvent, place: HookPlace | None) -> HookOutcome:
        start = time.monotonic()
        if place is not None and place.snapshot is not None:
            problems = place.snapshot.tampered(self.command, workspace=event.workspace)
            if problems:
                return self._outcome(
                    "block",
                    (
                        f"hook {self._display()!r} was not run: its script "
                        f"{'; '.join(problems)}. gg runs a hook only as it was when the run "
                        "started; restore the file (a new run names the change, and refuses a "
                        "changed trusted hook until you confirm it with --trust-config)"
                    ),
                    failed=True,
                    script_changed=True,
                )
        stdin = json.dumps(event.as_json()).encode()
        try:
            if place is not None and place.sandbox is not None and not self.trusted:
                result = await self._sandboxed(place, event, stdin)
            else:
                result = await run_shell(
                    host_command(self.command), cwd=event.workspace,
                    env=scrubbed_env(self.pass_env) | _claude_env(event),
                    timeout_s=self.timeout_s, stdin=stdin, capture_limit=_CAPTURE,
                )  # fmt: skip
        except (OSError, GGError) as exc:
            where = "" if self.trusted or place is None else " in the sandbox"
            return self._failure(
                f"hook {self._display()!r} could not start{where}: {exc}",
                seconds=time.monotonic() - start,
            )
        return self._read(result)

    async def _sandboxed(self, place: HookPlace, event: HookEvent, stdin: bytes) -> ShellResult:
        """Run in the run's sandbox, the workspace read-only (issue 9 item 5)."""
        assert place.sandbox is not None
        sandbox = place.sandbox()
        prefixes = _tool_prefixes()
        env = {"PATH": ":".join([*(f"{p}/bin" for p in prefixes), SYSTEM_PATH])}
        env |= {k: os.environ[k] for k in self.pass_env if k in os.environ}
        env |= _claude_env(event)
        outside = place.snapshot.outside() if place.snapshot is not None else ()
        transcript = () if event.transcript_path is None else (str(event.transcript_path),)
        done: ShellResult = await sandbox.run_shell(
            self.command, workspace=event.workspace, timeout_s=self.timeout_s, read_only=True,
            stdin=stdin, env=env, binds=(*prefixes, *outside, *transcript),
        )  # fmt: skip
        return done

    def _read(self, result: ShellResult) -> HookOutcome:
        code, seconds = result.exit_code, result.seconds
        if result.timed_out:
            return self._failure(
                f"hook {self._display()!r} timed out after {self.timeout_s:g} s", seconds=seconds
            )
        if code == 0:
            answer = _stdout_answer(result.output)
            prose = _tail(result.output) if answer is None else ""
            return self._judge(answer, seconds=seconds, exit_code=code, stdout=prose)
        if code == 2:
            reason = _tail(result.stderr or "") or _tail(result.output)
            return self._outcome(
                "block", reason or "exit 2 with no reason", seconds=seconds, exit_code=code
            )
        output = _tail(f"{result.output.rstrip()}\n{(result.stderr or '').rstrip()}")
        detail = f"; its output ends:\n{output}" if output else " and printed nothing"
        return self._failure(
            f"hook {self._display()!r} failed with {_describe_exit(code)}{detail}",
            seconds=seconds,
            exit_code=code,
        )


def _object_problem(answer: Mapping[str, Any]) -> str:
    """Why an answer object is unreadable (a Claude Code field of the wrong type), or ``""``."""
    if "continue" in answer and not isinstance(answer["continue"], bool):
        return '"continue" is not true or false'
    for key in ("stopReason", "reason"):
        if answer.get(key) is not None and not isinstance(answer[key], str):
            return f"{key!r} is not a string"
    specific = answer.get("hookSpecificOutput")
    if specific is None:
        return ""
    if not isinstance(specific, Mapping):
        return '"hookSpecificOutput" is not an object'
    for key in ("additionalContext", "permissionDecisionReason"):
        if specific.get(key) is not None and not isinstance(specific[key], str):
            return f'"hookSpecificOutput.{key}" is not a string'
    permission = specific.get("permissionDecision")
    if permission is not None and permission not in ("allow", "deny", "ask"):
        return f'"hookSpecificOutput.permissionDecision" is {permission!r}, not allow/deny/ask'
    updated = specific.get("updatedInput")
    if updated is not None and not isinstance(updated, Mapping):
        return '"hookSpecificOutput.updatedInput" is not an object'
    return ""


def _claude_env(event: HookEvent) -> dict[str, str]:
    """Claude Code's variables for a command hook: ``CLAUDE_PROJECT_DIR`` is the workspace."""
    return {"CLAUDE_PROJECT_DIR": str(event.workspace)}


def _describe_exit(code: int | None) -> str:
    if code is not None and code < 0:
        return f"signal {-code}"
    notes = {126: " (command not executable)", 127: " (command not found)"}
    return f"exit code {code}{notes.get(code or 0, '')}"


class _Unreadable:
    """An answer on stdout gg cannot read (issue 12 item 5): the gate fails closed on it."""

    def __init__(self, why: str) -> None:
        self.why = why


def _stdout_answer(stdout: str) -> object:
    """Read a command hook's stdout after exit 0 (SPEC §10 Hooks; issue 12 item 5).

    Nothing, or prose with no JSON-shaped line (a test runner's report), is no answer
    (``None``: pass). The whole of stdout, or else its last line, parsed as one JSON
    object is the answer. Everything else that is JSON-shaped fails closed: an
    :class:`_Unreadable` (a hook failure, ``on_error``), never a pass: stdout that is all
    JSON but not an object (an array, a number, a string, ``true``), stdout starting with
    ``{`` that is not exactly one object (truncated, or an object followed by more lines),
    a last line starting with ``{`` that is not one object, and a ``{"decision"`` line gg
    would not read (one not last). Prose whose lines start with ``[`` (googletest's
    ``[ RUN ]``) stays prose.
    """
    text = stdout.strip()
    if not text:
        return None
    try:  # bounded: a hook's output is the agent's (its tests print it)
        whole = bounded.loads(text)
    except bounded.BadJSON:
        whole = _NOT_JSON
    if whole is not _NOT_JSON:
        if isinstance(whole, dict):
            return whole
        return _Unreadable(f"stdout is JSON but not an object ({type(whole).__name__})")
    if text.startswith("{"):
        return _Unreadable("stdout starts as a JSON object but is not exactly one")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    last = lines[-1]
    if last.startswith("{"):
        try:
            parsed = bounded.loads(last)
        except bounded.BadJSON:
            return _Unreadable("stdout's last line starts as JSON but does not parse")
        if isinstance(parsed, dict):
            return parsed
        return _Unreadable(
            f"stdout's last line is JSON but not an object ({type(parsed).__name__})"
        )
    if any(line.startswith("{") and '"decision"' in line for line in lines):
        return _Unreadable("a decision is on stdout, but not as its last line")
    return None


_NOT_JSON = object()


@dataclass(frozen=True, kw_only=True)
class CallableHook(_HookBase):
    """A Python callable bound to ``agent-stop`` (SPEC H1).

    Sync callables run in a worker thread under the timeout; async ones are
    awaited under it. An exception is a failure (``on_error``).
    """

    fn: Callable[[StopEvent], HookAnswer | Awaitable[HookAnswer]]
    """Called with the event; returns a :data:`HookAnswer`."""
    name: str = ""
    """The display name; defaults to the callable's qualified name."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if not callable(self.fn):
            raise UserError(f"a callable hook needs a callable, got {type(self.fn).__name__}")
        if not self.name:
            label = getattr(self.fn, "__qualname__", None) or repr(self.fn)
            object.__setattr__(self, "name", label)

    def _display(self) -> str:
        return self.name

    async def run(self, event: StopEvent) -> HookOutcome:
        """Call the hook on ``event``; never raises for the hook's own failures."""
        start = time.monotonic()
        try:
            answer = await asyncio.wait_for(self._answer(event), self.timeout_s)
        except TimeoutError:
            return self._failure(
                f"hook {self._display()!r} timed out after {self.timeout_s:g} s",
                seconds=time.monotonic() - start,
            )
        except _HookRaised as exc:
            return self._failure(
                f"hook {self._display()!r} raised {exc} (a hook cannot end the run)",
                seconds=time.monotonic() - start,
            )
        except Exception as exc:
            return self._failure(
                f"hook {self._display()!r} raised {type(exc).__name__}: {exc}",
                seconds=time.monotonic() - start,
            )
        return self._judge(answer, seconds=time.monotonic() - start)

    async def _answer(self, event: StopEvent) -> object:
        """The callable's answer.

        A ``SystemExit``, ``KeyboardInterrupt`` or other non-``Exception`` it raises comes
        back as :class:`_HookRaised`, caught here, inside the awaited coroutine, before
        asyncio would re-raise it out of the event loop and end the run (issue 12 item 5).
        Cancellation (gg's own) still propagates.
        """
        is_async = inspect.iscoroutinefunction(self.fn) or inspect.iscoroutinefunction(
            type(self.fn).__call__  # an object with an async __call__
        )
        try:
            if is_async:
                answer: object = self.fn(event)
            else:
                answer = await asyncio.to_thread(_guarded, self.fn, event)
            if inspect.isawaitable(answer):
                answer = await answer
        except asyncio.CancelledError:
            raise
        except (SystemExit, KeyboardInterrupt, GeneratorExit) as exc:
            raise _HookRaised(exc) from None
        return answer


class _HookRaised(Exception):
    """A hook raised a ``BaseException`` that is not an ``Exception`` (``SystemExit``)."""

    def __init__(self, exc: BaseException) -> None:
        super().__init__(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
        self.original = exc


def _guarded(fn: Callable[[StopEvent], object], event: StopEvent) -> object:
    """Call a sync hook in its worker thread.

    A ``SystemExit`` it raises becomes :class:`_HookRaised` there, so no
    ``BaseException`` crosses into the event loop.
    """
    try:
        return fn(event)
    except (SystemExit, KeyboardInterrupt, GeneratorExit) as exc:
        raise _HookRaised(exc) from None


Hook: TypeAlias = CommandHook | CallableHook
"""An agent-stop hook."""


@dataclass(frozen=True, kw_only=True)
class GateResult:
    """What the ending gate decided (SPEC S12)."""

    passed: bool
    """True when no hook blocked: the session may end."""
    outcomes: tuple[HookOutcome, ...]
    """Each hook run, in order (hooks after a block are not run)."""
    blocking: HookOutcome | None
    """The outcome that blocked (or stopped, :attr:`HookOutcome.stop`), or ``None`` when
    passed."""

    @property
    def context(self) -> str:
        """The hooks' ``additionalContext`` texts, in order, one paragraph each."""
        return "\n\n".join(o.context for o in self.outcomes if o.context)


class Gate:
    """The ending gate: a session's agent-stop hooks, run before it ends (SPEC S12, H1)."""

    def __init__(self, hooks: Sequence[Hook] = ()) -> None:
        """Hold ``hooks`` in order.

        Raises:
            UserError: an item is not a :class:`CommandHook` or :class:`CallableHook`.
        """
        for hook in hooks:
            if not isinstance(hook, CommandHook | CallableHook):
                raise UserError(
                    f"a gate takes CommandHook or CallableHook objects, got {type(hook).__name__}"
                )
        self.hooks: tuple[Hook, ...] = tuple(hooks)

    def hooks_for(self, role: Role, *, subagent: bool = False) -> tuple[Hook, ...]:
        """The hooks bound to ``role`` (and to subagents when ``subagent``), in order."""
        return tuple(h for h in self.hooks if h.applies_to(role, subagent=subagent))

    def event(
        self,
        ending: Ending,
        *,
        role: Role,
        session_id: str,
        workspace: Path,
        blocked_before: int,
        messages: Sequence[Message],
        place: HookPlace | None,
        subagent: bool = False,
    ) -> StopEvent:
        """The agent-stop event a session's ending is checked on, with Claude Code's fields.

        The transcript is written (``place``'s directory) only when a command hook of
        ``role`` will read it; when it cannot be written, ``transcript_path`` is ``None``.
        """
        bound = self.hooks_for(role, subagent=subagent)
        commands = any(isinstance(h, CommandHook) for h in bound)
        path = None
        if place is not None and commands:
            with contextlib.suppress(OSError):  # no transcript: a hook reading it fails closed
                path = place.transcript(session_id, messages)
        return StopEvent.for_ending(
            ending,
            role=role,
            session_id=session_id,
            workspace=workspace,
            blocked_before=blocked_before,
            transcript_path=path,
            last_assistant_message=last_text(messages),
            subagent=subagent,
        )

    async def check(self, event: StopEvent, *, place: HookPlace | None = None) -> GateResult:
        """Run the hooks bound to ``event.role`` in order; stop at the first block.

        Args:
            event: the agent-stop event.
            place: where command hooks run (a run's sandbox and snapshot); ``None``:
                on the host, as gg's user with a scrubbed environment.

        Returns:
            A :class:`GateResult`; a role with no hooks passes with no outcomes.
        """
        outcomes: list[HookOutcome] = []
        for hook in self.hooks_for(event.role, subagent=event.subagent):
            if isinstance(hook, CommandHook):
                outcome = await hook.run(event, place=place)
            else:
                outcome = await hook.run(event)
            outcomes.append(outcome)
            if outcome.decision == "block":
                return GateResult(passed=False, outcomes=tuple(outcomes), blocking=outcome)
        return GateResult(passed=True, outcomes=tuple(outcomes), blocking=None)
