"""Anthropic's Messages API (SPEC M4, C3).

``anthropic:MODEL`` with the key in ``ANTHROPIC_API_KEY``, through the
official ``anthropic`` SDK's async client (``POST {base}/v1/messages``).

Conversion from gg's messages:

- system messages go in the separate ``system`` field (joined by blank lines);
- an assistant turn is a ``text`` block plus one ``tool_use`` block per call,
  ids kept;
- a tool result is a ``tool_result`` block in a user message, answering its
  ``tool_use_id``;
- consecutive messages of one role are merged into one message (the API
  wants user and assistant to alternate), with ``tool_result`` blocks first
  in a user message, as the API requires; empty text is never sent.

Streaming (default on) reads the raw event stream and assembles the reply
itself, so text reaches ``on_delta`` as it arrives and a call whose input
JSON is cut off or malformed becomes a call with ``parse_error`` rather than
an exception. Every field of an event is read through :mod:`gg.models.wire`: an
event of the wrong shape is retried as a transient fault (issue 12 item 2).
Prompt caching (default on, ``[model] prompt_cache``): the request carries the
top-level ``cache_control: {"type": "ephemeral"}``, so the API caches the prefix up
to the last block and the next turn (which resends it) reads it back at the cache
rate. Tool choice (``[model] tool_choice``): unless ``auto``, a request that offers
tools says ``tool_choice: {"type": "any"}`` (SPEC S5: the reply must call a tool).

Usage: input tokens include cache writes and reads, which are also counted apart
(``cache_write_tokens``, ``cache_read_tokens``) and priced at their own rates
(:mod:`gg.models.pricing`); an answer without usage is estimated
(:func:`gg.models.retry.estimate_usage`) and marked ``estimated``. Retries,
timeouts and error translation: :mod:`gg.models.retry`.

What it does not promise: thinking blocks and server tools are dropped; the API
does not count thinking tokens apart, so ``reasoning_tokens`` stays 0.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, assert_never

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
    from anthropic import AsyncAnthropic

__all__ = ["ANTHROPIC_KEY_ENV", "AnthropicModel", "anthropic_messages"]

ANTHROPIC_KEY_ENV = "ANTHROPIC_API_KEY"
"""Environment variable holding the Anthropic API key (SPEC §10 ``--model``)."""
_PROVIDER = "anthropic"
_BAD_ID_CHARS = re.compile(r"[^A-Za-z0-9_-]")


@dataclass(slots=True)
class _Block:
    """One content block being assembled from a stream."""

    kind: str
    text: str = ""
    call_id: str = ""
    name: str = ""
    input: Any = None
    """The block's ``input`` as ``content_block_start`` gave it."""
    json: str = ""
    """Concatenated ``input_json_delta`` pieces."""


@dataclass(slots=True)
class _Draft:
    """A reply being assembled, before decoding."""

    blocks: dict[int, _Block] = field(default_factory=dict)
    input_tokens: int = 0
    """Uncached input tokens (the API's ``input_tokens``)."""
    cache_write_tokens: int = 0
    cache_read_tokens: int = 0
    output_tokens: int = 0
    finished: bool = False
    """Whether ``message_stop`` arrived (the reply is whole)."""
    usage_given: bool = False
    """Whether the API sent usage (else it is estimated, :func:`estimate_usage`)."""
    events: int = 0
    """Stream events read so far (named in a malformed event's message)."""


