"""Cutting and redacting text: the one truncation helper and the one redaction helper.

Everything gg shows or records of text it did not write (tool results, hook
output, a server's error message, a model's reply, a program's output) is
bounded by :func:`cut`, and everything it writes out of the process (the
stream, ``--json``, recordings, error messages) can be passed through
:func:`redact` first (SPEC C3: secrets never reach an output). Redaction
covers two kinds of secret: the values of secret-looking environment
variables (:func:`secret_values`), and text shaped like a credential
whatever its source (:data:`SECRET_SHAPES`: provider API keys, GitHub,
GitLab, Slack, AWS, Google, Stripe, Hugging Face, npm and PyPI tokens,
JSON Web Tokens, private key blocks, the credential in an ``Authorization``
header, a ``Bearer`` token or a URL's ``user:password@``), issue 12 item 8.

One marker form, wherever the cut falls: ``[… N characters cut …]`` (or
``bytes`` when the unit is bytes, :func:`cut_marker`). It sits after the head
(``keep="head"``), between head and tail (``"middle"``), or before the tail
(``"tail"``). The limit counts the marker in, so a cut text is never longer
than the limit once the limit is wider than the marker itself.

This module has no gg imports, so every layer (models, sandbox, tools, hooks,
stream) may use it.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal, TypeAlias

import re2  # type: ignore[import-untyped]

__all__ = [
    "REDACTED",
    "SECRET_SHAPES",
    "Keep",
    "Redactor",
    "cut",
    "cut_marker",
    "redact",
    "secret_values",
]

Keep: TypeAlias = Literal["head", "middle", "tail"]
"""Which part of a cut text is kept: the start, both ends, or the end."""

REDACTED = "[redacted]"
"""What a secret is replaced by."""

_B = r"(?:(?<=\\[nrtbf])|(?<![A-Za-z0-9_]))"
"""Where a token may start: not inside a word, or just after a JSON escape (``\\n``)."""
_E = r"(?![A-Za-z0-9_])"
"""Where a token ends: not inside a word."""
_DIGIT_AND_LETTER = r"(?=[A-Za-z_-]*[0-9])(?=[0-9_-]*[A-Za-z])"
"""Lookaheads: the token's body holds a digit and a letter (no ordinary hyphenated words)."""

SECRET_SHAPES: tuple[str, ...] = (
    # OpenAI (sk-, sk-proj-, sk-svcacct-, sk-admin-...), Anthropic (sk-ant-api03-...), and
    # other sk- keys (DeepSeek, OpenRouter sk-or-v1-...): 20+ key characters after sk-.
    rf"{_B}sk-{_DIGIT_AND_LETTER}(?=[A-Za-z0-9_-]*?[A-Za-z0-9]{{16}})[A-Za-z0-9_-]{{20,}}{_E}",
    # Stripe and the like: sk_live_..., rk_test_..., whsec_...
    rf"{_B}(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{{16,}}{_E}",
    rf"{_B}whsec_[A-Za-z0-9+/=]{{20,}}",
    # GitHub: classic (ghp_, gho_, ghu_, ghs_, ghr_) and fine-grained (github_pat_).
    rf"{_B}gh[pousr]_[A-Za-z0-9]{{30,}}{_E}",
    rf"{_B}github_pat_[A-Za-z0-9_]{{30,}}{_E}",
    # GitLab personal/deploy/runner tokens.
    rf"{_B}gl(?:pat|dt|rt|ptt|cbt|soat)-[A-Za-z0-9_-]{{20,}}{_E}",
    # Slack bot, user, app, refresh tokens (xoxb-, xoxp-, xoxa-, xoxe-, xapp-...).
    rf"{_B}xox[a-z](?:-[A-Za-z0-9]+){{2,}}{_E}",
    rf"{_B}xapp-[0-9]-[A-Za-z0-9-]{{20,}}{_E}",
    # AWS access key ids (AKIA long-term, ASIA temporary, and the other prefixes).
    rf"{_B}(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|APKA|AROA|ASCA)[A-Z0-9]{{16}}{_E}",
    # An AWS secret access key after its name: aws_secret_access_key = ...
    r"(?i:(?<=aws_secret_access_key)[\"']?\s*[:=]\s*[\"']?[A-Za-z0-9/+=]{40}(?![A-Za-z0-9/+=]))",
    # ... and in the JSON of the AWS CLI and STS: "SecretAccessKey": "..."
    r"(?i:(?<=secretaccesskey)[\"']?\s*[:=]\s*[\"']?[A-Za-z0-9/+=]{40}(?![A-Za-z0-9/+=]))",
    # Google API keys, Hugging Face, npm, PyPI upload tokens.
    rf"{_B}AIza[A-Za-z0-9_-]{{35}}{_E}",
    rf"{_B}hf_[A-Za-z0-9]{{30,}}{_E}",
    rf"{_B}npm_[A-Za-z0-9]{{36}}{_E}",
    rf"{_B}pypi-[A-Za-z0-9_-]{{50,}}",
    # JSON Web Tokens: three base64url parts, the first two JSON objects ({" -> eyJ).
    rf"{_B}eyJ[A-Za-z0-9_-]{{10,}}\.eyJ[A-Za-z0-9_-]{{10,}}\.[A-Za-z0-9_-]{{10,}}",
    # PEM and PGP private keys: from the BEGIN line through every key character after it,
    # END line or not (an excerpt cut before the END must not leave the key's start).
    # (no quote inside: a match never spans two JSON strings, so a redacted line still parses)
    r"-----BEGIN [A-Z ]*PRIVATE KEY(?: BLOCK)?-----(?:[A-Za-z0-9+/=\s\\:,.-]*?"
    r"-----END [A-Z ]*PRIVATE KEY(?: BLOCK)?-----|(?=[\s\\]*[A-Za-z0-9+/=]{16})"
    r"[A-Za-z0-9+/=\s\\:,.-]*)",
    # The credential of an Authorization header (any scheme), and any Bearer token.
    r"(?i:(?<=authorization)[\"']?\s*[:=]\s*[\"']?(?:(?:bearer|basic|token|bot)\s+)?"
    r"[A-Za-z0-9._~+/=-]{8,})",
    r"(?i:(?<![A-Za-z0-9])bearer\s+[A-Za-z0-9._~+/-]{16,}=*)",
    # A URL's password: scheme://user:password@host (the user may be empty, the password
    # may hold a slash)
    r"(?<=://)[^\s/:@\"']{0,100}:[^\s@\"']{3,200}(?=@)",
)
"""Regular expressions of text shaped like a credential (issue 12 item 8): whatever
matches is replaced by ``[redacted]``, wherever it came from. Each asks for the
family's own prefix and enough key characters that ordinary words, paths, hashes
(40-hex git ids, sha256) and UUIDs do not match; a header or URL keeps its name,
scheme and host, only the credential goes."""

