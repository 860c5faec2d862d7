"""OpenAI and OpenAI-compatible chat-completions endpoints (SPEC M4, M5, C3).

One adapter for ``openai:MODEL`` (key ``OPENAI_API_KEY``, endpoint
``OPENAI_BASE_URL`` if set) and ``openai-compat:MODEL@BASE_URL`` (vLLM,
llama.cpp's server, Ollama...; ``OPENAI_COMPAT_API_KEY`` is sent when set,
else a placeholder, since such servers mostly want none; ``OPENAI_API_KEY`` is
never sent to them, so a real OpenAI key cannot leak to a third-party server). It talks through the
official ``openai`` SDK's async client to ``POST {base}/chat/completions``.

Tool calls come one of three ways, set by ``text_tools`` (default: ``"auto"``
for ``openai-compat``, ``False`` for ``openai``; ``[model] text_tool_calls``):

- ``False``: native. Tools go out as ``tools``; calls come back as
  ``tool_calls``.
- ``True``: for servers that do not handle tools at all. Tools are described
  in the system prompt, the conversation is sent as plain text (tool results
  become user messages) and calls are parsed out of the reply text with
  :func:`gg.models.parsing.parse_tool_calls`.
- ``"auto"``: native, and when a reply has no native call its text is parsed
  too (for servers that accept ``tools`` but do not parse the model's calls).

A reply whose text looks like a call that does not parse becomes one
:class:`~gg.models.base.ToolCall` with the raw text as arguments and
``parse_error`` set, so the session makes a ``bad_arguments`` error turn
(SPEC S5) instead of a ``no_tool_call`` one.

Streaming (default on) reads the reply as it arrives and hands each text
piece to ``on_delta``; usage is asked for with ``stream_options``. Retries,
timeouts and error translation: :mod:`gg.models.retry`.

Every field of the server's answer is read through :mod:`gg.models.wire`: a
chunk of the wrong shape (not JSON, no object, a ``null`` delta, a count that
is not one) is retried as a transient fault, and when retries run out the
session stops with a diagnosis naming the provider (issue 12 item 2).

Usage: asked for with ``stream_options: {"include_usage": true}``; when the
server sends none anyway (llama.cpp's server), it is estimated at one token
per four characters of the request and of the reply
(:func:`gg.models.retry.estimate_usage`) and marked ``estimated`` on the
stream, so ``max_tokens`` and ``max_cost`` still trip.

OpenAI's own fields: ``openai:`` caps a reply with ``max_completion_tokens`` (what the
SDK documents; o-series models refuse ``max_tokens``), ``openai-compat:`` with
``max_tokens`` (what those servers read). ``tool_choice`` (``[model] tool_choice``):
``openai:`` sends ``"required"`` with native tools unless told ``auto``;
``openai-compat:`` sends it only when told ``required`` (a server may refuse the field).
Cached prompt tokens (``prompt_tokens_details.cached_tokens``) and reasoning tokens
(``completion_tokens_details.reasoning_tokens``) are counted in the
:class:`~gg.models.base.Usage` and priced (:mod:`gg.models.pricing`).

What it does not promise: that a compatible server honours ``tools``, ``tool_choice``
or ``stream_options``, or that an estimate matches the model's tokenizer.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, assert_never

from gg import bounded
from gg.models import wire
from gg.models.base import (
    AssistantMessage,
    Message,
    Reply,
    SystemMessage,
    ToolCall,
    ToolChoice,
    ToolMessage,
    ToolSpec,
    Usage,
    UserMessage,
)
from gg.models.boundary import clean_messages
from gg.models.parsing import TextFormat, parse_tool_calls
from gg.models.pricing import price_of
from gg.models.retry import (
    Failure,
    Prices,
    RetryPolicy,
    StreamIncomplete,
    call_with_retries,
    decode_arguments,
    describe_sdk_error,
    env_key,
    estimate_usage,
)
from gg.models.wire import Malformed, items, record

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = [
    "OPENAI_BASE_URL_ENV",
    "OPENAI_KEY_ENV",
    "OpenAICompatModel",
    "TextTools",
    "calls_from_text",
    "fold_system",
    "native_messages",
    "text_messages",
    "tool_prompt",
]

OPENAI_KEY_ENV = "OPENAI_API_KEY"
"""Environment variable holding the OpenAI API key (SPEC §10 ``--model``)."""
COMPAT_KEY_ENV = "OPENAI_COMPAT_API_KEY"
"""Environment variable holding the key for ``openai-compat:`` endpoints, if they need one."""
OPENAI_BASE_URL_ENV = "OPENAI_BASE_URL"
"""Environment variable that overrides the ``openai:`` endpoint."""
_PLACEHOLDER_KEY = "not-needed"
"""Sent to an ``openai-compat:`` server when no key is set (the SDK wants one)."""

TextTools: TypeAlias = bool | Literal["auto"]
"""How tool calls travel: native (``False``), in text (``True``), or both (``"auto"``)."""

Provider: TypeAlias = Literal["openai", "openai-compat"]


@dataclass(slots=True)
class _Draft:
    """A reply being assembled from a stream or a completion, before decoding."""

    text: str = ""
    calls: dict[int, list[str]] = field(default_factory=dict)
    """Native calls by index: ``[id, name, arguments-json-so-far]``."""
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    usage_given: bool = False
    """Whether the server sent usage (else it is estimated, :func:`estimate_usage`)."""
    finished: bool = False
    """Whether a choice carried a ``finish_reason`` (the reply is whole)."""
    chunks: int = 0
    """Stream chunks read so far (named in a malformed chunk's message)."""

    def add_call(self, index: int, call_id: str | None, name: str | None, args: str | None) -> None:
        """Fold one (possibly partial) native call into the draft."""
        slot = self.calls.setdefault(index, ["", "", ""])
        if call_id and not slot[0]:
            slot[0] = call_id
        if name and name != slot[1]:
            slot[1] += name
        if args:
            slot[2] += args


class OpenAICompatModel:
    """A chat-completions endpoint as a gg :class:`~gg.models.base.Model` (SPEC M4).

    Attributes:
        name: the spec as the stream shows it, e.g. ``"openai:gpt-4o-mini"``.
        provider: ``"openai"`` or ``"openai-compat"``; names errors.
        model: the model name sent to the server.
        base_url: the endpoint, or ``None`` for the SDK's default.
    """

    def __init__(
        self,
        model: str,
        *,
        provider: Provider = "openai",
        base_url: str | None = None,
        stream: bool = True,
        stream_usage: bool = True,
        on_delta: Callable[[str], None] | None = None,
        text_tools: TextTools | None = None,
        tool_format: TextFormat = "auto",
        prices: Prices | None = None,
        retry: RetryPolicy | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        fold_system: bool = False,
        tool_choice: ToolChoice = "default",
    ) -> None:
        """Build the client; no request is made.

        Args:
            model: the model name the server knows.
            provider: ``"openai"`` needs ``OPENAI_API_KEY`` and reads
                ``OPENAI_BASE_URL`` when ``base_url`` is not given;
                ``"openai-compat"`` needs ``base_url`` and no key.
            base_url: the endpoint, e.g. ``"http://127.0.0.1:8080/v1"``.
            stream: read the reply as a stream (progress, stall detection).
            stream_usage: ask a stream for usage (``stream_options``).
            on_delta: called with each piece of reply text as it arrives.
            text_tools: see the module docstring; ``None`` for the provider's
                default (``"auto"`` for ``openai-compat``, ``False`` for ``openai``).
            tool_format: the text call format for the parser (``"auto"``,
                ``"hermes"``...), when calls are parsed from text.
            prices: ``[model.prices]`` overrides of the price table (:mod:`gg.models.pricing`).
            retry: retries, timeout and backoff; defaults to :class:`RetryPolicy`.
            max_tokens: cap on the reply's tokens, or ``None`` for the server's.
            temperature: sampling temperature, or ``None`` for the server's.
            fold_system: put the system prompt at the head of the first user message
                (for chat templates without a system role: Gemma's drops it).
            tool_choice: ``"default"`` is ``"required"`` for ``openai``, unsent to compat.

        Raises:
            gg.errors.ModelUnavailable: ``provider="openai"`` and
                ``OPENAI_API_KEY`` is not set (SPEC C3).
            ValueError: ``provider="openai-compat"`` without ``base_url``.
        """
        import openai

        self.model, self.provider = model, provider
        self.name, self.base_url, key = _endpoint(provider, model, base_url)
        self._secrets, self._retry = ((key,) if key else ()), retry or RetryPolicy()
        self._stream, self._stream_usage, self._on_delta = stream, stream_usage, on_delta
        auto: TextTools = "auto" if provider == "openai-compat" else False
        self._text_tools: TextTools = auto if text_tools is None else text_tools
        self._tool_format, self._fold_system, self._choice = tool_format, fold_system, tool_choice
        self._prices, self._max_tokens, self._temperature = prices, max_tokens, temperature
        self._client: AsyncOpenAI = openai.AsyncOpenAI(
            api_key=key or _PLACEHOLDER_KEY, base_url=self.base_url,
            timeout=self._retry.timeout_s, max_retries=0,
        )  # fmt: skip

    async def respond(self, messages: list[Message], tools: list[ToolSpec]) -> Reply:
        """Send the conversation and offered tools; return the reply (SPEC M4).

        Args:
            messages: the conversation, oldest first (not mutated).
            tools: the tools offered this turn.

        Returns:
            The reply: text, tool calls in order (ids kept from the server, made
            up when it gave none), usage with cost from the price table.

        Raises:
            gg.errors.ModelUnavailable: the server refused the key or the model.
            gg.errors.ModelError: a non-retryable error or retries exhausted.
        """
        request = self._request(messages, tools)
        draft = await call_with_retries(
            lambda: self._attempt(request),
            policy=self._retry,
            describe=self._describe,
            provider=self.provider,
            secrets=self._secrets,
        )
        return self._reply(draft, tools, request)

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        await self._client.close()

    def _describe(self, exc: Exception) -> Failure | None:
        import openai

        failure = describe_sdk_error(exc, openai, timeout_s=self._retry.timeout_s)
        if failure is not None and failure.unavailable and self.provider == "openai":
            hint = f" (check {OPENAI_KEY_ENV} and the model name {self.model!r})"
            return Failure(message=failure.message + hint, retryable=False, unavailable=True)
        return failure

    def _request(self, messages: list[Message], tools: list[ToolSpec]) -> dict[str, Any]:
        """The keyword arguments of ``chat.completions.create``, minus ``stream``."""
        messages = list(messages)
        clean_messages(messages)  # no lone surrogate reaches the SDK's UTF-8 encoding (F4)
        request: dict[str, Any] = {"model": self.model}
        if self._text_tools is True:
            request["messages"] = text_messages(messages, tools)
        else:
            request["messages"] = native_messages(messages)
            if tools:
                request["tools"] = [
                    {"type": "function", "function": spec.as_dict()} for spec in tools
                ]
                if self._choice == "required" or (
                    self._choice == "default" and self.provider == "openai"
                ):
                    request["tool_choice"] = "required"
        if self._fold_system:
            request["messages"] = fold_system(request["messages"])
        if self._max_tokens is not None:
            cap = "max_completion_tokens" if self.provider == "openai" else "max_tokens"
            request[cap] = self._max_tokens
        if self._temperature is not None:
            request["temperature"] = self._temperature
        return request

    async def _attempt(self, request: dict[str, Any]) -> _Draft:
        """One whole request: open it, read all of it."""
        if not self._stream:
            completion = await self._client.chat.completions.create(**request)
            return _draft_from_completion(completion)
        extra: dict[str, Any] = {}
        if self._stream_usage:
            extra["stream_options"] = {"include_usage": True}
        draft = _Draft()
        stream = await self._client.chat.completions.create(**request, stream=True, **extra)
        async with stream:
            async for chunk in stream:
                self._fold_chunk(draft, chunk)
        if not draft.finished:
            raise StreamIncomplete("no finish_reason before the stream closed")
        return draft

    def _fold_chunk(self, draft: _Draft, chunk: Any) -> None:
        """Add one stream chunk to ``draft``; report new text to ``on_delta``.

        Raises:
            Malformed: the chunk is not shaped like a ``chat.completion.chunk``.
        """
        draft.chunks += 1
        where = f"stream chunk {draft.chunks}"
        record(chunk, where)
        _take_usage(draft, wire.field(chunk, "usage"), where)
        for choice in items(chunk, "choices", where)[:1]:
            record(choice, f"{where}'s choices[0]")
            draft.finished = draft.finished or wire.field(choice, "finish_reason") is not None
            delta = wire.field(choice, "delta")
            if delta is None:
                continue
            what = f"{where}'s delta"
            record(delta, what)
            piece = wire.text(delta, "content", what) + wire.text(delta, "refusal", what)
            if piece:
                draft.text += piece
                if self._on_delta is not None:
                    self._on_delta(piece)
            for position, call in enumerate(items(delta, "tool_calls", what)):
                _fold_call(draft, call, position, f"{what}'s tool_calls[{position}]")

    def _reply(self, draft: _Draft, tools: list[ToolSpec], request: dict[str, Any]) -> Reply:
        """Decode the draft's calls (or parse them from text) into a Reply."""
        calls = tuple(
            _native_call(call_id, name, args) for call_id, name, args in draft.calls.values()
        )
        text = draft.text
        if not calls and self._text_tools is not False and tools:
            text, calls = calls_from_text(
                text, tool_names=[t.name for t in tools], tool_format=self._tool_format
            )
        if draft.usage_given:
            usage = Usage(
                input_tokens=draft.input_tokens,
                output_tokens=draft.output_tokens,
                cache_read_tokens=min(draft.cached_tokens, draft.input_tokens),
                reasoning_tokens=min(draft.reasoning_tokens, draft.output_tokens),
            )
        else:  # llama.cpp's server streams none: estimate, marked so
            tokens_in, tokens_out = estimate_usage(request, draft.text, draft.calls.values())
            usage = Usage(input_tokens=tokens_in, output_tokens=tokens_out, estimated=True)
        cost = price_of(usage, model=self.model, provider=self.provider, prices=self._prices)
        usage = replace(usage, cost=cost)
        return Reply(text=text, tool_calls=calls, usage=usage)


def _endpoint(
    provider: Provider, model: str, base_url: str | None
) -> tuple[str, str | None, str | None]:
    """``(name, base_url, key)`` of a provider: the key from its variable (SPEC C3).

    Raises:
        gg.errors.ModelUnavailable: ``openai`` without ``OPENAI_API_KEY``.
        ValueError: ``openai-compat`` without ``base_url``.
    """
    key = env_key(
        OPENAI_KEY_ENV if provider == "openai" else COMPAT_KEY_ENV,
        provider=provider,
        required=provider == "openai",
    )
    if provider == "openai":
        base_url = base_url or env_key(OPENAI_BASE_URL_ENV, provider=provider, required=False)
        return f"openai:{model}", base_url, key
    if not base_url:
        raise ValueError("openai-compat needs a base_url")
    return f"openai-compat:{model}@{base_url}", base_url, key


def _take_usage(draft: _Draft, usage: object, where: str) -> None:
    """Fold a ``usage`` object into the draft (absent: nothing; malformed: Malformed)."""
    if usage is None:
        return
    what = f"{where}'s usage"
    record(usage, what)
    prompt = wire.count(usage, "prompt_tokens", what)
    completion = wire.count(usage, "completion_tokens", what)
    if prompt is not None or completion is not None:
        draft.input_tokens, draft.output_tokens = prompt or 0, completion or 0
        draft.usage_given = True
    details = wire.field(usage, "prompt_tokens_details")
    if details is not None:
        record(details, f"{what}'s prompt_tokens_details")
        draft.cached_tokens = wire.count(details, "cached_tokens", what) or 0
    details = wire.field(usage, "completion_tokens_details")
    if details is not None:
        record(details, f"{what}'s completion_tokens_details")
        draft.reasoning_tokens = wire.count(details, "reasoning_tokens", what) or 0


def _fold_call(draft: _Draft, call: object, position: int, what: str) -> None:
    """Fold one (possibly partial) native call of a delta or a message into the draft."""
    record(call, what)
    index = wire.field(call, "index")
    if index is None:
        index = position
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < 1000:
        raise Malformed(f"{what}'s 'index' is {index!r:.40}, not a small whole number")
    function = wire.field(call, "function")
    if function is None:  # a "custom" (non-function) tool call: not gg's
        return
    record(function, f"{what}'s function")
    draft.add_call(
        index,
        wire.text(call, "id", what),
        wire.text(function, "name", f"{what}'s function"),
        _arguments_text(wire.field(function, "arguments")),
    )


def _arguments_text(value: object) -> str:
    """A call's arguments as JSON text.

    As sent when a string; an object or any other JSON value (some servers send one)
    written as JSON, so the session decides (an object is used, anything else is a
    ``bad_arguments`` error turn, SPEC S5).
    """
    if value is None or isinstance(value, str):
        return value or ""
    return json.dumps(bounded.jsonable(value, max_nodes=10_000), ensure_ascii=False)


def _draft_from_completion(completion: Any) -> _Draft:
    """A draft from a non-streamed ``ChatCompletion``.

    Raises:
        Malformed: the answer is not shaped like a ``chat.completion``.
    """
    draft = _Draft(finished=True)
    where = "the completion"
    record(completion, where)
    _take_usage(draft, wire.field(completion, "usage"), where)
    choices = items(completion, "choices", where)
    if not choices:
        return draft
    message = record(wire.field(record(choices[0], f"{where}'s choices[0]"), "message"), where)
    what = f"{where}'s message"
    draft.text = wire.text(message, "content", what) + wire.text(message, "refusal", what)
    for position, call in enumerate(items(message, "tool_calls", what)):
        _fold_call(draft, call, position, f"{what}'s tool_calls[{position}]")
    return draft


def _new_id() -> str:
    return f"call_{uuid.uuid4().hex[:16]}"


def _native_call(call_id: str, name: str, raw: str) -> ToolCall:
    arguments, error = decode_arguments(raw)
    return ToolCall(name=name, arguments=arguments, id=call_id or _new_id(), parse_error=error)


def calls_from_text(
    text: str, *, tool_names: Sequence[str], tool_format: TextFormat = "auto"
) -> tuple[str, tuple[ToolCall, ...]]:
    """Parse tool calls written in reply text (SPEC M5).

    Args:
        text: the reply text.
        tool_names: the offered tools' names (helps the parser).
        tool_format: the parser's format (``"auto"`` tries them all).

    Returns:
        ``(text without the calls, calls)``, each call with a fresh id unique
        across the run (the parser's ``call_0``, ``call_1``... repeat every
        turn). When the text holds a call that does not parse, one call whose
        arguments are the whole raw text and whose ``parse_error`` says why;
        its name is the first offered tool named in the text, else ``""``.
    """
    parsed = parse_tool_calls(text, format=tool_format, tool_names=tool_names)
    if parsed.error is not None:
        guess = next((name for name in tool_names if name in text), "")
        bad = ToolCall(name=guess, arguments=text, id=_new_id(), parse_error=parsed.error)
        return parsed.content, (bad,)
    calls = tuple(
        ToolCall(
            name=call.name, arguments=call.arguments, id=_new_id(), parse_error=call.parse_error
        )
        for call in parsed.tool_calls
    )
    return parsed.content, calls


def _arguments_json(call: ToolCall) -> str:
    """A call's arguments as the JSON text the API carries (raw text kept as is)."""
    if isinstance(call.arguments, str):
        return call.arguments
    return json.dumps(call.arguments, ensure_ascii=False)


def native_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """Convert gg messages to chat-completions messages, tool call ids kept.

    Args:
        messages: the conversation, oldest first.

    Returns:
        ``[{"role": ..., "content": ...}, ...]``; an assistant turn with calls
        carries ``tool_calls`` and a string ``content`` (``""`` when it has no
        text: never ``null``, which llama.cpp's server answers with HTTP 500);
        a tool result carries ``tool_call_id``.
    """
    out: list[dict[str, Any]] = []
    for message in messages:
        match message:
            case SystemMessage() | UserMessage():
                out.append({"role": message.role, "content": message.content})
            case AssistantMessage():
                item: dict[str, Any] = {"role": "assistant", "content": message.content}
                if message.tool_calls:
                    item["tool_calls"] = [
                        {
                            "id": call.id,
                            "type": "function",
                            "function": {"name": call.name, "arguments": _arguments_json(call)},
                        }
                        for call in message.tool_calls
                    ]
                out.append(item)
            case ToolMessage():
                out.append(
                    {"role": "tool", "tool_call_id": message.call_id, "content": message.content}
                )
            case _:
                assert_never(message)
    return out


def fold_system(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chat messages with the system prompts moved into the first user message.

    Args:
        items: chat-completions messages.

    Returns:
        The messages without ``system`` ones; their text (blank-line joined)
        heads the first user message, or a new user message at the front.
    """
    system = [str(item["content"]) for item in items if item["role"] == "system"]
    rest = [dict(item) for item in items if item["role"] != "system"]
    if not system:
        return rest
    head = "\n\n".join(system)
    for item in rest:
        if item["role"] == "user":
            item["content"] = f"{head}\n\n{item['content']}"
            return rest
    return [{"role": "user", "content": head}, *rest]


_PLACEHOLDERS: dict[str, Any] = {
    "string": "...",
    "integer": 0,
    "number": 0,
    "boolean": False,
    "array": [],
    "object": {},
}


def _example_call(tool: ToolSpec) -> str:
    """A valid ``<tool_call>`` for ``tool``, its required parameters given placeholders."""
    properties = tool.parameters.get("properties") or {}
    example: dict[str, Any] = {}
    for name in tool.parameters.get("required") or []:
        kind = (properties.get(name) or {}).get("type", "string")
        example[name] = _PLACEHOLDERS.get(kind if isinstance(kind, str) else "string", "...")
    call = json.dumps({"name": tool.name, "arguments": example}, ensure_ascii=False)
    return f"<tool_call>{call}</tool_call>"


def tool_prompt(tools: list[ToolSpec]) -> str:
    """The system-prompt section that offers tools in text (``text_tools=True``).

    Args:
        tools: the offered tools (at least one).

    Returns:
        Instructions naming the ``<tool_call>`` format with a valid example
        (the first tool, placeholders for its required parameters), then one
        JSON line per tool (``{"name", "description", "parameters"}``).
    """
    lines = [
        "You can call these tools. To call one, reply with a <tool_call> tag holding a JSON "
        "object with the tool's name and its arguments, for example:",
        _example_call(tools[0]),
        "You may call several tools, one <tool_call> each. The tools:",
    ]
    lines += [json.dumps(spec.as_dict(), ensure_ascii=False) for spec in tools]
    return "\n".join(lines)


def text_messages(messages: list[Message], tools: list[ToolSpec]) -> list[dict[str, str]]:
    """Convert gg messages to plain-text chat messages, for servers without tools.

    Tools are described at the end of the system prompt; an assistant turn's
    calls are written back in ``<tool_call>`` form; a tool result becomes a
    user message in ``<tool_response>`` tags; consecutive messages of one
    role are merged (some chat templates require strict alternation).

    Args:
        messages: the conversation, oldest first.
        tools: the tools offered this turn.

    Returns:
        ``[{"role": "system"|"user"|"assistant", "content": str}, ...]``.
    """
    out: list[dict[str, str]] = []
    offer = tool_prompt(tools) if tools else ""
    if offer and not any(isinstance(m, SystemMessage) for m in messages):
        out.append({"role": "system", "content": offer})
    for message in messages:
        match message:
            case SystemMessage():
                role, content = "system", "\n\n".join(filter(None, [message.content, offer]))
                offer = ""
            case UserMessage():
                role, content = "user", message.content
            case AssistantMessage():
                written = [
                    json.dumps({"name": c.name, "arguments": c.arguments}, ensure_ascii=False)
                    for c in message.tool_calls
                ]
                parts = [message.content] if message.content else []
                role = "assistant"
                content = "\n".join(parts + [f"<tool_call>{w}</tool_call>" for w in written])
            case ToolMessage():
                role = "user"
                content = (
                    f'<tool_response name="{message.name}">\n{message.content}\n</tool_response>'
                )
            case _:
                assert_never(message)
        if out and out[-1]["role"] == role:
            out[-1]["content"] += "\n\n" + content
        else:
            out.append({"role": role, "content": content})
    return out
