"""The host side of the membrane: gg's end of the pipe every SDK call crosses (SPEC M2, M3).

The program writes JSON lines on an inherited pipe (fd 3 in the sandbox) and
reads answers on another (fd 4); its stdout and stderr are a separate pipe,
so nothing it prints can pass for a message. Messages, one per line::

    guest -> gg  {"kind": "ready"}                              boot.py, once, first
    guest -> gg  {"id": 7, "kind": "tool" | "ending", "name": str, "arguments": {...}}
    gg -> guest  {"id": 7, "ok": bool, "value": any, "error": str, "error_type": str}
    guest -> gg  {"kind": "result", "returned": str | null, "error": str | null,
                  "limit": str | null}                          the runner, once, last

gg validates every line. A call naming a tool this run does not offer, or
an ending name that is not one, is answered ``bad_call`` (an exception in the
program, which may catch it). Anything else that is wrong ends the program
with ``limit == "membrane"``: a line longer than ``Limits.message_bytes``,
not UTF-8, not a JSON object, with missing or extra keys or a value of the
wrong type, an unknown ``kind``, a second ``ready`` or ``result``, a call
after the result, or more than ``Limits.calls`` calls. A forged ``result``
line therefore cannot hide a later error: the runner's own result would be
a second one. None of this raises in gg.

Calls are answered one at a time, in the order they arrive, so the ending
declared last in the program is the one the handler sees last (SPEC S8).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from gg.endings import canonical_call, is_ending_name
from gg.errors import ToolError
from gg.sandbox.limits import Limits

__all__ = ["CallAnswer", "CallRequest", "Handler", "Membrane", "Result"]

_RESULT_LIMITS = {None, "memory", "processes", "file_size"}


@dataclass(frozen=True, slots=True, kw_only=True)
class CallRequest:
    """One SDK call that crossed the membrane, validated.

    Attributes:
        kind: ``"tool"`` for a registry tool, ``"ending"`` for an ending call.
        name: the tool's registry name, or the canonical ending name
            (``finish``, ``approve``, ``request_changes``) whatever the language.
        arguments: the decoded JSON object of arguments, by name. Not checked
            against the tool's schema: that is the handler's job.
    """

    kind: Literal["tool", "ending"]
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class CallAnswer:
    """The handler's answer; not ``ok`` raises in the program, with ``error`` as the message.

    Attributes:
        ok: whether the call succeeded (an accepted ending is ``ok`` with ``value=None``).
        value: the result, JSON-serializable (anything else is sent as ``str(value)``).
        error: the message the program's exception carries.
        error_type: ``tool_error`` -> ``gg.ToolError``, ``ending_refused`` ->
            ``gg.EndingRefused``, ``bad_call`` -> ``gg.BadCall``.
    """

    ok: bool
    value: Any = None
    error: str = ""
    error_type: Literal["tool_error", "ending_refused", "bad_call"] = "tool_error"


Handler: TypeAlias = Callable[[CallRequest], Awaitable[CallAnswer]]
"""Answers one call. May raise :class:`gg.errors.ToolError` (sent as a ``tool_error``);
any other exception ends the program and propagates out of ``Sandbox.run``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Result:
    """The runner's last message: how the program ended, by its own account."""

    returned: str | None
    error: str | None
    limit: str | None


class Violation(Exception):
    """A message that breaks the protocol; the program is ended with limit ``membrane``."""


def _decode(line: bytes) -> dict[str, Any]:
    def no_constants(name: str) -> Any:
        raise Violation(f"a JSON constant {name} (not allowed)")

    try:
        text = line.decode("utf-8")
        message = json.loads(text, parse_constant=no_constants)
    except UnicodeDecodeError as exc:
        raise Violation("a message that is not UTF-8") from exc
    except json.JSONDecodeError as exc:
        raise Violation(f"a message that is not JSON ({exc.msg} at column {exc.colno})") from exc
    if not isinstance(message, dict):
        raise Violation("a message that is not a JSON object")
    return message


def _result(message: dict[str, Any]) -> Result:
    if set(message) != {"kind", "returned", "error", "limit"}:
        raise Violation("a result message of the wrong shape")
    returned, error, limit = message["returned"], message["error"], message["limit"]
    if not all(v is None or isinstance(v, str) for v in (returned, error, limit)):
        raise Violation("a result message of the wrong shape")
    if limit not in _RESULT_LIMITS:
        raise Violation(f"a result naming an unknown limit {limit!r}")
    return Result(returned=returned, error=error, limit=limit)


def _request(message: dict[str, Any]) -> tuple[int, CallRequest]:
    if set(message) != {"id", "kind", "name", "arguments"}:
        raise Violation(f"a message of unknown shape (keys {sorted(message)!r})")
    ident, kind, name, args = (message[k] for k in ("id", "kind", "name", "arguments"))
    if not isinstance(ident, int) or isinstance(ident, bool) or ident < 0:
        raise Violation("a call whose id is not a non-negative integer")
    if kind not in ("tool", "ending"):
        raise Violation(f"a call of unknown kind {kind!r}")
    if not isinstance(name, str) or not 0 < len(name) <= 200:
        raise Violation("a call whose name is not a short string")
    if not isinstance(args, dict):
        raise Violation("a call whose arguments are not a JSON object")
    return ident, CallRequest(kind=kind, name=name, arguments=args)


