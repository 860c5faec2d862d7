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

import json
from typing import Any

from gg.endings import Language
from gg.errors import GGError, ToolError
from gg.modes.code import program_feedback, run_on_use_script
from gg.stream import EventIds
from gg.tools.registry import ToolContext

__all__ = ["NO_SCRIPT_CAPABILITIES", "run_on_use", "with_data"]

NO_SCRIPT_CAPABILITIES = frozenset({"agents", "skills", "memory"})
"""Capabilities whose tools an on-use script's SDK does not offer."""


async def run_on_use(ctx: ToolContext, source: str, *, language: Language, label: str) -> str:
    """Run an on-use script in the run's sandbox with no ending group (SPEC S13).

    Args:
        ctx: the calling tool's context (its run, session id, workspace).
        source: the script's source.
        language: ``"python"`` or ``"javascript"``.
        label: how to name the script in the text, e.g. ``"the on-use script"``.

    Returns:
        What the script printed and returned, and its error if it failed.

    Raises:
        ToolError: no run, no working sandbox (or it failed to start the script), or
            the script does not compile.
    """
    run = ctx.run
    if run is None:
        raise ToolError(f"{label} runs only inside a run")
    try:
        sandbox = run.sandbox()
    except GGError as e:
        raise ToolError(f"{label} could not run: the sandbox is not available ({e})") from e
    if ctx.read_only and not sandbox.enforces_read_only():
        raise ToolError(
            f"{label} could not run: this session may not change the workspace, "
            "and the sandbox here cannot keep it read-only"
        )
    try:
        problem = await sandbox.acompile(source, language=language)
        if problem is not None:
            where = f" (line {problem.line}, column {problem.column})" if problem.line else ""
            raise ToolError(f"{label} does not compile{where}: {problem.message}")
        result = await run_on_use_script(
            source,
            language=language,
            sandbox=sandbox,
            tools=run.script_tools(),
            context=ctx,
            emit=run.emit,
            ids=EventIds(run_id=run.run_id, session_id=ctx.session_id, turn=None),
        )
    except ToolError:
        raise
    except GGError as e:
        raise ToolError(f"{label} could not run: {e}") from e
    return program_feedback(result, label=label)


def with_data(source: str, language: Language, *, name: str, data: Any) -> str:
    """``source`` preceded by one line defining the variable ``name`` as ``data`` (JSON).

    So the script's line numbers in errors are one more than in its file.

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
