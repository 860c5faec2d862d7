"""Responses as code (SPEC M2, S2-S9, S13).

The only offered tool is ``submit_program(program: str)``. A reply without it
is an error turn (``no_program``), even when its text holds a code block:
reply text is never compiled. A program over ``[sandbox] program_bytes`` or
not valid Unicode is not run (``compile_error``). The program is compiled
(``compile_error`` with the compiler's line and column) never in gg's
process: Python by the run's own guest in the sandbox, JavaScript by Deno's
module load in the run's own process. Then it runs in the sandbox in the run's
language arm, importing the SDK bound to the name ``gg``: Python as a fork of
the session's warm sandbox, JavaScript in a Deno started for it while the
model thought (issue 11).

Every SDK call crosses the membrane to :meth:`CodeMode._answer`: registry
tools run here, in gg, under the arm's selection; ending calls go through
:func:`gg.endings.check_ending` (role, then shape), the same check as in
tool-calling mode (S7). A refused call raises inside the program and makes
the turn an error turn (``ending_refused``). Declaring sets a flag and
returns (S8): the last declaration is read, superseded ones are counted on
the stream. If the program raises after declaring, the ending is revoked
(S9) and the turn's feedback is the runtime error alone.

For small models (issue 16): the same program submitted ``repeat_limit`` times
with nothing else run between is not run again (``repeated_call``,
:mod:`gg.progress`); the prompt shows a short example program and the SDK as
calls that compile; feedback for a bad call or a program that does not compile
shows the one-line program to write; once the task looks done, a good turn's
feedback carries the reminder that points at the ending. A reviewer's program
runs with the workspace read-only.

One program per reply: further ``submit_program`` calls in the same reply are
answered "not run" and do not count as error turns.

On-use scripts (S13) run through :func:`run_on_use_script` with no ending
group: every ending call from one is refused as unavailable.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from gg.bounded import scrub
from gg.callform import change_arguments, placeholder_in
from gg.ceilings import ErrorKind
from gg.endings import (
    Declarations,
    Language,
    OutputType,
    Refusal,
    Role,
    check_ending,
    ending_group,
    is_ending_name,
)
from gg.errors import DiskFull, ToolError
from gg.models.base import Reply, ToolCall, ToolMessage, ToolSpec, UserMessage
from gg.modes.base import Emit, TurnContext, TurnOutcome, close_turn
from gg.progress import Progress
from gg.prompts import ending_reminder, repeated_call_feedback
from gg.sandbox import (
    CallAnswer,
    CallRequest,
    CompileProblem,
    ProgramResult,
    Sandbox,
    sdk_call,
    sdk_signatures,
)
from gg.stream import (
    EndingDeclared,
    EndingRefused,
    EventIds,
    ToolCalled,
    ToolResult,
    excerpt,
    excerpt_arguments,
)
from gg.tools.registry import ArgumentsError, Tool, ToolContext

__all__ = ["SUBMIT_PROGRAM", "CodeMode", "ProgramTurn", "program_feedback", "run_on_use_script"]

SUBMIT_PROGRAM = ToolSpec(
    name="submit_program",
    description=(
        "Submit a program to run in the sandbox. The SDK is bound to the name `gg`: call "
        "registry tools as gg.tools.<name>(...) and end the session with gg.session.<ending>."
    ),
    parameters={
        "type": "object",
        "properties": {"program": {"type": "string", "description": "The program's source."}},
        "required": ["program"],
        "additionalProperties": False,
    },
)


@dataclass(slots=True, kw_only=True)
class ProgramTurn:
    """The membrane's side of one program run: its declarations and refusals."""

    role: Role | None
    language: Language
    emit: Emit
    ids: EventIds
    """The ids its events carry (the turn's; an on-use script's: its session's, no turn)."""
    tools: dict[str, Tool]
    context: ToolContext
    declarations: Declarations = field(default_factory=Declarations)
    refused: list[Refusal] = field(default_factory=list)
    progress: Progress | None = None
    """The session's progress, told what each tool call did (``None``: an on-use script)."""
    output: OutputType | None = None
    """The type ``finish`` carries as ``output`` (issue 14 item 4), if any."""

    def form(self, name: str) -> str:
        """The one-line program calling ``name`` (a tool or an ending), for feedback."""
        specs = [t.spec() for t in self.tools.values()]
        return sdk_call(specs, name, language=self.language) or name

    async def answer(self, request: CallRequest) -> CallAnswer:
        """Answer one SDK call that crossed the membrane (never raises)."""
        if request.kind == "ending" or is_ending_name(request.name):
            return self._ending(request)
        return await self._tool(request)

    def _ending(self, request: CallRequest) -> CallAnswer:
        result = check_ending(
            request.name,
            request.arguments,
            role=self.role,
            language=self.language,
            output=self.output,
        )
        if isinstance(result, Refusal):
            self.refused.append(result)
            self.emit(
                EndingRefused(
                    **self.ids, call=result.call, reason=result.reason, message=result.message
                )
            )
            calls = [result.call] if result.reason == "shape" else ending_group(self.role)
            form = " or ".join(self.form(c) for c in calls)
            if self.output is not None and result.reason == "shape":
                form = typed_finish_form(self.language)
            text = f"{result.message} Write it as: {form}" if form else result.message
            return CallAnswer(ok=False, error=text, error_type="ending_refused")
        self.declarations.declare(result)
        self.emit(EndingDeclared(**self.ids, call=result.call, arguments=result.arguments()))
        return CallAnswer(ok=True, value=None)

    async def _tool(self, request: CallRequest) -> CallAnswer:
        args = excerpt_arguments(request.arguments)
        # gg built every field (ids, a str name, excerpts): no validation (one per call, the
        # tool's own; issue 11). The stream still serialises whatever these hold (F4).
        self.emit(ToolCalled.of(self.ids, request.name, args))
        tool = self.tools.get(request.name)
        if tool is None:
            answer = CallAnswer(
                ok=False,
                error_type="bad_call",
                error=f"there is no tool {request.name!r}; the SDK's tools are: "
                f"{', '.join(self.tools) or '(none)'}",
            )
        elif (copied := placeholder_in(request.arguments)) is not None:
            answer = CallAnswer(
                ok=False,
                error_type="bad_call",
                error=f"the {copied} argument of {tool.name} is "
                f"{request.arguments[copied]!r}, the example's placeholder: nothing was run; "
                f"pass the real {copied}",
            )
        else:
            answer = _valid_text(await _call_tool(tool, request.arguments, self.context))
            if answer.error_type == "bad_call":
                answer = replace(
                    answer, error=f"{answer.error} Call it like this: {self.form(tool.name)}"
                )
        text = _shown(answer.value) if answer.ok else answer.error
        if tool is not None and self.progress is not None:
            self.progress.observe(
                access=tool.access, ok=answer.ok, result=text, arguments=request.arguments
            )
        self.emit(ToolResult.of(self.ids, request.name, answer.ok, excerpt(text, 300)))
        return answer


