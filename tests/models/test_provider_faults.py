"""Provider faults against real loopback servers: every malformed answer is retried or a
clean stop naming the provider; retries are ``retry`` events; missing usage is requested,
then estimated (issue 12 item 2; SPEC M4, S6, O1)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _servers import Json, Sse, serve, sse_event
from typer.testing import CliRunner

from gg.cli import app
from gg.errors import ModelError
from gg.models.anthropic import AnthropicModel
from gg.models.base import (
    Message,
    RetryNotice,
    SystemMessage,
    ToolSpec,
    UserMessage,
    retries_reported,
)
from gg.models.openai_compat import OpenAICompatModel
from gg.models.retry import RetryPolicy
from gg.render import summary_table
from gg.stream import read_events

FAST = RetryPolicy(max_retries=2, timeout_s=5.0, backoff_s=0.001, max_backoff_s=0.01)
FINISH = ToolSpec(
    name="finish",
    description="End the session.",
    parameters={"type": "object", "properties": {"summary": {"type": "string"}}},
)
TALK: list[Message] = [SystemMessage(content="Be brief."), UserMessage(content="Say done, " * 40)]


def _chunk(choices: Any = None, **extra: Any) -> str:
    body: dict[str, Any] = {"id": "c", "object": "chat.completion.chunk", "created": 1}
    body["model"] = "m"
    if choices is not None:
        body["choices"] = choices
    body.update(extra)
    return sse_event(body)


def _delta(delta: Any, finish: str | None = None) -> str:
    return _chunk([{"index": 0, "delta": delta, "finish_reason": finish}])


USAGE = {"prompt_tokens": 40, "completion_tokens": 9, "total_tokens": 49}


def _good(usage: dict[str, int] | None = USAGE) -> Sse:
    call = {"index": 0, "id": "call_1", "type": "function"}
    call["function"] = {"name": "finish", "arguments": '{"summary": "ok"}'}
    frames = [_delta({"content": "Done."}), _delta({"tool_calls": [call]}), _delta({}, "stop")]
    if usage is not None:
        frames.append(_chunk([], usage=usage))
    return Sse(frames=[*frames, sse_event("[DONE]")])


MALFORMED = {
    "not JSON": "data: {not json\n\n",
    "a JSON array": "data: [1, 2]\n\n",
    "a JSON string": 'data: "hello"\n\n',
    "choices not a list": _chunk("nope"),
    "a choice not an object": _chunk([7]),
    "delta not an object": _delta([1]),
    "content a number": _delta({"content": 12}),
    "tool_calls an object": _delta({"tool_calls": {"index": 0}}),
    "call index a string": _delta({"tool_calls": [{"index": "a", "function": {"name": "x"}}]}),
    "call name a list": _delta({"tool_calls": [{"index": 0, "function": {"name": ["x"]}}]}),
    "usage a string": _chunk([], usage="many"),
    "usage count negative": _chunk([], usage={"prompt_tokens": -3, "completion_tokens": 1}),
    "usage count a bool": _chunk([], usage={"prompt_tokens": True, "completion_tokens": 1}),
    "usage count huge": _chunk([], usage={"prompt_tokens": 10**30, "completion_tokens": 1}),
}


def _compat(url: str, **opts: Any) -> OpenAICompatModel:
    opts.setdefault("retry", FAST)
    return OpenAICompatModel("m", provider="openai-compat", base_url=f"{url}/v1", **opts)


@pytest.mark.parametrize("frame", MALFORMED.values(), ids=list(MALFORMED))
async def test_a_malformed_chunk_is_retried_and_each_retry_reported(frame: str) -> None:
    bad = Sse(frames=[_delta({"content": "Do"}), frame, _delta({}, "stop"), sse_event("[DONE]")])
    notices: list[RetryNotice] = []
    with serve([bad, _good()]) as server, retries_reported(notices.append):
        reply = await _compat(server.url).respond(TALK, [FINISH])
    assert reply.tool_calls[0].arguments == {"summary": "ok"}
    assert len(server.requests) == 2
    (notice,) = notices
    assert notice.provider == "openai-compat" and notice.attempt == 1
    assert 0 <= notice.wait_s < 1
    assert "malformed" in notice.cause or "not readable" in notice.cause


@pytest.mark.parametrize("frame", list(MALFORMED.values())[:6], ids=list(MALFORMED)[:6])
async def test_always_malformed_is_a_model_error_naming_the_provider(frame: str) -> None:
    bad = Sse(frames=[frame, _delta({}, "stop"), sse_event("[DONE]")])
    notices: list[RetryNotice] = []
    with (
        serve([bad]) as server,
        retries_reported(notices.append),
        pytest.raises(ModelError) as caught,
    ):
        await _compat(server.url).respond(TALK, [FINISH])
    assert str(caught.value).startswith("openai-compat request failed: the server's answer")
    assert "gave up after 3 attempts" in str(caught.value)
    assert [n.attempt for n in notices] == [1, 2]
    assert len(server.requests) == 3


@pytest.mark.parametrize(
    "body",
    [
        [1, 2],
        {"id": "x", "object": "chat.completion", "choices": [{"index": 0, "message": None}]},
        {"choices": [{"message": {"content": 3}}]},
        {"choices": [{"message": {"tool_calls": "x"}}]},
        {"choices": [], "usage": {"prompt_tokens": "a"}},
    ],
)
async def test_a_malformed_completion_is_retried_then_refused(body: Any) -> None:
    with serve([Json(body=body)]) as server, pytest.raises(ModelError, match="openai-compat"):
        await _compat(server.url, stream=False).respond(TALK, [FINISH])
    assert len(server.requests) == 3


@pytest.mark.parametrize(
    ("arguments", "decoded", "error"),
    [
        ({"summary": "ok"}, {"summary": "ok"}, None),
        ([1, 2], "[1, 2]", "arguments must be a JSON object"),
        (7, "7", "arguments must be a JSON object"),
        ('{"summary": ', '{"summary": ', "not valid JSON"),
    ],
)
async def test_arguments_of_any_json_shape_are_the_sessions_to_judge(
    arguments: Any, decoded: Any, error: str | None
) -> None:
    call = {"index": 0, "id": "c1", "function": {"name": "finish", "arguments": arguments}}
    frames = [_delta({"tool_calls": [call]}), _delta({}, "tool_calls"), sse_event("[DONE]")]
    with serve([Sse(frames=frames)]) as server:
        (got,) = (await _compat(server.url).respond(TALK, [FINISH])).tool_calls
    assert len(server.requests) == 1  # not retried: a bad call is an error turn (SPEC S5)
    assert got.arguments == decoded
    assert (got.parse_error is None) if error is None else (error in (got.parse_error or ""))


async def test_no_usage_is_requested_then_estimated_and_marked() -> None:
    with serve([_good(usage=None)]) as server:
        reply = await _compat(server.url).respond(TALK, [FINISH])
    assert server.requests[0].body["stream_options"] == {"include_usage": True}
    usage = reply.usage
    assert usage.estimated
    sent = len(json.dumps(server.requests[0].body["messages"]))
    assert sent // 4 - 50 <= usage.input_tokens <= sent // 4 + 200  # chars/4 of what went out
    assert usage.output_tokens >= len('Done.finish{"summary": "ok"}') // 4


async def test_usage_the_server_sends_is_not_estimated() -> None:
    with serve([_good()]) as server:
        usage = (await _compat(server.url).respond(TALK, [FINISH])).usage
    assert (usage.input_tokens, usage.output_tokens, usage.estimated) == (40, 9, False)


async def test_anthropic_malformed_events_are_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-key-0123456789")
    start = {"type": "message_start", "message": {"usage": {"input_tokens": 5}}}
    block = {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}}
    text: dict[str, Any] = {"type": "content_block_delta", "index": 0}
    stop = [sse_event({"type": "message_stop"}, "message_stop")]
    bad = [
        sse_event({"type": "content_block_start", "index": "zero"}, "content_block_start"),
        sse_event({"type": "message_start", "message": None}, "message_start"),
        sse_event({**text, "delta": {"type": "text_delta", "text": 5}}, "content_block_delta"),
        sse_event({"type": "message_delta", "usage": {"output_tokens": "9"}}, "message_delta"),
    ]
    good = [sse_event(start, "message_start"), sse_event(block, "content_block_start")]
    good.append(
        sse_event({**text, "delta": {"type": "text_delta", "text": "hi"}}, "content_block_delta")
    )
    script = [Sse(frames=[frame, *stop]) for frame in bad] + [Sse(frames=[*good, *stop])]
    notices: list[RetryNotice] = []
    retry = RetryPolicy(max_retries=4, timeout_s=5.0, backoff_s=0.001, max_backoff_s=0.01)
    with serve(script) as server, retries_reported(notices.append):
        model = AnthropicModel("claude-test", base_url=server.url, retry=retry)
        reply = await model.respond(TALK, [FINISH])
    assert reply.text == "hi"
    assert reply.usage.input_tokens == 5 and not reply.usage.estimated
    assert [n.attempt for n in notices] == [1, 2, 3, 4]
    assert all("malformed" in n.cause and n.provider == "anthropic" for n in notices)


# --- through a whole run: the stream ends, --json is printed, budgets trip -------------------


def _run(ws: Path, url: str) -> tuple[int, dict[str, Any], str]:
    model = f"openai-compat:m@{url}/v1"
    done = CliRunner().invoke(app, ["run", "say done", "-w", str(ws), "--model", model, "--json"])
    assert "Traceback" not in done.output, done.output
    return done.exit_code, json.loads(done.stdout), done.stderr


def _ws(tmp_path: Path, toml: str = "") -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "gg.toml").write_text("[model]\nmax_retries = 1\ntimeout_s = 5\n" + toml)
    return ws


def test_a_run_against_a_server_that_only_sends_malformed_chunks(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    bad = Sse(frames=[_chunk({"not": "a list"}), _delta({}, "stop"), sse_event("[DONE]")])
    with serve([bad]) as server:
        code, result, err = _run(ws, server.url)
    assert code == 1
    assert result["status"] == "stopped" and result["ending"] is None
    assert "openai-compat" in result["diagnosis"] and "malformed" in result["diagnosis"]
    events = list(read_events(Path(result["stream"])))
    kinds = [e.type for e in events]
    assert kinds[-2:] == ["session_ended", "run_ended"]
    (retry,) = [e for e in events if e.type == "retry"]
    assert retry.attempt == 1 and retry.session_id and retry.turn == 1
    assert "malformed" in retry.cause
    assert "↻ openai-compat attempt 1 failed" in err
    shown = CliRunner().invoke(app, ["show", result["run_id"], "-w", str(ws)])
    assert shown.exit_code == 0, shown.output
    out = " ".join(shown.stdout.split())
    assert "session stopped after 0 turns: the model (openai-compat) failed" in out
    (ended_by,) = [str(c) for c in summary_table(events).columns[-1].cells]
    assert ended_by.startswith("stopped (model): the model (openai-compat) failed")
    assert "malformed" in out and "↻ openai-compat attempt 1 failed" in out


def test_a_run_recovers_from_one_malformed_chunk_and_shows_the_retry(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    bad = Sse(frames=["data: {oops\n\n", _delta({}, "stop"), sse_event("[DONE]")])
    with serve([bad, _good()]) as server:
        code, result, err = _run(ws, server.url)
    assert code == 0, err
    assert result["ending"] == {"call": "finish", "summary": "ok"}
    retries = [e for e in read_events(Path(result["stream"])) if e.type == "retry"]
    assert len(retries) == 1 and retries[0].provider == "openai-compat"


def test_bad_tool_call_json_is_an_error_turn_then_the_run_goes_on(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    call = {"index": 0, "id": "c1", "function": {"name": "finish", "arguments": '{"summary": '}}
    broken = Sse(frames=[_delta({"tool_calls": [call]}), _delta({}, "stop"), sse_event("[DONE]")])
    with serve([broken, _good()]) as server:
        code, result, _ = _run(ws, server.url)
    assert code == 0
    kinds = [e for e in read_events(Path(result["stream"])) if e.type == "error_turn"]
    assert [e.kind for e in kinds] == ["bad_arguments"]


def test_max_tokens_trips_when_the_server_sends_no_usage(tmp_path: Path) -> None:
    ws = _ws(tmp_path, "[ceilings]\nmax_tokens = 300\n")
    prose = Sse(frames=[_delta({"content": "thinking " * 50}), _delta({}, "stop")])
    with serve([prose]) as server:
        code, result, _ = _run(ws, server.url)
    assert code == 1
    turns = [e for e in read_events(Path(result["stream"])) if e.type == "turn"]
    assert turns and all(t.usage.estimated and t.usage.input_tokens > 0 for t in turns)
    assert len(turns) < 10  # the budget, not max_turns or the error ceilings alone
    assert "token" in result["diagnosis"]
