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
an exception. Usage: input tokens include cache writes and reads. Retries,
timeouts and error translation: :mod:`gg.models.retry`.

What it does not promise: thinking blocks and server tools are dropped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, assert_never

from gg import bounded
from gg.models.base import (
    AssistantMessage,
    Message,
    Reply,
    SystemMessage,
    ToolCall,
    ToolMessage,
    ToolSpec,
    Usage,
    UserMessage,
)
from gg.models.boundary import clean_messages
from gg.models.retry import (
    Failure,
    Prices,
    RetryPolicy,
    StreamIncomplete,
    call_with_retries,
    cost_of,
    decode_arguments,
    describe_sdk_error,
    env_key,
)

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
    output_tokens: int = 0
    finished: bool = False
    """Whether ``message_stop`` arrived (the reply is whole)."""


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
    ) -> None:
        """Build the client; no request is made.

        Args:
            model: the model name, e.g. ``"claude-sonnet-4-5"``.
            base_url: the endpoint; ``None`` for the SDK's default (which
                honours ``ANTHROPIC_BASE_URL``).
            max_tokens: cap on the reply's tokens (the API requires one).
            stream: read the reply as a stream (progress, stall detection).
            on_delta: called with each piece of reply text as it arrives.
            prices: ``{model: {"input_per_mtok", "output_per_mtok"}}`` for cost.
            retry: retries, timeout and backoff; defaults to :class:`RetryPolicy`.
            temperature: sampling temperature, or ``None`` for the API's.

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
        return self._reply(draft)

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
        """Add one raw stream event to ``draft``; report new text to ``on_delta``."""
        kind = event.type
        if kind == "message_start":
            _take_usage(draft, event.message.usage)
        elif kind == "message_stop":
            draft.finished = True
        elif kind == "message_delta":
            _take_usage(draft, event.usage)
        elif kind == "content_block_start":
            draft.blocks[event.index] = _block_from(event.content_block)
        elif kind == "content_block_delta":
            block = draft.blocks.setdefault(event.index, _Block(kind="text"))
            delta = event.delta
            if delta.type == "text_delta":
                block.text += delta.text
                if self._on_delta is not None and delta.text:
                    self._on_delta(delta.text)
            elif delta.type == "input_json_delta":
                block.json += delta.partial_json

    def _reply(self, draft: _Draft) -> Reply:
        texts: list[str] = []
        calls: list[ToolCall] = []
        for _, block in sorted(draft.blocks.items()):
            if block.kind == "text":
                texts.append(block.text)
            elif block.kind == "tool_use":
                calls.append(_call_from(block))
        cost = cost_of(self.model, draft.input_tokens, draft.output_tokens, self._prices)
        usage = Usage(input_tokens=draft.input_tokens, output_tokens=draft.output_tokens, cost=cost)
        return Reply(text="".join(texts), tool_calls=tuple(calls), usage=usage)


def _take_usage(draft: _Draft, usage: Any) -> None:
    """Fold a usage object (start, delta, or final) into the draft; absent fields keep."""
    if usage is None:
        return
    parts = [
        getattr(usage, name, None)
        for name in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    ]
    if any(p is not None for p in parts):
        draft.input_tokens = sum(p or 0 for p in parts)
    if getattr(usage, "output_tokens", None) is not None:
        draft.output_tokens = usage.output_tokens


def _block_from(content: Any) -> _Block:
    if content.type == "tool_use":
        return _Block(kind="tool_use", call_id=content.id, name=content.name, input=content.input)
    if content.type == "text":
        return _Block(kind="text", text=content.text)
    return _Block(kind=content.type)


def _draft_from_message(message: Any) -> _Draft:
    draft = _Draft()
    _take_usage(draft, message.usage)
    for index, content in enumerate(message.content):
        draft.blocks[index] = _block_from(content)
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
    """gg messages as the Messages API's ``system`` and ``messages``.

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
