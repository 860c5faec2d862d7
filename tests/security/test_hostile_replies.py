"""A model's reply is hostile input (issue 9, adversary finding F4).

A prompt-injected model or a broken server can send lone surrogates (what
``json.loads`` makes of ``"\\ud800"``), arguments nested 100,000 deep, numbers of
a million digits, NaN, huge strings, odd Python values from a user's model, or
tool calls written in text that crash a parser. Each must be an error turn or a
clean tool error: gg keeps going, its stream stays valid and sealed, the next
turn's ``finish`` ends the session, and nothing gg sends the model next fails
to encode. Real parts throughout: gg.Agent in tool-calling mode with the
scripted and function models, a real loopback OpenAI-compatible HTTP server,
the real stream and seal, the CLI in a subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pytest

import gg
from gg.bounded import MAX_DEPTH
from gg.models.base import Message, Reply, ToolCall, ToolSpec
from gg.models.openai_compat import OpenAICompatModel, calls_from_text
from gg.models.parsing import parse_tool_calls
from gg.models.retry import RetryPolicy, decode_arguments
from gg.seal import Intact
from gg.stream import (
    ErrorTurn,
    RunEnded,
    RunStarted,
    SessionStarted,
    StreamWriter,
    ToolCalled,
    read_events,
    verify,
)
from gg.testing import FunctionModel, ScriptedModel

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "models"))
from _servers import Json, serve

FINISH = Reply(tool_calls=(ToolCall(name="finish", arguments={"summary": "second ok"}),))
GG = [sys.executable, "-m", "gg"]


def nested(levels: int, *, kind: str = "dict") -> Any:
    """A value nested ``levels`` deep, built without recursion."""
    value: Any = "bottom"
    for _ in range(levels):
        value = {"a": value} if kind == "dict" else [value]
    return value


def deep_json(levels: int) -> str:
    return '{"path": ' + "[" * levels + "]" * levels + "}"


def call(name: str, arguments: dict[str, Any] | str, *, text: str = "", cid: str = "") -> Reply:
    return Reply(text=text, tool_calls=(ToolCall(name=name, arguments=arguments, id=cid),))


def missing(**extra: Any) -> dict[str, Any]:
    """read_file of a file that is not there: a clean tool error."""
    return {"path": "no-such-file.txt", **extra}


def cyclic() -> dict[str, Any]:
    loop: dict[str, Any] = {"path": "x"}
    loop["self"] = loop
    return loop


def encodable(value: Any) -> None:
    """Fail unless ``value`` serialises as strict UTF-8 JSON (what an adapter sends)."""
    json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")


def plain(messages: list[Message]) -> list[Any]:
    out = []
    for m in messages:
        item: dict[str, Any] = {"role": m.role, "content": m.content}
        for c in getattr(m, "tool_calls", ()):
            item.setdefault("calls", []).append([c.name, c.id, c.arguments, c.parse_error])
        if hasattr(m, "call_id"):
            item["ids"] = [m.call_id, m.name]  # type: ignore[union-attr]
        out.append(item)
    return out


def check_run(result: gg.RunResult, expect: str) -> list[Any]:
    """The attack failed and gg kept going; returns the stream's events."""
    raw = result.stream.read_bytes()
    for line in raw.decode("utf-8").splitlines():  # strict UTF-8, every line JSON
        json.loads(line)
    assert isinstance(verify(result.stream), Intact)
    events = list(read_events(result.stream))
    assert result.status == "ended", result.diagnosis
    assert result.ending is not None and result.ending.call == "finish"
    assert result.ending.arguments()["summary"] == "second ok"
    ended = [e for e in events if e.type == "session_ended"]
    assert ended[-1].turns == 2
    first = [e for e in events if getattr(e, "turn", None) == 1]
    errors = [e for e in first if e.type == "error_turn"]
    results = [e for e in first if e.type == "tool_result"]
    if expect == "tool_error":
        assert not errors and results and not any(r.ok for r in results), first
    else:
        assert [e.kind for e in errors] == [expect], first
        assert len(errors[0].message) < 5000
    assert not any(e.type == "ending_declared" for e in first)
    return events


Case = Callable[[], Reply]

