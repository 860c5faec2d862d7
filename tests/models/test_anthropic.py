"""AnthropicModel against a real HTTP server on 127.0.0.1 (SPEC M4, C3, S6).

The server (``_servers.py``) answers in the Messages API's documented shapes:
content blocks (``text``, ``tool_use``), ``stop_reason``, ``usage``, and the
streaming events (``message_start`` ... ``message_stop``). The SDK is not
mocked; it is pointed at the server with ``base_url``.

One smoke test talks to the real API; it runs only when both
``ANTHROPIC_API_KEY`` and ``GG_LIVE_TESTS=1`` are set.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from _servers import Drop, Json, Sse, serve, sse_event

from gg.errors import ModelError, ModelUnavailable
from gg.models.anthropic import AnthropicModel, anthropic_messages
from gg.models.base import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    ToolSpec,
    UserMessage,
)
from gg.models.retry import RetryPolicy

FAST = RetryPolicy(max_retries=2, timeout_s=2.0, backoff_s=0.001, max_backoff_s=0.01)
FAKE_KEY = "sk-ant-test-0123456789abcdef"
FINISH = ToolSpec(
    name="finish",
    description="End the session.",
    parameters={
        "type": "object",
        "properties": {"summary": {"type": "string"}},
        "required": ["summary"],
    },
)
CONVERSATION: list[Message] = [SystemMessage(content="Be brief."), UserMessage(content="Say done.")]
LIVE = bool(os.environ.get("ANTHROPIC_API_KEY")) and os.environ.get("GG_LIVE_TESTS") == "1"


@pytest.fixture
def fake_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)


def model_at(url: str, **opts: Any) -> AnthropicModel:
    opts.setdefault("retry", FAST)
    return AnthropicModel("claude-test", base_url=url, **opts)


def message(blocks: list[dict[str, Any]], usage: tuple[int, int] = (20, 7)) -> dict[str, Any]:
    """A non-streamed Messages API answer."""
    tool = any(b["type"] == "tool_use" for b in blocks)
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": blocks,
        "stop_reason": "tool_use" if tool else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
    }


def events(*blocks: tuple[str, Any], stop: bool = True) -> list[str]:
    """A streamed answer: ``("text", [pieces])`` or ``("tool", (id, name, [json pieces]))``."""
    start = message([], usage=(25, 1)) | {"stop_reason": None}
    start["usage"] |= {"cache_read_input_tokens": 5}
    frames = [sse_event({"type": "message_start", "message": start}, "message_start")]
    frames.append(sse_event({"type": "ping"}, "ping"))
    for index, (kind, spec) in enumerate(blocks):
        if kind == "text":
            block: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": piece} for piece in spec]
        else:
            call_id, name, pieces = spec
            block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": piece} for piece in pieces]
        start_event = {"type": "content_block_start", "index": index, "content_block": block}
        frames.append(sse_event(start_event, "content_block_start"))
        for delta in deltas:
            body = {"type": "content_block_delta", "index": index, "delta": delta}
            frames.append(sse_event(body, "content_block_delta"))
        stop_event = {"type": "content_block_stop", "index": index}
        frames.append(sse_event(stop_event, "content_block_stop"))
    final = {
        "type": "message_delta",
        "delta": {"stop_reason": "end_turn", "stop_sequence": None},
        "usage": {"output_tokens": 15},
    }
    frames.append(sse_event(final, "message_delta"))
    if stop:
        frames.append(sse_event({"type": "message_stop"}, "message_stop"))
    return frames


def error_body(kind: str, text: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": text}}


TOOL_STREAM = events(
    ("text", ["Calling ", "finish."]),
    ("tool", ("toolu_1", "finish", ['{"summary"', ': "Done."}'])),
)


# --- whole exchanges -------------------------------------------------------------------


@pytest.mark.usefixtures("fake_key")
async def test_non_streaming_exchange_with_tool_use_and_cost() -> None:
    blocks: list[dict[str, Any]] = [
        {"type": "text", "text": "Calling."},
        {"type": "tool_use", "id": "toolu_1", "name": "finish", "input": {"summary": "Done."}},
    ]
    prices = {"claude-test": {"input_per_mtok": 3.0, "output_per_mtok": 15.0}}
    with serve([Json(body=message(blocks))]) as server:
        model = model_at(server.url, stream=False, prices=prices)
        reply = await model.respond(CONVERSATION, [FINISH])
    assert model.name == "anthropic:claude-test"
    assert reply.text == "Calling."
    assert reply.tool_calls == (
        ToolCall(name="finish", arguments={"summary": "Done."}, id="toolu_1"),
    )
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (20, 7)
    assert reply.usage.cost == pytest.approx((20 * 3.0 + 7 * 15.0) / 1e6)
    sent = server.requests[0]
    assert sent.path == "/v1/messages"
    assert FAKE_KEY in (sent.headers.get("x-api-key"), sent.headers.get("authorization", "")[7:])
    assert sent.body["system"] == "Be brief."
    assert sent.body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Say done."}]}
    ]
    assert sent.body["tools"] == [
        {"name": "finish", "description": "End the session.", "input_schema": FINISH.parameters}
    ]
    assert sent.body["max_tokens"] == 4096


@pytest.mark.usefixtures("fake_key")
async def test_streaming_exchange_assembles_text_calls_and_usage() -> None:
    pieces: list[str] = []
    with serve([Sse(frames=TOOL_STREAM)]) as server:
        reply = await model_at(server.url, on_delta=pieces.append).respond(CONVERSATION, [FINISH])
    assert pieces == ["Calling ", "finish."]
    assert reply.text == "Calling finish."
    assert reply.tool_calls == (
        ToolCall(name="finish", arguments={"summary": "Done."}, id="toolu_1"),
    )
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (30, 15)
    assert server.requests[0].body["stream"] is True


@pytest.mark.usefixtures("fake_key")
async def test_malformed_streamed_input_is_a_parse_error_not_an_exception() -> None:
    frames = events(("tool", ("toolu_9", "finish", ['{"summary": "Do'])))
    with serve([Sse(frames=frames)]) as server:
        reply = await model_at(server.url).respond(CONVERSATION, [FINISH])
    (call,) = reply.tool_calls
    assert call.id == "toolu_9"
    assert call.arguments == '{"summary": "Do'
    assert call.parse_error and "not valid JSON" in call.parse_error


@pytest.mark.usefixtures("fake_key")
async def test_tool_use_without_input_deltas_keeps_the_start_input() -> None:
    frames = events(("tool", ("toolu_2", "approve", [])))
    with serve([Sse(frames=frames)]) as server:
        reply = await model_at(server.url).respond(CONVERSATION, [])
    assert reply.tool_calls == (ToolCall(name="approve", arguments={}, id="toolu_2"),)


def test_missing_key_is_model_unavailable_at_construction(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ModelUnavailable, match="ANTHROPIC_API_KEY") as caught:
        AnthropicModel("claude-test")
    assert caught.value.provider == "anthropic"


# --- retries ---------------------------------------------------------------------------


@pytest.mark.usefixtures("fake_key")
async def test_429_with_retry_after_then_success() -> None:
    limited = Json(
        status=429,
        body=error_body("rate_limit_error", "slow down"),
        headers={"retry-after-ms": "200"},
    )
    with serve([limited, Sse(frames=TOOL_STREAM)]) as server:
        reply = await model_at(server.url).respond(CONVERSATION, [FINISH])
    assert reply.tool_calls[0].name == "finish"
    assert len(server.requests) == 2


@pytest.mark.usefixtures("fake_key")
async def test_overloaded_529_then_success() -> None:
    overloaded = Json(status=529, body=error_body("overloaded_error", "Overloaded"))
    with serve([overloaded, Sse(frames=TOOL_STREAM)]) as server:
        reply = await model_at(server.url).respond(CONVERSATION, [FINISH])
    assert reply.text == "Calling finish."


@pytest.mark.usefixtures("fake_key")
async def test_error_event_mid_stream_is_retried() -> None:
    broken = events(("text", ["Hal"]), stop=False)[:4]
    broken.append(sse_event(error_body("overloaded_error", "Overloaded"), "error"))
    with serve([Sse(frames=broken), Sse(frames=TOOL_STREAM)]) as server:
        reply = await model_at(server.url).respond(CONVERSATION, [FINISH])
    assert reply.text == "Calling finish."
    assert len(server.requests) == 2


@pytest.mark.usefixtures("fake_key")
async def test_retries_exhausted_names_the_status_and_message() -> None:
    down = Json(status=500, body=error_body("api_error", "Internal server error"))
    with serve([down]) as server, pytest.raises(ModelError) as caught:
        await model_at(server.url).respond(CONVERSATION, [])
    assert len(server.requests) == 3
    assert "HTTP 500" in str(caught.value) and "Internal server error" in str(caught.value)
    assert caught.value.provider == "anthropic"


@pytest.mark.usefixtures("fake_key")
async def test_bad_request_is_not_retried() -> None:
    bad = Json(status=400, body=error_body("invalid_request_error", "messages: empty"))
    with serve([bad]) as server, pytest.raises(ModelError, match="HTTP 400: messages: empty"):
        await model_at(server.url).respond(CONVERSATION, [])
    assert len(server.requests) == 1


@pytest.mark.usefixtures("fake_key")
async def test_bad_key_is_unavailable_and_never_quoted() -> None:
    refused = Json(status=401, body=error_body("authentication_error", f"bad key {FAKE_KEY}"))
    with serve([refused]) as server, pytest.raises(ModelUnavailable) as caught:
        await model_at(server.url).respond(CONVERSATION, [])
    assert "ANTHROPIC_API_KEY" in str(caught.value)
    assert FAKE_KEY not in str(caught.value)


@pytest.mark.usefixtures("fake_key")
async def test_dropped_connection_and_cut_stream_then_success() -> None:
    cut = Sse(frames=TOOL_STREAM, cut_after=5)
    with serve([Drop(), cut, Sse(frames=TOOL_STREAM)]) as server:
        reply = await model_at(server.url).respond(CONVERSATION, [FINISH])
    assert reply.tool_calls[0].arguments == {"summary": "Done."}
    assert len(server.requests) == 3


@pytest.mark.usefixtures("fake_key")
async def test_stream_without_message_stop_is_retried() -> None:
    short = events(("text", ["half"]), stop=False)
    with serve([Sse(frames=short), Sse(frames=TOOL_STREAM)]) as server:
        reply = await model_at(server.url).respond(CONVERSATION, [FINISH])
    assert reply.text == "Calling finish."


# --- message conversion ----------------------------------------------------------------


def test_conversion_merges_roles_and_puts_tool_results_first() -> None:
    history: list[Message] = [
        SystemMessage(content="one"),
        SystemMessage(content="two"),
        UserMessage(content="task"),
        UserMessage(content="more"),
        AssistantMessage(
            content="Reading.",
            tool_calls=(
                ToolCall(name="read_file", arguments={"path": "a"}, id="call_1"),
                ToolCall(name="finish", arguments="{bad", id="call.2", parse_error="x"),
            ),
        ),
        UserMessage(content="note before results"),
        ToolMessage(call_id="call_1", name="read_file", content="hello"),
        ToolMessage(call_id="call.2", name="finish", content=""),
        AssistantMessage(content=""),
    ]
    system, out = anthropic_messages(history)
    assert system == "one\n\ntwo"
    assert [m["role"] for m in out] == ["user", "assistant", "user", "assistant"]
    assert out[0]["content"] == [
        {"type": "text", "text": "task"},
        {"type": "text", "text": "more"},
    ]
    text, use_1, use_2 = out[1]["content"]
    assert text == {"type": "text", "text": "Reading."}
    assert use_1 == {
        "type": "tool_use",
        "id": "call_1",
        "name": "read_file",
        "input": {"path": "a"},
    }
    assert use_2["id"] == "call_2" and use_2["input"] == {"raw_arguments": "{bad"}
    assert [b["type"] for b in out[2]["content"]] == ["tool_result", "tool_result", "text"]
    first_result = {"type": "tool_result", "tool_use_id": "call_1", "content": "hello"}
    assert out[2]["content"][0] == first_result
    assert out[2]["content"][1]["tool_use_id"] == "call_2"
    assert out[3]["content"] == [{"type": "text", "text": "(empty)"}]


# --- the real API (opt-in) -------------------------------------------------------------


@pytest.mark.skipif(not LIVE, reason="set ANTHROPIC_API_KEY and GG_LIVE_TESTS=1 to call the API")
async def test_smoke_against_the_real_api() -> None:
    model = AnthropicModel(
        os.environ.get("GG_ANTHROPIC_MODEL", "claude-haiku-4-5"),
        max_tokens=200,
        retry=RetryPolicy(max_retries=2, timeout_s=60.0),
    )
    reply = await model.respond(
        [UserMessage(content="Call finish with the summary 'ok'.")], [FINISH]
    )
    await model.aclose()
    assert reply.usage.input_tokens > 0
    assert reply.tool_calls and reply.tool_calls[0].name == "finish"