_SHAPE = re.compile("|".join(f"(?:{shape})" for shape in SECRET_SHAPES))
_SHAPE_HINTS = (
    "sk-", "sk_", "rk_", "pk_", "whsec_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_",
    "glpat-", "gldt-", "glrt-", "glptt-", "glcbt-", "glsoat-", "xox", "xapp-", "AKIA", "ASIA",
    "ABIA", "ACCA", "AGPA", "AIDA", "AIPA", "ANPA", "ANVA", "APKA", "AROA", "ASCA", "AIza",
    "hf_", "npm_", "pypi-", "eyJ", "-----BEGIN ", "://",
)  # fmt: skip
_SHAPE_HINTS_ANY_CASE = ("aws_secret_access_key", "secretaccesskey", "authorization", "bearer")
"""Literals (the last ones in any case) of which every :data:`SECRET_SHAPES` match holds
one: text without any needs no scan of :data:`_SHAPE`, whose lookbehinds cost tens of
microseconds per stream line."""

_CASE_TWINS = (("\u0130", "i"), ("\u0131", "i"), ("\u017f", "s"), ("\u212a", "k"))
"""The non-ASCII characters ``re``'s IGNORECASE takes for an ASCII letter (every one:
``tests/test_redaction_prefilter.py`` scans all of Unicode), each with that letter:
``str.lower`` leaves U+0131 and U+017F alone and makes U+0130 two characters, so text
spelling a :data:`_SHAPE_HINTS_ANY_CASE` hint with them is one :data:`_SHAPE`'s
``(?i:...)`` matches and a plain ``lower()`` test would skip."""

_HINT_GUARDS = ("sk", "gh", "gl", "A")
"""Substrings several hints share: a hint is looked for only in text holding its guard."""


def _guard(hint: str) -> str:
    """The guard ``hint`` starts with, or ``hint`` itself (a substring of it either way)."""
    return next((g for g in _HINT_GUARDS if hint.startswith(g)), hint)


_HINT_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = tuple(
    (guard, tuple(h for h in _SHAPE_HINTS if _guard(h) == guard))
    for guard in dict.fromkeys(map(_guard, _SHAPE_HINTS))
)
""":data:`_SHAPE_HINTS` grouped under their guards (each hint under the guard it starts
with, or alone): one substring test per guard for text that holds none of them."""
assert {h for _, group in _HINT_GROUPS for h in group} == set(_SHAPE_HINTS)


