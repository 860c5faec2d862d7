r"""Bounded JSON, and text that is always valid Unicode (issue 9, items 6 and F4).

Everything a program sends gg through the membrane, and everything a model
sends back (tool-call arguments, text), is hostile input. This module has no
gg imports, so the sandbox and the model adapters share it. :func:`loads`
parses one message under fixed bounds and raises :class:`BadJSON` (a ``ValueError``)
saying what was wrong and the bound, never ``RecursionError``,
``MemoryError`` or another ``ValueError`` from deep inside :mod:`json`:

=====================  ============================================================
bound                  how
=====================  ============================================================
nesting depth          :data:`MAX_DEPTH` levels of ``[``/``{``, counted by a
                       linear pre-scan before :func:`json.loads` recurses
numbers                at most :data:`MAX_NUMBER_CHARS` characters each (a
                       5,000-digit integer is refused before ``int()`` sees it);
                       floats must be finite (``1e999`` is refused)
constants              ``NaN``, ``Infinity``, ``-Infinity`` are refused
size                   the caller's: the membrane frames lines of at most
                       ``Limits.message_bytes`` bytes before parsing
=====================  ============================================================

Duplicate keys are not refused: the last one wins, and everything after the
membrane (the tool, the stream, the model) sees that same parsed object.

Lone surrogates (``"\ud800"`` escapes: the bytes themselves were strict
UTF-8) are found by :func:`lone_surrogate`, which names where one is. Text
gg sends on (answers, the stream, the next prompt) goes through
:func:`scrub` or :func:`dumps`, which replace any lone surrogate by U+FFFD.

Values that were parsed elsewhere (a vendor SDK's dict, a test's Python
objects) are checked by :func:`problem`, an iterative walk under the same
bounds (depth, numbers, size, valid Unicode, JSON types only) that never
recurses; :func:`jsonable` makes a copy of any value that :func:`json.dumps`
always accepts, for the last-resort paths (the stream writer's, excerpts).
"""

from __future__ import annotations

import json
import math
import operator
import re
from itertools import accumulate, repeat
from typing import Any

__all__ = [
    "MAX_DEPTH",
    "MAX_NUMBER_CHARS",
    "BadJSON",
    "depth",
    "dumps",
    "jsonable",
    "loads",
    "lone_surrogate",
    "may_hold_surrogates",
    "problem",
    "scrub",
]

MAX_DEPTH = 100
"""The deepest nesting of arrays and objects a message may have (the message itself is 1)."""
MAX_NUMBER_CHARS = 100
"""The longest number literal a message may hold, in characters (sign and exponent included)."""

