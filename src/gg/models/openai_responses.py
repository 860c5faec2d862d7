"""OpenAI's Responses API (SPEC M4, C3): the ``openai-responses:MODEL`` provider.

The key is ``OPENAI_API_KEY`` and the endpoint ``OPENAI_BASE_URL`` when set, as for
``openai:``; requests go through the official ``openai`` SDK's async client to
``POST {base}/responses``, with ``store: false`` (the provider keeps no conversation:
gg sends the whole of it each turn, as with chat completions).

Conversion from gg's messages:

- system messages become ``instructions`` (joined by blank lines);
- a user message is an input message of role ``user``;
- an assistant turn is an input message of role ``assistant`` (when it has text)
  followed by one ``function_call`` item per call, call ids kept;
- a tool result is a ``function_call_output`` item answering its ``call_id``.

Tools go out as ``{"type": "function", "name", "description", "parameters",
"strict": false}``; ``tool_choice`` is ``"required"`` unless ``[model] tool_choice``
is ``auto`` (SPEC S5 still makes a reply without a call an error turn).
``max_output_tokens`` caps the reply.

Streaming (default on): text deltas (``response.output_text.delta``) reach
``on_delta`` as they arrive; the reply itself is read from the final response that
``response.completed`` (or ``response.incomplete``, a reply cut by the cap) carries,
so a call's arguments are whole. A stream that closes without either is retried as
a dropped connection; ``response.failed`` and ``error`` events are retried as server
faults. Every field is read through :mod:`gg.models.wire`.

Usage: ``input_tokens`` (with ``input_tokens_details.cached_tokens`` as cache reads)
and ``output_tokens`` (with ``output_tokens_details.reasoning_tokens``), priced by
:mod:`gg.models.pricing`; an answer without usage is estimated and marked so.

What it does not promise: reasoning items, built-in tools (web search, files) and
server-side conversation state are not used.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, assert_never

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
from gg.models.wire import items, record

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = ["OpenAIResponsesModel", "ResponseFailed", "responses_input"]

_PROVIDER = "openai-responses"
_KEY_ENV = "OPENAI_API_KEY"
_BASE_URL_ENV = "OPENAI_BASE_URL"
_FINAL_EVENTS = frozenset({"response.completed", "response.incomplete"})
_TEXT_DELTAS = frozenset({"response.output_text.delta", "response.refusal.delta"})


class ResponseFailed(Exception):
    """The server reported, inside a stream, that the response failed (retried)."""


@dataclass(slots=True)
class _Draft:
    """A reply being read: the final response once it arrives."""

    response: Any = None
    """The final ``response`` object (``None`` until ``response.completed``)."""
    streamed: list[str] = field(default_factory=list)
    """Text deltas seen, used only when the final response has no output."""
    events: int = 0


class OpenAIResponsesModel:
    """OpenAI's Responses API as a gg :class:`~gg.models.base.Model` (SPEC M4).

    Attributes:
        name: ``"openai-responses:MODEL"``, as the stream shows it.
        provider: ``"openai-responses"``; names errors.
        model: the model name sent to the API.
    """

    provider = _PROVIDER

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        stream: bool = True,
        on_delta: Callable[[str], None] | None = None,
        prices: Prices | None = None,
        retry: RetryPolicy | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        tool_choice: ToolChoice = "default",
    ) -> None:
        """Build the client; no request is made.

        Args:
            model: the model name, e.g. ``"gpt-5-mini"``.
            base_url: the endpoint; ``None`` for ``OPENAI_BASE_URL`` or the SDK's default.
            stream: read the reply as a stream (progress, stall detection).
            on_delta: called with each piece of reply text as it arrives.
            prices: ``[model.prices]`` overrides of the price table (:mod:`gg.models.pricing`).
            retry: retries, timeout and backoff; defaults to :class:`RetryPolicy`.
            max_tokens: cap on the reply's tokens (``max_output_tokens``), or ``None``.
            temperature: sampling temperature, or ``None`` for the API's.
            tool_choice: ``"auto"`` leaves the model free; else a request with tools
                says ``"required"`` (SPEC S5).

        Raises:
            gg.errors.ModelUnavailable: ``OPENAI_API_KEY`` is not set (SPEC C3).
        """
        import openai

        key = env_key(_KEY_ENV, provider=_PROVIDER, required=True)
        assert key is not None
        self.model = model
        self.name = f"{_PROVIDER}:{model}"
        self._secrets, self._retry = (key,), retry or RetryPolicy()
        self._stream, self._on_delta, self._prices = stream, on_delta, prices
        self._max_tokens, self._temperature = max_tokens, temperature
        self._require_call = tool_choice != "auto"
        base_url = base_url or env_key(_BASE_URL_ENV, provider=_PROVIDER, required=False)
        self._client: AsyncOpenAI = openai.AsyncOpenAI(
            api_key=key, base_url=base_url, timeout=self._retry.timeout_s, max_retries=0
        )

    async def respond(self, messages: list[Message], tools: list[ToolSpec]) -> Reply:
        """Send the conversation and offered tools; return the reply (SPEC M4).

        Args:
            messages: the conversation, oldest first (not mutated).
            tools: the tools offered this turn.

        Returns:
            The reply: output text joined, ``function_call`` items as calls in
            order (call ids kept), usage with cost.

        Raises:
            gg.errors.ModelUnavailable: the API refused the key or the model.
            gg.errors.ModelError: a non-retryable error or retries exhausted.
        """
        request = self._request(messages, tools)
        draft = await call_with_retries(
            lambda: self._attempt(request),
            policy=self._retry,
            describe=self._describe,
            provider=_PROVIDER,
            secrets=self._secrets,
        )
        return self._reply(draft, request)

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        await self._client.close()

    def _describe(self, exc: Exception) -> Failure | None:
        import openai

        if isinstance(exc, ResponseFailed):
            return Failure(message=f"the response failed: {exc}", retryable=True)
        failure = describe_sdk_error(exc, openai, timeout_s=self._retry.timeout_s)
        if failure is not None and failure.unavailable:
            hint = f" (check {_KEY_ENV} and the model name {self.model!r})"
            return Failure(message=failure.message + hint, retryable=False, unavailable=True)
        return failure

    def _request(self, messages: list[Message], tools: list[ToolSpec]) -> dict[str, Any]:
        """The keyword arguments of ``responses.create``, minus ``stream``."""
        messages = list(messages)
        clean_messages(messages)  # no lone surrogate reaches the SDK's UTF-8 encoding (F4)
        instructions, converted = responses_input(messages)
        request: dict[str, Any] = {"model": self.model, "input": converted, "store": False}
        if instructions:
            request["instructions"] = instructions
        if tools:
            request["tools"] = [
                {"type": "function", **spec.as_dict(), "strict": False} for spec in tools
            ]
            if self._require_call:
                request["tool_choice"] = "required"
        if self._max_tokens is not None:
            request["max_output_tokens"] = self._max_tokens
        if self._temperature is not None:
            request["temperature"] = self._temperature
        return request

    async def _attempt(self, request: dict[str, Any]) -> _Draft:
        """One whole request: open it, read all of it."""
        if not self._stream:
            response = await self._client.responses.create(**request)
            return _Draft(response=record(response, "the response"))
        draft = _Draft()
        stream = await self._client.responses.create(**request, stream=True)
        async with stream:
            async for event in stream:
                self._fold_event(draft, event)
        if draft.response is None:
            raise StreamIncomplete("no response.completed before the stream closed")
        return draft

    def _fold_event(self, draft: _Draft, event: Any) -> None:
        """Add one stream event to ``draft``; report new text to ``on_delta``.

        Raises:
            wire.Malformed: the event is not shaped like a Responses stream event.
            ResponseFailed: a ``response.failed`` or ``error`` event.
        """
        draft.events += 1
        where = f"stream event {draft.events}"
        kind = wire.text(record(event, where), "type", where)
        if kind in _TEXT_DELTAS:
            piece = wire.text(event, "delta", where)
            draft.streamed.append(piece)
            if self._on_delta is not None and piece:
                self._on_delta(piece)
        elif kind in _FINAL_EVENTS:
            draft.response = record(wire.field(event, "response"), f"{where}'s response")
        elif kind == "response.failed":
            response = wire.field(event, "response")
            raise ResponseFailed(_error_text(wire.field(response, "error"), kind))
        elif kind == "error":
            raise ResponseFailed(_error_text(event, kind))

    def _reply(self, draft: _Draft, request: dict[str, Any]) -> Reply:
        """The final response's output and usage as a :class:`Reply`."""
        texts, calls = _output(draft.response)
        text = "".join(texts) if texts else "".join(draft.streamed)
        usage = _usage(wire.field(draft.response, "usage"))
        if usage is None:
            raw = [[c.id, c.name, str(c.arguments)] for c in calls]
            tokens_in, tokens_out = estimate_usage(_sent(request), text, raw)
            usage = Usage(input_tokens=tokens_in, output_tokens=tokens_out, estimated=True)
        cost = price_of(usage, model=self.model, provider=_PROVIDER, prices=self._prices)
        return Reply(text=text, tool_calls=calls, usage=replace(usage, cost=cost))