CASES: dict[str, tuple[Case, str]] = {
    "high surrogate in a value": (lambda: call("read_file", {"path": "a\ud800"}), "bad_arguments"),
    "low surrogate in a written file": (
        lambda: call("write_file", {"path": "x.txt", "content": "ok \udcff"}),
        "bad_arguments",
    ),
    "surrogate in a key": (lambda: call("read_file", {"pa\udbffth": "x"}), "bad_arguments"),
    "surrogate deep in a value": (
        lambda: call("read_file", {"path": "x", "o": {"a": [1, {"b": "\ud834"}]}}),
        "bad_arguments",
    ),
    "surrogate in an ending": (lambda: call("finish", {"summary": "done \ud800"}), "bad_arguments"),
    "surrogate in a tool name": (lambda: call("read_file\ud800", {"path": "x"}), "unknown_tool"),
    "surrogate in a call id": (lambda: call("read_file", missing(), cid="c\udfff"), "tool_error"),
    "surrogate in the text": (
        lambda: call("read_file", missing(), text="hi \ud800 there \udc00"),
        "tool_error",
    ),
    "1,000-deep dict": (lambda: call("read_file", {"path": nested(1_000)}), "bad_arguments"),
    "100,000-deep dict": (lambda: call("read_file", {"path": nested(100_000)}), "bad_arguments"),
    "100,000-deep list": (
        lambda: call("read_file", {"path": nested(100_000, kind="list")}),
        "bad_arguments",
    ),
    "just past the depth bound": (
        lambda: call("read_file", {"path": nested(MAX_DEPTH)}),
        "bad_arguments",
    ),
    "a dict holding itself": (lambda: call("read_file", cyclic()), "bad_arguments"),
    "5,000-digit integer": (lambda: call("read_file", {"path": 10**5000}), "bad_arguments"),
    "1,000,000-digit integer": (
        lambda: call("read_file", {"path": -(10**1_000_000)}),
        "bad_arguments",
    ),
    "NaN": (lambda: call("read_file", {"path": "x", "n": float("nan")}), "bad_arguments"),
    "infinity in a list": (
        lambda: call("read_file", {"path": "x", "n": [1.0, float("-inf")]}),
        "bad_arguments",
    ),
    "70 MB string": (
        lambda: call("write_file", {"path": "x", "content": "a" * 70_000_000}),
        "bad_arguments",
    ),
    "70 MB in small strings": (
        lambda: call("write_file", {"path": "x", "content": "", "l": ["ab" * 50] * 700_000}),
        "bad_arguments",
    ),
    "a set": (lambda: call("read_file", {"path": "x", "s": {1, 2}}), "bad_arguments"),
    "bytes": (lambda: call("read_file", {"path": b"\xff"}), "bad_arguments"),
    "an integer key": (
        lambda: call("read_file", cast(dict[str, Any], {"path": "x", 7: "y"})),
        "bad_arguments",
    ),
    "an object": (lambda: call("read_file", {"path": object()}), "bad_arguments"),
    "3 MB text with surrogates": (
        lambda: call("read_file", missing(), text="\ud800" * 3_000_000),
        "tool_error",
    ),
    "1 MB tool name": (lambda: call("x" * 1_000_000, {}), "unknown_tool"),
    "1,500 calls in one reply": (
        lambda: Reply(
            tool_calls=tuple(ToolCall(name="read_file", arguments=missing()) for _ in range(1_500))
        ),
        "bad_arguments",
    ),
}


