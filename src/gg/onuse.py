"""On-use scripts: a skill's ``on_use`` script and the memory's ``on_recall`` (SPEC T3, S13).

This module is the one place an on-use script is run from. The script runs in
the run's sandbox with the SDK and **no ending group**: every ending call from
it is refused as unavailable (the refusal raises inside the script and is on
the stream as ``ending_refused`` under the calling session's id), and the
calling session goes on. Its SDK offers the run's arm without the
capabilities in :data:`NO_SCRIPT_CAPABILITIES` (no subagents, no recursion).

It reaches the run only through :class:`gg.tools.registry.RunServices`.
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

from gg.endings import Language
from gg.errors import GGError, ToolError
from gg.modes.code import program_feedback, run_on_use_script
from gg.sandbox import Sandbox
from gg.sandbox.checks import CompileProblem
from gg.stream import EventIds
from gg.tools.registry import RunServices, ToolContext

__all__ = ["DATA_LINES", "NO_SCRIPT_CAPABILITIES", "file_lines", "run_on_use", "with_data"]

NO_SCRIPT_CAPABILITIES = frozenset({"agents", "skills", "memory"})
"""Capabilities whose tools an on-use script's SDK does not offer."""


async def run_on_use(
    ctx: ToolContext,
    source: str,
    *,
    language: Language,
    label: str,
    data: tuple[str, Any] | None = None,
) -> str:
    """Run an on-use script in the run's sandbox with no ending group (SPEC S13).

    Its events (``tool_call``, ``ending_refused``...) carry the calling session's id
    and turn (``ctx.turn``).

    Args:
        ctx: the calling tool's context (its run, session id, workspace, turn).
        source: the script's source, as in its file.
        language: ``"python"`` or ``"javascript"``.
        label: how to name the script in the text, e.g. ``"the on-use script"``.
        data: ``(name, value)``: a variable defined for the script (:func:`with_data`);
            line numbers in its errors are still the file's (the added line is
            taken off them).

    Returns:
        What the script printed and returned, and its error if it failed.

    Raises:
        ToolError: no run, no working sandbox (or it failed to start the script), or
            the script does not compile.
    """
    run = ctx.run
    if run is None:
        raise ToolError(f"{label} runs only inside a run")
    offset = 0
    if data is not None:
        source, offset = with_data(source, language, name=data[0], data=data[1]), DATA_LINES
    sandbox = _sandbox_for(run, ctx, label)
    try:
        _compiles(await sandbox.acompile(source, language=language), label, offset)
        result = await run_on_use_script(
            source,
            language=language,
            sandbox=sandbox,
            tools=run.script_tools(session_id=ctx.session_id or "", read_only=ctx.read_only),
            context=ctx,
            emit=run.emit,
            ids=EventIds(run_id=run.run_id, session_id=ctx.session_id, turn=ctx.turn),
        )
    except ToolError:
        raise
    except GGError as e:
        raise ToolError(f"{label} could not run: {e}") from e
    if result.error and offset:
        result = dataclasses.replace(result, error=file_lines(result.error, offset))
    return program_feedback(result, label=label)


def _sandbox_for(run: RunServices, ctx: ToolContext, label: str) -> Sandbox:
    """The run's sandbox, when it can run this script (read-only for a reviewer).

    Raises:
        ToolError: no working sandbox, or a read-only context the sandbox cannot enforce.
    """
    try:
        sandbox = run.sandbox()
    except GGError as e:
        raise ToolError(f"{label} could not run: the sandbox is not available ({e})") from e
    if ctx.read_only and not sandbox.enforces_read_only():
        raise ToolError(
            f"{label} could not run: this session may not change the workspace, "
            "and the sandbox here cannot keep it read-only"
        )
    return sandbox


def _compiles(problem: CompileProblem | None, label: str, offset: int) -> None:
    """ToolError naming the script's own line when ``problem`` says it does not compile."""
    if problem is not None:
        line = max(1, problem.line - offset) if problem.line else None
        where = f" (line {line}, column {problem.column})" if line else ""
        message = file_lines(problem.message, offset)
        raise ToolError(f"{label} does not compile{where}: {message}")


DATA_LINES = 1
"""Lines :func:`with_data` puts before a script."""

_PY_LINE = re.compile(r'(File "<program>", line )(\d+)')
_JS_LINE = re.compile(r"(program\.js:)(\d+)")
_JS_FRAME = re.compile(r"(?m)^( *)(\d+)(?= \| )")
"""The line-number gutter of Deno's code frame under a compile error (``3 | code``)."""


def file_lines(text: str, offset: int) -> str:
    """Move the program's line numbers in ``text`` back by ``offset`` lines.

    ``text`` is a traceback or a compiler message; its numbers become those of the
    script's own file (never below 1).

    Args:
        text: Python (``File "<program>", line N``) or Deno (``program.js:N:M``, and
            the ``N | code`` gutter of its code frames) output.
        offset: lines added before the script.
    """
    if not offset:
        return text

    def back(match: re.Match[str]) -> str:
        return f"{match.group(1)}{max(1, int(match.group(2)) - offset)}"

    return _JS_FRAME.sub(back, _JS_LINE.sub(back, _PY_LINE.sub(back, text)))


def with_data(source: str, language: Language, *, name: str, data: Any) -> str:
    """``source`` preceded by one line defining the variable ``name`` as ``data`` (JSON).

    So the script's line numbers in errors are :data:`DATA_LINES` more than in its
    file; :func:`run_on_use` (given ``data``) takes them off again.

    Args:
        source: the script.
        language: its language.
        name: an identifier, e.g. ``"recall"``.
        data: a JSON-able value.

    Returns:
        The script to run.
    """
    blob = json.dumps(data, ensure_ascii=False)
    if language == "javascript":
        return f"const {name} = {blob};\n{source}"
    return f"{name} = __import__('json').loads({blob!r})\n{source}"
