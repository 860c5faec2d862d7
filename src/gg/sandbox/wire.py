"""Bounded JSON for the membrane, and text that is always valid Unicode (issue 9, item 6).

Everything a program sends gg is hostile input. :func:`loads` parses one
message under fixed bounds and raises :class:`BadJSON` (a ``ValueError``)
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

Lone surrogates (``"\\ud800"`` escapes: the bytes themselves were strict
UTF-8) are found by :func:`lone_surrogate`, which names where one is. Text
gg sends on (answers, the stream, the next prompt) goes through
:func:`scrub` or :func:`dumps`, which replace any lone surrogate by U+FFFD.
"""

from __future__ import annotations

import json
import math
import operator
import re
from itertools import accumulate, repeat
from typing import Any

__all__ = [
    "MAX_DEPTH", "MAX_NUMBER_CHARS", "BadJSON", "depth", "dumps", "loads", "lone_surrogate",
    "may_hold_surrogates", "scrub",
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


def loads(text: str) -> Any:
    """Parse one JSON document under the module's bounds.

    Args:
        text: the message, decoded (strict UTF-8) and without its newline.

    Returns:
        The parsed value (dicts, lists, str, int, finite float, bool, None).

    Raises:
        BadJSON: too deep, a number too long or not finite, a NaN/Infinity constant,
            or not JSON at all (with the parser's position).
    """
    found = depth(text)
    if found > MAX_DEPTH:
        raise BadJSON(f"a message nested {found} levels deep (gg takes at most {MAX_DEPTH})")
    try:
        return json.loads(text, parse_int=_integer, parse_float=_float, parse_constant=_constant)
    except BadJSON:
        raise
    except json.JSONDecodeError as exc:
        raise BadJSON(f"a message that is not JSON ({exc.msg} at column {exc.colno})") from None
    except (RecursionError, MemoryError, ValueError) as exc:  # a bound the pre-scan missed
        raise BadJSON(f"a message gg cannot parse ({type(exc).__name__})") from None


def lone_surrogate(value: Any, where: str = "the message") -> str | None:
    """Where ``value`` holds a lone surrogate (a string that is not valid Unicode), if anywhere.

    Args:
        value: a parsed message (nested at most :data:`MAX_DEPTH` deep: recursion is bounded).
        where: how to name ``value`` in the answer.

    Returns:
        ``None``, or a description such as ``"\\\\ud800 at arguments['content'][3]"``.
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
    """Whether JSON ``text`` (strict UTF-8 decoded) has a ``\\uD800``-``\\uDFFF`` escape."""
    return _SURROGATE_ESCAPE.search(text) is not None


def scrub(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (valid Unicode, encodable)."""
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
