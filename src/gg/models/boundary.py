r"""The model boundary: every reply is bounded and cleaned before the loop sees it (issue 9, F4).

A model's reply is hostile input like a program's message: a prompt-injected
model or a broken server can send anything the provider's JSON allows, and a
vendor SDK or ``json.loads`` hands gg what it parsed (``"a\\ud800"`` becomes a
lone surrogate, ``[[[[...`` a deep list). :func:`clean_reply` runs once per
reply, in the session right after :meth:`gg.models.base.Model.respond` (and in
:class:`gg.models.recording.RecordingModel` before it records), whatever the
provider. After it, every string of the reply encodes as UTF-8 and every
argument dict is JSON that :func:`json.dumps` takes quickly. The rule:

=============================  ==============================================================
what                           what happens
=============================  ==============================================================
text, tool names, call ids,    a lone surrogate becomes U+FFFD; past :data:`MAX_TEXT_CHARS` /
raw (unparsed) arguments,      :data:`MAX_NAME_CHARS` / :data:`MAX_RAW_CHARS` the rest is cut
``parse_error``                with a marker saying how much (a cut name is an unknown tool)
argument dicts                 checked by :func:`gg.bounded.problem`: a lone surrogate in a
                               value or key, nesting deeper than :data:`gg.bounded.MAX_DEPTH`,
                               an integer of :data:`gg.bounded.MAX_NUMBER_CHARS` digits or
                               more, NaN or an infinity, a non-JSON value, or more than
                               :data:`MAX_ARGUMENT_CHARS` in all make the call's arguments
                               a short excerpt with ``parse_error`` set: the session's
                               ``bad_arguments`` error turn (SPEC S5), never an exception.
                               Arguments are refused rather than repaired: a path or a
                               file's content silently changed would be worse than an error.
more than :data:`MAX_CALLS`    the calls past it are dropped and the last one kept says so
calls                          in its ``parse_error`` (the turn is an error turn)
usage                          token counts clamped to 0..10^12, a non-finite cost is 0
=============================  ==============================================================

:func:`clean_messages` is the other direction: the conversation gg sends the
model next turn (tool output, hook reasons, the operator's task) has its lone
surrogates replaced by U+FFFD, so no adapter's JSON encoding fails on it.

Both are cheap on a clean reply: one regular-expression pass over each string
and one walk over the arguments; nothing is copied unless something changed.
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any, assert_never

from gg.bounded import jsonable, problem, scrub
from gg.models.base import (
    AssistantMessage,
    Message,
    Reply,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
)
from gg.text import cut

__all__ = [
    "MAX_ARGUMENT_CHARS",
    "MAX_CALLS",
    "MAX_NAME_CHARS",
    "MAX_RAW_CHARS",
    "MAX_TEXT_CHARS",
    "clean_call",
    "clean_messages",
    "clean_reply",
]

MAX_TEXT_CHARS = 1_000_000
"""The longest reply text gg keeps, in characters (the rest is cut, with a marker)."""
MAX_NAME_CHARS = 256
"""The longest tool name or call id gg keeps, in characters."""
MAX_ARGUMENT_CHARS = 64_000_000
"""The most characters one call's arguments may hold in all (strings, keys, one per value).
As much as a program may send through the membrane by default: the settings that bound
a program (``[sandbox] program_bytes``) and a tool's own limits speak first."""
MAX_RAW_CHARS = 100_000
"""The longest raw (unparsed) arguments text gg keeps, in characters."""
MAX_CALLS = 1_000
"""The most tool calls gg reads in one reply."""
_PREVIEW_CHARS = 2_000
"""How much of refused arguments is kept, as text, for the stream and the model."""
_MAX_TOKENS = 10**12


def _cut(text: Any, limit: int) -> str:
    """``text`` as valid Unicode of at most ``limit`` characters plus a marker."""
    if not isinstance(text, str):
        text = str(jsonable(text, max_string=limit, max_nodes=100))
    return scrub(cut(text, limit))


def _preview(arguments: Any) -> str:
    """A short JSON-like text of refused arguments (bounded work, valid Unicode)."""
    shown = jsonable(arguments, max_string=200, max_nodes=200)
    return _cut(json.dumps(shown, ensure_ascii=False), _PREVIEW_CHARS)


