"""A session's conversation as JSON, so an implementer can be resumed after a crash (SPEC B5).

The store keeps the conversation of each implementer session that ended;
when a review requests changes after gg was restarted, the implementer's
session is rebuilt from it and resumed instead of starting over.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import gg
from gg.models.base import AssistantMessage, Message, SystemMessage, ToolMessage, UserMessage

__all__ = ["dump_messages", "load_messages", "resumable"]

_KINDS: dict[str, type[Message]] = {
    "system": SystemMessage,
    "user": UserMessage,
    "assistant": AssistantMessage,
    "tool": ToolMessage,
}


def dump_messages(messages: list[Message]) -> str:
    """The conversation as a JSON array of ``{"role": ..., ...}`` objects."""
    return json.dumps([dataclasses.asdict(m) for m in messages], ensure_ascii=False)


def _message(data: dict[str, Any]) -> Message:
    kind = _KINDS[data["role"]]
    if kind is AssistantMessage:
        calls = tuple(gg.ToolCall(**c) for c in data.get("tool_calls", ()))
        return AssistantMessage(content=data.get("content", ""), tool_calls=calls)
    fields = {k: v for k, v in data.items() if k != "role"}
    return kind(**fields)


def load_messages(text: str) -> list[Message]:
    """The conversation :func:`dump_messages` wrote.

    Raises:
        ValueError: the text is not such a conversation.
    """
    try:
        return [_message(item) for item in json.loads(text)]
    except (KeyError, TypeError, json.JSONDecodeError) as e:
        raise ValueError(f"not a stored conversation: {e}") from None


def resumable(text: str, *, session_id: str, workspace: Path, summary: str) -> gg.SessionResult:
    """An ended Standard session rebuilt from its stored conversation, to resume it."""
    return gg.SessionResult(
        session_id=session_id,
        role=gg.Role.STANDARD,
        status="ended",
        ending=gg.Finish(summary=summary),
        diagnosis=None,
        turns=0,
        workspace=workspace,
        messages=load_messages(text),
    )
