"""What the HTTP providers share: retries, error translation, keys, prices (SPEC M4, C3, S6).

Retries. Both vendor SDKs are built with their own retries off
(``max_retries=0``) and gg retries here instead, because:

1. one policy serves both providers, with delays a test can shrink to
   milliseconds (the SDKs' backoff constants are not settable);
2. a stream that drops or stalls halfway is retried too (the SDKs retry the
   opening of a request, never a stream being read);
3. when retries run out the error is gg's :class:`~gg.errors.ModelError`,
   naming the provider's status code and the server's own message.

Retried: HTTP 408, 409, 429 and 5xx; connection failures (refused, reset,
dropped mid-body); timeouts; an error event inside a stream. The wait is the
server's ``retry-after-ms`` / ``Retry-After`` when it sends one (capped at
:attr:`RetryPolicy.max_retry_after_s`), else exponential backoff with jitter.
Not retried: other 4xx answers (bad request, bad key, unknown model), which
would fail the same way again.

What this module does not promise: that a retried stream is not shown twice.
A progress callback may see the start of a reply again after a retry.

Secrets. Keys come from environment variables only (SPEC C3) and never reach
an error message: :func:`gg.text.redact` scrubs them from any text gg builds out of a
server's answer.
"""

from __future__ import annotations

import asyncio
import email.utils
import importlib
import json
import math
import os
import random
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, TypeAlias, TypeVar

from gg import bounded
from gg.config import ModelSettings
from gg.errors import ModelError, ModelUnavailable
from gg.models.base import RetryNotice, report_retry
from gg.models.boundary import MAX_ARGUMENT_CHARS
from gg.models.wire import Malformed
from gg.text import cut, redact

__all__ = [
    "Failure",
    "Prices",
    "RetryPolicy",
    "StreamIncomplete",
    "call_with_retries",
    "cost_of",
    "decode_arguments",
    "describe_sdk_error",
    "env_key",
    "estimate_usage",
    "parse_retry_after",
]

T = TypeVar("T")

Prices: TypeAlias = Mapping[str, Mapping[str, float]]
"""``{"model-name": {"input_per_mtok": float, "output_per_mtok": float}}``: price
per million tokens, in whatever currency unit the table is written in; optionally
``cache_read_per_mtok`` and ``cache_write_per_mtok`` (:mod:`gg.models.pricing`)."""

_MESSAGE_LIMIT = 300
"""Longest excerpt of a server's message quoted in an error, in characters."""

_MODEL_DEFAULTS = ModelSettings()
"""``[model]``'s defaults: the one source of the retry count and the request timeout."""

_UNAVAILABLE_STATUSES = frozenset({401, 403, 404})
"""Statuses that mean the model cannot be reached as configured (key, model name)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    """How hard a provider tries before giving up (SPEC S6 diagnosis on failure).

    The defaults of ``max_retries`` and ``timeout_s`` are ``[model]``'s
    (:class:`gg.config.ModelSettings`: 3 retries, 120 s).

    Attributes:
        max_retries: retries after the first attempt; ``0`` means one attempt only.
        timeout_s: seconds allowed for connecting, and for each wait on the
            server (a stall between two stream chunks counts); past it the
            attempt fails as a timeout.
        backoff_s: first backoff, in seconds; it doubles each retry.
        max_backoff_s: cap on one backoff, in seconds.
        max_retry_after_s: cap on a server's ``Retry-After``, in seconds; a
            longer one is waited for this long only.
        jitter: fraction (0..1) of each backoff removed at random, so many
            sessions do not retry in step.
    """

    max_retries: int = _MODEL_DEFAULTS.max_retries
    timeout_s: float = _MODEL_DEFAULTS.timeout_s
    backoff_s: float = 0.5
    max_backoff_s: float = 8.0
    max_retry_after_s: float = 60.0
    jitter: float = 0.25

    def __post_init__(self) -> None:
        if self.max_retries < 0 or self.timeout_s <= 0 or self.backoff_s < 0:
            raise ValueError(f"bad retry policy {self!r}")
        if not 0.0 <= self.jitter <= 1.0:
            raise ValueError(f"jitter must be within 0..1, not {self.jitter!r}")

    def delay(self, retry: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``retry`` (0-based).

        Args:
            retry: how many retries came before this one.
            retry_after: the server's requested wait in seconds, if it sent one.

        Returns:
            The server's wait (capped) when given, else
            ``min(backoff_s * 2**retry, max_backoff_s)`` less up to ``jitter`` of it.
        """
        if retry_after is not None and math.isfinite(retry_after) and retry_after >= 0:
            return min(retry_after, self.max_retry_after_s)
        base = min(self.backoff_s * 2.0 ** min(retry, 60), self.max_backoff_s)
        return base * (1.0 - self.jitter * random.random())