class Membrane:
    """Serves one program's membrane: validates, counts, answers (one call at a time).

    Args:
        tools: the names of the registry tools this run offers.
        handler: answers calls; ``None`` (shell commands, the probe) means any call
            is a violation.
        limits: ``message_bytes`` and ``calls`` are enforced here.

    After :meth:`serve` returns, read :attr:`ready`, :attr:`result`,
    :attr:`violation` (why the program must be ended, or ``None``), :attr:`calls`,
    :attr:`closed` (the program's end of the pipe reached EOF) and
    :attr:`handler_seconds` (time spent in the handler).
    """

    def __init__(self, *, tools: Sequence[str], handler: Handler | None, limits: Limits) -> None:
        self._tools = frozenset(tools)
        self._handler = handler
        self._limits = limits
        self.ready = False
        self.result: Result | None = None
        self.violation: str | None = None
        self.calls = 0
        self.closed = False
        self.handler_seconds = 0.0
        self.handler_started: float | None = None
        self.idle = asyncio.Event()
        self.idle.set()

    @property
    def message_bytes(self) -> int:
        """The longest message accepted, in bytes, not counting its newline."""
        return self._limits.message_bytes

    async def serve(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter | None
    ) -> None:
        """Read and answer messages until EOF or a violation (then :attr:`violation` is set)."""
        try:
            while True:
                try:
                    line = await reader.readuntil(b"\n")
                except asyncio.IncompleteReadError as exc:
                    self.closed = True
                    if exc.partial:
                        raise Violation("a message cut off by the end of the channel") from None
                    return
                except asyncio.LimitOverrunError:
                    raise Violation(
                        f"a message longer than {self._limits.message_bytes} bytes"
                    ) from None
                if len(line) - 1 > self._limits.message_bytes:
                    raise Violation(f"a message longer than {self._limits.message_bytes} bytes")
                if not await self._take(_decode(line), writer):
                    return
        except Violation as exc:
            self.violation = f"the program sent gg {exc}"

    async def _take(self, message: dict[str, Any], writer: asyncio.StreamWriter | None) -> bool:
        kind = message.get("kind")
        if kind == "ready":
            if self.ready or set(message) != {"kind"}:
                raise Violation("a second 'ready' message")
            self.ready = True
            return True
        if not self.ready:
            raise Violation("a message before the sandbox was ready")
        if self.result is not None:
            raise Violation("a message after its result")
        if kind == "result":
            self.result = _result(message)
            return True
        ident, request = _request(message)
        self.calls += 1
        if self.calls > self._limits.calls:
            raise Violation(f"more than {self._limits.calls} calls")
        if self._handler is None or writer is None:
            raise Violation("a call where none is possible")
        answer = await self._answer(request)
        return await self._send(writer, ident, answer)

    async def _answer(self, request: CallRequest) -> CallAnswer:
        if request.kind == "tool" and request.name not in self._tools:
            offered = ", ".join(sorted(self._tools)) or "none"
            return CallAnswer(
                ok=False,
                error=f"gg has no tool named {request.name!r}; the tools are: {offered}",
                error_type="bad_call",
            )
        if request.kind == "ending":
            if not is_ending_name(request.name):
                return CallAnswer(
                    ok=False,
                    error=f"{request.name!r} is not an ending call",
                    error_type="bad_call",
                )
            request = CallRequest(
                kind="ending", name=canonical_call(request.name), arguments=request.arguments
            )
        assert self._handler is not None
        self.handler_started = time.monotonic()
        self.idle.clear()
        try:
            answer = await self._handler(request)
        except ToolError as exc:
            answer = CallAnswer(ok=False, error=str(exc), error_type="tool_error")
        finally:
            self.handler_seconds += time.monotonic() - self.handler_started
            self.handler_started = None
            self.idle.set()
        if not isinstance(answer, CallAnswer):
            raise TypeError(f"the sandbox handler returned {type(answer).__name__}, not CallAnswer")
        return answer

    async def _send(self, writer: asyncio.StreamWriter, ident: int, answer: CallAnswer) -> bool:
        message = {"id": ident, "ok": answer.ok, "value": answer.value}
        message |= {"error": answer.error, "error_type": answer.error_type}
        try:
            line = json.dumps(message, allow_nan=False, default=str)
        except ValueError as exc:
            message |= {"ok": False, "value": None, "error_type": "tool_error"}
            message["error"] = f"gg could not send the result: {exc}"
            line = json.dumps(message, default=str)
        try:
            writer.write(line.encode() + b"\n")
            await writer.drain()
        except (ConnectionError, OSError):
            return False  # the program is gone or closed its end; nothing more to answer
        return True
