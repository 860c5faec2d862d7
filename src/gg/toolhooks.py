"""Session-start, pre-tool and post-tool hooks (SPEC H1; issue 13 item 2).

``[[hooks.session_start]]`` entries (an agent-stop hook's fields) run before a session's
first turn, on ``{"event": "session-start", "hook_event_name": "SessionStart", "source":
"startup"|"resume", "role", "session_id", "task", "workspace", "cwd", "transcript_path":
null}``; what they add (prose on stdout after exit 0, or
``hookSpecificOutput.additionalContext``) goes at the end of the session's system prompt.
A session-start hook cannot block or stop a session: a block or a failure is added there
as a note naming the hook (:func:`session_context`).

``[[hooks.pre_tool]]`` and ``[[hooks.post_tool]]`` entries are command hooks with an
agent-stop hook's fields (``command``, ``timeout_s``, ``roles``, ``on_error``,
``pass_env``, ``trusted``) and a ``matcher`` on the tool's name. They run with the same
runner, sandboxing and script checks as agent-stop hooks (:class:`gg.hooks.CommandHook`).

:func:`hooked` wraps each registry tool of a session in a :class:`HookedTool`, so the
hooks cover both modes alike: a tool-calling call and a program's SDK call crossing the
membrane both reach :meth:`HookedTool.call`. Ending calls are never registry tools, so no
tool hook ever sees one: only the ending gate judges endings (SPEC S12).

A pre-tool hook reads (stdin) ``{"event": "pre-tool", "hook_event_name": "PreToolUse",
"tool_name", "tool_input", "role", "session_id", "workspace", "cwd", "transcript_path"}``
and answers as an agent-stop hook does: exit 0 allows; exit 2 (stderr), ``{"decision":
"block", "reason"}`` or Claude Code's ``hookSpecificOutput.permissionDecision: "deny"``
(or ``"ask"``: no one can approve in a run) denies, and the model gets the reason as the
tool's error (a failed tool result, not an error turn: the call itself was well formed);
``hookSpecificOutput.updatedInput`` rewrites the arguments (checked against the tool's
schema again). A failing hook is handled by ``on_error`` (``block``: the call is denied).

A post-tool hook also reads ``"event": "post-tool"``, ``"hook_event_name": "PostToolUse"``
and ``"tool_response"`` (the result text). Its ``hookSpecificOutput.additionalContext``,
and the reason of a ``{"decision": "block"}``, are appended to the result the model sees;
it cannot undo the call. A failure of a post-tool hook is reported in the result the same
way (with ``on_error = "block"``) or dropped (``"pass"``).

What this module does not promise: a trusted tool hook waits, as a trusted agent-stop hook
does, until no sandboxed process of the run is alive; a program's SDK call is made while
the program runs, so in responses-as-code mode a trusted tool hook times out (and, with
``on_error = "block"``, denies). Use sandboxed tool hooks in that mode.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from gg.config import ToolHookSettings
from gg.endings import Role
from gg.errors import ToolError
from gg.hooks import CommandHook, HookOutcome, HookPlace
from gg.tools.registry import ArgumentsError, Tool, ToolContext

__all__ = [
    "HookedTool",
    "StartEvent",
    "ToolEvent",
    "ToolHook",
    "ToolHooks",
    "hooked",
    "session_context",
]

_NAMES = {"pre-tool": "PreToolUse", "post-tool": "PostToolUse"}


@dataclass(frozen=True, kw_only=True)
class ToolEvent:
    """A ``pre-tool`` or ``post-tool`` event: a registry tool is about to run, or ran."""

    event: Literal["pre-tool", "post-tool"]
    """The event's name."""
    tool_name: str
    """The registry tool's name."""
    tool_input: Mapping[str, Any]
    """The call's checked arguments."""
    role: Role
    """The calling session's role."""
    session_id: str
    """The calling session."""
    workspace: Path
    """Its workspace (the hook's cwd and ``$CLAUDE_PROJECT_DIR``)."""
    tool_response: str | None = None
    """The result text (post-tool only)."""
    transcript_path: Path | None = None
    """Not written for tool events (``None``): the transcript is the agent-stop gate's."""

    def as_json(self) -> dict[str, Any]:
        """The object the hook reads on stdin (module docstring).

        Arguments that are not JSON values are written as their ``str``.
        """
        data: dict[str, Any] = {
            "event": self.event,
            "hook_event_name": _NAMES[self.event],
            "tool_name": self.tool_name,
            "tool_input": json.loads(json.dumps(dict(self.tool_input), default=str)),
            "role": Role(self.role).value,
            "session_id": self.session_id,
            "workspace": str(self.workspace),
            "cwd": str(self.workspace),
            "transcript_path": None,
        }
        if self.event == "post-tool":
            data["tool_response"] = self.tool_response
        return data


