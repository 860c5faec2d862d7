"""openai-compat against a loopback server that behaves like llama.cpp's (issue 16 item 3).

The server here refuses an assistant turn whose ``content`` is ``null`` with
HTTP 500, as llama.cpp's server does, and answers calls in the reply text
(a fenced JSON block, or Qwen's ``<tool_call>`` tags) with no native calls.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from _servers import Action, FakeServer, Json, Recorded, serve

from gg.errors import ModelError
from gg.models.base import AssistantMessage, Message, ToolMessage, ToolSpec, UserMessage
from gg.models.factory import model_from_spec
from gg.models.openai_compat import OpenAICompatModel, native_messages
from gg.models.retry import RetryPolicy

FAST = RetryPolicy(max_retries=3, timeout_s=5.0, backoff_s=0.001, max_backoff_s=0.01)
READ = ToolSpec(
    name="read_file",
    description="Read a file.",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)
TASK: list[Message] = [UserMessage(content="Fix calc.py.")]


def completion(text: str) -> dict[str, Any]:
    """A non-streamed chat completion holding ``text`` and no native call."""
    return {
        "id": "c1",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
    }


def like_llama_cpp(server: FakeServer) -> None:
    """Make ``server`` answer 500 to ``"content": null`` in any message, as llama.cpp does."""
    scripted = server.next_action

    def strict(recorded: Recorded) -> Action:
        action = scripted(recorded)
        messages = (recorded.body or {}).get("messages", [])
        if any("content" in m and m["content"] is None for m in messages):
            error = {"error": {"code": 500, "message": "content: null is not a string"}}
            return Json(status=500, body=error)
        return action

    server.next_action = strict  # type: ignore[method-assign]


def compat(url: str, **opts: Any) -> OpenAICompatModel:
    return OpenAICompatModel(
        "m", provider="openai-compat", base_url=f"{url}/v1", retry=FAST, stream=False, **opts
    )


@pytest.mark.parametrize(
    "text",
    [
        'I will read it.\n```json\n{"name": "read_file", "arguments": {"path": "calc.py"}}\n```',
        '<tool_call>\n{"name": "read_file", "arguments": {"path": "calc.py"}}\n</tool_call>',
    ],
)
async def test_text_calls_are_parsed_by_default_and_the_next_turn_is_accepted(text: str) -> None:
    with serve([Json(body=completion(text)), Json(body=completion("done"))]) as server:
        like_llama_cpp(server)
        model = compat(server.url)
        reply = await model.respond(TASK, [READ])
        (call,) = reply.tool_calls
        assert (call.name, call.arguments, call.parse_error) == (
            "read_file",
            {"path": "calc.py"},
            None,
        )
        history: list[Message] = [
            *TASK,
            AssistantMessage(content="", tool_calls=(call,)),
            ToolMessage(call_id=call.id, name="read_file", content="def add(a, b): return a - b"),
        ]
        second = await model.respond(history, [READ])
    assert second.text == "done"
    assert len(server.requests) == 2  # no 500, nothing retried
    sent = server.requests[1].body["messages"][1]
    assert sent["content"] == "" and sent["tool_calls"][0]["function"]["name"] == "read_file"


async def test_null_content_would_have_been_refused_by_the_server() -> None:
    """The server double is strict: a body with ``content: null`` gets its 500."""
    with serve([Json(body=completion("ok"))]) as server:
        like_llama_cpp(server)
        model = compat(server.url)
        model._request = lambda m, t: {  # type: ignore[method-assign,assignment]
            "model": "m",
            "messages": [{"role": "assistant", "content": None}],
        }
        with pytest.raises(ModelError, match="HTTP 500"):
            await model.respond(TASK, [READ])
    assert len(server.requests) == 1 + FAST.max_retries  # a 5xx is retried


async def test_text_call_parsing_can_be_turned_off() -> None:
    text = '<tool_call>{"name": "read_file", "arguments": {"path": "calc.py"}}</tool_call>'
    with serve([Json(body=completion(text))]) as server:
        reply = await compat(server.url, text_tools=False).respond(TASK, [READ])
    assert reply.tool_calls == ()


def test_the_setting_reaches_the_model_through_the_factory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
    on = model_from_spec("openai-compat:m@http://127.0.0.1:9/v1")
    off = model_from_spec("openai-compat:m@http://127.0.0.1:9/v1", text_tools=False)
    openai = model_from_spec("openai:gpt-4o-mini")
    assert on._text_tools == "auto"  # type: ignore[attr-defined]
    assert off._text_tools is False  # type: ignore[attr-defined]
    assert openai._text_tools is False  # type: ignore[attr-defined]


@pytest.mark.parametrize("status", [400, 404, 413, 422])
async def test_a_4xx_is_not_retried(status: int) -> None:
    error = {"error": {"message": f"refused with {status}"}}
    script = [Json(status=status, body=error), Json(body=completion("late"))]
    with serve(script) as server, pytest.raises(Exception, match=f"refused with {status}"):
        await compat(server.url).respond(TASK, [READ])
    assert len(server.requests) == 1


async def test_a_429_is_retried() -> None:
    busy = Json(status=429, body={"error": {"message": "busy"}})
    with serve([busy, Json(body=completion("ok"))]) as server:
        reply = await compat(server.url).respond(TASK, [READ])
    assert reply.text == "ok" and len(server.requests) == 2


def test_assistant_turns_with_calls_never_carry_null_content() -> None:
    call_turn = AssistantMessage(content="", tool_calls=())
    from_model = json.loads(json.dumps(native_messages([call_turn])))
    assert from_model[0]["content"] == ""