UNICODE, DEEP, DIGITS = "not valid Unicode", "levels deep", "digits"
NOT_JSON, FINITE = "not JSON data", "must be finite"
SAYS: dict[str, str] = {  # what the feedback names: the model boundary's reason, not a schema's
    "high surrogate in a value": UNICODE,
    "low surrogate in a written file": UNICODE,
    "surrogate in a key": "in a key of arguments",
    "surrogate deep in a value": UNICODE,
    "surrogate in an ending": UNICODE,
    "surrogate in a tool name": "There is no tool",
    "1,000-deep dict": DEEP,
    "100,000-deep dict": DEEP,
    "100,000-deep list": DEEP,
    "just past the depth bound": DEEP,
    "a dict holding itself": DEEP,
    "5,000-digit integer": DIGITS,
    "1,000,000-digit integer": DIGITS,
    "NaN": FINITE,
    "infinity in a list": FINITE,
    "70 MB string": "characters in all",
    "70 MB in small strings": "characters in all",
    "a set": NOT_JSON,
    "bytes": NOT_JSON,
    "an integer key": "keys are strings",
    "an object": NOT_JSON,
    "1 MB tool name": "There is no tool",
    "1,500 calls in one reply": "at most 1000",
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_hostile_reply_is_an_error_turn_and_the_next_turn_ends(
    name: str, workspace: Path
) -> None:
    build, expect = CASES[name]
    model = ScriptedModel([build(), FINISH])
    seen: list[Any] = []
    result = gg.Agent(
        model=model, workspace=workspace, mode="tool-calling", listeners=[seen.append]
    ).run("do the task")
    events = check_run(result, expect)
    if name in SAYS:
        error = next(e for e in events if e.type == "error_turn")
        assert SAYS[name] in error.message, error.message
    assert len(seen) == len(events)  # the live view got every event
    encodable(plain(model.calls[1][0]))  # what goes back to the model next turn
    assert not (workspace / "x.txt").exists()
    turn = next(e for e in events if e.type == "turn")
    assert "\ud800" not in turn.text and len(turn.text) < 1000
    if "text" in name:
        assert "\ufffd" in turn.text


STRING_CASES: dict[str, str] = {
    "1,000-deep JSON text": deep_json(1_000),
    "100,000-deep JSON text": deep_json(100_000),
    "5,000-digit JSON number": '{"path": ' + "9" * 5_000 + "}",
    "1,000,000-digit JSON number": '{"path": -' + "9" * 1_000_000 + "}",
    "a long float": '{"path": 1.' + "5" * 5_000 + "}",
    "1e999": '{"path": 1e999}',
    "NaN constant": '{"path": NaN}',
    "escaped high surrogate": '{"path": "a\\ud800"}',
    "escaped low surrogate in a key": '{"\\udcffp": "x"}',
    "a JSON list": "[1, 2]",
    "not JSON": "{path: x",
}


@pytest.mark.parametrize("name", list(STRING_CASES))
def test_hostile_argument_text_is_an_error_turn(name: str, workspace: Path) -> None:
    hostile = {"tool_calls": [{"name": "read_file", "arguments": STRING_CASES[name]}]}
    model = ScriptedModel([hostile, FINISH])
    result = gg.Agent(model=model, workspace=workspace, mode="tool-calling").run("t")
    check_run(result, "bad_arguments")
    encodable(plain(model.calls[1][0]))


@pytest.mark.parametrize("name", list(STRING_CASES))
def test_decode_arguments_never_raises(name: str) -> None:
    raw = STRING_CASES[name]
    arguments, reason = decode_arguments(raw)
    if "surrogate" in name:  # valid JSON: the boundary refuses it (see above)
        assert isinstance(arguments, dict) and reason is None
    else:
        assert arguments == raw and reason, (name, reason)
        assert len(reason) < 500


TEXT_CASES: dict[str, str] = {
    "hermes, 100,000 deep": '<tool_call>{"name": "read_file", "arguments": '
    + deep_json(100_000)
    + "}</tool_call>",
    "hermes, 500 deep": '<tool_call>{"name": "read_file", "arguments": '
    + deep_json(500)
    + "}</tool_call>",
    "hermes, escaped surrogate": '<tool_call>{"name": "read_file", "arguments": '
    '{"path": "a\\udfff"}}</tool_call>',
    "llama3 json, 5,000 digits": '{"name": "read_file", "parameters": {"path": '
    + "7" * 5_000
    + "}}",
    "pythonic, 100,000 deep": "[read_file(path=" + "[" * 100_000 + "]" * 100_000 + ")]",
    "pythonic, 200,000 minus signs": "[read_file(path=" + "-" * 200_000 + "1)]",
    "pythonic, 150 deep": "[read_file(path=" + "[" * 150 + "]" * 150 + ")]",
    "pythonic, 300 KB": "[read_file(path=[" + "1," * 150_000 + "])]",
    "gemma, 100,000 deep": "call:read_file{path:" + "[" * 100_000 + "]" * 100_000 + "}",
    "qwen, deep parameter": "<tool_call><function=read_file><parameter=path>"
    + "[" * 100_000
    + "]" * 100_000
    + "</parameter></function></tool_call>",
}


def text_model(text: str) -> FunctionModel:
    """A model whose first reply is ``text`` with its calls parsed as a compat server's are."""
    served: list[int] = []

    def reply(messages: list[Message], tools: list[ToolSpec]) -> Reply:
        served.append(1)
        if len(served) > 1:
            return FINISH
        prose, calls = calls_from_text(text, tool_names=[t.name for t in tools])
        return Reply(text=prose, tool_calls=calls)

    return FunctionModel(reply)


@pytest.mark.parametrize("name", list(TEXT_CASES))
def test_a_hostile_call_in_text_is_an_error_turn(name: str, workspace: Path) -> None:
    result = gg.Agent(
        model=text_model(TEXT_CASES[name]), workspace=workspace, mode="tool-calling"
    ).run("t")
    # an untyped (XML-like) value that does not parse is text: a 200,000-character path
    check_run(result, "tool_error" if name.startswith("qwen") else "bad_arguments")


@pytest.mark.parametrize("name", list(TEXT_CASES))
@pytest.mark.parametrize("fmt", ["auto", "hermes", "pythonic", "gemma", "json", "qwen"])
def test_the_text_parsers_never_raise(name: str, fmt: Any) -> None:
    parsed = parse_tool_calls(TEXT_CASES[name], format=fmt, tool_names=["read_file"])
    assert parsed.error is None or len(parsed.error) < 2000


def test_a_huge_reply_text_is_not_parsed() -> None:
    parsed = parse_tool_calls("[f(a=1)] " + "x" * 2_000_000, tool_names=["f"])
    assert parsed.error and "characters long" in parsed.error and not parsed.tool_calls


# --- a real OpenAI-compatible server on 127.0.0.1 ---------------------------------------------

FAST = RetryPolicy(max_retries=0, timeout_s=5.0, backoff_s=0.001, max_backoff_s=0.01)


def completion(content: str | None, calls: list[tuple[str, str]] = ()) -> dict[str, Any]:  # type: ignore[assignment]
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": a}}
            for i, (n, a) in enumerate(calls)
        ]
    return {
        "id": "c",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
    }


