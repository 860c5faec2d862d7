"""Subagents: ``spawn`` / ``spawn_all`` (SPEC T2, issue 6).

Concurrent sessions interleave their requests, so these tests use a
:class:`FunctionModel` that answers by looking at each session's own task.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import gg
from gg.config import settings_from_dict
from gg.models.base import Message, ToolMessage, ToolSpec
from gg.testing import FunctionModel, call, text
from support import events_of

CAPS = ["files", "shell", "agents"]


def task_of(messages: list[Message]) -> str:
    """The session's task: its first user message."""
    return messages[1].content


def last_tool(messages: list[Message]) -> ToolMessage | None:
    last = messages[-1]
    return last if isinstance(last, ToolMessage) else None


def agent(workspace: Path, fn: Callable[..., Any], **agents: int) -> gg.Agent:
    settings = settings_from_dict({"tools": {"capabilities": CAPS}, "agents": agents})
    return gg.Agent(model=FunctionModel(fn), workspace=workspace, settings=settings)


def started(result: gg.RunResult) -> list[Any]:
    return [e for e in events_of(result) if e.type == "session_started"]


def test_root_spawns_two_subagents_in_parallel_and_finishes_with_their_summaries(
    workspace: Path,
) -> None:
    both_waiting = asyncio.Barrier(2)
    offered: dict[str, list[str]] = {}

    async def model(messages: list[Message], tools: list[ToolSpec]) -> gg.Reply:
        task = task_of(messages)
        offered.setdefault(task, [t.name for t in tools])
        if task == "coordinate":
            result = last_tool(messages)
            if result is None:
                return call("spawn_all", tasks=["count apples", "count pears"])
            entries = json.loads(result.content)
            return call("finish", summary=" + ".join(e["summary"] for e in entries))
        # Each subagent waits until the other one is running too: only a parallel
        # spawn_all gets past this (a sequential one would time out here).
        await asyncio.wait_for(both_waiting.wait(), timeout=5)
        return call("finish", summary=f"{task.split()[1]}: 3")

    result = agent(workspace, model).run("coordinate")
    assert result.status == "ended"
    assert result.ending == gg.Finish(summary="apples: 3 + pears: 3")
    starts = started(result)
    assert [(s.session_id, s.parent) for s in starts] == [("s1", None), ("s2", "s1"), ("s3", "s1")]
    assert all(s.role == "standard" for s in starts)
    assert {s.task for s in starts[1:]} == {"count apples", "count pears"}
    assert {"spawn", "spawn_all", "finish"} <= set(offered["count apples"])
    ended = [e for e in events_of(result) if e.type == "session_ended"]
    assert [e.session_id for e in ended][-1] == "s1"  # the root ends last
    tool_result = [
        e for e in events_of(result) if e.type == "tool_result" and e.name == "spawn_all"
    ][0]
    assert tool_result.ok


def test_subagent_prompt_says_it_is_one(workspace: Path) -> None:
    prompts: dict[str, str] = {}

    def model(messages: list[Message], tools: list[ToolSpec]) -> gg.Reply:
        prompts[task_of(messages)] = messages[0].content
        if task_of(messages) == "root":
            done = last_tool(messages)
            return call("finish", summary=done.content) if done else call("spawn", task="sub")
        return call("finish", summary="sub done")

    result = agent(workspace, model).run("root")
    assert result.ending == gg.Finish(summary="sub done")
    assert "You are a subagent" in prompts["sub"] and "session s1" in prompts["sub"]
    assert "You are a subagent" not in prompts["root"]


def test_subagent_looping_on_prose_trips_its_ceiling_and_the_root_sees_the_diagnosis(
    workspace: Path,
) -> None:
    seen: list[str] = []

    def model(messages: list[Message], tools: list[ToolSpec]) -> gg.Reply:
        if task_of(messages) == "looper":
            return text("I am thinking about it...")
        result = last_tool(messages)
        if result is None:
            return call("spawn", task="looper")
        seen.append(result.content)
        return call("finish", summary="the subagent failed; reported it")

    result = agent(workspace, model).run("delegate")
    assert result.status == "ended"  # the root goes on and ends by its own finish
    assert len(seen) == 1
    assert seen[0].startswith("Error: subagent s2 was stopped without finishing after 3 turns")
    assert "replied with prose 3 times in a row; it never called a tool" in seen[0]
    evs = events_of(result)
    tripped = [e for e in evs if e.type == "ceiling_tripped"]
    assert [(e.session_id, e.ceiling) for e in tripped] == [("s2", "consecutive_errors")]
    spawn_result = [e for e in evs if e.type == "tool_result" and e.name == "spawn"][0]
    assert spawn_result.session_id == "s1" and spawn_result.ok is False
    sub_end = [e for e in evs if e.type == "session_ended" and e.session_id == "s2"][0]
    assert sub_end.ending is None  # no summary invented for a stopped subagent
    # the root's own ceiling counts are its own: the subagent's errors did not count
    assert not [e for e in evs if e.type == "error_turn" and e.session_id == "s1"]