def clean_call(call: ToolCall) -> ToolCall:
    """One call under the module's rule (see the table); ``call`` itself when it is clean.

    Returns:
        ``call``, or a copy with valid-Unicode name, id and raw arguments, or
        with refused arguments turned into an excerpt and ``parse_error``.
    """
    name, call_id = _cut(call.name, MAX_NAME_CHARS), _cut(call.id, MAX_NAME_CHARS)
    arguments: dict[str, Any] | str = call.arguments
    error = None if call.parse_error is None else _cut(call.parse_error, _PREVIEW_CHARS)
    if isinstance(arguments, str):
        arguments = _cut(arguments, MAX_RAW_CHARS)
    elif not isinstance(arguments, dict):  # a custom Model's list or number (finding N5)
        arguments = _preview(arguments)
        error = (
            f"the call's arguments are a JSON {type(call.arguments).__name__}, not an "
            "object of named arguments"
        )
    elif (why := problem(arguments, max_chars=MAX_ARGUMENT_CHARS)) is not None:
        arguments = _preview(arguments)
        error = why
    if (name, call_id, arguments, error) == (call.name, call.id, call.arguments, call.parse_error):
        return call
    return ToolCall(name=name, arguments=arguments, id=call_id, parse_error=error)


def _too_many(calls: tuple[ToolCall, ...]) -> tuple[ToolCall, ...]:
    if len(calls) <= MAX_CALLS:
        return calls
    last = calls[MAX_CALLS - 1]
    stop = dataclasses.replace(
        last,
        arguments="",
        parse_error=(
            f"the reply holds {len(calls)} tool calls; gg reads at most {MAX_CALLS} in one reply, "
            "so this one and the rest were not run"
        ),
    )
    return (*calls[: MAX_CALLS - 1], stop)


_COUNTS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
)
"""The token counts of :class:`Usage`, each bounded the same way."""


def _usage(usage: Usage) -> Usage:
    counts = [getattr(usage, name) for name in _COUNTS]
    if (
        all(type(n) is int and 0 <= n <= _MAX_TOKENS for n in counts)
        and type(usage.cost) is float
        and math.isfinite(usage.cost)
    ):
        return usage  # the common case, checked without building a new one

    def tokens(n: Any) -> int:
        return min(max(n, 0), _MAX_TOKENS) if isinstance(n, int) else 0

    cost = usage.cost if isinstance(usage.cost, float | int) and math.isfinite(usage.cost) else 0.0
    clean = Usage(
        **{name: tokens(n) for name, n in zip(_COUNTS, counts, strict=True)},
        cost=float(cost),
        estimated=usage.estimated is True,
    )
    return usage if clean == usage else clean


def clean_reply(reply: Reply) -> Reply:
    """``reply`` bounded and cleaned under the module's rule (issue 9, F4; SPEC S5).

    Never raises for any reply (whatever its strings, numbers or nesting).

    Returns:
        ``reply`` itself when nothing needed changing, else a cleaned copy.
    """
    text = _cut(reply.text, MAX_TEXT_CHARS)
    calls = tuple(clean_call(c) for c in _too_many(tuple(reply.tool_calls)))
    usage = _usage(reply.usage)
    same = (
        text == reply.text
        and usage is reply.usage
        and all(a is b for a, b in zip(calls, reply.tool_calls, strict=False))
        and len(calls) == len(reply.tool_calls)
    )
    return reply if same else Reply(text=text, tool_calls=calls, usage=usage)


def _clean_message(message: Message) -> Message:
    match message:
        case SystemMessage() | UserMessage():
            content = scrub(message.content)
            return (
                message
                if content == message.content
                else dataclasses.replace(message, content=content)
            )
        case AssistantMessage():
            content = scrub(message.content)
            calls = tuple(clean_call(c) for c in message.tool_calls)
            if content == message.content and all(
                a is b for a, b in zip(calls, message.tool_calls, strict=True)
            ):
                return message
            return AssistantMessage(content=content, tool_calls=calls)
        case ToolMessage():
            fields = (scrub(message.call_id), scrub(message.name), scrub(message.content))
            if fields == (message.call_id, message.name, message.content):
                return message
            return ToolMessage(call_id=fields[0], name=fields[1], content=fields[2])
        case _:
            assert_never(message)


def clean_messages(messages: list[Message], start: int = 0) -> None:
    """Replace lone surrogates by U+FFFD in the messages from ``start`` on, in place.

    Each message that holds a lone surrogate is replaced by a copy with U+FFFD in its
    place (issue 9, F4: nothing gg sends a model fails to encode). Messages before
    ``start`` were cleaned already.
    """
    for index in range(start, len(messages)):
        cleaned = _clean_message(messages[index])
        if cleaned is not messages[index]:
            messages[index] = cleaned