@dataclass(frozen=True, kw_only=True)
class StartEvent:
    """A ``session-start`` event: a session is about to take its first turn."""

    role: Role
    """The session's role."""
    session_id: str
    """The session."""
    workspace: Path
    """Its workspace."""
    task: str
    """Its task (the first user message)."""
    resumed: bool = False
    """True when the session continues an earlier one (``"source": "resume"``)."""
    transcript_path: Path | None = None
    """No transcript yet (``None``)."""

    def as_json(self) -> dict[str, Any]:
        """The object the hook reads on stdin (module docstring)."""
        return {
            "event": "session-start",
            "hook_event_name": "SessionStart",
            "source": "resume" if self.resumed else "startup",
            "role": Role(self.role).value,
            "session_id": self.session_id,
            "task": self.task,
            "workspace": str(self.workspace),
            "cwd": str(self.workspace),
            "transcript_path": None,
        }


async def session_context(
    hooks: Sequence[CommandHook], event: StartEvent, *, place: HookPlace | None
) -> str:
    """Run the session-start hooks bound to ``event.role`` and gather what they add.

    Args:
        hooks: ``[[hooks.session_start]]``, in order.
        event: the session-start event.
        place: where command hooks run (the run's sandbox and snapshot).

    Returns:
        One paragraph per hook that added something (its context, its prose, or a note
        that it blocked or failed); ``""`` when none did.
    """
    parts: list[str] = []
    for hook in (h for h in hooks if h.applies_to(event.role)):
        outcome = await hook.run(event, place=place)
        if outcome.status == "failed":
            parts.append(f"(the session-start hook {outcome.hook!r} failed: {outcome.reason})")
        elif outcome.decision == "block":
            parts.append(f"(the session-start hook {outcome.hook!r} said: {outcome.reason})")
        parts += [t for t in (outcome.context, outcome.stdout) if t]
    return "\n\n".join(parts)


_ALSO_MATCHED = {"edit_file": ("write_file",)}
"""A call of the key is also matched by a matcher for these names."""


@dataclass(frozen=True, kw_only=True)
class ToolHook:
    """A command hook bound to ``pre-tool`` or ``post-tool`` for the tools it matches."""

    hook: CommandHook
    """The command, run as an agent-stop hook is."""
    matcher: str = "*"
    """A regular expression the whole tool name must match; ``"*"`` or ``""``: any."""

    @classmethod
    def from_settings(cls, settings: ToolHookSettings) -> ToolHook:
        """The hook one ``[[hooks.pre_tool]]``/``[[hooks.post_tool]]`` entry describes.

        Raises:
            gg.errors.UserError: as :class:`gg.hooks.CommandHook`.
        """
        data = settings.model_dump()
        matcher = data.pop("matcher")
        hook = CommandHook(**{**data, "roles": tuple(data["roles"]),
                              "pass_env": tuple(data["pass_env"])})  # fmt: skip
        return cls(hook=hook, matcher=matcher)

    def matches(self, tool_name: str, role: Role) -> bool:
        """Whether this hook covers a call of ``tool_name`` by a session of ``role``.

        A matcher that matches ``write_file`` also covers ``edit_file``, its other form (as
        an arm that withholds ``write_file`` withholds ``edit_file``): a policy written
        for file writes keeps covering them.
        """
        if not self.hook.applies_to(role):
            return False
        if self.matcher in ("", "*"):
            return True
        names = (tool_name, *_ALSO_MATCHED.get(tool_name, ()))
        return any(re.fullmatch(self.matcher, name) is not None for name in names)


