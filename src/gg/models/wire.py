"""Reading a provider's answer defensively: every field checked before use (issue 12 item 2).

The vendor SDKs build their response objects without validation, so a server
that sends a chunk of the wrong shape (``"choices": "x"``, a ``null`` delta, a
string where a count goes, a JSON array instead of an object) hands the
adapter objects whose attributes hold anything. The adapters read every
field through these helpers, which accept a dict or an SDK object and raise
:class:`Malformed` (naming the field and what it held) for anything else;
:func:`gg.models.retry.describe_sdk_error` makes that a retryable fault, and
once retries run out a :class:`gg.errors.ModelError` naming the provider,
never a traceback.

What it does not promise: that a well-shaped answer makes sense (an empty
reply, a call to a tool nobody offered: those are the session's error turns).
"""

from __future__ import annotations

from typing import Any

__all__ = ["Malformed", "count", "field", "items", "record", "text"]

_MAX_COUNT = 10**12
"""The largest token count believed (a server's 10**30 is malformed, not a budget hit)."""


class Malformed(Exception):
    """A provider's answer does not have the shape its API promises (retried as transient)."""


def _kind(value: object) -> str:
    return "null" if value is None else type(value).__name__


def field(obj: object, name: str) -> Any:
    """``obj``'s field ``name``: a dict's key or an SDK object's attribute; ``None`` if absent.

    Args:
        obj: a dict, an SDK response object, or anything else (which has no fields).
        name: the field's name.
    """
    if isinstance(obj, dict):
        return obj.get(name)
    if isinstance(obj, str | bytes | int | float | list | tuple) or obj is None:
        return None
    return getattr(obj, name, None)


def record(value: object, what: str) -> Any:
    """``value`` when it is an object (a dict or an SDK object), else :class:`Malformed`.

    Args:
        value: the value read.
        what: where it was, for the message, e.g. ``"chunk 3's choices[0]"``.

    Raises:
        Malformed: ``value`` is ``None``, a string, a number, a boolean or a list.
    """
    if value is None or isinstance(value, str | bytes | int | float | list | tuple):
        raise Malformed(f"{what} is {_kind(value)}, not an object")
    return value


def items(obj: object, name: str, what: str) -> list[Any]:
    """``obj``'s list field ``name`` (``[]`` when absent or ``null``).

    Raises:
        Malformed: the field holds something other than a list.
    """
    value = field(obj, name)
    if value is None:
        return []
    if not isinstance(value, list | tuple):
        raise Malformed(f"{what}'s {name!r} is {_kind(value)}, not a list")
    return list(value)


def text(obj: object, name: str, what: str) -> str:
    """``obj``'s string field ``name`` (``""`` when absent or ``null``).

    Raises:
        Malformed: the field holds something other than a string.
    """
    value = field(obj, name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise Malformed(f"{what}'s {name!r} is {_kind(value)}, not a string")
    return value


def count(obj: object, name: str, what: str) -> int | None:
    """``obj``'s token-count field ``name``: ``None`` when absent or ``null``.

    Raises:
        Malformed: not an integer (a boolean, a string, a float), negative, or
            above 10**12.
    """
    value = field(obj, name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _MAX_COUNT:
        raise Malformed(f"{what}'s {name!r} is {_kind(value)} {str(value)[:40]}, not a count")
    return value
