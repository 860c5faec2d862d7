"""OpenTelemetry GenAI spans of a run (issue 14 item 3): :mod:`gg.otel`.

The SDK's in-memory exporter records the spans of a real run driven by a function
model: two sessions (a subagent the root spawns), tool calls, an ending the gate
blocks, a ceiling. Off by default and free when off is checked in a fresh interpreter.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

import gg
from gg.config import settings_from_dict
from gg.models.base import Message, ToolSpec, Usage
from gg.otel import OtelListener, model_parts, tracer_provider_from_env
from gg.telemetry import otel_wanted
from gg.testing import FunctionModel, call, text

SRC = Path(__file__).resolve().parents[1] / "src"


def traced_run(workspace: Path) -> tuple[gg.RunResult, list[ReadableSpan]]:
    """Root spawns a subagent that trips a ceiling, reads a file, is blocked once, ends."""
    blocks: list[str] = []

    def model(messages: list[Message], tools: list[ToolSpec]) -> gg.Reply:
        task, last = messages[1].content, messages[-1]
        if task == "sub":
            return text("thinking about it")  # an error turn, every time: the ceiling
        done = sum(1 for m in messages if m.role == "tool")
        reply = [
            call("spawn", task="sub"),
            call("read_file", path="README.md"),
            call("finish", summary="Done."),
            call("finish", summary="Done, really."),
        ][min(done, 3) if "blocked" not in getattr(last, "content", "") else 3]
        return gg.Reply(
            tool_calls=reply.tool_calls,
            usage=Usage(input_tokens=100 + done, output_tokens=7, cost=0.5),
        )

    def gate(event: gg.StopEvent) -> str | None:
        if not blocks:
            blocks.append("once")
            return "the tests fail"
        return None

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    settings = settings_from_dict({"tools": {"capabilities": ["files", "shell", "agents"]}})
    agent = gg.Agent(
        model=FunctionModel(model, name="openai:gpt-test"),
        workspace=workspace,
        settings=settings,
        hooks=[gate],
        listeners=[OtelListener(tracer_provider=provider)],
    )
    result = agent.run("root task")
    return result, list(exporter.get_finished_spans())


def by_name(spans: list[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name == name]


def events(span: ReadableSpan) -> list[str]:
    return [e.name for e in span.events]


def test_the_span_tree_of_a_run_with_a_subagent_a_blocked_gate_and_a_ceiling(
    workspace: Path,
) -> None:
    result, spans = traced_run(workspace)
    assert result.status == "ended", result.diagnosis
    [root] = by_name(spans, "invoke_agent gg")
    [sub] = by_name(spans, "invoke_agent gg.subagent")
    [spawn] = by_name(spans, "execute_tool spawn")
    [read] = by_name(spans, "execute_tool read_file")
    finishes = by_name(spans, "execute_tool finish")
    chats = by_name(spans, "chat gpt-test")
    # the tree: root > (chat, execute_tool...), spawn > subagent > its chats
    assert root.parent is None
    assert spawn.parent is not None and spawn.parent.span_id == root.context.span_id
    assert sub.parent is not None and sub.parent.span_id == spawn.context.span_id
    assert read.parent is not None and read.parent.span_id == root.context.span_id
    assert len({s.context.trace_id for s in spans}) == 1
    sub_chats = [c for c in chats if c.parent and c.parent.span_id == sub.context.span_id]
    root_chats = [c for c in chats if c.parent and c.parent.span_id == root.context.span_id]
    assert len(sub_chats) == 3 and len(root_chats) == 4 and len(finishes) == 2
    # GenAI semantic-convention attributes
    for span in spans:
        assert span.attributes is not None
        assert span.attributes["gen_ai.conversation.id"] == result.run_id
    assert root.attributes is not None and root.attributes["gen_ai.operation.name"] == (
        "invoke_agent"
    )
    assert root.attributes["gen_ai.agent.name"] == "gg"
    assert root.attributes["gen_ai.provider.name"] == "openai"
    assert root.attributes["gen_ai.request.model"] == "gpt-test"
    assert (
        root.attributes["gen_ai.usage.input_tokens"] == 100 + 101 + 102 + 103
    )  # turn n sent 100 + n - 1
    assert root.attributes["gen_ai.usage.output_tokens"] == 4 * 7
    first = root_chats[0].attributes
    assert first is not None and first["gen_ai.operation.name"] == "chat"
    assert first["gen_ai.provider.name"] == "openai"
    assert first["gen_ai.request.model"] == "gpt-test"
    assert first["gen_ai.usage.input_tokens"] == 100
    assert first["gen_ai.usage.output_tokens"] == 7
    assert read.attributes is not None and read.attributes["gen_ai.operation.name"] == (
        "execute_tool"
    )
    assert read.attributes["gen_ai.tool.name"] == "read_file"
    assert "gen_ai.tool.call.arguments" not in read.attributes  # content is opt-in
    # the subagent stopped by a ceiling: an event and an ERROR status, the spawn failed
    assert "gg.ceiling_tripped" in events(sub)
    assert sub.status.status_code is StatusCode.ERROR
    assert sub.attributes is not None and sub.attributes["error.type"] == "consecutive_errors"
    assert events(sub).count("gg.error_turn") == 3
    assert spawn.status.status_code is StatusCode.ERROR
    # endings and gate results as span events
    assert ["gg.ending_declared"] == events(finishes[0]) == events(finishes[1])
    assert events(root).count("gg.gate_blocked") == 1
    assert events(root).count("gg.gate_passed") == 1
    blocked = next(e for e in root.events if e.name == "gg.gate_blocked")
    # content capture is off: what the hook and the model wrote stays off the spans
    assert blocked.attributes is not None and "gg.reason" not in blocked.attributes
    ended = next(e for e in root.events if e.name == "gg.session_ended")
    assert ended.attributes is not None and "gg.ending" not in ended.attributes
    for span in spans:
        texts = [str(v) for v in (span.attributes or {}).values()]
        texts += [str(span.status.description or "")]
        texts += [str(v) for e in span.events for v in (e.attributes or {}).values()]
        assert not any("the tests fail" in t or "Done, really." in t for t in texts), span.name
    assert root.status.status_code is StatusCode.UNSET
    assert root.attributes["gg.ending.call"] == "finish"
    # a chat span lasts the model call; every span ended inside the session's
    for span in spans:
        assert span.end_time is not None and span.start_time is not None
        assert root.start_time is not None and root.end_time is not None
        assert root.start_time <= span.start_time <= span.end_time <= root.end_time


def test_code_mode_calls_nest_in_the_program_span(workspace: Path) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    source = "print(gg.tools.read_file(path='README.md'))\ngg.session.finish('Read.')"
    model = gg.testing.ScriptedModel([call("submit_program", program=source)])
    agent = gg.Agent(
        model=model,
        workspace=workspace,
        mode="code",
        listeners=[OtelListener(tracer_provider=provider, capture_content=True)],
    )
    assert agent.run("read").status == "ended"
    spans = list(exporter.get_finished_spans())
    [program] = by_name(spans, "execute_tool submit_program")
    [read] = by_name(spans, "execute_tool read_file")
    assert read.parent is not None and read.parent.span_id == program.context.span_id
    assert "gg.ending_declared" in events(program)
    assert read.attributes is not None
    assert json.loads(str(read.attributes["gen_ai.tool.call.arguments"])) == {"path": "README.md"}
    assert "# demo" in str(read.attributes["gen_ai.tool.call.result"])
    [agent_span] = by_name(spans, "invoke_agent gg")
    assert agent_span.attributes is not None
    assert agent_span.attributes["gen_ai.provider.name"] == "scripted"


def test_the_listener_never_fails_the_run(workspace: Path) -> None:
    class Broken(TracerProvider):
        def get_tracer(self, *args: Any, **kwargs: Any) -> Any:
            raise_on = super().get_tracer(*args, **kwargs)

            class Tracer:
                def start_span(self, *a: Any, **k: Any) -> Any:
                    raise RuntimeError("exporter down")

                def __getattr__(self, name: str) -> Any:
                    return getattr(raise_on, name)

            return Tracer()

    model = gg.testing.ScriptedModel([call("finish", summary="Done.")])
    agent = gg.Agent(
        model=model, workspace=workspace, listeners=[OtelListener(tracer_provider=Broken())]
    )
    assert agent.run("t").status == "ended"


@pytest.mark.parametrize(
    ("env", "wanted"),
    [
        ({}, False),
        ({"OTEL_TRACES_EXPORTER": "none"}, False),
        ({"OTEL_TRACES_EXPORTER": "console"}, True),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, True),
        ({"OTEL_TRACES_EXPORTER": "console", "OTEL_SDK_DISABLED": "true"}, False),
        ({"OTEL_SERVICE_NAME": "svc"}, False),
    ],
)
def test_which_environment_turns_tracing_on(env: dict[str, str], wanted: bool) -> None:
    assert otel_wanted(env) is wanted


def test_model_specs_give_provider_and_model() -> None:
    assert model_parts("anthropic:claude-x") == ("anthropic", "claude-x")
    assert model_parts("openai-responses:o4") == ("openai", "o4")
    assert model_parts("openai-compat:qwen@http://h:1/v1") == ("openai-compat", "qwen")
    assert model_parts("local") == ("local", "local")


def test_an_exporter_that_is_not_installed_is_a_clear_error() -> None:
    with pytest.raises(gg.UserError, match="opentelemetry-exporter-otlp"):
        tracer_provider_from_env({"OTEL_TRACES_EXPORTER": "otlp"})
    with pytest.raises(gg.UserError, match="'otlp_proto_http'"):
        tracer_provider_from_env({"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"})
    with pytest.raises(gg.UserError, match="grpc"):
        tracer_provider_from_env({"OTEL_EXPORTER_OTLP_PROTOCOL": "carrier-pigeon"})


SCRIPT = """
import json, sys
import gg
from gg.testing import ScriptedModel, call
otel = json.loads(sys.argv[2])
if sys.argv[3] == "global":
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter()))
    trace.set_tracer_provider(provider)
