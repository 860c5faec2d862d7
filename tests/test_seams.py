"""The run's typed seams (issue 10 items 1 and 4): RunServices, SessionEnv, SessionSpec,
the subagent count on the run, the toolset arm resolved once, one session prompt, and
``async with run`` ending a run however its block leaves."""

from __future__ import annotations

import ast
import asyncio
import dataclasses
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import gg
from gg.config import settings_from_dict
from gg.models.base import Message, ToolMessage, ToolSpec
from gg.session import SessionEnv, SessionSpec
from gg.testing import FunctionModel, ScriptedModel, call
from gg.tools.arms import ToolsetArm
from gg.tools.registry import RunServices, ToolContext

SRC = Path(gg.__file__).resolve().parent


def _imports(module: Path) -> set[str]:
    """Every module ``module`` imports, at any level (TYPE_CHECKING blocks included)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(module.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


def _function_level_gg_imports(module: Path) -> list[str]:
    """``gg`` imports inside a function body of ``module``."""
    out = []
    for fn in ast.walk(ast.parse(module.read_text())):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            for node in ast.walk(fn):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("gg"):
                    out.append(f"{module.name}:{node.lineno} {node.module}")
    return out


def test_session_module_knows_nothing_of_the_run() -> None:
    imported = _imports(SRC / "session.py")
    assert not {m for m in imported if m in ("gg.run", "gg.agent") or m.startswith("gg.run.")}
    for seam in ("tools/registry.py", "onuse.py", "tools/agents.py", "skills.py", "memory.py"):
        assert not {m for m in _imports(SRC / seam) if m.startswith(("gg.run", "gg.agent"))}


def test_no_function_level_gg_imports_in_the_run_and_its_seams() -> None:
    modules = [
        "run.py",
        "session.py",
        "agent.py",
        "prompts.py",
        "onuse.py",
        "skills.py",
        "memory.py",
        "tools/registry.py",
        "tools/agents.py",
        "tools/arms.py",
    ]
    assert [hit for m in modules for hit in _function_level_gg_imports(SRC / m)] == []


def _mentions_any(hint: object) -> bool:
    return hint is Any or any(_mentions_any(a) for a in typing.get_args(hint))


@pytest.mark.parametrize("cls", [ToolContext, SessionEnv, SessionSpec])
def test_the_seams_are_typed_without_any(cls: type) -> None:
    hints = typing.get_type_hints(cls)
    assert {f.name for f in dataclasses.fields(cls)} <= set(hints)
    assert [name for name, hint in hints.items() if _mentions_any(hint)] == []


def test_run_services_is_narrow_and_the_run_implements_it(workspace: Path) -> None:
    wanted = {
        "run_id",
        "workspace",
        "settings",
        "snapshot",
        "subagents_started",
        "sandbox",
        "script_tools",
        "emit",
        "spawn",
    }
    names = {*vars(RunServices), *RunServices.__annotations__}
    members = {n for n in names if not n.startswith("_")}
    assert members == wanted
    agent = gg.Agent(model=ScriptedModel([]), workspace=workspace)
    run = agent.new_run()
    try:
        services: RunServices = run  # mypy checks the structure; this checks the values
        assert services.run_id == run.run_id and services.workspace == workspace.resolve()
        assert services.subagents_started == 0
        ctx = run.tool_context()
        assert ctx.run is run and ctx.workspace == workspace.resolve()
    finally:
        run.end("stopped", "test")


def _spawning_model(max_spawns: int) -> Callable[[list[Message], list[ToolSpec]], gg.Reply]:
    """Roots spawn one subagent per turn up to ``max_spawns`` times, then finish with the
    results seen; subagents finish at once."""

    def fn(messages: list[Message], tools: list[ToolSpec]) -> gg.Reply:
        task = messages[1].content
        if task.startswith("sub"):
            return call("finish", summary=f"done {task}")
        results = [m.content for m in messages if isinstance(m, ToolMessage)]
        if len(results) < max_spawns:
            return call("spawn", task=f"sub of {task} #{len(results)}")
        return call("finish", summary=" | ".join(results))

    return fn


def _agents_agent(workspace: Path, fn: Any, **agents: int) -> gg.Agent:
    settings = settings_from_dict(
        {"tools": {"capabilities": ["files", "agents"]}, "agents": agents}
    )
    return gg.Agent(model=FunctionModel(fn), workspace=workspace, settings=settings)


def test_the_subagent_count_is_per_run_even_for_runs_at_once(workspace: Path) -> None:
    agent = _agents_agent(workspace, _spawning_model(2), max_subagents=1)

    async def both() -> list[tuple[str, int]]:
        out = []
        async with agent.new_run() as a, agent.new_run() as b:
            results = await asyncio.gather(a.session("root A"), b.session("root B"))
            for run, result in zip((a, b), results, strict=True):
                assert result.ending is not None
                out.append((str(result.ending.arguments()["summary"]), run.subagents_started))
                run.conclude("ended", None)
        return out

    (summary_a, count_a), (summary_b, count_b) = asyncio.run(both())
    # each run started its one subagent; the second spawn of each was refused by its own count
    assert count_a == 1 and count_b == 1
    for summary, root in ((summary_a, "root A"), (summary_b, "root B")):
        first, second = summary.split(" | ")
        assert first == f"done sub of {root} #0"
        assert "started 1 of its [agents] max_subagents = 1" in second


def test_the_toolset_arm_is_resolved_once_from_agent_to_the_last_turn(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    skill = workspace / "skills" / "rn"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: rn\ndescription: the rn skill\n---\nDo it.\n")
    selected: list[str] = []
    original = ToolsetArm.select

    def counting(self: ToolsetArm, registry: gg.Registry) -> list[gg.Tool]:
        selected.append(self.name)
        return original(self, registry)

    monkeypatch.setattr(ToolsetArm, "select", counting)
    prompts: list[str] = []

    def fn(messages: list[Message], tools: list[ToolSpec]) -> gg.Reply:
        prompts.append(messages[0].content)
        return _spawning_model(1)(messages, tools)

    settings = settings_from_dict({"tools": {"capabilities": ["files", "agents", "skills"]}})
    agent = gg.Agent(model=FunctionModel(fn), workspace=workspace, settings=settings)
    result = agent.run("root")
    assert result.status == "ended", result.diagnosis
    assert selected == ["all"]  # Agent(...), the skills section, both sessions' modes: once
    assert all("- rn: the rn skill" in p for p in prompts) and len(prompts) == 3


def test_one_prompt_for_every_session_with_the_callers_instructions_last(
    workspace: Path,
) -> None:
    model = ScriptedModel([call("finish", summary="x")])
    agent = gg.Agent(model=model, workspace=workspace)

    async def go() -> None:
        async with agent.new_run() as run:
            result = await run.session("t", extra_prompt="## House rules\nBe brief.")
            run.conclude(result.status, None)

    asyncio.run(go())
    prompt = model.calls[0][0][0].content
    assert prompt.index("## Workspace") < prompt.index("## House rules")
    assert prompt.endswith("## House rules\nBe brief.")
    assert "You are a subagent" not in prompt


def test_async_with_run_records_a_failure_in_gg_and_lets_it_go_on(workspace: Path) -> None:
    events: list[Any] = []

    def broken(messages: list[Message], tools: list[ToolSpec]) -> gg.Reply:
        raise RuntimeError("a bug in a model adapter")

    agent = gg.Agent(model=FunctionModel(broken), workspace=workspace, listeners=[events.append])
    with pytest.raises(RuntimeError, match="a bug in a model adapter"):
        agent.run("t")
    ended = events[-1]
    assert ended.type == "run_ended" and ended.status == "stopped" and ended.exit_code == 1
    assert ended.diagnosis == "gg failed: RuntimeError: a bug in a model adapter"


def test_async_with_run_without_an_outcome_is_stopped_not_ended(workspace: Path) -> None:
    events: list[Any] = []
    agent = gg.Agent(model=ScriptedModel([]), workspace=workspace, listeners=[events.append])

    async def go() -> None:
        async with agent.new_run():
            pass

    asyncio.run(go())
    assert events[-1].type == "run_ended" and events[-1].status == "stopped"
    assert events[-1].exit_code == 1


def test_agent_options_are_the_agents_own_parameters() -> None:
    """Board passes AgentOptions through to Agent: each key is Agent's parameter, same type."""
    import inspect
    import typing

    from gg.agent import Agent, AgentOptions
    from gg.board import Board

    options = typing.get_type_hints(AgentOptions)
    params = typing.get_type_hints(Agent.__init__)
    assert set(options) == set(inspect.signature(Agent.__init__).parameters) - {
        "self",
        "workspace",
        "role",
        "output_type",  # the payload of the caller's own task: a board has none
    }
    for name, hint in options.items():
        assert hint == params[name], name
    board_params = set(inspect.signature(Board.__init__).parameters)
    assert not (board_params & set(options)), "Board re-declares an agent option"