def _sent(request: dict[str, Any]) -> dict[str, Any]:
    """The request in the keys :func:`estimate_usage` counts (``messages``, ``system``...)."""
    return {
        "system": request.get("instructions", ""),
        "messages": request["input"],
        "tools": request.get("tools", []),
    }


def _error_text(error: object, kind: str) -> str:
    """A failure's ``code: message`` as the server gave it, else the event's type."""
    if error is None or isinstance(error, str | bytes | int | float | list | tuple):
        return f"{kind} with no error object"
    code = wire.field(error, "code")
    message = wire.field(error, "message")
    parts = [str(p)[:300] for p in (code, message) if isinstance(p, str) and p]
    return ": ".join(parts) or kind


def _output(response: object) -> tuple[list[str], tuple[ToolCall, ...]]:
    """The texts and calls of a response's ``output`` items, in order.

    Raises:
        wire.Malformed: an item or a content part of the wrong shape.
    """
    texts: list[str] = []
    calls: list[ToolCall] = []
    where = "the response"
    for index, item in enumerate(items(response, "output", where)):
        what = f"{where}'s output[{index}]"
        kind = wire.text(record(item, what), "type", what)
        if kind == "message":
            for position, part in enumerate(items(item, "content", what)):
                part_what = f"{what}'s content[{position}]"
                record(part, part_what)
                texts.append(
                    wire.text(part, "text", part_what) + wire.text(part, "refusal", part_what)
                )
        elif kind == "function_call":
            arguments, error = decode_arguments(wire.text(item, "arguments", what))
            call_id = wire.text(item, "call_id", what) or wire.text(item, "id", what)
            calls.append(
                ToolCall(
                    name=wire.text(item, "name", what),
                    arguments=arguments,
                    id=call_id or f"call_{index}",
                    parse_error=error,
                )
            )
    return texts, tuple(calls)


