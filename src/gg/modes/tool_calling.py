"""The tool-calling mode (SPEC M1, S2-S5, S8).

Offered tools: the arm's registry tools plus the role's synthetic ending
tools, and nothing else (S2).

**Ending policy in one reply: "ordered, last wins, revoke on failure".**
The calls of a reply run in order, all of them, including any after an
ending call. Every ending call is checked (role, then shape); each accepted
one is a declaration and the last is read (S8), the others are counted as
superseded on the stream. The model wrote the whole reply before seeing any
result, so the reply is one unit, like a program: if any call in it fails (an
error-turn call, or a tool that raised), the reply's declaration is revoked
(S9), the feedback is the failing results alone, and the session continues.

**For small models** (issue 16): a registry call identical to one made
``repeat_limit`` times while the workspace did not change is not run; it is a
``repeated_call`` error turn (:mod:`gg.progress`). Error feedback ends with the
JSON of a correct call (:func:`gg.callform.json_call`), and once the task looks
done a good turn's last result carries the reminder that points at the ending
(:func:`gg.prompts.ending_reminder`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from gg.callform import ENDING_EXAMPLES, change_arguments, json_call, placeholder_in
from gg.ceilings import ErrorKind
from gg.endings import (
    Declarations,
    OutputType,
    Refusal,
    Role,
    canonical_call,
    check_ending,
    ending_group,
    ending_tool_specs,
    is_ending_name,
    spell,
)
from gg.errors import DiskFull, ToolError
from gg.models.base import Reply, ToolCall, ToolMessage, ToolSpec, UserMessage
from gg.modes.base import TurnContext, TurnOutcome, close_turn
from gg.progress import Progress
from gg.prompts import ending_reminder, repeated_call_feedback
from gg.stream import (
    EndingDeclared,
    EndingRefused,
    ToolCalled,
    ToolResult,
    excerpt,
    excerpt_arguments,
)
from gg.tools.registry import ArgumentsError, Tool, ToolContext

__all__ = ["OUTPUT_EXAMPLE", "ToolCallingMode", "no_tool_call_feedback"]

OUTPUT_EXAMPLE = "<the result: a JSON value fitting the schema of finish's output>"
"""What a typed ``finish``'s example call shows as its ``output`` (issue 14 item 4)."""


def no_tool_call_feedback(role: Role) -> str:
    """Feedback for a reply with no tool call (SPEC S5), naming the role's endings."""
    if role is Role.STANDARD:
        end = 'call finish(summary="...") with what you did'
    else:
        end = 'call approve() or request_changes(items=["..."])'
    return (
        "Your reply called no tool, so nothing happened. Every reply must call a tool. "
        f"Continue the task with the tools offered; when you are done, {end}."
    )


class _CallOutcome:
    __slots__ = ("content", "kind", "ok")

    def __init__(self, content: str, *, ok: bool = True, kind: ErrorKind | None = None) -> None:
        self.content, self.ok, self.kind = content, ok, kind