class StreamIncomplete(Exception):
    """A stream closed cleanly before the reply's end marker: treated as a dropped connection."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Failure:
    """A vendor error, described in provider-neutral terms.

    Attributes:
        message: what went wrong, for the operator (status code, server's words).
        retryable: whether trying again may help.
        retry_after: the server's requested wait in seconds, if any.
        unavailable: the model cannot be reached as configured (bad key, no
            such model): raised as :class:`~gg.errors.ModelUnavailable`.
    """

    message: str
    retryable: bool
    retry_after: float | None = None
    unavailable: bool = False


async def call_with_retries(
    attempt: Callable[[], Awaitable[T]],
    *,
    policy: RetryPolicy,
    describe: Callable[[Exception], Failure | None],
    provider: str,
    secrets: tuple[str, ...] = (),
) -> T:
    """Run ``attempt`` until it succeeds, retrying transient failures.

    Args:
        attempt: makes one whole request (and reads its whole stream).
        policy: retry count, timeout and backoff.
        describe: turns an exception into a :class:`Failure`, or ``None`` for
            an exception that is not the provider's (it propagates unchanged).
        provider: the provider's name, for the error.
        secrets: strings to scrub from error text (the API key).

    Each retry is reported first (:func:`gg.models.base.report_retry`: the attempt
    that failed, the wait, the cause), so the stream shows it (issue 12 item 2).

    Returns:
        What the first successful attempt returned.

    Raises:
        gg.errors.ModelUnavailable: the server refused the key or the model.
        gg.errors.ModelError: a non-retryable error, or retries exhausted; the
            message names the last status code and the server's message.
    """
    retry = 0
    while True:
        try:
            return await attempt()
        except Exception as exc:
            failure = describe(exc)
            if failure is None:
                raise
            if not failure.retryable or retry >= policy.max_retries:
                raise _model_error(failure, provider, retry + 1, secrets) from exc
            wait = policy.delay(retry, failure.retry_after)
            cause = redact(failure.message, secrets)
            report_retry(
                RetryNotice(provider=provider, attempt=retry + 1, wait_s=wait, cause=cause)
            )
            await asyncio.sleep(wait)
            retry += 1


def _model_error(
    failure: Failure, provider: str, attempts: int, secrets: tuple[str, ...]
) -> ModelError:
    text = f"{provider} request failed: {failure.message}"
    if failure.retryable:
        text += f" (gave up after {attempts} attempt{'s' if attempts != 1 else ''})"
    text = redact(text, secrets)
    if failure.unavailable:
        return ModelUnavailable(text, provider=provider)
    return ModelError(text, provider=provider)


def describe_sdk_error(exc: Exception, sdk: ModuleType, *, timeout_s: float) -> Failure | None:
    """Describe an ``openai`` or ``anthropic`` SDK exception (both share the shape).

    Args:
        exc: the exception raised by the SDK.
        sdk: the SDK module (``openai`` or ``anthropic``), for its error classes.
        timeout_s: the timeout in force, quoted in the message.

    Returns:
        A :class:`Failure`, or ``None`` when ``exc`` is neither the SDK's, nor
        the HTTP library's (``httpx2``/``httpx``, which some SDK stream
        readers let through unwrapped), nor a :class:`StreamIncomplete`, nor a
        ``RecursionError``/``ValueError`` (an answer too deep, with a too-long
        number, or not JSON, as the SDK parsed it: hostile input, issue 9 F4).
    """
    if isinstance(exc, StreamIncomplete):
        return Failure(message=f"the stream ended early ({exc})", retryable=True)
    if isinstance(exc, Malformed):
        return Failure(
            message=f"the server's answer is malformed: {_clip(str(exc))}", retryable=True
        )
    timeouts, transport = _http_errors()
    if isinstance(exc, (sdk.APITimeoutError, *timeouts)):
        return Failure(message=f"no answer within the {timeout_s:g}s timeout", retryable=True)
    if isinstance(exc, transport):  # raised unwrapped by some SDK stream readers
        return Failure(
            message=f"connection failed ({_clip(f'{type(exc).__name__}: {exc}')})", retryable=True
        )
    if isinstance(exc, sdk.APIConnectionError):
        cause = exc.__cause__
        why = f"{type(cause).__name__}: {cause}" if cause is not None else str(exc)
        return Failure(message=f"connection failed ({_clip(why)})", retryable=True)
    if isinstance(exc, sdk.APIStatusError):
        return _describe_status(exc)
    if isinstance(exc, sdk.APIError):
        message = _server_message(getattr(exc, "body", None)) or str(exc)
        return Failure(message=f"error in the stream: {_clip(message)}", retryable=True)
    if isinstance(exc, (RecursionError, ValueError, TypeError, AttributeError, KeyError)):
        # the SDK's json.loads of a hostile body, or its own reading of an odd shape
        return Failure(
            message=f"the server's answer is not readable ({type(exc).__name__}: "
            f"{_clip(str(exc))})",
            retryable=True,
        )
    return None


def _http_errors() -> tuple[tuple[type[Exception], ...], tuple[type[Exception], ...]]:
    """The HTTP library's (timeout, transport) error classes, for whichever is installed."""
    timeouts: list[type[Exception]] = []
    transport: list[type[Exception]] = []
    for name in ("httpx2", "httpx"):
        try:
            library = importlib.import_module(name)
        except ImportError:
            continue
        timeouts.append(library.TimeoutException)
        transport.append(library.TransportError)
    return tuple(timeouts), tuple(transport)