FINISH_BODY = completion(None, [("finish", '{"summary": "second ok"}')])
HTTP_CASES: dict[str, tuple[dict[str, Any], str, bool]] = {
    # json.dumps writes "\ud800" escapes: the SDK's json.loads makes lone surrogates of them
    "escaped surrogate in arguments": (
        completion("hi", [("read_file", '{"path": "a\\ud800"}')]),
        "bad_arguments",
        False,
    ),
    "100,000-deep arguments": (
        completion(None, [("read_file", deep_json(100_000))]),
        "bad_arguments",
        False,
    ),
    "5,000-digit arguments": (
        completion(None, [("read_file", '{"path": ' + "1" * 5_000 + "}")]),
        "bad_arguments",
        False,
    ),
    "surrogates in the text and name": (
        completion("hi \ud800", [("read_file\udcff", "{}")]),
        "unknown_tool",
        False,
    ),
    "a deep call written in text": (
        completion(
            '<tool_call>{"name": "read_file", "arguments": ' + deep_json(100_000) + "}</tool_call>"
        ),
        "bad_arguments",
        True,
    ),
}


@pytest.mark.parametrize("name", list(HTTP_CASES))
def test_a_hostile_server_reply_is_an_error_turn(
    name: str, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    body, expect, text_tools = HTTP_CASES[name]
    monkeypatch.setenv("OPENAI_COMPAT_API_KEY", "sk-test-0123456789abcdef")
    second = (
        completion(
            '<tool_call>{"name": "finish", "arguments": {"summary": "second ok"}}</tool_call>'
        )
        if text_tools
        else FINISH_BODY
    )
    with serve([Json(body=body), Json(body=second)]) as server:
        model = OpenAICompatModel(
            "m",
            provider="openai-compat",
            base_url=f"{server.url}/v1",
            retry=FAST,
            stream=False,
            text_tools=text_tools,
        )
        result = gg.Agent(model=model, workspace=workspace, mode="tool-calling").run("t")
    check_run(result, expect)
    assert len(server.requests) == 2
    encodable(server.requests[1].body)  # what gg sent back parses as valid Unicode, no lone
    # surrogate either as a character or as a JSON escape (the server's json.loads made
    # any escape a character again)


def test_an_unreadable_server_answer_stops_the_run_with_a_diagnosis(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import _servers

    deep = (
        '{"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": '
        + "[" * 100_000
        + "]" * 100_000
        + "}"
    ).encode()

    def answer(self: Any, action: Any) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(deep)))
        self.end_headers()
        self.wfile.write(deep)

    monkeypatch.setattr(_servers._Handler, "_json", answer)
    with serve([Json(body={})]) as server:
        model = OpenAICompatModel(
            "m", provider="openai-compat", base_url=f"{server.url}/v1", retry=FAST, stream=False
        )
        result = gg.Agent(model=model, workspace=workspace, mode="tool-calling").run("t")
    assert result.status == "stopped" and "not readable" in (result.diagnosis or "")
    assert isinstance(verify(result.stream), Intact)


