"""The provider SDKs used to the full, against real loopback servers (issue 14 item 2).

Anthropic's prompt cache and ``tool_choice``, OpenAI's ``max_completion_tokens`` and
``tool_choice``, cache and reasoning tokens counted, priced (genai-prices' table, or
``[model.prices]``) and on the stream, and the ``openai-responses:`` provider running a
whole session to ``finish``. The servers (``_servers.py``) speak the documented wire
formats; the SDKs are not mocked. SPEC M4, S5, S6, O1.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _servers import Json, Sse, serve, sse_event
from typer.testing import CliRunner

from gg.cli import app
from gg.models.anthropic import AnthropicModel
from gg.models.base import Message, SystemMessage, ToolSpec, Usage, UserMessage
from gg.models.openai_compat import OpenAICompatModel
from gg.models.openai_responses import OpenAIResponsesModel
from gg.models.pricing import price_of, table_price
from gg.models.retry import RetryPolicy
from gg.stream import read_events

FAST = RetryPolicy(max_retries=1, timeout_s=5.0, backoff_s=0.001, max_backoff_s=0.01)
FINISH = ToolSpec(
    name="finish",
    description="End the session.",
    parameters={"type": "object", "properties": {"summary": {"type": "string"}}},
)
TALK: list[Message] = [SystemMessage(content="Be brief."), UserMessage(content="Say done.")]
SONNET = "claude-haiku-4-5"  # $1 in, $5 out, $0.10 cache read, $1.25 cache write
MINI = "gpt-4o-mini"


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


# --- Anthropic -------------------------------------------------------------------------


def anthropic_stream(blocks: list[dict[str, Any]], usage: dict[str, int]) -> Sse:
    """A Messages API stream whose ``message_start`` carries ``usage``, then ``blocks``."""
    start: dict[str, Any] = {"id": "msg_1", "type": "message", "role": "assistant"}
    start["model"] = SONNET
    start |= {"content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}
    frames = [sse_event({"type": "message_start", "message": start}, "message_start")]
    for index, block in enumerate(blocks):
        body = {"type": "content_block_start", "index": index, "content_block": block}
        frames.append(sse_event(body, "content_block_start"))
        frames.append(sse_event({"type": "content_block_stop", "index": index}, "x"))
    end = {"type": "message_delta", "delta": {"stop_reason": "tool_use"}}
    frames.append(sse_event(end | {"usage": {"output_tokens": usage["output_tokens"]}}, "x"))
    frames.append(sse_event({"type": "message_stop"}, "message_stop"))
    return Sse(frames=frames)


FINISH_USE = {"type": "tool_use", "id": "toolu_1", "name": "finish", "input": {"summary": "ok"}}
CACHED = {
    "input_tokens": 100,
    "cache_creation_input_tokens": 2_000,
    "cache_read_input_tokens": 50_000,
    "output_tokens": 300,
}


async def test_anthropic_sends_cache_control_and_requires_a_tool_by_default() -> None:
    with serve([anthropic_stream([FINISH_USE], CACHED)]) as server:
        model = AnthropicModel(SONNET, base_url=server.url, retry=FAST)
        reply = await model.respond(TALK, [FINISH])
    body = server.requests[0].body
    assert body["cache_control"] == {"type": "ephemeral"}
    assert body["tool_choice"] == {"type": "any"}
    assert reply.tool_calls[0].name == "finish"


async def test_anthropic_cache_and_tool_choice_can_be_turned_off() -> None:
    with serve([anthropic_stream([FINISH_USE], CACHED)]) as server:
        model = AnthropicModel(
            SONNET, base_url=server.url, retry=FAST, prompt_cache=False, tool_choice="auto"
        )
        await model.respond(TALK, [FINISH])
        await model.respond(TALK, [])  # no tools offered: never a tool_choice
    first, second = (r.body for r in server.requests)
    assert "cache_control" not in first and "tool_choice" not in first
    assert "tool_choice" not in second


async def test_anthropic_cache_tokens_are_counted_and_priced_by_the_table() -> None:
    with serve([anthropic_stream([FINISH_USE], CACHED)]) as server:
        reply = await AnthropicModel(SONNET, base_url=server.url, retry=FAST).respond(TALK, [])
    u = reply.usage
    assert (u.input_tokens, u.cache_write_tokens, u.cache_read_tokens) == (52_100, 2_000, 50_000)
    assert u.output_tokens == 300 and not u.estimated
    # the table's rates for the model: cache reads at a tenth, writes at 1.25x of input
    rates = {
        "input_tokens": table_price(Usage(input_tokens=10**5), model=SONNET, provider="anthropic"),
        "output_tokens": table_price(
            Usage(output_tokens=10**5), model=SONNET, provider="anthropic"
        ),
    }
    assert rates == {"input_tokens": pytest.approx(0.1), "output_tokens": pytest.approx(0.5)}
    expected = (100 * 1.0 + 2_000 * 1.25 + 50_000 * 0.10 + 300 * 5.0) / 1e6
    assert u.cost == pytest.approx(expected)
    full_rate = (52_100 * 1.0 + 300 * 5.0) / 1e6
    assert u.cost < full_rate / 3  # a cached prefix is not priced at the full input rate


async def test_prices_in_the_config_override_the_table() -> None:
    prices = {SONNET: {"input_per_mtok": 1.0, "output_per_mtok": 2.0, "cache_read_per_mtok": 0.5}}
    with serve([anthropic_stream([FINISH_USE], CACHED)]) as server:
        model = AnthropicModel(SONNET, base_url=server.url, retry=FAST, prices=prices)
        reply = await model.respond(TALK, [])
    # the write rate defaults to the input rate
    assert reply.usage.cost == pytest.approx((100 + 2_000 + 50_000 * 0.5 + 300 * 2.0) / 1e6)


def test_a_model_nobody_prices_costs_nothing() -> None:
    usage = Usage(input_tokens=10**6, output_tokens=10**6)
    assert price_of(usage, model="no-such-model-x", provider="openai", prices=None) == 0.0
    assert price_of(usage, model=MINI, provider="openai-compat", prices=None) == 0.0
    assert price_of(usage, model=MINI, provider="openai", prices=None) > 0


# --- OpenAI chat completions -----------------------------------------------------------


def completion(usage: dict[str, Any]) -> Json:
    call: dict[str, Any] = {"id": "call_1", "type": "function"}
    call["function"] = {"name": "finish", "arguments": '{"summary": "ok"}'}
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    body: dict[str, Any] = {"id": "c1", "object": "chat.completion", "created": 1, "model": MINI}
    body |= {"choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]}
    return Json(body=body | {"usage": usage})


OPENAI_USAGE = {
    "prompt_tokens": 40_000,
    "completion_tokens": 5_000,
    "total_tokens": 45_000,
    "prompt_tokens_details": {"cached_tokens": 30_000},
    "completion_tokens_details": {"reasoning_tokens": 4_000},
}


async def test_openai_sends_max_completion_tokens_and_required_tool_choice() -> None:
    with serve([completion(OPENAI_USAGE)]) as server:
        model = OpenAICompatModel(
            MINI, base_url=f"{server.url}/v1", stream=False, retry=FAST, max_tokens=777
        )
        await model.respond(TALK, [FINISH])
    body = server.requests[0].body
    assert body["max_completion_tokens"] == 777 and "max_tokens" not in body
    assert body["tool_choice"] == "required"


async def test_compat_sends_max_tokens_and_tool_choice_only_when_told() -> None:
    with serve([completion(OPENAI_USAGE)]) as server:
        url = f"{server.url}/v1"
        plain = OpenAICompatModel(
            "m", provider="openai-compat", base_url=url, stream=False, retry=FAST, max_tokens=9
        )
        await plain.respond(TALK, [FINISH])
        told = OpenAICompatModel(
            "m", provider="openai-compat", base_url=url, stream=False, tool_choice="required"
        )
        await told.respond(TALK, [FINISH])
    first, second = (r.body for r in server.requests)
    assert first["max_tokens"] == 9 and "max_completion_tokens" not in first
    assert "tool_choice" not in first and second["tool_choice"] == "required"


async def test_openai_cached_and_reasoning_tokens_are_counted_and_priced() -> None:
    with serve([completion(OPENAI_USAGE)]) as server:
        model = OpenAICompatModel(MINI, base_url=f"{server.url}/v1", stream=False, retry=FAST)
        reply = await model.respond(TALK, [FINISH])
    u = reply.usage
    assert (u.input_tokens, u.cache_read_tokens) == (40_000, 30_000)
    assert (u.output_tokens, u.reasoning_tokens) == (5_000, 4_000)
    # gpt-4o-mini: 0.15 in, 0.075 cached, 0.60 out (reasoning tokens are output)
    assert u.cost == pytest.approx((10_000 * 0.15 + 30_000 * 0.075 + 5_000 * 0.60) / 1e6)


async def test_streamed_usage_details_reach_the_reply() -> None:
    def chunk(body: dict[str, Any]) -> str:
        return sse_event({"id": "c", "object": "chat.completion.chunk", "created": 1} | body)

    delta = {"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}
    frames = [
        chunk({"model": MINI, "choices": [delta]}),
        chunk({"model": MINI, "choices": [], "usage": OPENAI_USAGE}),
        sse_event("[DONE]"),
    ]
    with serve([Sse(frames=frames)]) as server:
        reply = await OpenAICompatModel(MINI, base_url=f"{server.url}/v1", retry=FAST).respond(
            TALK, []
        )
    assert (reply.usage.cache_read_tokens, reply.usage.reasoning_tokens) == (30_000, 4_000)


# --- the Responses API -----------------------------------------------------------------

RESPONSES_USAGE = {
    "input_tokens": 1_200,
    "input_tokens_details": {"cached_tokens": 1_000},
    "output_tokens": 90,
    "output_tokens_details": {"reasoning_tokens": 64},
    "total_tokens": 1_290,
}


def response(output: list[dict[str, Any]], usage: dict[str, Any] | None) -> dict[str, Any]:
    body: dict[str, Any] = {"id": "resp_1", "object": "response", "created_at": 1}
    body |= {"model": MINI, "status": "completed", "output": output, "parallel_tool_calls": True}
    body |= {"tool_choice": "required", "tools": [], "usage": usage}
    return body


def responses_stream(output: list[dict[str, Any]], text: str = "") -> Sse:
    """A Responses stream: created, text deltas, then ``response.completed``."""
    created = {"type": "response.created", "response": response([], None)}
    frames = [sse_event(created, "response.created")]
    for piece in text.split():
        delta: dict[str, Any] = {
            "type": "response.output_text.delta",
            "delta": piece,
            "item_id": "m",
        }
        delta |= {"output_index": 0, "content_index": 0}
        frames.append(sse_event(delta, "response.output_text.delta"))
    done = {"type": "response.completed", "response": response(output, RESPONSES_USAGE)}
    frames.append(sse_event(done, "response.completed"))
    return Sse(frames=frames)


def function_call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": f"fc_{call_id}",
        "call_id": call_id,
        "name": name,
        "arguments": json.dumps(arguments),
        "status": "completed",
    }


def said(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


async def test_responses_reply_text_calls_usage_and_request_shape() -> None:
    pieces: list[str] = []
    output = [said("Done."), function_call("call_9", "finish", {"summary": "ok"})]
    with serve([responses_stream(output, text="Do ne.")]) as server:
        model = OpenAIResponsesModel(
            MINI, base_url=f"{server.url}/v1", retry=FAST, on_delta=pieces.append, max_tokens=50
        )
        reply = await model.respond(TALK, [FINISH])
    assert model.name == f"openai-responses:{MINI}"
    assert pieces == ["Do", "ne."] and reply.text == "Done."
    call = reply.tool_calls[0]
    assert (call.name, call.arguments, call.id) == ("finish", {"summary": "ok"}, "call_9")
    u = reply.usage
    assert (u.input_tokens, u.cache_read_tokens, u.output_tokens, u.reasoning_tokens) == (
        1_200,
        1_000,
        90,
        64,
    )
    assert u.cost == pytest.approx((200 * 0.15 + 1_000 * 0.075 + 90 * 0.60) / 1e6)
    request = server.requests[0]
    assert request.path == "/v1/responses"
    body = request.body
    assert body["instructions"] == "Be brief." and body["store"] is False
    assert body["input"] == [{"role": "user", "content": "Say done."}]
    assert body["tool_choice"] == "required" and body["max_output_tokens"] == 50
    assert body["tools"][0] | {"parameters": None} == {
        "type": "function",
        "name": "finish",
        "description": "End the session.",
        "parameters": None,
        "strict": False,
    }


async def test_responses_stream_without_completed_is_retried() -> None:
    created = {"type": "response.created", "response": response([], None)}
    cut = Sse(frames=[sse_event(created, "response.created")])
    failed: dict[str, Any] = {"type": "response.failed", "response": response([], None)}
    failed["response"]["error"] = {"code": "server_error", "message": "try later"}
    good = responses_stream([function_call("c1", "finish", {"summary": "ok"})])
    with serve([cut, Sse(frames=[sse_event(failed, "response.failed")]), good]) as server:
        model = OpenAIResponsesModel(
            MINI,
            base_url=f"{server.url}/v1",
            retry=RetryPolicy(max_retries=2, timeout_s=5.0, backoff_s=0.001),
        )
        reply = await model.respond(TALK, [FINISH])
    assert len(server.requests) == 3 and reply.tool_calls[0].name == "finish"


def _run(ws: Path, spec: str, env: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    done = CliRunner().invoke(
        app, ["run", "say done", "-w", str(ws), "--model", spec, "--json"], env=env
    )
    assert "Traceback" not in done.output, done.output
    return done.exit_code, json.loads(done.stdout)


def _ws(tmp_path: Path, toml: str = "") -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "gg.toml").write_text("[model]\nmax_retries = 1\ntimeout_s = 5\n" + toml)
    (ws / "notes.txt").write_text("hello\n")
    return ws


def test_a_responses_session_runs_to_finish_with_usage_on_the_stream(tmp_path: Path) -> None:
    ws = _ws(tmp_path, "[ceilings]\nmax_cost = 5.0\n")  # the table prices the model
    read = responses_stream([function_call("call_1", "read_file", {"path": "notes.txt"})])
    finish = responses_stream(
        [said("All done."), function_call("call_2", "finish", {"summary": "ok"})]
    )
    with serve([read, finish]) as server:
        code, result = _run(ws, f"openai-responses:{MINI}", {"OPENAI_BASE_URL": f"{server.url}/v1"})
    assert code == 0, result
    assert result["ending"] == {"call": "finish", "summary": "ok"}
    second = server.requests[1].body["input"]
    answer = next(item for item in second if item.get("type") == "function_call_output")
    assert answer["call_id"] == "call_1" and "hello" in answer["output"]
    assert {"type": "function_call", "call_id": "call_1", "name": "read_file"}.items() <= next(
        item for item in second if item.get("type") == "function_call"
    ).items()
    turns = [e for e in read_events(Path(result["stream"])) if e.type == "turn"]
    assert [t.usage.cache_read_tokens for t in turns] == [1_000, 1_000]
    assert [t.usage.reasoning_tokens for t in turns] == [64, 64]
    assert all(t.usage.cost > 0 for t in turns)
    raw = [json.loads(line) for line in Path(result["stream"]).read_text().splitlines()]
    usage = next(e for e in raw if e.get("type") == "turn")["usage"]
    assert usage["cache_read_tokens"] == 1_000 and usage["reasoning_tokens"] == 64


def test_a_provider_that_ignores_tool_choice_still_gets_an_error_turn(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    text_only = anthropic_stream([{"type": "text", "text": "I am done."}], CACHED)
    with serve([text_only, anthropic_stream([FINISH_USE], CACHED)]) as server:
        code, result = _run(ws, f"anthropic:{SONNET}", {"ANTHROPIC_BASE_URL": server.url})
    assert code == 0, result
    assert all(r.body["tool_choice"] == {"type": "any"} for r in server.requests)
    kinds = [e.kind for e in read_events(Path(result["stream"])) if e.type == "error_turn"]
    assert kinds == ["no_tool_call"]


def test_max_cost_is_refused_only_when_nothing_prices_the_model(tmp_path: Path) -> None:
    ws = _ws(tmp_path, "[ceilings]\nmax_cost = 1.0\n")
    done = CliRunner().invoke(
        app, ["run", "x", "-w", str(ws), "--model", "openai-compat:m@http://127.0.0.1:9/v1"]
    )
    assert done.exit_code == 2 and "max_cost" in done.output


def test_gg_toml_turns_the_cache_and_the_required_call_off(tmp_path: Path) -> None:
    ws = _ws(tmp_path, 'prompt_cache = false\ntool_choice = "auto"\n')
    with serve([anthropic_stream([FINISH_USE], CACHED)]) as server:
        code, result = _run(ws, f"anthropic:{SONNET}", {"ANTHROPIC_BASE_URL": server.url})
    assert code == 0, result
    body = server.requests[0].body
    assert "cache_control" not in body and "tool_choice" not in body and body["tools"]


async def test_responses_without_streaming_and_a_malformed_final_event_retried() -> None:
    bad = Sse(
        frames=[sse_event({"type": "response.completed", "response": "oops"}, "response.completed")]
    )
    whole = response([function_call("c7", "finish", {"summary": "ok"})], RESPONSES_USAGE)
    with serve([bad, responses_stream([said("streamed")]), Json(body=whole)]) as server:
        streamed = OpenAIResponsesModel(MINI, base_url=f"{server.url}/v1", retry=FAST)
        first = await streamed.respond(TALK, [FINISH])
        plain = OpenAIResponsesModel(MINI, base_url=f"{server.url}/v1", retry=FAST, stream=False)
        second = await plain.respond(TALK, [FINISH])
    assert first.text == "streamed" and len(server.requests) == 3
    assert second.tool_calls[0].id == "c7" and second.usage.reasoning_tokens == 64
    assert "stream" not in server.requests[2].body