def _describe_status(exc: Any) -> Failure:
    status = int(exc.status_code)
    message = _server_message(getattr(exc, "body", None)) or str(getattr(exc, "message", exc))
    if status < 400:  # an error event inside a 200 stream (e.g. "overloaded_error")
        return Failure(message=f"error in the stream: {_clip(message)}", retryable=True)
    retryable = status in (408, 409, 429) or status >= 500
    headers = getattr(getattr(exc, "response", None), "headers", None) or {}
    return Failure(
        message=f"HTTP {status}: {_clip(message)}",
        retryable=retryable,
        retry_after=parse_retry_after(headers) if retryable else None,
        unavailable=status in _UNAVAILABLE_STATUSES,
    )


def _server_message(body: object) -> str | None:
    """The server's own words out of an error body, in either vendor's shape."""
    if isinstance(body, Mapping):
        inner = body.get("error")
        if isinstance(inner, Mapping):
            body = inner
        elif isinstance(inner, str):
            return inner
        message = body.get("message")
        if isinstance(message, str) and message:
            return message
        return json.dumps(
            bounded.jsonable(body, max_string=_MESSAGE_LIMIT, max_nodes=100), ensure_ascii=False
        )
    if isinstance(body, str) and body:
        return body
    return None


def _clip(text: str) -> str:
    return cut(bounded.scrub(" ".join(text[: _MESSAGE_LIMIT * 4].split())), _MESSAGE_LIMIT)


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """The wait a server asks for, in seconds.

    Args:
        headers: response headers (case-insensitive mapping as httpx gives).

    Returns:
        ``retry-after-ms`` / 1000, else ``Retry-After`` as seconds or as an
        HTTP date (seconds from now, at least 0), else ``None``.
    """
    for header, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(header)
        if value is None:
            continue
        try:
            seconds = float(value) / divisor
        except ValueError:
            continue
        return seconds if math.isfinite(seconds) and seconds >= 0 else None
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def env_key(variable: str, *, provider: str, required: bool) -> str | None:
    """Read an API key from the environment (SPEC C3).

    Args:
        variable: the environment variable, e.g. ``"OPENAI_API_KEY"``.
        provider: the provider's name, for the error.
        required: whether a missing or blank key is an error.

    Returns:
        The key, or ``None`` when it is not set and not required.

    Raises:
        gg.errors.ModelUnavailable: the key is required and not set; the
            message names the variable, never a value.
    """
    key = os.environ.get(variable, "").strip()
    if key:
        return key
    if required:
        raise ModelUnavailable(
            f"{provider}: the environment variable {variable!r} is not set; "
            f"export it with your API key (keys are read from the environment only)",
            provider=provider,
        )
    return None