def typed_finish_form(language: Language) -> str:
    """The program line of a ``finish`` that carries an ``output`` (issue 14 item 4)."""
    if language == "python":
        return 'gg.session.finish(summary="<what you did>", output=<the result>)'
    return 'await gg.session.finish({summary: "<what you did>", output: <the result>})'


def _shown(value: Any) -> str:
    """``str(value)`` as valid Unicode, for the stream.

    Never raises (a 5,000-digit int, a nested list past the recursion limit, a value whose
    ``__str__`` fails).
    """
    try:
        return scrub(str(value))
    except Exception:  # whatever a user tool returned
        return f"<a {type(value).__name__} gg cannot show>"


def _valid_text(answer: CallAnswer) -> CallAnswer:
    """The answer with lone surrogates replaced in its text (a str value, the error).

    So neither the stream nor the program nor the next prompt gets invalid Unicode (issue 9
    item 6). Nested values are scrubbed when the membrane sends them.
    """
    value = scrub(answer.value) if isinstance(answer.value, str) else answer.value
    error = scrub(answer.error)
    if value is answer.value and error is answer.error:
        return answer  # nothing to replace (scrub gives back the same text when it is valid)
    return replace(answer, value=value, error=error)


async def _call_tool(tool: Tool, arguments: dict[str, Any], ctx: ToolContext) -> CallAnswer:
    try:
        args = tool.validate(arguments)
    except ArgumentsError as e:
        return CallAnswer(ok=False, error=str(e), error_type="bad_call")
    try:
        return CallAnswer(ok=True, value=await tool.call(args, ctx))
    except ToolError as e:
        return CallAnswer(ok=False, error=str(e), error_type="tool_error")
    except DiskFull:  # not the program's doing: the run stops, naming the disk (issue 12)
        raise
    except Exception as e:  # a user tool's bug is the program's error, not gg's
        return CallAnswer(
            ok=False, error=f"{type(e).__name__}: {_shown(e)}", error_type="tool_error"
        )


