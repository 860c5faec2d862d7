"""Responses as code (SPEC M2, S2-S9, S13).

The only offered tool is ``submit_program(program: str)``. A reply without it
is an error turn (``no_program``), even when its text holds a code block:
reply text is never compiled. A program over ``[sandbox] program_bytes`` or
not valid Unicode is not run (``compile_error``). The program is compiled
(``compile_error`` with the compiler's line and column) never in gg's
process: Python by the run's own guest in the sandbox, JavaScript by Deno in
a check before the run. Then it runs in the sandbox in the run's language
arm, importing the SDK bound to the name ``gg``.

Every SDK call crosses the membrane to :meth:`CodeMode._answer`: registry
tools run here, in gg, under the arm's selection; ending calls go through
:func:`gg.endings.check_ending` (role, then shape), the same check as in
tool-calling mode (S7). A refused call raises inside the program and makes
the turn an error turn (``ending_refused``). Declaring sets a flag and
returns (S8): the last declaration is read, superseded ones are counted on
the stream. If the program raises after declaring, the ending is revoked
(S9) and the turn's feedback is the runtime error alone.

One program per reply: further ``submit_program`` calls in the same reply are
answered "not run" and do not count as error turns.

On-use scripts (S13) run through :func:`run_on_use_script` with no ending
group: every ending call from one is refused as unavailable.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from gg.bounded import scrub
from gg.ceilings import ErrorKind
from gg.endings import Declarations, Language, Refusal, Role, check_ending, is_ending_name
from gg.errors import DiskFull, ToolError
from gg.models.base import Reply, ToolCall, ToolMessage, ToolSpec, UserMessage
from gg.modes.base import Emit, TurnContext, TurnOutcome, close_turn
from gg.sandbox import (
    CallAnswer,
    CallRequest,
    CompileProblem,
    ProgramResult,
    Sandbox,
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

    async def answer(self, request: CallRequest) -> CallAnswer:
        """Answer one SDK call that crossed the membrane (never raises)."""
        if request.kind == "ending" or is_ending_name(request.name):
            return self._ending(request)
        return await self._tool(request)

    def _ending(self, request: CallRequest) -> CallAnswer:
        result = check_ending(
            request.name, request.arguments, role=self.role, language=self.language
        )
        if isinstance(result, Refusal):
            self.refused.append(result)
            self.emit(
                EndingRefused(
                    **self.ids, call=result.call, reason=result.reason, message=result.message
                )
            )
            return CallAnswer(ok=False, error=result.message, error_type="ending_refused")
        self.declarations.declare(result)
        self.emit(EndingDeclared(**self.ids, call=result.call, arguments=result.arguments()))
        return CallAnswer(ok=True, value=None)

    async def _tool(self, request: CallRequest) -> CallAnswer:
        args = excerpt_arguments(request.arguments)
        self.emit(ToolCalled(**self.ids, name=request.name, arguments=args))
        tool = self.tools.get(request.name)
        if tool is None:
            answer = CallAnswer(
                ok=False,
                error_type="bad_call",
                error=f"there is no tool {request.name!r}; the SDK's tools are: "
                f"{', '.join(self.tools) or '(none)'}",
            )
        else:
            answer = _valid_text(await _call_tool(tool, request.arguments, self.context))
        text = _shown(answer.value) if answer.ok else answer.error
        self.emit(
            ToolResult(**self.ids, name=request.name, ok=answer.ok, excerpt=excerpt(text, 300))
        )
        return answer


def _shown(value: Any) -> str:
    """``str(value)`` as valid Unicode, for the stream; never raises (a 5,000-digit int, a
    nested list past the recursion limit, a value whose ``__str__`` fails)."""
    try:
        return scrub(str(value))
    except Exception:  # whatever a user tool returned
        return f"<a {type(value).__name__} gg cannot show>"


def _valid_text(answer: CallAnswer) -> CallAnswer:
    """The answer with lone surrogates replaced in its text (a str value, the error), so that
    neither the stream nor the program nor the next prompt gets invalid Unicode (issue 9 item
    6). Nested values are scrubbed when the membrane sends them."""
    value = scrub(answer.value) if isinstance(answer.value, str) else answer.value
    return replace(answer, value=value, error=scrub(answer.error))


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
    """The program's error, without runtime advice the model cannot follow (Deno's
    "run again with the --allow-net flag"): the sandbox grants no such permission."""
    return _DENO_HINT.sub(" (the sandbox does not allow this)", error)


def program_feedback(result: ProgramResult, *, label: str = "The program") -> str:
    """What a program (or an on-use script, named by ``label``) printed, returned and
    raised, as the text the model is given (SPEC M2)."""
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
        context: what the tools get (workspace, output cap).
        sandbox: the run's sandbox.
        arm: the arm's name, for the stream.
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
    ) -> None:
        self.role = role
        self.language: Language = language
        self.arm = arm
        self._tools = {t.name: t for t in tools}
        self._specs = [t.spec() for t in tools]
        self._context = context
        self._sandbox = sandbox
        sandbox.warm_up(context.workspace, language=language)  # while the model thinks (issue 11)

    def offered_tools(self) -> list[ToolSpec]:
        """Only ``submit_program`` (SPEC M2)."""
        return [SUBMIT_PROGRAM]

    def prompt_part(self) -> str:
        """How to answer, and the SDK's signatures for this arm and language."""
        return (
            f"## Answering with programs ({self.language})\n"
            "Answer every turn by calling submit_program with a complete program. It runs in "
            "a sandbox with the SDK bound to the name `gg`; what it prints and returns, and "
            "any error, come back to you as the result.\n"
            + sdk_signatures(self._specs, language=self.language)
        )

    def describe(self) -> dict[str, Any]:
        """``{"arm": ...}`` for ``session_started``."""
        return {"arm": self.arm}

    async def act(self, reply: Reply, ctx: TurnContext) -> TurnOutcome:
        """Compile and run the reply's program; read its declarations (SPEC S5, S8, S9)."""
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
        problem = await self._sandbox.precheck(program, language=self.language)
        if problem is not None:
            return _error(out, first, "compile_error", _problem_text(problem))
        turn = ProgramTurn(
            role=self.role,
            language=self.language,
            emit=ctx.emit,
            ids=ctx.ids,
            tools=self._tools,
            context=replace(self._context, turn=ctx.turn),  # on-use events carry the turn
        )
        shown = {"program": excerpt(program, 2000)}
        ctx.emit(ToolCalled(**ctx.ids, name="submit_program", arguments=shown))
        result = await self._sandbox.run(
            program,
            language=self.language,
            workspace=ctx.workspace,
            tools=self._specs,
            handler=turn.answer,
        )
        if result.compile_problem is not None:  # compiled in the sandbox (Python): S5
            message = _problem_text(result.compile_problem)
            ctx.emit(
                ToolResult(
                    **ctx.ids, name="submit_program", ok=False, excerpt=excerpt(message, 300)
                )
            )
            return _error(out, first, "compile_error", message)
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
    ok = result.error is None
    ctx.emit(ToolResult(**ctx.ids, name="submit_program", ok=ok, excerpt=excerpt(feedback, 300)))
    out.messages.insert(0, ToolMessage(call_id=call.id, name=call.name, content=feedback))
    if turn.refused:
        out.error, out.error_message = "ending_refused", turn.refused[-1].message
    out.ending = closed.ending
    return out


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
    )