def cost_of(model: str, input_tokens: int, output_tokens: int, prices: Prices | None) -> float:
    """Cost of one reply from a price table (0 when the model has no price).

    Args:
        model: the provider's model name, the table's key.
        input_tokens: prompt tokens.
        output_tokens: completion tokens.
        prices: ``{model: {"input_per_mtok": float, "output_per_mtok": float}}``.

    Returns:
        ``input_tokens * input_per_mtok / 1e6 + output_tokens * output_per_mtok / 1e6``.
    """
    price = (prices or {}).get(model)
    if not price:
        return 0.0
    per_in = float(price.get("input_per_mtok", 0.0))
    per_out = float(price.get("output_per_mtok", 0.0))
    return (input_tokens * per_in + output_tokens * per_out) / 1_000_000


CHARS_PER_TOKEN = 4
"""The estimate's rate: about four characters of English text or code per token."""


def estimate_usage(
    request: Mapping[str, Any], text: str, calls: Iterable[Sequence[str]] = ()
) -> tuple[int, int]:
    """Estimated ``(input, output)`` tokens of one exchange, for a server that sent no usage.

    One token per :data:`CHARS_PER_TOKEN` characters, rounded up: of the request's
    ``messages``, ``system`` and ``tools`` as JSON (input), and of the reply's text
    and its calls' names and arguments (output). No tokenizer of a remote model is
    at hand; the estimate is marked ``estimated`` on the stream (issue 12 item 2),
    and keeps ``max_tokens`` and ``max_cost`` meaningful (never 0 for a real reply).

    Args:
        request: the request's keyword arguments (``messages``, ``system``, ``tools``).
        text: the reply's text.
        calls: the reply's calls as ``[id, name, arguments]`` strings.

    Returns:
        ``(input_tokens, output_tokens)``, each at least 1.
    """
    sent = {key: request[key] for key in ("system", "messages", "tools") if key in request}
    chars_in = len(json.dumps(sent, ensure_ascii=False, default=str))
    chars_out = len(text) + sum(len(part) for call in calls for part in call[1:])
    return max(1, -(-chars_in // CHARS_PER_TOKEN)), max(1, -(-chars_out // CHARS_PER_TOKEN))


def decode_arguments(raw: str | None) -> tuple[dict[str, Any] | str, str | None]:
    r"""Decode a tool call's JSON arguments under :mod:`gg.bounded`'s bounds, never raising.

    The text is a model's (hostile input, issue 9 F4): longer than
    :data:`gg.models.boundary.MAX_ARGUMENT_CHARS`, nested deeper than
    :data:`gg.bounded.MAX_DEPTH` (found by a linear pre-scan, before any
    recursion), holding a number of :data:`gg.bounded.MAX_NUMBER_CHARS`
    characters or more, ``NaN``/``Infinity``, or not JSON at all, it is refused
    with the reason; no ``RecursionError``, ``MemoryError`` or ``ValueError`` escapes.

    Args:
        raw: the arguments as the provider sent them (a JSON text); blank or
            ``None`` means no arguments.

    Returns:
        ``(arguments, None)`` with a dict, or ``(raw, reason)`` when ``raw`` is
        not a bounded JSON object; the session makes the latter a ``bad_arguments``
        error turn (SPEC S5). A dict may still hold lone surrogates (``"\ud800"``
        escapes): :func:`gg.models.boundary.clean_reply` refuses those.
    """
    if raw is None or not raw.strip():
        return {}, None
    if len(raw) > MAX_ARGUMENT_CHARS:
        return raw, (
            f"the arguments are {len(raw)} characters long (gg takes at most {MAX_ARGUMENT_CHARS})"
        )
    try:
        value = bounded.loads(raw, what="a text")
    except bounded.BadJSON as exc:
        return raw, f"the arguments are not valid JSON: {exc}"
    if not isinstance(value, dict):
        return raw, f"arguments must be a JSON object, not {type(value).__name__}"
    return value, None