# --- the operator's side: the task, the stream writer, the recording, gg show -------------------


def test_a_task_with_a_lone_surrogate_runs(workspace: Path) -> None:
    """``gg run $'\\xff'`` hands gg a surrogate-escaped argv; nothing crashes on it."""
    model = ScriptedModel([call("read_file", missing()), FINISH])
    result = gg.Agent(model=model, workspace=workspace, mode="tool-calling").run("fix \udcff")
    check_run(result, "tool_error")
    encodable(plain(model.calls[0][0]))
    started = next(e for e in read_events(result.stream) if isinstance(e, SessionStarted))
    assert started.task == "fix \ufffd"


ODD_EVENTS: dict[str, Callable[[], Any]] = {
    "surrogates": lambda: ToolCalled(run_id="r", name="n\ud800", arguments={"k\udcff": "\ud800"}),
    "1,000 deep": lambda: ToolCalled(run_id="r", name="n", arguments={"a": nested(1_000)}),
    "100,000 deep": lambda: ToolCalled(run_id="r", name="n", arguments={"a": nested(100_000)}),
    "objects": lambda: ToolCalled(run_id="r", name="n", arguments={"a": object(), "b": {1, 2}}),
    "bytes": lambda: ToolCalled(run_id="r", name="n", arguments={"a": b"\xff\xfe"}),
    "huge integer": lambda: ToolCalled(run_id="r", name="n", arguments={"a": 10**5000}),
    "surrogate message": lambda: ErrorTurn(run_id="r", kind="bad_arguments", message="x\udfff"),
}


def test_the_stream_writer_never_fails_on_an_odd_event(tmp_path: Path) -> None:
    seen: list[Any] = []
    path = tmp_path / "run" / "stream.jsonl"
    writer = StreamWriter(path, listeners=[seen.append])
    writer.emit(RunStarted(run_id="r", settings={}, isolation="none", workspace="/w"))
    writer.emit(
        SessionStarted(
            run_id="r", role="standard", mode="m", language="python", arm="all", model="x"
        )
    )
    normal = path.read_bytes().splitlines()[1]
    for build in ODD_EVENTS.values():
        writer.emit(build())
    writer.emit(RunEnded(run_id="r", status="ended", exit_code=0, diagnosis="\ud800"))
    writer.close()
    lines = path.read_bytes().decode("utf-8").splitlines()  # strict UTF-8
    assert len(lines) == 3 + len(ODD_EVENTS) == len(seen)
    assert normal.startswith(
        SessionStarted(
            run_id="r",
            role="standard",
            mode="m",
            language="python",
            arm="all",
            model="x",
            at=json.loads(normal)["at"],
        )
        .model_dump_json()[:-1]
        .encode()
    )  # the normal path: pydantic's
    first = json.loads(lines[2])
    assert first["name"] == "n\ufffd" and first["arguments"] == {"k\ufffd": "\ufffd"}
    assert seen[2].name == "n\ufffd"  # the live view sees what was written
    assert isinstance(verify(path, seal_dir=path.parent), Intact)
    assert [e.type for e in read_events(path)][2:] == ["tool_call"] * (len(ODD_EVENTS) - 1) + [
        "error_turn",
        "run_ended",
    ]


