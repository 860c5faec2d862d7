"""Test doubles shipped with gg (STYLE 9): scripted and function models.

:class:`ScriptedModel` serves fixed replies (``.calls``, ``assert_complete()``);
:class:`FunctionModel` answers with a function of the conversation, for tests
that need the reply to depend on what the agent saw. Helpers :func:`call` and
:func:`text` build replies tersely.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from gg.models.base import Message, Reply, ToolCall, ToolSpec
from gg.models.scripted import ScriptedModel

__all__ = ["FunctionModel", "ScriptedModel", "call", "text"]


def call(name: str, /, **arguments: Any) -> Reply:
    """A reply with one tool call: ``call("finish", summary="done")``."""
    return Reply(tool_calls=(ToolCall(name=name, arguments=arguments),))


def text(content: str) -> Reply:
    """A prose-only reply (an error turn in both modes, SPEC S5)."""
    return Reply(text=content)


class FunctionModel:
    """A model whose reply is ``fn(messages, tools)`` (sync or async).

    Args:
        fn: gets the conversation and the offered tools; returns a :class:`Reply`.
        name: the model spec shown on the stream.
    """

    def __init__(
        self,
        fn: Callable[[list[Message], list[ToolSpec]], Reply | Awaitable[Reply]],
        *,
        name: str = "function",
    ) -> None:
        self.fn = fn
        self.name = name

    async def respond(self, messages: list[Message], tools: list[ToolSpec]) -> Reply:
        """Call the function and await it if needed."""
        out = self.fn(messages, tools)
        if inspect.isawaitable(out):
            return await out
        return out