_DENO_HINT = re.compile(r",? ?run again with the --allow-[a-z-]+ flag")


def _runtime_error(error: str) -> str:
    """The program's error, without runtime advice the model cannot follow.

    Deno's "run again with the --allow-net flag" goes: the sandbox grants no such permission.
    """
    return _DENO_HINT.sub(" (the sandbox does not allow this)", error)


def program_feedback(result: ProgramResult, *, label: str = "The program") -> str:
    """What a program printed, returned and raised, as the text the model is given (SPEC M2).

    The program may be an on-use script, named by ``label``.
    """
    name = label[:1].upper() + label[1:]
    parts = []
    if result.output:
        parts.append(f"Output of {label[:1].lower() + label[1:]}:\n{result.output.rstrip()}")
    if result.returned is not None:
        parts.append(f"{name} returned: {result.returned}")
    if result.error:
        parts.append(f"{name} failed:\n{_runtime_error(result.error).rstrip()}")
    return "\n".join(parts) or f"{name} ran and printed nothing."


class CodeMode:
    """The responses-as-code mode (SPEC M2).

    Args:
        role: the session's role (``None`` is not allowed here; see on-use scripts).
        language: the language arm, ``"python"`` or ``"javascript"``.
        tools: the arm's registry tools, offered through the SDK.
        context: what the tools get (workspace, output cap); a ``read_only`` context (a
            reviewer's) runs programs with the workspace read-only.
        sandbox: the run's sandbox.
        arm: the arm's name, for the stream.
        repeat_limit: times one identical program may run with nothing else run between
            before it is a ``repeated_call`` error turn (``[ceilings] repeated_calls``;
            0 = no limit).
        output: the type ``finish`` carries as ``output`` (issue 14 item 4): the prompt
            shows its schema; the membrane checks it (:func:`gg.endings.check_ending`).
    """

    name = "code"

    def __init__(
        self,
        *,
        role: Role,
        language: Language,
        tools: Sequence[Tool],
        context: ToolContext,
        sandbox: Sandbox,
        arm: str = "all",
        repeat_limit: int = 0,
        output: OutputType | None = None,
    ) -> None:
        self.role = role
        self.output = output
        self.language: Language = language
        self.arm = arm
        self._tools = {t.name: t for t in tools}
        self._specs = [t.spec() for t in tools]
        self._context = context
        self._sandbox = sandbox
        sandbox.warm_up(context.workspace, language=language, read_only=context.read_only)
        self.progress = Progress(limit=repeat_limit, review=context.read_only)
        forms = [sdk_call(self._specs, c, language=language) for c in ending_group(role)]
        if output is not None and role is Role.STANDARD:  # finish carries the output
            forms = [typed_finish_form(language)]
        self._endings = " or ".join(f for f in forms if f)
        self._writer = next((t for t in tools if t.access == "write"), None)

    def _change(self) -> str | None:
        """The program line writing the file last read; ``None``: no writer, or one wrote."""
        w = self._writer
        if w is None or self.progress.wrote:  # a change made: a copied form would redo it
            return None
        args = change_arguments(w.parameters, self.progress.last_read)
        return sdk_call(self._specs, w.name, language=self.language, arguments=args)

    def offered_tools(self) -> list[ToolSpec]:
        """Only ``submit_program`` (SPEC M2)."""
        return [SUBMIT_PROGRAM]

    def prompt_part(self) -> str:
        """How to answer, a short example program, and the SDK as calls that compile."""
        return (
            f"## Answering with programs ({self.language})\n"
            "Answer every turn by calling submit_program with a complete program. It runs in "
            "a sandbox with the SDK bound to the name `gg`; what it prints and returns, and "
            "any error, come back to you as the result.\n"
            f"An example program:\n{self._example()}\n"
            "The SDK (each line is a call you can write as it stands, with your own values):\n"
            + sdk_signatures(self._specs, language=self.language)
            + self._output_part()
        )

    def _output_part(self) -> str:
        """How ``finish`` carries the typed output, with its schema (issue 14 item 4)."""
        if self.output is None or self.role is not Role.STANDARD:
            return ""
        out = self.output
        schema = {**out.schema, **({"$defs": out.defs} if out.defs else {})}
        call = typed_finish_form(self.language)
        return (
            f"\nYour finish must also carry the result as output: {call}, where the output "
            f"fits this JSON Schema: {json.dumps(schema, ensure_ascii=False)}"
        )

    def _example(self) -> str:
        """A two- or three-line program: print what a reading tool returns, then end."""
        comment = "#" if self.language == "python" else "//"
        reader = next((t for t in self._tools.values() if t.access == "read"), None)
        lines = []
        if reader is not None:
            call = sdk_call(self._specs, reader.name, language=self.language) or ""
            show = "print(result)" if self.language == "python" else "console.log(result)"
            head = "result = " if self.language == "python" else "const result = "
            lines += [f"{head}{call}", show]
        end = self._endings.split(" or ")[0]
        lines.append(
            f"{comment} once the work is done (in a later program, after seeing the output):"
        )
        lines.append(f"{comment} {end}")
        return "\n".join(lines)

    def describe(self) -> dict[str, Any]:
        """``{"arm": ...}`` for ``session_started``."""
        return {"arm": self.arm}

    async def act(self, reply: Reply, ctx: TurnContext) -> TurnOutcome:
        """Compile and run the reply's program; read its declarations (SPEC S5, S8, S9)."""
        out = await self._act(reply, ctx)
        self.progress.end_turn()
        why = self.progress.looks_done()
        if why is not None and out.error is None and out.ending is None and out.messages:
            first = out.messages[0]
            if isinstance(first, ToolMessage):
                note = ending_reminder(self.role, why=why, endings=self._endings)
                out.messages[0] = replace(first, content=f"{first.content}\n\n{note}")
        return out

    async def _act(self, reply: Reply, ctx: TurnContext) -> TurnOutcome:
        programs = [c for c in reply.tool_calls if c.name == "submit_program"]
        if not programs:
            return _no_program(reply)
        first, *rest = programs
        out = TurnOutcome()
        for extra in rest:
            out.messages.append(
                ToolMessage(
                    call_id=extra.id,
                    name=extra.name,
                    content=("Not run: submit one program per reply."),
                )
            )
        program = first.arguments.get("program") if isinstance(first.arguments, dict) else None
        if not isinstance(program, str):
            refused = f"The program was not run: {first.parse_error}. " if first.parse_error else ""
            return _error(
                out,
                first,
                "bad_arguments",
                (
                    f"{refused}submit_program needs one argument, program, a string holding the "
                    "program's source."
                ),
            )
        times = self.progress.repeats("submit_program", {"program": program})
        if times is not None:
            text = repeated_call_feedback(
                self.role,
                what="this same program",
                times=times,
                unit="program",
                change=self._change(),
                endings=self._endings,
            )
            return _error(out, first, "repeated_call", text)
        problem = await self._sandbox.precheck(program, language=self.language)
        if problem is not None:
            return _error(out, first, "compile_error", self._compile_text(problem))
        return await self._run(out, first, program, ctx)

    def _compile_text(self, problem: CompileProblem) -> str:
        text = _problem_text(problem)
        if problem.refused:
            return text
        return (
            f"{text}\nA program is plain {self.language} statements calling the SDK, "
            f"for example:\n{self._example()}"
        )

    async def _run(
        self, out: TurnOutcome, first: ToolCall, program: str, ctx: TurnContext
    ) -> TurnOutcome:
        turn = ProgramTurn(
            role=self.role,
            language=self.language,
            emit=ctx.emit,
            ids=ctx.ids,
            tools=self._tools,
            context=self._context.at_turn(ctx.turn),  # on-use events carry the turn
            progress=self.progress,
            output=self.output,
        )
        shown = {"program": excerpt(program, 2000)}
        ctx.emit(ToolCalled(**ctx.ids, name="submit_program", arguments=shown))
        result = await self._sandbox.run(
            program,
            language=self.language,
            workspace=ctx.workspace,
            tools=self._specs,
            handler=turn.answer,
            read_only=self._context.read_only,
        )
        if result.compile_problem is not None:  # compiled in the sandbox (Python): S5
            message = self._compile_text(result.compile_problem)
            ctx.emit(
                ToolResult(
                    **ctx.ids, name="submit_program", ok=False, excerpt=excerpt(message, 300)
                )
            )
            return _error(out, first, "compile_error", message)
        changed = not self._context.read_only  # a program may write anything (progress.py)
        self.progress.note("submit_program", {"program": program}, changed=changed)
        return _read_program(out, first, result, turn, ctx)


