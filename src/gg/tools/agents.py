"""Subagents: the ``spawn`` and ``spawn_all`` registry tools, capability ``agents`` (SPEC T2).

``spawn(task)`` starts a **subagent** (through
:meth:`gg.tools.registry.RunServices.spawn`): a new session of the caller's run, in
the Standard role, on the same model and stream, in the caller's workspace,
with ``parent`` set to the caller's session id and a depth one more than the
caller's. It keeps its own ceiling counts (every session does) and shares
the run's budget. Its ``finish`` summary is the tool's result.

A subagent stopped by a ceiling is never dressed up as a result (SPEC S6):
``spawn`` raises :class:`gg.errors.ToolError` carrying the subagent's
diagnosis, so the parent sees a failed tool result naming what went wrong.

``spawn_all(tasks)`` runs several subagents concurrently and returns one
entry per task, in order: ``{"task", "ok": true, "summary"}`` or
``{"task", "ok": false, "error"}``. One subagent failing does not fail the
others or the call.

Limits, from ``[agents]`` (checked before anything starts, refused as tool
errors): ``max_depth`` (the root session is depth 0; a session at
``max_depth`` cannot spawn) and ``max_subagents`` per run, counted over every
depth on the run itself (:attr:`~gg.tools.registry.RunServices.subagents_started`),
so two runs never share a count. ``spawn_all`` that asks for more subagents
than the run has left starts none. The subagent's system prompt (the note
that it is one, the skills) is assembled with every other session's
(:func:`gg.prompts.session_prompt`).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from gg.errors import GGError, ToolError
from gg.tools.registry import RunServices, Tool, ToolContext, tool

__all__ = ["AGENT_TOOLS", "spawn", "spawn_all"]


def _reserve(ctx: ToolContext, count: int) -> RunServices:
    """Check depth and count limits, then count ``count`` new subagents (SPEC T2).

    Returns:
        The run.

    Raises:
        ToolError: no run; the caller is at ``max_depth``; fewer than ``count``
            subagents are left in the run.
    """
    run = ctx.run
    if run is None:
        raise ToolError("spawn works only inside a run: this call has no run to add a session to")
    limits = run.settings.agents
    if ctx.depth >= limits.max_depth:
        raise ToolError(
            f"cannot spawn: this session is at depth {ctx.depth} and [agents] max_depth is "
            f"{limits.max_depth}, so it may not start subagents. Do the task yourself."
        )
    used = run.subagents_started
    left = limits.max_subagents - used
    if count > left:
        asked = "a subagent" if count == 1 else f"{count} subagents"
        raise ToolError(
            f"cannot spawn {asked}: this run has started {used} of its [agents] "
            f"max_subagents = {limits.max_subagents}, so {max(left, 0)} can still be started. "
            "Do the remaining work yourself, or spawn fewer."
        )
    run.subagents_started = used + count
    return run


def _check_task(task: str) -> str:
    if not task.strip():
        raise ToolError("the task is empty: give the subagent a task to do")
    return task.strip()


async def _subagent(run: RunServices, task: str, ctx: ToolContext) -> str:
    """Run one subagent to its ending and return its summary.

    Raises:
        ToolError: the subagent was stopped (its diagnosis), or could not start.
    """
    try:
        result = await run.spawn(
            task, parent=ctx.session_id, workspace=ctx.workspace, depth=ctx.depth + 1
        )
    except GGError as e:
        raise ToolError(f"the subagent could not start: {e}") from e
    if result.ending is None:
        raise ToolError(
            f"subagent {result.session_id} was stopped without finishing after "
            f"{result.turns} turns: {result.diagnosis}"
        )
    return str(result.ending.arguments().get("summary", ""))


@tool
async def spawn(task: str, *, ctx: ToolContext) -> str:
    """Start a subagent to do a task; returns its finish summary when it is done.

    The subagent works in the same workspace with its own tools and ends with
    finish(summary). If it is stopped without finishing, this tool fails and says why.

    Args:
        task: What the subagent must do, self-contained (it does not see your conversation).
        ctx: The calling session's context (supplied by gg, not in the tool's schema).
    """
    task = _check_task(task)
    run = _reserve(ctx, 1)
    return await _subagent(run, task, ctx)


@tool
async def spawn_all(tasks: list[str], *, ctx: ToolContext) -> list[dict[str, Any]]:
    """Start one subagent per task, all at once; returns their results in order.

    Each entry is {"task", "ok": true, "summary"} or {"task", "ok": false, "error"}.
    If any subagent was stopped without finishing (a ceiling, a model failure), the
    call fails as a whole: its error says how many, then lists every entry as JSON,
    the summaries of those that finished included.

    Args:
        tasks: The subagents' tasks, each self-contained.
        ctx: The calling session's context (supplied by gg, not in the tool's schema).
    """
    if not tasks:
        raise ToolError("spawn_all needs at least one task")
    clean = [_check_task(t) for t in tasks]
    run = _reserve(ctx, len(clean))

    async def one(task: str) -> dict[str, Any]:
        try:
            return {"task": task, "ok": True, "summary": await _subagent(run, task, ctx)}
        except ToolError as e:
            return {"task": task, "ok": False, "error": str(e)}

    results = list(await asyncio.gather(*(one(t) for t in clean)))
    stopped = sum(not r["ok"] for r in results)
    if stopped:  # never ok:true on the stream when a subagent was stopped (issue 12)
        raise ToolError(
            f"{stopped} of {len(results)} subagents were stopped without finishing; "
            f"the results, in order: {json.dumps(results, ensure_ascii=False)}"
        )
    return results


AGENT_TOOLS: tuple[Tool, ...] = (spawn, spawn_all)
"""The tools of capability ``agents``, in registration order."""