def _hints_scanner() -> Any:
    """One RE2 search for every hint at once (the ``_ANY_CASE`` ones ignoring case).

    RE2 scans in linear time with no backtracking, so ASCII text is checked in one pass
    instead of one substring test per hint (a line holding ``A``, ``sk``, ``gh`` and
    ``gl`` took about 40: about 29 µs for 1 KB, against 3.5). For ASCII text, RE2's case
    folding is ASCII's, as ``str.lower`` is: the same answer as :data:`_HINT_GROUPS`.
    """
    options = re2.Options()
    options.log_errors = False
    exact = "|".join(re.escape(h) for h in _SHAPE_HINTS)
    any_case = "|".join(re.escape(h) for h in _SHAPE_HINTS_ANY_CASE)
    return re2.compile(f"{exact}|(?i:{any_case})", options)


_HINTS_ASCII = _hints_scanner()
"""The hint scan of ASCII text (every other text takes :data:`_HINT_GROUPS`)."""

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
    """``text`` with every secret replaced by ``[redacted]`` (SPEC C3, O1; issue 12 item 8).

    Args:
        text: any text, JSON included.
        secrets: the secrets (each also matched in its JSON-escaped forms);
            ones shorter than 8 characters are left alone. Default: the
            secret-looking environment variables (:func:`secret_values`).

    Returns:
        The redacted text: every secret value replaced, then every match of
        :data:`SECRET_SHAPES` (a credential-shaped token, whatever its source).
    """
    return Redactor(secrets)(text)


class Redactor:
    """:func:`redact` with its secrets prepared once, for a caller that redacts many texts.

    ``Redactor(secrets)(text) == redact(text, secrets)`` for every text: the same
    values (each secret in its JSON-escaped forms, longest first) and the same shapes
    (SPEC C3, O1). The stream redacts every line it writes with one (issue 11).

    Args:
        secrets: as for :func:`redact` (default: :func:`secret_values`).
    """

    __slots__ = ("_scan", "_values")

    def __init__(self, secrets: Iterable[str] | None = None) -> None:
        if secrets is None:
            values = secret_values()
        else:
            found = {f for s in secrets if len(s) >= _SECRET_MIN for f in _forms(s)}
            values = sorted(found, key=len, reverse=True)
        self._values = tuple(values)
        self._scan = _values_scanner(self._values)

    @property
    def values(self) -> tuple[str, ...]:
        """The values replaced, longest first (read-only: the RE2 scan is made from them)."""
        return self._values

    def __call__(self, text: str) -> str:
        """``text`` redacted (see :func:`redact`)."""
        if text.isascii():  # one RE2 pass for the values, one for the shapes' hints
            if self._scan is None or self._scan.search(text) is not None:
                text = self._replace_values(text)
            found = _HINTS_ASCII.search(text) is not None
            return _SHAPE.sub(_shape_replacement, text) if found else text
        text = self._replace_values(text)
        for guard, hints in _HINT_GROUPS:
            if guard in text and any(h in text for h in hints):
                return _SHAPE.sub(_shape_replacement, text)
        lower = _folded(text)
        for hint in _SHAPE_HINTS_ANY_CASE:
            if hint in lower:
                return _SHAPE.sub(_shape_replacement, text)
        return text

    def _replace_values(self, text: str) -> str:
        """``text`` with each value replaced, longest first (the values' own rule)."""
        for value in self._values:
            if value in text:
                text = text.replace(value, REDACTED)
        return text


@functools.lru_cache(maxsize=16)
def _values_scanner(values: tuple[str, ...]) -> Any:
    """An RE2 search for any of ``values`` (ASCII text only); ``None``: test them one by one.

    ``None`` for no values, for a non-ASCII one, and for more than RE2's memory budget
    holds (about 1 MB of values).
    A prefilter only: when it finds one, the values are replaced one by one as before.
    Kept per distinct set of values, so :func:`redact` (a new :class:`Redactor` per
    call, the environment's secrets) compiles it once.
    """
    if not values or not all(v.isascii() for v in values):
        return None
    options = re2.Options()
    options.log_errors = False
    try:
        return re2.compile("|".join(re.escape(v) for v in values), options)
    except re2.error:  # past RE2's memory budget (about 1 MB of values): test them one by one
        return None


def _folded(text: str) -> str:
    """``text`` lowered, its :data:`_CASE_TWINS` made their ASCII letters first.

    A hint is in the result exactly where ``re.search(hint, text, re.IGNORECASE)`` finds
    it (or more often: a superset only costs a scan).
    """
    for twin, letter in _CASE_TWINS:
        if twin in text:
            text = text.replace(twin, letter)
    return text.lower()


def _shape_replacement(match: re.Match[str]) -> str:
    """``[redacted]``, keeping the separator a header's or a key name's match starts with."""
    found = match.group(0)
    head = re.match(r"[\"']?\s*[:=]\s*[\"']?(?:(?:bearer|basic|token|bot)\s+)?", found, re.I)
    if head is not None and head.group(0) and found[0] in "\"':= \t":
        return head.group(0) + REDACTED
    if found[:7].lower() == "bearer " or found[:7].lower() == "bearer\t":
        return found[:7] + REDACTED
    return REDACTED