class AnthropicModel:
    """Anthropic's Messages API as a gg :class:`~gg.models.base.Model` (SPEC M4).

    Attributes:
        name: ``"anthropic:MODEL"``, as the stream shows it.
        provider: ``"anthropic"``; names errors.
        model: the model name sent to the API.
    """

    provider = _PROVIDER

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        max_tokens: int = 4096,
        stream: bool = True,
        on_delta: Callable[[str], None] | None = None,
        prices: Prices | None = None,
        retry: RetryPolicy | None = None,
        temperature: float | None = None,
        prompt_cache: bool = True,
        tool_choice: ToolChoice = "default",
    ) -> None:
        """Build the client; no request is made.

        Args:
            model: the model name, e.g. ``"claude-sonnet-4-5"``.
            base_url: the endpoint; ``None`` for the SDK's default (which
                honours ``ANTHROPIC_BASE_URL``).
            max_tokens: cap on the reply's tokens (the API requires one).
            stream: read the reply as a stream (progress, stall detection).
            on_delta: called with each piece of reply text as it arrives.
            prices: ``[model.prices]`` overrides of the price table (:mod:`gg.models.pricing`).
            retry: retries, timeout and backoff; defaults to :class:`RetryPolicy`.
            temperature: sampling temperature, or ``None`` for the API's.
            prompt_cache: send the top-level ``cache_control`` (the prompt cache).
            tool_choice: ``"auto"`` leaves the model free; else a request with tools
                says ``{"type": "any"}`` (a tool call is required, SPEC S5).

        Raises:
            gg.errors.ModelUnavailable: ``ANTHROPIC_API_KEY`` is not set (SPEC C3).
        """
        import anthropic

        key = env_key(ANTHROPIC_KEY_ENV, provider=_PROVIDER, required=True)
        assert key is not None
        self.model = model
        self.name = f"anthropic:{model}"
        self._secrets = (key,)
        self._retry = retry or RetryPolicy()
        self._max_tokens, self._temperature = max_tokens, temperature
        self._stream, self._on_delta, self._prices = stream, on_delta, prices
        self._prompt_cache, self._tool_choice = prompt_cache, tool_choice
        self._client: AsyncAnthropic = anthropic.AsyncAnthropic(
            api_key=key, base_url=base_url, timeout=self._retry.timeout_s, max_retries=0
        )

    async def respond(self, messages: list[Message], tools: list[ToolSpec]) -> Reply:
        """Send the conversation and offered tools; return the reply (SPEC M4).

        Args:
            messages: the conversation, oldest first (not mutated).
            tools: the tools offered this turn.

        Returns:
            The reply: text blocks joined, ``tool_use`` blocks as calls in
            order (ids kept), usage with cost from the price table.

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
        import anthropic

        failure = describe_sdk_error(exc, anthropic, timeout_s=self._retry.timeout_s)
        if failure is not None and failure.unavailable:
            hint = f" (check {ANTHROPIC_KEY_ENV} and the model name {self.model!r})"
            return Failure(message=failure.message + hint, retryable=False, unavailable=True)
        return failure

    def _request(self, messages: list[Message], tools: list[ToolSpec]) -> dict[str, Any]:
        """The keyword arguments of ``messages.create``, minus ``stream``."""
        messages = list(messages)
        clean_messages(messages)  # no lone surrogate reaches the SDK's UTF-8 encoding (F4)
        system, converted = anthropic_messages(messages)
        request: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self._max_tokens,
            "messages": converted,
        }
        if system:
            request["system"] = system
        if tools:
            request["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters}
                for t in tools
            ]
            if self._tool_choice != "auto":
                request["tool_choice"] = {"type": "any"}
        if self._prompt_cache:
            request["cache_control"] = {"type": "ephemeral"}
        if self._temperature is not None:
            request["temperature"] = self._temperature
        return request

    async def _attempt(self, request: dict[str, Any]) -> _Draft:
        """One whole request: open it, read all of it."""
        if not self._stream:
            message = await self._client.messages.create(**request)
            return _draft_from_message(message)
        draft = _Draft()
        stream = await self._client.messages.create(**request, stream=True)
        async with stream:
            async for event in stream:
                self._fold_event(draft, event)
        if not draft.finished:
            raise StreamIncomplete("no message_stop before the stream closed")
        return draft

    def _fold_event(self, draft: _Draft, event: Any) -> None:
        """Add one raw stream event to ``draft``; report new text to ``on_delta``.

        Raises:
            Malformed: the event is not shaped like a Messages stream event.
        """
        draft.events += 1
        where = f"stream event {draft.events}"
        kind = wire.text(record(event, where), "type", where)
        if kind == "message_start":
            message = record(wire.field(event, "message"), f"{where}'s message")
            _take_usage(draft, wire.field(message, "usage"), where)
        elif kind == "message_stop":
            draft.finished = True
        elif kind == "message_delta":
            _take_usage(draft, wire.field(event, "usage"), where)
        elif kind == "content_block_start":
            block = record(wire.field(event, "content_block"), f"{where}'s content_block")
            draft.blocks[_index(event, where)] = _block_from(block, where)
        elif kind == "content_block_delta":
            self._fold_delta(draft, event, where)

    def _fold_delta(self, draft: _Draft, event: Any, where: str) -> None:
        block = draft.blocks.setdefault(_index(event, where), _Block(kind="text"))
        what = f"{where}'s delta"
        delta = record(wire.field(event, "delta"), what)
        kind = wire.text(delta, "type", what)
        if kind == "text_delta":
            piece = wire.text(delta, "text", what)
            block.text += piece
            if self._on_delta is not None and piece:
                self._on_delta(piece)
        elif kind == "input_json_delta":
            block.json += wire.text(delta, "partial_json", what)

    def _reply(self, draft: _Draft, request: dict[str, Any]) -> Reply:
        texts: list[str] = []
        calls: list[ToolCall] = []
        for _, block in sorted(draft.blocks.items()):
            if block.kind == "text":
                texts.append(block.text)
            elif block.kind == "tool_use":
                calls.append(_call_from(block))
        if draft.usage_given:
            read, write = draft.cache_read_tokens, draft.cache_write_tokens
            usage = Usage(
                input_tokens=draft.input_tokens + read + write,
                output_tokens=draft.output_tokens,
                cache_read_tokens=read,
                cache_write_tokens=write,
            )
        else:
            raw = [[c.id, c.name, str(c.arguments)] for c in calls]
            tokens_in, tokens_out = estimate_usage(request, "".join(texts), raw)
            usage = Usage(input_tokens=tokens_in, output_tokens=tokens_out, estimated=True)
        cost = price_of(usage, model=self.model, provider=_PROVIDER, prices=self._prices)
        usage = replace(usage, cost=cost)
        return Reply(text="".join(texts), tool_calls=tuple(calls), usage=usage)


def _index(event: object, where: str) -> int:
    index = wire.field(event, "index")
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < 1000:
        raise Malformed(f"{where}'s 'index' is {index!r:.40}, not a small whole number")
    return index


def _take_usage(draft: _Draft, usage: object, where: str) -> None:
    """Fold a usage object (start, delta, or final) into the draft; absent fields keep."""
    if usage is None:
        return
    what = f"{where}'s usage"
    record(usage, what)
    plain = wire.count(usage, "input_tokens", what)
    write = wire.count(usage, "cache_creation_input_tokens", what)
    read = wire.count(usage, "cache_read_input_tokens", what)
    if plain is not None or write is not None or read is not None:
        draft.input_tokens = draft.input_tokens if plain is None else plain
        draft.cache_write_tokens = draft.cache_write_tokens if write is None else write
        draft.cache_read_tokens = draft.cache_read_tokens if read is None else read
        draft.usage_given = True
    output = wire.count(usage, "output_tokens", what)
    if output is not None:
        draft.output_tokens = output
        draft.usage_given = True


def _block_from(content: object, where: str) -> _Block:
    what = f"{where}'s content block"
    kind = wire.text(content, "type", what)
    if kind == "tool_use":
        return _Block(
            kind="tool_use",
            call_id=wire.text(content, "id", what),
            name=wire.text(content, "name", what),
            input=wire.field(content, "input"),
        )
    if kind == "text":
        return _Block(kind="text", text=wire.text(content, "text", what))
    return _Block(kind=kind)


def _draft_from_message(message: object) -> _Draft:
    where = "the message"
    draft = _Draft(finished=True)
    _take_usage(draft, wire.field(record(message, where), "usage"), where)
    for index, content in enumerate(items(message, "content", where)):
        draft.blocks[index] = _block_from(record(content, f"{where}'s content[{index}]"), where)
    return draft


def _call_from(block: _Block) -> ToolCall:
    """A ``tool_use`` block as a gg call; bad input JSON is kept raw with ``parse_error``."""
    if block.json:
        arguments, error = decode_arguments(block.json)
    elif isinstance(block.input, dict):
        arguments, error = block.input, None
    elif block.input is None:
        arguments, error = {}, None
    else:
        arguments = json.dumps(bounded.jsonable(block.input, max_nodes=10_000), ensure_ascii=False)
        error = f"input must be a JSON object, not {type(block.input).__name__}"
    return ToolCall(name=block.name, arguments=arguments, id=block.call_id, parse_error=error)


def _safe_id(call_id: str) -> str:
    """A call id in the characters the API accepts (``[A-Za-z0-9_-]+``)."""
    return _BAD_ID_CHARS.sub("_", call_id) or "call"


def _assistant_blocks(message: AssistantMessage) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if message.content.strip():
        blocks.append({"type": "text", "text": message.content})
    for call in message.tool_calls:
        arguments = call.arguments
        if not isinstance(arguments, dict):  # the model's own malformed call, kept visible
            arguments = {"raw_arguments": arguments}
        blocks.append(
            {"type": "tool_use", "id": _safe_id(call.id), "name": call.name, "input": arguments}
        )
    return blocks


def anthropic_messages(messages: list[Message]) -> tuple[str, list[dict[str, Any]]]:
    """Convert gg messages to the Messages API's ``system`` and ``messages``.

    Args:
        messages: the conversation, oldest first.

    Returns:
        ``(system, [{"role": "user"|"assistant", "content": [block, ...]}, ...])``
        with roles alternating, ``tool_result`` blocks first in a user message,
        and no empty text block (an empty message gets ``"(empty)"``).
    """
    system: list[str] = []
    out: list[dict[str, Any]] = []
    for message in messages:
        match message:
            case SystemMessage():
                if message.content.strip():
                    system.append(message.content)
                continue
            case UserMessage():
                role = "user"
                blocks = (
                    [{"type": "text", "text": message.content}] if message.content.strip() else []
                )
            case AssistantMessage():
                role, blocks = "assistant", _assistant_blocks(message)
            case ToolMessage():
                role = "user"
                blocks = [
                    {
                        "type": "tool_result",
                        "tool_use_id": _safe_id(message.call_id),
                        "content": message.content or "(no output)",
                    }
                ]
            case _:
                assert_never(message)
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    for item in out:
        content = item["content"]
        content.sort(key=lambda block: block["type"] != "tool_result")  # stable: results first
        if not content:
            content.append({"type": "text", "text": "(empty)"})
    return "\n\n".join(system), out