def _problem_text(problem: CompileProblem) -> str:
    """The error turn's message for a program that was not run (SPEC S5, issue 9 item 6)."""
    if problem.refused:
        return f"The program was not run: {problem.message}"
    where = f"line {problem.line}, column {problem.column}: " if problem.line else ""
    return f"The program does not compile: {where}{problem.message}"


def _read_program(
    out: TurnOutcome, call: ToolCall, result: ProgramResult, turn: ProgramTurn, ctx: TurnContext
) -> TurnOutcome:
    error = None if result.error is None else excerpt(result.error, 1000)
    closed = close_turn(turn.declarations, error=error, ids=ctx.ids, emit=ctx.emit)
    feedback = program_feedback(result)
    if closed.revoked is not None and result.error is not None:
        feedback = _runtime_error(result.error)  # S9: the runtime error alone
    if result.error is not None and (name := _misused(result.error)) is not None:
        feedback = f"{feedback}\nCall it like this: {turn.form(name)}"
    ok = result.error is None
    ctx.emit(ToolResult(**ctx.ids, name="submit_program", ok=ok, excerpt=excerpt(feedback, 300)))
    out.messages.insert(0, ToolMessage(call_id=call.id, name=call.name, content=feedback))
    if turn.refused:
        out.error, out.error_message = "ending_refused", turn.refused[-1].message
    out.ending = closed.ending
    return out