agent = gg.Agent(model=ScriptedModel([call("finish", summary="Done.")]), workspace=sys.argv[1],
                 otel=otel)
result = agent.run("t")
print("REPORT", json.dumps({"status": result.status, "listeners": len(agent.listeners),
                  "loaded": sorted(m for m in sys.modules
                                   if m == "gg.otel" or m.startswith("opentelemetry"))}))
"""


def _fresh(
    workspace: Path, otel: bool | None = None, provider: str = "env", **env: str
) -> tuple[dict[str, Any], str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    clean |= {"PYTHONPATH": str(SRC), **env}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(workspace), json.dumps(otel), provider],
        env=clean,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    [report] = [line for line in done.stdout.splitlines() if line.startswith("REPORT ")]
    return json.loads(report.removeprefix("REPORT ")), done.stdout


def test_off_by_default_and_free_when_off(workspace: Path) -> None:
    report, _ = _fresh(workspace)
    assert report == {"status": "ended", "listeners": 0, "loaded": []}


def test_the_standard_environment_turns_it_on(workspace: Path) -> None:
    report, exported = _fresh(
        workspace, OTEL_TRACES_EXPORTER="console", OTEL_SERVICE_NAME="gg-test"
    )
    assert report["listeners"] == 1 and "gg.otel" in report["loaded"]
    assert '"name": "invoke_agent gg"' in exported  # the console exporter, flushed at exit
    assert '"name": "chat ' in exported and '"gen_ai.conversation.id"' in exported
    assert '"service.name": "gg-test"' in exported  # the SDK read OTEL_SERVICE_NAME


def test_gg_run_is_traced_by_the_standard_environment(workspace: Path, tmp_path: Path) -> None:
    replies = tmp_path / "replies.json"
    finish = {"name": "finish", "arguments": {"summary": "Done."}}
    replies.write_text(json.dumps({"replies": [{"tool_calls": [finish]}]}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env |= {"PYTHONPATH": str(SRC), "OTEL_TRACES_EXPORTER": "console"}
    done = subprocess.run(
        [sys.executable, "-m", "gg", "run", "say done", "--model", f"scripted:{replies}",
         "--workspace", str(workspace), "--json"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert '"name": "invoke_agent gg"' in done.stdout
    assert '"gen_ai.tool.name": "finish"' in done.stdout


def test_otel_true_uses_the_applications_own_provider(workspace: Path) -> None:
    report, exported = _fresh(workspace, otel=True, provider="global")
    assert report["listeners"] == 1
    assert '"name": "invoke_agent gg"' in exported


def test_otel_false_wins_over_the_environment(workspace: Path) -> None:
    report, _ = _fresh(workspace, otel=False, OTEL_TRACES_EXPORTER="console")
    assert report["listeners"] == 0 and "gg.otel" not in report["loaded"]