_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_STRING = re.compile(r'"[^"]*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEPS = str.maketrans({"[": "\x02", "{": "\x02", "]": "\x00", "}": "\x00"})


class BadJSON(ValueError):
    """A message gg will not parse; ``str()`` completes "the program sent gg ..."."""


def depth(text: str) -> int:
    """The deepest nesting of ``[``/``{`` in JSON ``text``, outside strings, in linear time.

    Args:
        text: a JSON document, as decoded text.

    Returns:
        0 for a scalar, 1 for ``{}`` or ``[1]``, 2 for ``[[1]]``... Exact when over
        :data:`MAX_DEPTH`; otherwise possibly an upper bound of at most :data:`MAX_DEPTH`.
        For invalid JSON an estimate (its parse fails anyway).
    """
    opening = text.count("[") + text.count("{")
    if opening <= MAX_DEPTH:
        return opening
    # Inside strings every backslash starts an escape: drop escaped backslashes, then
    # escaped quotes, so that what is left of each string is '"' [^"]* '"' (linear to remove).
    bare = _STRING.sub("", text.replace("\\\\", "").replace('\\"', ""))
    brackets = _NOT_BRACKET.sub("", bare)
    if len(brackets) <= MAX_DEPTH:
        return len(brackets)  # an upper bound
    steps = brackets.translate(_STEPS).encode("latin-1")
    return max(accumulate(map(operator.sub, steps, repeat(1))), default=0)


def _integer(literal: str) -> int:
    if len(literal) > MAX_NUMBER_CHARS:
        raise BadJSON(
            f"an integer of {len(literal.lstrip('-'))} digits (gg takes numbers of at most "
            f"{MAX_NUMBER_CHARS} characters)"
        )
    return int(literal)


def _float(literal: str) -> float:
    if len(literal) > MAX_NUMBER_CHARS:
        raise BadJSON(
            f"a number of {len(literal)} characters (gg takes numbers of at most "
            f"{MAX_NUMBER_CHARS} characters)"
        )
    value = float(literal)
    if not math.isfinite(value):
        raise BadJSON(f"the number {literal[:40]} that is out of range (not a finite float)")
    return value


def _constant(name: str) -> Any:
    raise BadJSON(f"the JSON constant {name} (not allowed: numbers must be finite)")


_DECODER = json.JSONDecoder(parse_int=_integer, parse_float=_float, parse_constant=_constant)
"""One decoder for every message (``json.loads`` with hooks would build one per call)."""


def loads(text: str, *, what: str = "a message") -> Any:
    """Parse one JSON document under the module's bounds.

    Args:
        text: the message, decoded (strict UTF-8) and without its newline.
        what: how errors name the document (``"a message"``, ``"arguments"``).

    Returns:
        The parsed value (dicts, lists, str, int, finite float, bool, None).

    Raises:
        BadJSON: too deep, a number too long or not finite, a NaN/Infinity constant,
            or not JSON at all (with the parser's position).
    """
    found = depth(text)
    if found > MAX_DEPTH:
        raise BadJSON(f"{what} nested {found} levels deep (gg takes at most {MAX_DEPTH})")
    try:
        return _DECODER.decode(text)
    except BadJSON:
        raise
    except json.JSONDecodeError as exc:
        raise BadJSON(f"{what} that is not JSON ({exc.msg} at column {exc.colno})") from None
    except (RecursionError, MemoryError, ValueError) as exc:  # a bound the pre-scan missed
        raise BadJSON(f"{what} gg cannot parse ({type(exc).__name__})") from None


def lone_surrogate(value: Any, where: str = "the message") -> str | None:
    r"""Where ``value`` holds a lone surrogate (a string that is not valid Unicode), if anywhere.

    Args:
        value: a parsed message (nested at most :data:`MAX_DEPTH` deep: recursion is bounded).
        where: how to name ``value`` in the answer.

    Returns:
        ``None``, or a description such as ``"\\ud800 at arguments['content'][3]"``.
    """
    if isinstance(value, str):
        hit = _SURROGATE.search(value)
        if hit is None:
            return None
        return f"\\u{ord(hit[0]):04x} at {where}, character {hit.start()}"
    if isinstance(value, dict):
        for key, item in value.items():
            found = lone_surrogate(key, f"a key of {where}") or lone_surrogate(
                item, f"{where}[{scrub(key)!r}]"
            )
            if found:
                return found
    elif isinstance(value, list):
        for i, item in enumerate(value):
            if found := lone_surrogate(item, f"{where}[{i}]"):
                return found
    return None


def may_hold_surrogates(text: str) -> bool:
    r"""Whether JSON ``text`` (strict UTF-8 decoded) has a ``\uD800``-``\uDFFF`` escape."""
    return _SURROGATE_ESCAPE.search(text) is not None


def scrub(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (valid Unicode, encodable)."""
    if text.isascii():  # the common case, and no surrogate is ASCII: no regex pass
        return text
    return _SURROGATE.sub("\ufffd", text)


def dumps(value: Any) -> str:
    """One JSON line for ``value``, as valid Unicode: lone surrogates become U+FFFD.

    Objects JSON cannot hold are sent as ``str(value)``.

    Raises:
        ValueError: a non-finite float, or ``value`` nested too deeply to serialize
            (``RecursionError`` is turned into ``ValueError``).
    """
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False, default=str)
    except RecursionError:
        raise ValueError("the value is nested too deeply to send") from None
    return scrub(text)


_INT_BOUND = 10 ** (MAX_NUMBER_CHARS - 1)
"""Integers with at most ``MAX_NUMBER_CHARS - 1`` digits fit (a sign makes ``MAX_NUMBER_CHARS``)."""
_Path = tuple[Any, ...]
"""A place in a value, as a linked list ``(parent path, key)``; ``()`` is the top."""


def _place(path: _Path, top: str) -> str:
    keys: list[Any] = []
    while path:
        path, key = path
        keys.append(key)
    shown = [f"[{scrub(k[:40])!r}]" if isinstance(k, str) else f"[{k}]" for k in reversed(keys)]
    return top + "".join(shown)


def _digits(value: int) -> int:
    return int(abs(value).bit_length() * 0.30103) + 1


def _scalar_problem(value: Any, path: _Path, top: str) -> str | None:
    """Why a non-container value is not bounded JSON data, or ``None``."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        if -_INT_BOUND < value < _INT_BOUND:
            return None
        return (
            f"an integer of about {_digits(value)} digits at {_place(path, top)} (gg takes "
            f"numbers of at most {MAX_NUMBER_CHARS} characters)"
        )
    if isinstance(value, float):
        if math.isfinite(value):
            return None
        return f"the number {value!r} at {_place(path, top)} (JSON numbers must be finite)"
    return f"a value of type {type(value).__name__} at {_place(path, top)} (not JSON data)"


def _key_problem(key: Any, path: _Path, top: str) -> str | None:
    if not isinstance(key, str):
        return f"a key of type {type(key).__name__} in {_place(path, top)} (JSON keys are strings)"
    hit = _SURROGATE.search(key)
    if hit is None:
        return None
    return (
        f"a lone surrogate \\u{ord(hit[0]):04x} in a key of {_place(path, top)}, "
        f"character {hit.start()}: not valid Unicode"
    )


def problem(value: Any, *, max_chars: int, top: str = "arguments") -> str | None:
    r"""Why an already-parsed value is not bounded JSON data, or ``None`` when it is.

    An iterative walk (no recursion, whatever the nesting) that stops at the
    first problem, so its cost is bounded by ``max_chars`` and :data:`MAX_DEPTH`.

    Args:
        value: dicts with ``str`` keys, lists, ``str``, ``int``, ``float``, ``bool``, ``None``
            (tuples are taken as lists).
        max_chars: the most characters of strings and keys in all, each container
            and scalar counting one more.
        top: how the answer names ``value`` itself.

    Returns:
        ``None``, or what is wrong and where, e.g. ``"a lone surrogate \\ud800 at
        arguments['path'], character 1: not valid Unicode"``; nesting deeper than
        :data:`MAX_DEPTH`, an integer of :data:`MAX_NUMBER_CHARS` digits or more, a
        NaN or infinity, a key that is not a string, a type JSON cannot hold, or more
        than ``max_chars`` in all.
    """
    room = max_chars
    stack: list[tuple[Any, int, _Path]] = [(value, 1, ())]
    while stack:
        item, level, path = stack.pop()
        room -= 1
        if isinstance(item, str):
            room -= len(item)
            hit = None if item.isascii() else _SURROGATE.search(item)
            if hit is not None:
                return (
                    f"a lone surrogate \\u{ord(hit[0]):04x} at {_place(path, top)}, "
                    f"character {hit.start()}: not valid Unicode"
                )
        elif isinstance(item, (dict, list, tuple)):
            if level > MAX_DEPTH:
                return f"{top} nested more than {MAX_DEPTH} levels deep (gg takes at most that)"
            pairs = item.items() if isinstance(item, dict) else enumerate(item)
            for key, child in pairs:
                if isinstance(item, dict) and (why := _key_problem(key, path, top)):
                    return why
                room -= len(key) if isinstance(key, str) else 0
                stack.append((child, level + 1, (path, key)))
                if len(stack) > room:
                    break
        elif (why := _scalar_problem(item, path, top)) is not None:
            return why
        if room < 0 or len(stack) > room:
            return f"{top} larger than gg takes (at most {max_chars} characters in all)"
    return None


def jsonable(value: Any, *, max_string: int | None = None, max_nodes: int = 1_000_000) -> Any:
    """A copy of ``value`` that :func:`json.dumps` (``allow_nan=False``) always accepts.

    For last-resort paths (the stream writer's, excerpts of refused arguments):
    strings are scrubbed (:func:`scrub`) and, with ``max_string``, cut; dict keys
    become strings; tuples, sets and lists become lists; NaN and infinities
    become ``None``; an integer too long to print, and anything deeper than
    :data:`MAX_DEPTH` or past ``max_nodes`` values, becomes a short text saying
    so; any other object becomes its (scrubbed) ``str()``. Never raises for any
    value whose ``str()`` does not raise (one that does is named by its type).
    """
    room = [max_nodes]

    def copy(item: Any, level: int) -> Any:
        room[0] -= 1
        if room[0] < 0 or level > MAX_DEPTH:
            return "…"
        if isinstance(item, str):
            text = (
                item
                if max_string is None or len(item) <= max_string
                else (item[:max_string] + f"… [{len(item) - max_string} more characters]")
            )
            return scrub(text)
        if item is None or isinstance(item, (bool, float)):
            return item if not isinstance(item, float) or math.isfinite(item) else None
        if isinstance(item, int):
            return (
                item
                if -_INT_BOUND < item < _INT_BOUND
                else (f"<an integer of about {_digits(item)} digits>")
            )
        if isinstance(item, dict):
            return {
                copy(k if isinstance(k, str) else _text(k), level + 1): copy(v, level + 1)
                for k, v in _first(item.items(), room[0])
            }
        if isinstance(item, (list, tuple, set, frozenset)):
            return [copy(v, level + 1) for v in _first(item, room[0])]
        return copy(_text(item), level)

    return copy(value, 0)


def _first(items: Any, count: int) -> list[Any]:
    """At most ``count`` (at least 0) items of an iterable."""
    out: list[Any] = []
    for item in items:
        if len(out) >= count:
            break
        out.append(item)
    return out


def _text(value: Any) -> str:
    try:
        return str(value)
    except Exception:  # an object whose __str__ fails is named by its type
        return f"<{type(value).__name__}>"