_MISUSED = re.compile(r"_(?:Tools|Session)\.(\w+)\(\) (?:got an unexpected|missing \d+ required)")


def _misused(error: str) -> str | None:
    """The SDK call a Python program called with the wrong arguments, if any.

    That is a ``TypeError`` the SDK's own signature raised before anything crossed the
    membrane.
    """
    found = _MISUSED.search(error)
    return None if found is None else found.group(1)


def _error(out: TurnOutcome, call: ToolCall, kind: ErrorKind, message: str) -> TurnOutcome:
    out.messages.insert(0, ToolMessage(call_id=call.id, name=call.name, content=message))
    out.error, out.error_message = kind, message
    return out


def _no_program(reply: Reply) -> TurnOutcome:
    has_code = "```" in reply.text or "gg.session" in reply.text
    hint = " Reply text is never run, even when it holds a code block." if has_code else ""
    message = (
        f"Your reply did not call submit_program, so nothing ran.{hint} Put your program in the "
        "program argument of a submit_program call."
    )
    msgs: list[Any] = [
        ToolMessage(
            call_id=c.id,
            name=c.name,
            content=(f"There is no tool {c.name!r}: the only tool is submit_program."),
        )
        for c in reply.tool_calls
    ]
    msgs.append(UserMessage(content=message))
    return TurnOutcome(messages=msgs, error="no_program", error_message=message)


async def run_on_use_script(
    script: str,
    *,
    language: Language,
    sandbox: Sandbox,
    tools: Sequence[Tool],
    context: ToolContext,
    emit: Emit,
    ids: EventIds,
) -> ProgramResult:
    """Run a skill's or memory's on-use script with the SDK and no ending group (SPEC S13).

    Every ending call from the script is refused as unavailable ("on-use scripts
    cannot end a session"), raised inside the script, and reported on the stream.
    For a ``read_only`` context (a reviewer's) the script's SDK has no ``write`` tools and
    the workspace is read-only to it.

    Args:
        script: the script's source.
        language: its language.
        sandbox: the run's sandbox.
        tools: the registry tools the script's SDK offers.
        context: what the tools get.
        emit: where the script's events go (the run's stream).
        ids: the ids they carry (the calling session's).

    Returns:
        The script's :class:`ProgramResult` (its output is what the use returns).
    """
    if context.read_only:  # a reviewer's use: nothing of the workspace may change (issue 16)
        tools = [t for t in tools if t.access != "write"]
    turn = ProgramTurn(
        role=None,
        language=language,
        emit=emit,
        ids=ids,
        tools={t.name: t for t in tools},
        context=context,
    )
    return await sandbox.run(
        script,
        language=language,
        workspace=context.workspace,
        tools=[t.spec() for t in tools],
        handler=turn.answer,
        read_only=context.read_only,
    )
