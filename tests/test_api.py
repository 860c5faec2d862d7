"""The Python API of issue 14 item 4: ``Agent.stream``, ``output_type``, ``@agent.tool``.

Through the public API with the scripted and function models, the real stream, the
real sandbox for responses as code.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field

import gg
from gg.config import settings_from_dict
from gg.endings import OutputType, ending_from_record
from gg.models.base import Message, ToolSpec
from gg.stream import RunEnded, RunStarted, TurnEvent
from gg.testing import FunctionModel, ScriptedModel, call, text
from support import events_of


class Verdict(BaseModel):
    """A typed result with a constraint and a nested model (``$defs``)."""

    score: int = Field(ge=0, le=10)
    tags: list[str]


class Report(BaseModel):
    title: str
    verdict: Verdict


def program(source: str) -> gg.Reply:
    return call("submit_program", program=source)


async def collect(agent: gg.Agent, task: str) -> list[Any]:
    return [item async for item in agent.stream(task)]


# ---------------------------------------------------------------- stream


def test_stream_yields_every_event_as_written_then_the_result(workspace: Path) -> None:
    model = ScriptedModel([call("read_file", path="README.md"), call("finish", summary="Read.")])
    items = asyncio.run(collect(gg.Agent(model=model, workspace=workspace), "read it"))
    *events, result = items
    assert isinstance(result, gg.RunResult) and result.type == "result"
    assert result.status == "ended" and result.ending == gg.Finish(summary="Read.")
    assert isinstance(events[0], RunStarted) and isinstance(events[-1], RunEnded)
    on_disk = events_of(result)
    assert [e.type for e in events] == [e.type for e in on_disk]
    assert [e.model_dump(mode="json") for e in events] == [
        e.model_dump(mode="json") for e in on_disk
    ]
    turns = [e for e in events if isinstance(e, TurnEvent)]
    assert [t.calls for t in turns] == [["read_file"], ["finish"]]


def test_closing_the_stream_early_cancels_the_run_cleanly(workspace: Path) -> None:
    cancelled, waiting = asyncio.Event(), asyncio.Event()
    asked: list[int] = []

    async def model(messages: list[Message], tools: list[ToolSpec]) -> gg.Reply:
        asked.append(len(messages))
        if len(asked) == 1:
            return call("list_dir", path=".")
        waiting.set()
        try:
            await asyncio.sleep(60)  # the second turn never comes back on its own
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return call("finish", summary="too late")

    agent = gg.Agent(model=FunctionModel(model), workspace=workspace)

    async def main() -> list[str]:
        seen: list[str] = []
        async with contextlib.aclosing(agent.stream("look around")) as items:
            async for item in items:
                assert not isinstance(item, gg.RunResult)
                seen.append(item.type)
                if item.type == "tool_result":
                    break
            await waiting.wait()  # the run goes on meanwhile: its second model call is out
            assert not cancelled.is_set()
        assert cancelled.is_set()  # the model call in flight was cancelled by aclose()
        return seen

    seen = asyncio.run(asyncio.wait_for(main(), timeout=30))
    assert "run_ended" not in seen and len(asked) == 2
    events = list(gg.read_events(_only_stream()))
    assert events[-1].type == "run_ended"
    assert events[-1].status == "stopped" and events[-1].exit_code == 130
    assert "interrupted" in (events[-1].diagnosis or "")


def _only_stream() -> Path:
    found = sorted(Path(os.environ["GG_STATE_HOME"]).glob("**/stream.jsonl"))
    assert len(found) == 1, found
    return found[0]


def test_stream_refuses_an_empty_task_at_once(workspace: Path) -> None:
    agent = gg.Agent(model=ScriptedModel([]), workspace=workspace)
    with pytest.raises(gg.UserError, match="empty"):
        agent.stream("  ")


def test_stream_of_a_run_stopped_by_a_ceiling_ends_with_the_stopped_result(
    workspace: Path,
) -> None:
    model = ScriptedModel([text("hm"), text("hm"), text("hm")])
    items = asyncio.run(collect(gg.Agent(model=model, workspace=workspace), "t"))
    assert [i.type for i in items[:-1] if i.type == "ceiling_tripped"] == ["ceiling_tripped"]
    assert items[-1].status == "stopped" and items[-1].ending is None
    assert items[-1].output is None


# ---------------------------------------------------------------- output_type


def test_output_type_schema_is_offered_refused_by_shape_then_validated(workspace: Path) -> None:
    offered: list[list[ToolSpec]] = []
    replies = iter(
        [
            call("finish", summary="Reviewed."),  # no output: refused by shape
            call("finish", summary="Reviewed.", output={"title": "t", "verdict": {"score": 11}}),
            call(
                "finish",
                summary="Reviewed.",
                output={"title": "Good", "verdict": {"score": 7, "tags": ["ok"]}},
            ),
        ]
    )

    model_messages: list[list[Message]] = []

    def model(messages: list[Message], tools: list[ToolSpec]) -> gg.Reply:
        offered.append(tools)
        model_messages.append(list(messages))
        return next(replies)

    agent = gg.Agent(model=FunctionModel(model), workspace=workspace, output_type=Report)
    result = agent.run("review")
    assert result.status == "ended"
    assert isinstance(result.output, Report)
    assert result.output == Report(title="Good", verdict=Verdict(score=7, tags=["ok"]))
    finish = next(t for t in offered[0] if t.name == "finish")
    params = finish.parameters
    assert params["required"] == ["summary", "output"]
    output = params["properties"]["output"]
    assert output["properties"]["verdict"] == {"$ref": "#/$defs/Verdict"}
    assert "Verdict" in params["$defs"]  # nested model: $defs at the tool's root
    refused = [e for e in events_of(result) if e.type == "ending_refused"]
    assert [r.reason for r in refused] == ["shape", "shape"]
    assert "output is missing" in refused[0].message
    feedback = [m.content for m in model_messages[-1] if m.role == "tool"]
    assert any('"output": "<the result' in f for f in feedback)  # the example has an output
    assert "verdict.score" in refused[1].message and "verdict.tags" in refused[1].message
    errors = [e.kind for e in events_of(result) if e.type == "error_turn"]
    assert errors == ["ending_refused", "ending_refused"]
    ended = [e for e in events_of(result) if e.type == "session_ended"][0]
    assert ended.ending == {
        "call": "finish",
        "summary": "Reviewed.",
        "output": {"title": "Good", "verdict": {"score": 7, "tags": ["ok"]}},
    }
    assert result.to_json()["ending"]["output"]["verdict"]["score"] == 7


@dataclass
class Point:
    x: int
    y: int


@pytest.mark.parametrize(
    ("kind", "sent", "expected"),
    [
        (Point, '{"x": 1, "y": 2}', Point(x=1, y=2)),  # a JSON string, as small models send
        (list[int], [3, "4"], [3, 4]),
        (str, "plain", "plain"),
    ],
)
def test_output_type_takes_any_type_pydantic_validates(
    workspace: Path, kind: object, sent: object, expected: object
) -> None:
    model = ScriptedModel([call("finish", summary="Done.", output=sent)])
    result = gg.Agent(model=model, workspace=workspace, output_type=kind).run("t")
    assert result.status == "ended" and result.output == expected


def test_output_type_in_code_mode_prompt_and_membrane(workspace: Path) -> None:
    model = ScriptedModel(
        [
            program('gg.session.finish("Scored.", output={"score": "x", "tags": []})'),
            program('gg.session.finish(summary="Scored.", output={"score": 3, "tags": ["a"]})'),
        ]
    )
    agent = gg.Agent(model=model, workspace=workspace, mode="code", output_type=Verdict)
    result = agent.run("score it")
    assert result.status == "ended", result.diagnosis
    assert result.output == Verdict(score=3, tags=["a"])
    system = model.calls[0][0][0].content
    assert 'gg.session.finish(summary="<what you did>", output=<the result>)' in system
    assert json.dumps(Verdict.model_json_schema()["properties"]["score"]) in system
    refused = [e for e in events_of(result) if e.type == "ending_refused"]
    assert len(refused) == 1 and "score" in refused[0].message
    feedback = model.calls[1][0][-1].content
    assert 'Write it as: gg.session.finish(summary="<what you did>", output=' in feedback


@pytest.mark.parametrize(
    "source",
    [
        'await gg.session.finish({summary: "Scored.", output: {score: 3, tags: ["a"]}});',
        'await gg.session.finish("Scored.", {score: 3, tags: ["a"]});',
    ],
)
def test_output_type_in_javascript_programs(workspace: Path, source: str) -> None:
    model = ScriptedModel([program(source)])
    agent = gg.Agent(
        model=model, workspace=workspace, mode="code", language="javascript", output_type=Verdict
    )
    result = agent.run("score it")
    assert result.status == "ended", result.diagnosis
    assert result.output == Verdict(score=3, tags=["a"])
    assert "await gg.session.finish({summary:" in model.calls[0][0][0].content


def test_a_python_program_may_pass_the_output_second() -> None:
    typed = OutputType(Verdict)
    got = gg.check_ending(
        "finish",
        {"summary": "s", "argument_2": {"score": 1, "tags": []}},
        role=gg.Role.STANDARD,
        output=typed,
    )
    assert got == gg.Finish(summary="s", output=Verdict(score=1, tags=[]))


def test_output_type_binds_the_root_session_only(workspace: Path) -> None:
    offered: dict[str, dict[str, Any]] = {}

    def model(messages: list[Message], tools: list[ToolSpec]) -> gg.Reply:
        task = messages[1].content
        finish = next(t for t in tools if t.name == "finish")
        offered.setdefault(task, finish.parameters)
        if task == "sub":
            return call("finish", summary="sub done")
        if messages[-1].role == "tool":
            return call("finish", summary="all done", output={"x": 1, "y": 1})
        return call("spawn", task="sub")

    settings = settings_from_dict({"tools": {"capabilities": ["files", "shell", "agents"]}})
    agent = gg.Agent(
        model=FunctionModel(model), workspace=workspace, settings=settings, output_type=Point
    )
    result = agent.run("root")
    assert result.status == "ended" and result.output == Point(x=1, y=1)
    assert "output" in offered["root"]["properties"]
    assert "output" not in offered["sub"]["properties"]


def test_an_output_type_without_a_schema_is_a_user_error(workspace: Path) -> None:
    class Opaque:
        pass

    with pytest.raises(gg.UserError, match="output_type"):
        gg.Agent(model=ScriptedModel([]), workspace=workspace, output_type=Opaque)
    with pytest.raises(gg.UserError, match="standard role"):
        gg.Agent(model=ScriptedModel([]), workspace=workspace, output_type=Point, role="review")


def test_a_finish_record_with_output_reads_back() -> None:
    typed = OutputType(Verdict)
    ending = gg.Finish(summary="s", output=Verdict(score=1, tags=[]))
    assert ending_from_record(ending.record(), output=typed) == ending
    untyped = ending_from_record(ending.record())
    assert isinstance(untyped, gg.Finish) and untyped.output == {"score": 1, "tags": []}
    with pytest.raises(ValueError, match="score"):
        ending_from_record({"call": "finish", "summary": "s", "output": {}}, output=typed)
    check = gg.check_ending("finish", {"summary": "s", "output": {}}, role=gg.Role.STANDARD)
    assert check == gg.Finish(summary="s")  # no output type: an output is a harmless extra


# ---------------------------------------------------------------- @agent.tool


@pytest.mark.parametrize("mode", ["tool-calling", "code"])
def test_agent_tool_registers_a_function_in_both_modes(workspace: Path, mode: str) -> None:
    if mode == "code":
        replies = [
            program("print(gg.tools.shout(word='hi', times=2))"),
            program("gg.session.finish('Shouted.')"),
        ]
    else:
        replies = [call("shout", word="hi", times=2), call("finish", summary="Shouted.")]
    model = ScriptedModel(replies)
    agent = gg.Agent(model=model, workspace=workspace, mode=mode)

    @agent.tool
    def shout(word: str, times: int = 1) -> str:
        """Shout a word.

        Args:
            word: the word to shout.
            times: how many times.
        """
        return " ".join([word.upper()] * times)

    assert shout(word="a") == "A"  # returned unchanged: still a plain function
    result = agent.run("shout")
    assert result.status == "ended", result.diagnosis
    results = [e for e in events_of(result) if e.type == "tool_result"]
    assert any("HI HI" in r.excerpt for r in results)
    spec = agent.registry.get("shout")
    assert spec is not None and spec.parameters["properties"]["word"]["description"] == (
        "the word to shout."
    )


def test_agent_tool_with_options_and_its_errors(workspace: Path) -> None:
    agent = gg.Agent(model=ScriptedModel([]), workspace=workspace, role="review")

    @agent.tool(name="glossary", access="read")
    async def lookup(term: str) -> str:
        """Look a term up."""
        return term

    assert "glossary" in [t.name for t in agent.toolset.tools_for(gg.Role.REVIEW)]
    with pytest.raises(gg.UserError, match="already registered"):
        agent.tool(name="read_file")(lookup)
    with pytest.raises(gg.UserError, match="ending"):
        agent.tool(name="finish")(lookup)


def test_a_stream_dropped_without_aclose_still_cancels_its_run(workspace: Path) -> None:
    answered: list[str] = []

    async def model(messages: list[Message], tools: list[ToolSpec]) -> gg.Reply:
        await asyncio.sleep(60)
        answered.append("late")
        return call("finish", summary="too late")

    agent = gg.Agent(model=FunctionModel(model), workspace=workspace)

    async def main() -> list[Any]:
        async for item in agent.stream("wait"):
            if item.type == "session_started":
                break  # no aclose(): the event loop finalizes the generator
        for _ in range(200):  # the finalizer cancels the run: it writes run_ended
            await asyncio.sleep(0.05)
            events = list(gg.read_events(_only_stream()))
            if events[-1].type == "run_ended":
                return events
        raise AssertionError("the run was not cancelled")

    events = asyncio.run(main())
    assert events[-1].status == "stopped" and events[-1].exit_code == 130
    assert answered == []