def test_spawn_all_reports_each_failure_beside_the_successes(workspace: Path) -> None:
    got: list[Any] = []

    def model(messages: list[Message], tools: list[ToolSpec]) -> gg.Reply:
        task = task_of(messages)
        if task == "root":
            result = last_tool(messages)
            if result is None:
                return call("spawn_all", tasks=["good", "bad"])
            head, _, listed = result.content.partition("the results, in order: ")
            assert head.startswith("Error: 1 of 2 subagents were stopped without finishing")
            got.extend(json.loads(listed))
            return call("finish", summary="ok")
        return call("finish", summary="fine") if task == "good" else text("hmm")

    res = agent(workspace, model).run("root")
    (spawned,) = [e for e in events_of(res) if e.type == "tool_result" and e.name == "spawn_all"]
    assert spawned.ok is False  # the stream never says ok when a subagent was stopped
    assert got[0] == {"task": "good", "ok": True, "summary": "fine"}
    assert got[1]["task"] == "bad" and got[1]["ok"] is False
    assert "was stopped without finishing" in got[1]["error"]


def test_depth_limit_is_a_clear_tool_error(workspace: Path) -> None:
    seen: dict[str, str] = {}

    def model(messages: list[Message], tools: list[ToolSpec]) -> gg.Reply:
        task = task_of(messages)
        result = last_tool(messages)
        if result is not None:
            seen[task] = result.content
            return call("finish", summary=result.content)
        return call("spawn", task="child" if task == "root" else "grandchild")

    result = agent(workspace, model, max_depth=1).run("root")
    assert result.status == "ended"
    assert seen["child"] == (
        "Error: cannot spawn: this session is at depth 1 and [agents] max_depth is 1, so it "
        "may not start subagents. Do the task yourself."
    )
    assert [s.task for s in started(result)] == ["root", "child"]  # no grandchild started

    result = agent(workspace, model, max_depth=0).run("root")
    assert "depth 0 and [agents] max_depth is 0" in seen["root"]
    assert len(started(result)) == 1


def test_count_limit_is_a_clear_tool_error(workspace: Path) -> None:
    results: list[str] = []
    plan = [
        call("spawn_all", tasks=["a", "b", "c"]),
        call("spawn_all", tasks=["a", "b"]),
        call("spawn", task="c"),
    ]

    def model(messages: list[Message], tools: list[ToolSpec]) -> gg.Reply:
        if task_of(messages) != "root":
            return call("finish", summary=f"did {task_of(messages)}")
        result = last_tool(messages)
        if result is not None:
            results.append(result.content)
        return plan[len(results)] if len(results) < len(plan) else call("finish", summary="x")

    result = agent(workspace, model, max_subagents=2).run("root")
    assert result.status == "ended"
    assert results[0] == (
        "Error: cannot spawn 3 subagents: this run has started 0 of its [agents] "
        "max_subagents = 2, so 2 can still be started. Do the remaining work yourself, or "
        "spawn fewer."
    )
    assert [e["summary"] for e in json.loads(results[1])] == ["did a", "did b"]
    assert results[2].startswith("Error: cannot spawn a subagent: this run has started 2 of")
    assert [s.task for s in started(result)] == ["root", "a", "b"]


def test_empty_tasks_are_tool_errors(workspace: Path) -> None:
    results: list[str] = []
    plan = [
        call("spawn", task="  "),
        call("spawn_all", tasks=[]),
        call("spawn_all", tasks=["ok", ""]),
    ]

    def model(messages: list[Message], tools: list[ToolSpec]) -> gg.Reply:
        result = last_tool(messages)
        if result is not None:
            results.append(result.content)
        return plan[len(results)] if len(results) < len(plan) else call("finish", summary="x")

    result = agent(workspace, model).run("root")
    assert result.status == "ended"
    assert results == [
        "Error: the task is empty: give the subagent a task to do",
        "Error: spawn_all needs at least one task",
        "Error: the task is empty: give the subagent a task to do",
    ]
    assert len(started(result)) == 1


def test_spawn_is_offered_only_when_the_capability_is_chosen(workspace: Path) -> None:
    offered: list[str] = []

    def model(messages: list[Message], tools: list[ToolSpec]) -> gg.Reply:
        offered.extend(t.name for t in tools)
        return call("finish", summary="x")

    gg.Agent(model=FunctionModel(model), workspace=workspace).run("root")
    assert "spawn" not in offered and "read_file" in offered
    assert gg.Settings().tools.capabilities == ["files", "shell"]


def test_agents_settings_are_checked() -> None:
    assert gg.Settings().agents.max_depth == 2
    assert gg.Settings().agents.max_subagents == 16
    with pytest.raises(gg.ConfigError, match="agents.max_depth") as info:
        settings_from_dict({"agents": {"max_depth": -1}})
    assert info.value.key == "agents.max_depth"
    with pytest.raises(gg.ConfigError, match="agents.parallel: unknown key"):
        settings_from_dict({"agents": {"parallel": 3}})


def test_subagents_in_code_mode_are_spawned_from_programs(workspace: Path) -> None:
    # needs the real sandbox (gg.sandbox)
    def model(messages: list[Message], tools: list[ToolSpec]) -> gg.Reply:
        if task_of(messages) == "root":
            if last_tool(messages) is None:
                program = "s = gg.tools.spawn(task='sub')\ngg.session.finish('sub said: ' + s)"
                return call("submit_program", program=program)
            return text("unexpected")
        return call("submit_program", program="gg.session.finish('hello')")

    settings = settings_from_dict({"tools": {"capabilities": CAPS}, "session": {"mode": "code"}})
    result = gg.Agent(model=FunctionModel(model), workspace=workspace, settings=settings).run(
        "root"
    )
    assert result.ending == gg.Finish(summary="sub said: hello"), result.diagnosis