class ToolCallingMode:
    """Runs the tool calls of a reply in order (SPEC M1).

    Args:
        role: the session's role; decides the synthetic ending tools.
        tools: the arm's registry tools (already selected by the toolset arm).
        context: what the tools get (workspace, output cap).
        arm: the arm's name, for the stream.
        repeat_limit: times one identical call may run with nothing changed before it is
            a ``repeated_call`` error turn (``[ceilings] repeated_calls``; 0 = no limit).
        output: the type ``finish`` carries as ``output`` (issue 14 item 4): part of the
            offered ``finish`` schema and checked by :func:`gg.endings.check_ending`.
    """

    name = "tool-calling"
    language: Any = "python"

    def __init__(
        self,
        *,
        role: Role,
        tools: Sequence[Tool],
        context: ToolContext,
        arm: str = "all",
        repeat_limit: int = 0,
        output: OutputType | None = None,
    ) -> None:
        self.role = role
        self.output = output
        self.progress = Progress(limit=repeat_limit, review=context.read_only)
        self.arm = arm
        self._tools = {t.name: t for t in tools}
        self._context = context
        self._specs = [t.spec() for t in tools] + [
            ToolSpec(**spec) for spec in ending_tool_specs(role, output=output)
        ]
        self._offered = ", ".join(s.name for s in self._specs)
        self._examples = {c: ENDING_EXAMPLES[c] for c in ending_group(role)}
        if output is not None and "finish" in self._examples:  # issue 14 item 4
            self._examples["finish"] = {**self._examples["finish"], "output": OUTPUT_EXAMPLE}
        self._endings = " or ".join(json_call(c, None, a) for c, a in self._examples.items())
        self._writer = next((t for t in tools if t.access == "write"), None)

    def offered_tools(self) -> list[ToolSpec]:
        """Registry tools of the arm + the role's ending tools (SPEC S2)."""
        return self._specs

    def prompt_part(self) -> str:
        """Nothing beyond the tool schemas the model is given."""
        return ""

    def describe(self) -> dict[str, Any]:
        """``{"arm": ...}`` for ``session_started``."""
        return {"arm": self.arm}

    async def act(self, reply: Reply, ctx: TurnContext) -> TurnOutcome:
        """Run the reply's calls in order under the ending policy (module docstring)."""
        if not reply.tool_calls:
            msg = no_tool_call_feedback(self.role)
            return TurnOutcome(
                messages=[UserMessage(content=msg)], error="no_tool_call", error_message=msg
            )
        out = TurnOutcome()
        decl = Declarations()
        failed = ""
        for call in reply.tool_calls:
            args = excerpt_arguments(call.arguments)
            ctx.emit(ToolCalled(**ctx.ids, name=call.name, arguments=args))
            res = await self._one(call, decl, ctx)
            shown = excerpt(res.content, 300)
            ctx.emit(ToolResult(**ctx.ids, name=call.name, ok=res.ok, excerpt=shown))
            out.messages.append(ToolMessage(call_id=call.id, name=call.name, content=res.content))
            # the reply's kind: its first error, a repeat only when nothing worse came
            worse = out.error is None or (out.error == "repeated_call" != res.kind)
            if res.kind is not None and worse:
                out.error, out.error_message = res.kind, res.content
            if not res.ok and not failed:
                failed = f"{call.name}: {res.content}"
        error = excerpt(failed, 500) if failed else None
        out.ending = close_turn(decl, error=error, ids=ctx.ids, emit=ctx.emit).ending
        self._remind(out)
        return out

    def _remind(self, out: TurnOutcome) -> None:
        """Close the turn's progress, and remind the model of the ending when due.

        On a good turn with no ending, once the task looks done, the reminder that
        points at the ending is added (:mod:`gg.progress`).
        """
        self.progress.end_turn()
        why = self.progress.looks_done()
        if why is None or out.error is not None or out.ending is not None or not out.messages:
            return
        last = out.messages[-1]
        if isinstance(last, ToolMessage):
            note = ending_reminder(self.role, why=why, endings=self._endings)
            out.messages[-1] = ToolMessage(
                call_id=last.call_id, name=last.name, content=f"{last.content}\n\n{note}"
            )

    async def _one(self, call: ToolCall, decl: Declarations, ctx: TurnContext) -> _CallOutcome:
        if is_ending_name(call.name):
            return self._ending(call, decl, ctx)
        tool = self._tools.get(call.name)
        if tool is None:
            return _CallOutcome(
                f"There is no tool {call.name!r} here. The tools offered are: {self._offered}. "
                f"To end the session, send: {self._endings}",
                ok=False,
                kind="unknown_tool",
            )
        if isinstance(call.arguments, str):
            return _bad_args(call, tool.parameters)
        try:
            args = tool.validate(call.arguments)
        except ArgumentsError as e:
            return _CallOutcome(
                f"{e} Call it again with arguments that fit, like this: "
                f"{json_call(tool.name, tool.parameters)}",
                ok=False,
                kind="bad_arguments",
            )
        copied = placeholder_in(args)
        if copied is not None:
            return _CallOutcome(
                f"The {copied} argument of {tool.name} is {args[copied]!r}, the example's "
                f"placeholder: nothing was run. Send the real {copied} instead.",
                ok=False,
                kind="bad_arguments",
            )
        return await self._run(tool, args, turn=ctx.turn)

    async def _run(self, tool: Tool, args: dict[str, Any], *, turn: int) -> _CallOutcome:
        """Run a validated call, unless it repeats one made with nothing changed since."""
        times = self.progress.repeats(tool.name, args)
        if times is not None:
            what = f"{tool.name}({', '.join(f'{k}={_shown(v)}' for k, v in args.items())})"
            text = repeated_call_feedback(
                self.role,
                what=what,
                times=times,
                unit="call",
                change=self._change(),
                endings=self._endings,
            )
            return _CallOutcome(text, ok=False, kind="repeated_call")
        try:
            context = self._context.at_turn(turn)  # the calling turn
            res = _CallOutcome(await tool.call(args, context))
        except ToolError as e:
            res = _CallOutcome(f"Error: {e}", ok=False)
        except DiskFull:  # not the model's doing: the run stops, naming the disk (issue 12)
            raise
        except Exception as e:  # a user tool's bug must not crash the session
            res = _CallOutcome(f"Error: {type(e).__name__}: {e}", ok=False)
        changed = res.ok and tool.access != "read" and not self._context.read_only
        self.progress.note(tool.name, args, changed=changed)
        self.progress.observe(access=tool.access, ok=res.ok, result=res.content, arguments=args)
        return res

    def _change(self) -> str | None:
        """The JSON of a write to the file last read; ``None``: no writer, or one wrote."""
        w = self._writer
        if w is None or self.progress.wrote:  # a change made: a copied form would redo it
            return None
        args = change_arguments(w.parameters, self.progress.last_read)
        return json_call(w.name, w.parameters, args)

    def _ending(self, call: ToolCall, decl: Declarations, ctx: TurnContext) -> _CallOutcome:
        name = canonical_call(call.name)
        args = call.arguments
        if isinstance(args, str):
            if name in ending_group(self.role):
                return _bad_args(call, None)
            args = {}
        result = check_ending(name, args, role=self.role, output=self.output)
        if isinstance(result, Refusal):
            ctx.emit(
                EndingRefused(
                    **ctx.ids, call=result.call, reason=result.reason, message=result.message
                )
            )
            form = (
                self._endings
                if result.reason == "unavailable"
                else json_call(name, None, self._examples.get(name))
            )
            text = f"{result.message} Send exactly: {form}"
            return _CallOutcome(text, ok=False, kind="ending_refused")
        decl.declare(result)
        ctx.emit(EndingDeclared(**ctx.ids, call=result.call, arguments=result.arguments()))
        return _CallOutcome(f"{spell(result.call)} declared.")


def _schema_hint(parameters: dict[str, Any] | None) -> str:
    props = (parameters or {}).get("properties", {})
    required = set((parameters or {}).get("required", []))
    fields = [
        f"{k}: {v.get('type', 'any')}{'' if k in required else ' (optional)'}"
        for k, v in props.items()
    ]
    return "{" + ", ".join(fields) + "}"


def _shown(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)[:80]
    except (TypeError, ValueError):
        return repr(value)[:80]


def _bad_args(call: ToolCall, parameters: dict[str, Any] | None) -> _CallOutcome:
    hint = f" matching {_schema_hint(parameters)}" if parameters is not None else ""
    form = json_call(canonical_call(call.name), parameters)
    why = call.parse_error or "unreadable"
    what = (
        f"The call of {call.name} was {why}."  # the provider refused a decoded value
        if why.startswith("refused: ")
        else f"The arguments of {call.name} are not a JSON object ({why})."
    )
    return _CallOutcome(
        f"{what} Send them as a JSON object{hint}, like this: {form}",
        ok=False,
        kind="bad_arguments",
    )
