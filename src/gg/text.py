"""Cutting and redacting text: the one truncation helper and the one redaction helper.

Everything gg shows or records of text it did not write (tool results, hook
output, a server's error message, a model's reply, a program's output) is
bounded by :func:`cut`, and everything it writes out of the process (the
stream, ``--json``, recordings, error messages) can be passed through
:func:`redact` first (SPEC C3: secrets never reach an output).

One marker form, wherever the cut falls: ``[… N characters cut …]`` (or
``bytes`` when the unit is bytes, :func:`cut_marker`). It sits after the head
(``keep="head"``), between head and tail (``"middle"``), or before the tail
(``"tail"``). The limit counts the marker in, so a cut text is never longer
than the limit once the limit is wider than the marker itself.

This module has no gg imports, so every layer (models, sandbox, tools, hooks,
stream) may use it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from typing import Literal, TypeAlias

__all__ = ["REDACTED", "Keep", "cut", "cut_marker", "redact", "secret_values"]

Keep: TypeAlias = Literal["head", "middle", "tail"]
"""Which part of a cut text is kept: the start, both ends, or the end."""

REDACTED = "[redacted]"
"""What a secret is replaced by."""

_SECRET_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL")
_SECRET_MIN = 8
"""Shorter values are not treated as secrets (replacing them would shred ordinary text)."""


def cut_marker(count: int, unit: str = "characters") -> str:
    """The marker that stands for ``count`` cut units: ``[… 1,234 characters cut …]``.

    Args:
        count: how many units were cut (>= 0).
        unit: what was counted, e.g. ``"characters"`` or ``"bytes"``.

    Returns:
        The marker text, without surrounding newlines.
    """
    return f"[… {count:,} {unit} cut …]"


def cut(text: str, limit: int, *, keep: Keep = "head") -> str:
    r"""``text`` cut to at most ``limit`` characters, the marker included.

    Args:
        text: any text.
        limit: the most characters returned; when it is narrower than the
            marker, only the marker is returned (no text is kept).
        keep: ``"head"`` keeps the start (``head [… N characters cut …]``),
            ``"middle"`` keeps both ends (``head\n[…]\ntail``), ``"tail"``
            keeps the end (``[…]\ntail``).

    Returns:
        ``text`` unchanged when it fits, else the kept part(s) and the marker.
    """
    if len(text) <= limit:
        return text
    kept = max(limit - len(cut_marker(len(text))) - 2, 0)  # 2: the separators
    marker = cut_marker(len(text) - kept)
    if keep == "head":
        return f"{text[:kept]} {marker}" if kept else marker
    if keep == "tail":
        return f"{marker}\n{text[len(text) - kept :]}" if kept else marker
    head = kept - kept // 2
    tail = text[len(text) - kept // 2 :] if kept // 2 else ""
    return f"{text[:head]}\n{marker}\n{tail}" if kept else marker


def secret_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """The secret-looking values of an environment, in every form gg may write them.

    A value is secret when its variable's name holds KEY, TOKEN, SECRET,
    PASSWORD or CREDENTIAL and it has at least 8 characters. Each is listed
    as is and in the forms JSON writes it (a quote, a backslash or a
    non-ASCII character is escaped there), longest first.

    Args:
        environ: the variables (default: ``os.environ``).

    Returns:
        The values to redact, longest first.
    """
    found: set[str] = set()
    for name, value in (os.environ if environ is None else environ).items():
        if len(value) >= _SECRET_MIN and any(m in name.upper() for m in _SECRET_MARKERS):
            found.update(_forms(value))
    return sorted(found, key=len, reverse=True)


def _forms(secret: str) -> tuple[str, ...]:
    return secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]


def redact(text: str, secrets: Iterable[str] | None = None) -> str:
    """``text`` with every secret replaced by ``[redacted]`` (SPEC C3).

    Args:
        text: any text, JSON included.
        secrets: the secrets (each also matched in its JSON-escaped forms);
            ones shorter than 8 characters are left alone. Default: the
            secret-looking environment variables (:func:`secret_values`).

    Returns:
        The redacted text.
    """
    if secrets is None:
        values = secret_values()
    else:
        found = {f for s in secrets if len(s) >= _SECRET_MIN for f in _forms(s)}
        values = sorted(found, key=len, reverse=True)
    for value in values:
        if value in text:
            text = text.replace(value, REDACTED)
    return text