@dataclass(frozen=True, kw_only=True)
class ToolHooks:
    """A run's pre-tool and post-tool hooks, in order."""

    pre: tuple[ToolHook, ...] = ()
    """``[[hooks.pre_tool]]``."""
    post: tuple[ToolHook, ...] = ()
    """``[[hooks.post_tool]]``."""

    @classmethod
    def from_settings(
        cls, pre: Sequence[ToolHookSettings], post: Sequence[ToolHookSettings]
    ) -> ToolHooks:
        """The hooks of ``[hooks] pre_tool`` and ``post_tool``."""
        return cls(
            pre=tuple(ToolHook.from_settings(s) for s in pre),
            post=tuple(ToolHook.from_settings(s) for s in post),
        )

    def commands(self) -> list[str]:
        """Every command line (for the run's script snapshot, issue 9 item 2)."""
        return [h.hook.command for h in (*self.pre, *self.post)]

    def __bool__(self) -> bool:
        return bool(self.pre or self.post)


@dataclass(frozen=True, kw_only=True)
class HookedTool(Tool):
    """A registry tool with the session's tool hooks around it (same name and schema)."""

    inner: Tool
    """The tool itself."""
    hooks: ToolHooks
    """The run's tool hooks."""
    role: Role
    """The calling session's role."""
    session_id: str
    """The calling session's id."""
    place: HookPlace | None = field(default=None)
    """Where command hooks run (the run's sandbox and snapshot)."""

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The inner tool's check (SPEC S5)."""
        return self.inner.validate(arguments)

    async def call(self, arguments: dict[str, Any], ctx: ToolContext) -> str:
        """Run the pre-tool hooks, the tool, then the post-tool hooks.

        Returns:
            The tool's result, followed by what post-tool hooks add.

        Raises:
            gg.errors.ToolError: a pre-tool hook denied the call (its reason, for the
                model), its rewritten arguments do not fit, or the tool failed.
        """
        for hook in (h for h in self.hooks.pre if h.matches(self.name, self.role)):
            outcome = await hook.hook.run(self._event("pre-tool", arguments, ctx), place=self.place)
            if outcome.decision == "block":
                raise ToolError(_denied(outcome))
            if outcome.updated_input is not None:
                try:
                    arguments = self.inner.validate(outcome.updated_input)
                except ArgumentsError as e:
                    raise ToolError(
                        f"the pre-tool hook {outcome.hook!r} rewrote the arguments, and they "
                        f"do not fit: {e}"
                    ) from None
        result = await self.inner.call(arguments, ctx)
        added: list[str] = []
        for hook in (h for h in self.hooks.post if h.matches(self.name, self.role)):
            event = self._event("post-tool", arguments, ctx, response=result)
            outcome = await hook.hook.run(event, place=self.place)
            added += [t for t in (outcome.context, _post_reason(outcome)) if t]
        if not added:
            return result
        return result + "\n\n[from the post-tool hooks]\n" + "\n".join(added)

    def _event(
        self,
        kind: Literal["pre-tool", "post-tool"],
        arguments: Mapping[str, Any],
        ctx: ToolContext,
        *,
        response: str | None = None,
    ) -> ToolEvent:
        return ToolEvent(
            event=kind,
            tool_name=self.name,
            tool_input=arguments,
            role=self.role,
            session_id=self.session_id,
            workspace=ctx.workspace,
            tool_response=response,
        )


def _denied(outcome: HookOutcome) -> str:
    what = "failed, and so denied" if outcome.failed else "denied"
    return f"the pre-tool hook {outcome.hook!r} {what} this call: {outcome.reason}"


def _post_reason(outcome: HookOutcome) -> str:
    if outcome.decision != "block":
        return ""
    return f"post-tool hook {outcome.hook!r}: {outcome.reason}"


def hooked(
    tools: Sequence[Tool],
    hooks: ToolHooks,
    *,
    role: Role,
    session_id: str,
    place: HookPlace | None,
) -> list[Tool]:
    """``tools`` with the hooks around each one some hook matches (others unchanged).

    Args:
        tools: a session's registry tools (never an ending call).
        hooks: the run's tool hooks.
        role: the session's role (a hook's ``roles`` filter).
        session_id: the session's id (on each event).
        place: where command hooks run.

    Returns:
        The tools, in order.
    """
    out: list[Tool] = []
    for t in tools:
        if not any(h.matches(t.name, role) for h in (*hooks.pre, *hooks.post)):
            out.append(t)
            continue
        wrapped = HookedTool(
            name=t.name, description=t.description, parameters=t.parameters, inner=t,
            hooks=hooks, role=role, session_id=session_id, place=place,
        )  # fmt: skip
        out.append(wrapped)
    return out