def _usage(usage: object) -> Usage | None:
    """A response's ``usage`` as gg's :class:`Usage`, or ``None`` when it has none.

    Raises:
        wire.Malformed: a count that is not one.
    """
    if usage is None:
        return None
    what = "the response's usage"
    record(usage, what)
    tokens_in = wire.count(usage, "input_tokens", what)
    tokens_out = wire.count(usage, "output_tokens", what)
    if tokens_in is None and tokens_out is None:
        return None
    tokens_in, tokens_out = tokens_in or 0, tokens_out or 0
    cached = reasoning = 0
    details = wire.field(usage, "input_tokens_details")
    if details is not None:
        cached = wire.count(record(details, what), "cached_tokens", what) or 0
    details = wire.field(usage, "output_tokens_details")
    if details is not None:
        reasoning = wire.count(record(details, what), "reasoning_tokens", what) or 0
    return Usage(
        input_tokens=tokens_in,
        output_tokens=tokens_out,
        cache_read_tokens=min(cached, tokens_in),
        reasoning_tokens=min(reasoning, tokens_out),
    )


def _arguments_json(call: ToolCall) -> str:
    """A call's arguments as the JSON text the API carries (raw text kept as is)."""
    if isinstance(call.arguments, str):
        return call.arguments
    return json.dumps(call.arguments, ensure_ascii=False)


def responses_input(messages: list[Message]) -> tuple[str, list[dict[str, Any]]]:
    """Convert gg messages to the Responses API's ``instructions`` and ``input`` items.

    Args:
        messages: the conversation, oldest first.

    Returns:
        ``(instructions, [item, ...])``: input messages ``{"role", "content"}``,
        ``{"type": "function_call", "call_id", "name", "arguments"}`` items after the
        assistant text they came with, and ``{"type": "function_call_output",
        "call_id", "output"}`` items; empty text is never sent.
    """
    system: list[str] = []
    out: list[dict[str, Any]] = []
    for message in messages:
        match message:
            case SystemMessage():
                if message.content.strip():
                    system.append(message.content)
            case UserMessage():
                out.append({"role": "user", "content": message.content or "(empty)"})
            case AssistantMessage():
                if message.content.strip():
                    out.append({"role": "assistant", "content": message.content})
                out.extend(
                    {
                        "type": "function_call",
                        "call_id": call.id,
                        "name": call.name,
                        "arguments": _arguments_json(call),
                    }
                    for call in message.tool_calls
                )
            case ToolMessage():
                out.append(
                    {
                        "type": "function_call_output",
                        "call_id": message.call_id,
                        "output": message.content or "(no output)",
                    }
                )
            case _:
                assert_never(message)
    return "\n\n".join(system), out
