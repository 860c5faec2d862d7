"""Checkpoints: what the stream records so a session can be resumed exactly (issue 12 item 4).

The turn loop writes a ``checkpoint`` event (:class:`gg.stream.Checkpoint`)
when a session starts and at the end of each of its turns: the messages the
conversation gained since the session's previous checkpoint (the whole
conversation, system prompt and task included, over all of them), the
session's ceiling counts, and the run's budget spent so far. The stream's seal
covers them like every event; ``gg resume`` (:mod:`gg.resume`) rebuilds the
conversation from them with :func:`message_from_record` and the counts with
:func:`restore_counts`.

A turn cut off by a crash or a signal has no checkpoint: resuming redoes it
from its start (its declarations were per turn and die with it, SPEC S8).
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter, ValidationError

from gg.ceilings import Budget, SessionCeilings
from gg.errors import UserError
from gg.models.base import Message
from gg.stream import Checkpoint, EventIds, excerpt, excerpt_arguments

__all__ = [
    "Restored",
    "budget_record",
    "make_checkpoint",
    "message_from_record",
    "message_record",
    "restore_counts",
]

_MESSAGE: TypeAdapter[Message] = TypeAdapter(Message)


@dataclass(frozen=True, slots=True, kw_only=True)
class Restored:
    """A session's state rebuilt from its checkpoints, to go on from.

    Attributes:
        messages: the whole conversation so far, system prompt first.
        turn: the last turn that completed (the next one is ``turn + 1``).
        counts: the session's ceiling counts (:func:`counts_record`'s form).
    """

    messages: tuple[Message, ...]
    turn: int
    counts: dict[str, Any]


_CONTENT_CAP = 50_000
"""Characters of one message's text a checkpoint keeps (the stream stays bounded)."""


def message_record(message: Message) -> dict[str, Any]:
    """``message`` as a JSON object (``role`` tags it; tool calls as objects).

    Bounded like every stream event: text past :data:`_CONTENT_CAP` characters and
    call arguments past :func:`gg.stream.excerpt_arguments`' caps are cut (with a
    marker), so a resumed conversation is exact up to those bounds.
    """
    record = dataclasses.asdict(message)
    record["content"] = excerpt(record["content"], _CONTENT_CAP)
    for call in record.get("tool_calls", ()):
        call["arguments"] = excerpt_arguments(call["arguments"])
    return record


def message_from_record(record: object) -> Message:
    """The message :func:`message_record` wrote.

    Raises:
        UserError: ``record`` is not a message of a known role and shape.
    """
    if not isinstance(record, dict) or record.get("role") not in (
        "system",
        "user",
        "assistant",
        "tool",
    ):
        raise UserError(f"a checkpoint holds something that is not a message: {record!r:.80}")
    try:
        return _MESSAGE.validate_python(record)
    except ValidationError as e:
        raise UserError(f"a checkpoint holds a malformed message: {e.errors()[0]['msg']}") from None


def _counts_record(ceilings: SessionCeilings, blocked_total: int) -> dict[str, Any]:
    out: dict[str, Any] = {"blocked_total": blocked_total}
    for f in dataclasses.fields(ceilings):
        if f.name in ("ceilings", "_replies"):  # reply excerpts are repr()s: not kept
            continue
        value = getattr(ceilings, f.name)
        out[f.name] = list(value) if isinstance(value, deque | tuple) else value
    return out


def restore_counts(ceilings: SessionCeilings, counts: dict[str, Any]) -> int:
    """Put checkpointed ``counts`` back into a fresh ``ceilings``; returns ``blocked_total``.

    Raises:
        UserError: a count of the wrong type.
    """
    try:
        for f in dataclasses.fields(ceilings):
            if f.name == "ceilings" or f.name not in counts:
                continue
            value, current = counts[f.name], getattr(ceilings, f.name)
            if isinstance(current, deque):
                current.extend(value)
            elif f.name == "_last_block":
                setattr(ceilings, f.name, None if value is None else tuple(value))
            else:
                setattr(ceilings, f.name, value)
        return int(counts.get("blocked_total", 0))
    except (TypeError, ValueError) as e:
        raise UserError(f"a checkpoint holds malformed ceiling counts: {e}") from None


def budget_record(budget: Budget) -> dict[str, float]:
    """The run's spending so far: ``tokens``, ``cost``, ``seconds``."""
    return {"tokens": budget.tokens, "cost": budget.cost, "seconds": round(budget.seconds(), 3)}


def make_checkpoint(
    ids: EventIds,
    messages: Sequence[Message],
    *,
    ceilings: SessionCeilings,
    blocked_total: int,
    budget: Budget,
) -> Checkpoint:
    """The ``checkpoint`` event for ``messages`` (those new since the last one).

    Args:
        ids: the session's ids now.
        messages: the messages to record.
        ceilings: the session's counts.
        blocked_total: endings the gate blocked in this session so far.
        budget: the run's budget.
    """
    return Checkpoint(
        **ids,
        messages=[message_record(m) for m in messages],
        counts=_counts_record(ceilings, blocked_total),
        budget=budget_record(budget),
    )
