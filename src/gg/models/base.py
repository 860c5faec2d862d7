"""The model seam (SPEC M4): messages and tool specs in, a :class:`Reply` out.

One protocol for every provider. A model knows nothing of roles, endings or
modes: it is handed the conversation and the offered tools, and returns text,
tool calls and usage. A provider that retries reports each retry with
:func:`report_retry`; whoever asks the model (the session) hears of it by
asking inside :func:`retries_reported` (the ``retry`` event, issue 12 item 2).

What :meth:`Model.respond` does not promise: that the reply calls a tool, that
the tool exists, or that its arguments fit the schema. The session turns those
into error turns (SPEC S5). It raises :class:`gg.errors.ModelError` only when
no reply could be had at all (provider down, retries exhausted, script done).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol, TypeAlias, runtime_checkable

from pydantic import ConfigDict

__all__ = [
    "AssistantMessage",
    "Message",
    "Model",
    "Reply",
    "RetryListener",
    "RetryNotice",
    "SystemMessage",
    "ToolCall",
    "ToolChoice",
    "ToolMessage",
    "ToolSpec",
    "Usage",
    "UserMessage",
    "report_retry",
    "retries_reported",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolSpec:
    """A tool offered to the model.

    Attributes:
        name: the tool's name as the model must call it.
        description: what it does (first paragraph of the docstring for functions).
        parameters: a JSON Schema object for its arguments.
    """

    name: str
    description: str
    parameters: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        """``{"name", "description", "parameters"}``."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}


ToolChoice: TypeAlias = Literal["default", "required", "auto"]
"""Whether a provider is asked to require a tool call (``[model] tool_choice``).

``required``: the request says the reply must call a tool; ``auto``: the model may
answer in text; ``default``: the provider's own choice (required where the API is
known to honour it). Either way a reply without a call is an error turn (SPEC S5)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    """One tool call in a reply.

    Attributes:
        name: the called tool's name, as the model wrote it.
        arguments: the decoded arguments, or the raw text when they did not
            decode to a JSON object (then ``parse_error`` says why).
        id: the provider's call id; gg makes one up when the provider has none.
        parse_error: why ``arguments`` could not be decoded, else ``None``.
    """

    name: str
    arguments: dict[str, Any] | str
    id: str = ""
    parse_error: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Usage:
    """Token usage of one reply (0 when the provider does not say).

    The one usage type: a model's reply carries it and the stream's ``turn`` event
    records it with these keys (SPEC O1); reading a stream back, any other key is
    refused. ``input_tokens`` counts every prompt token, cache reads and writes
    included (``cache_read_tokens`` and ``cache_write_tokens`` say how many of them
    were); ``output_tokens`` counts every reply token, reasoning included
    (``reasoning_tokens`` says how many were). The budgets (SPEC S6) add
    ``input_tokens + output_tokens``.
    """

    __pydantic_config__: ClassVar[ConfigDict] = ConfigDict(extra="forbid")

    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    """Cost in the price table's currency unit; 0 when no price is configured."""
    estimated: bool = False
    """The counts are gg's estimate (the server sent no usage), not the provider's."""
    cache_read_tokens: int = 0
    """Of ``input_tokens``, those read from the provider's prompt cache (billed lower)."""
    cache_write_tokens: int = 0
    """Of ``input_tokens``, those written to the provider's prompt cache (billed higher)."""
    reasoning_tokens: int = 0
    """Of ``output_tokens``, those the model spent on hidden reasoning."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    """A model's reply: text, tool calls (in order) and usage."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)


@dataclass(frozen=True, slots=True, kw_only=True)
class SystemMessage:
    """The system prompt."""

    role: Literal["system"] = "system"
    content: str


@dataclass(frozen=True, slots=True, kw_only=True)
class UserMessage:
    """A user (or gg feedback) message."""

    role: Literal["user"] = "user"
    content: str


@dataclass(frozen=True, slots=True, kw_only=True)
class AssistantMessage:
    """A model's earlier reply, as it goes back into the conversation."""

    role: Literal["assistant"] = "assistant"
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolMessage:
    """The result of one tool call, answering the call with ``call_id``."""

    role: Literal["tool"] = "tool"
    call_id: str
    name: str
    content: str


Message: TypeAlias = SystemMessage | UserMessage | AssistantMessage | ToolMessage
"""A conversation item, tagged by ``role``."""


@runtime_checkable
class Model(Protocol):
    """What every provider implements (SPEC M4).

    Attributes:
        name: the model spec as the stream shows it, e.g. ``"local"``,
            ``"scripted:replies.json"``, ``"openai:gpt-4o-mini"``.
    """

    name: str

    async def respond(self, messages: list[Message], tools: list[ToolSpec]) -> Reply:
        """Return the model's next reply.

        Args:
            messages: the conversation so far, oldest first. Do not mutate.
            tools: the tools offered this turn (the only ones the model may call).

        Raises:
            gg.errors.ModelError: when no reply can be had at all.
        """
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryNotice:
    """A provider is about to try a request again (issue 12 item 2: the ``retry`` event).

    Attributes:
        provider: the provider's name, e.g. ``"openai-compat"``.
        attempt: the attempt that failed, from 1.
        wait_s: seconds before the next attempt.
        cause: what went wrong, in the operator's words (status, server's message).
    """

    provider: str
    attempt: int
    wait_s: float
    cause: str


RetryListener: TypeAlias = Callable[[RetryNotice], None]
"""Gets each :class:`RetryNotice` of the model calls made inside :func:`retries_reported`."""

_LISTENER: contextvars.ContextVar[RetryListener | None] = contextvars.ContextVar(
    "gg_retry_listener", default=None
)


@contextlib.contextmanager
def retries_reported(listener: RetryListener) -> Iterator[None]:
    """Within the block, the retries of this task's model calls go to ``listener``.

    A context variable, so concurrent sessions (each its own asyncio task) hear of
    their own retries only, and a :class:`Model` shared by them needs no callback.
    """
    token = _LISTENER.set(listener)
    try:
        yield
    finally:
        _LISTENER.reset(token)


def report_retry(notice: RetryNotice) -> None:
    """Tell the current :func:`retries_reported` listener, if any, of a retry."""
    listener = _LISTENER.get()
    if listener is not None:
        listener(notice)