def test_recording_a_hostile_reply_writes_a_file_that_replays(
    workspace: Path, tmp_path: Path
) -> None:
    record = tmp_path / "rec.json"
    model = ScriptedModel([call("read_file", {"path": nested(100_000)}, text="a \ud800"), FINISH])
    result = gg.Agent(model=model, workspace=workspace, mode="tool-calling", record=record).run("t")
    check_run(result, "bad_arguments")
    replay = gg.Agent(model=f"scripted:{record}", workspace=workspace, mode="tool-calling").run("t")
    check_run(replay, "bad_arguments")


def test_gg_run_and_show_take_a_hostile_script(workspace: Path, tmp_path: Path) -> None:
    script = tmp_path / "hostile.json"
    script.write_text(
        json.dumps(
            {
                "replies": [
                    {
                        "text": "first",
                        "tool_calls": [
                            {"name": "read_file", "arguments": '{"path": "a\\ud800"}'},
                            {"name": "list_dir", "arguments": deep_json(50_000)},
                        ],
                    },
                    {"tool_calls": [{"name": "finish", "arguments": {"summary": "second ok"}}]},
                ]
            }
        )
    )
    env = dict(os.environ)
    ran = subprocess.run(
        [
            *GG,
            "run",
            "t",
            "-w",
            str(workspace),
            "--model",
            f"scripted:{script}",
            "--mode",
            "tool-calling",
            "--json",
        ],
        capture_output=True,
        timeout=120,
        env=env,
    )
    assert ran.returncode == 0, ran.stderr
    ran.stderr.decode("utf-8")  # the live view: strict UTF-8
    stream = json.loads(ran.stdout)["stream"]
    shown = subprocess.run(
        [*GG, "show", stream, "-w", str(workspace)], capture_output=True, timeout=120, env=env
    )
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout.decode("utf-8")  # strict: nothing unencodable was printed
    assert "bad_arguments" in out or "not valid Unicode" in out


@pytest.mark.parametrize("provider", ["openai-compat", "anthropic"])
async def test_an_adapter_sends_surrogate_text_as_valid_unicode(
    provider: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Outside the loop too: an adapter never fails to encode a conversation (issue 9 F4)."""
    from gg.models.anthropic import AnthropicModel
    from gg.models.base import AssistantMessage, ToolMessage, UserMessage

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")
    conversation: list[Message] = [
        UserMessage(content="task \udcff"),
        AssistantMessage(
            content="a \ud800",
            tool_calls=(ToolCall(name="read_file", arguments={"path": "p\ud800"}, id="c\udfff"),),
        ),
        ToolMessage(call_id="c\udfff", name="read_file", content="out \udc80"),
    ]
    anthropic_body = {
        "id": "m",
        "type": "message",
        "role": "assistant",
        "model": "c",
        "content": [{"type": "text", "text": "ok"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    body = completion("ok") if provider == "openai-compat" else anthropic_body
    with serve([Json(body=body)]) as server:
        model: Any = (
            OpenAICompatModel(
                "m", provider="openai-compat", base_url=f"{server.url}/v1", retry=FAST, stream=False
            )
            if provider == "openai-compat"
            else AnthropicModel("c", base_url=server.url, retry=FAST, stream=False)
        )
        reply = await model.respond(conversation, [])
    assert reply.text == "ok"
    sent = server.requests[0].body
    encodable(sent)
    assert "\ufffd" in json.dumps(sent, ensure_ascii=False)


@pytest.mark.parametrize("arguments", [[1, 2], 5, None, ["path", "a.txt"]])
def test_arguments_that_are_not_an_object_are_an_error_turn(
    workspace: Path, arguments: object
) -> None:
    bad = gg.Reply(tool_calls=(gg.ToolCall(name="read_file", arguments=arguments),))  # type: ignore[arg-type]
    model = gg.testing.FunctionModel(
        lambda messages, tools: (
            bad
            if sum(m.role == "assistant" for m in messages) == 0
            else gg.testing.call("finish", summary="ok")
        )
    )
    result = gg.Agent(model=model, workspace=workspace).run("t")
    assert result.status == "ended", result.diagnosis
    kinds = [e.kind for e in gg.stream.read_events(result.stream) if e.type == "error_turn"]
    assert kinds == ["bad_arguments"]
