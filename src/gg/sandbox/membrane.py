"""The host side of the membrane: gg's end of the pipe every SDK call crosses (SPEC M2, M3).

The program writes JSON lines on an inherited pipe (fd 3 in the sandbox) and
reads answers on another (fd 4); its stdout and stderr are a separate pipe,
so nothing it prints can pass for a message. Messages, one per line::

    guest -> gg  {"kind": "ready"}                              boot.py, once, first
    guest -> gg  {"kind": "compile_error", "message": str,      runner.py, instead of
                  "line": int | null, "column": int | null}      any call and the result
    guest -> gg  {"id": 7, "kind": "tool" | "ending", "name": str, "arguments": {...}}
    gg -> guest  {"id": 7, "ok": bool, "value": any, "error": str, "error_type": str}
    guest -> gg  {"kind": "result", "returned": str | null, "error": str | null,
                  "limit": str | null}                          the runner, once, last

Every message is hostile input, parsed under bounds (issue 9, item 6): a line
of at most ``Limits.message_bytes`` bytes, at most ``Limits.membrane_bytes``
bytes of messages per program, strict UTF-8, then :func:`gg.bounded.loads`
(nesting depth, number length, finite numbers). Big lines are parsed off the
event loop.

What gg does with a bad message:

- answered ``bad_call`` (an exception in the program, which may catch it): a
  call naming a tool this run does not offer or an ending name that is not
  one; a call whose arguments (or name) hold a lone surrogate, i.e. text that
  is not valid Unicode; and a line that starts as the SDK frames a call
  (``{"id":N,"kind":"tool"``...) but breaks a parsing bound (too deep, a
  number too long, NaN, not JSON). Each counts as a call.
- the program is ended with ``limit == "membrane"`` (a runtime error): a line
  too long or cut off, total bytes past the bound, not UTF-8, any other line
  that is not a bounded JSON object, missing or extra keys or a value of the
  wrong type, an unknown ``kind``, a second ``ready`` or ``result``, a
  ``compile_error`` after a call, a message after the result, or more than
  ``Limits.calls`` calls. A forged ``result`` line therefore cannot hide a
  later error: the runner's own result would be a second one.

Text that flows back from the program (its result's ``returned`` and
``error``, the compile message) has lone surrogates replaced by U+FFFD and is
cut at :data:`MAX_RESULT_CHARS`; answers are sent as valid Unicode. None of
this raises in gg.

Calls are answered one at a time, in the order they arrive, so the ending
declared last in the program is the one the handler sees last (SPEC S8).
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from gg import bounded
from gg.endings import canonical_call, is_ending_name
from gg.errors import ToolError
from gg.sandbox.limits import Limits
from gg.sandbox.pipes import PipeReader, PipeWriter
from gg.text import cut

__all__ = ["CallAnswer", "CallRequest", "CompileReport", "Handler", "Membrane", "Result"]

_RESULT_LIMITS = {None, "memory", "processes", "file_size"}
MAX_RESULT_CHARS = 20_000
"""The most characters of a result's ``returned`` or ``error`` (or a compile message) kept."""
_OFF_LOOP_BYTES = 65_536
"""Lines longer than this are parsed in a worker thread, so gg's event loop stays free."""
_SDK_CALL = re.compile(rb'\{"id":(\d{1,15}),"kind":"(?:tool|ending)",')
"""How both SDKs (runner.py, runner.js) start a call's line: its id can be read even when
the rest breaks a bound, so the call is answered instead of the program being ended."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CallRequest:
    """One SDK call that crossed the membrane, validated.

    Attributes:
        kind: ``"tool"`` for a registry tool, ``"ending"`` for an ending call.
        name: the tool's registry name, or the canonical ending name
            (``finish``, ``approve``, ``request_changes``) whatever the language.
        arguments: the decoded JSON object of arguments, by name: nested at most
            :data:`gg.bounded.MAX_DEPTH` deep, numbers bounded and finite, every
            string valid Unicode. Not checked against the tool's schema: that is the
            handler's job.
    """

    kind: Literal["tool", "ending"]
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class CallAnswer:
    """The handler's answer; not ``ok`` raises in the program, with ``error`` as the message.

    Attributes:
        ok: whether the call succeeded (an accepted ending is ``ok`` with ``value=None``).
        value: the result, JSON-serializable (anything else is sent as ``str(value)``;
            lone surrogates in its strings are sent as U+FFFD).
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
    """The runner's last message: how the program ended, by its own account.

    Valid Unicode, each text at most :data:`MAX_RESULT_CHARS` characters.
    """

    returned: str | None
    error: str | None
    limit: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class CompileReport:
    """The guest's compiler refused the program (Python): the message, and where (1-based)."""

    message: str
    line: int | None
    column: int | None


class Violation(Exception):
    """A message that breaks the protocol; the program is ended with limit ``membrane``."""


def _cut(text: str | None) -> str | None:
    if text is None:
        return None
    return cut(bounded.scrub(text), MAX_RESULT_CHARS, keep="middle")


def _parse(line: bytes) -> tuple[dict[str, Any], bool]:
    """One line (without its newline) as a JSON object, and whether it may hold surrogates.

    Raises:
        Violation: not UTF-8.
        bounded.BadJSON: breaks a bound, is not JSON, or is not an object.
    """
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Violation(f"a message that is not UTF-8 (at byte {exc.start})") from None
    message = bounded.loads(text)
    if not isinstance(message, dict):
        raise bounded.BadJSON(f"a message that is not a JSON object (a {type(message).__name__})")
    return message, bounded.may_hold_surrogates(text)


def _result(message: dict[str, Any]) -> Result:
    if set(message) != {"kind", "returned", "error", "limit"}:
        raise Violation("a result message of the wrong shape")
    returned, error, limit = message["returned"], message["error"], message["limit"]
    if not all(v is None or isinstance(v, str) for v in (returned, error, limit)):
        raise Violation("a result message of the wrong shape")
    if limit not in _RESULT_LIMITS:
        raise Violation(f"a result naming an unknown limit {bounded.scrub(limit)!r}")
    return Result(returned=_cut(returned), error=_cut(error), limit=limit)


def _compile_report(message: dict[str, Any]) -> CompileReport:
    if set(message) != {"kind", "message", "line", "column"}:
        raise Violation("a compile_error message of the wrong shape")
    text, line, column = message["message"], message["line"], message["column"]
    where_ok = all(
        v is None or (isinstance(v, int) and not isinstance(v, bool) and v >= 0)
        for v in (line, column)
    )
    if not isinstance(text, str) or not where_ok:
        raise Violation("a compile_error message of the wrong shape")
    return CompileReport(message=_cut(text) or "", line=line, column=column)


def _request(message: dict[str, Any]) -> tuple[int, CallRequest]:
    if set(message) != {"id", "kind", "name", "arguments"}:
        keys = [bounded.scrub(k) for k in message]
        raise Violation(f"a message of unknown shape (keys {sorted(keys)!r})")
    ident, kind, name, args = (message[k] for k in ("id", "kind", "name", "arguments"))
    if not isinstance(ident, int) or isinstance(ident, bool) or ident < 0:
        raise Violation("a call whose id is not a non-negative integer")
    if kind not in ("tool", "ending"):
        raise Violation(f"a call of unknown kind {bounded.scrub(str(kind))[:100]!r}")
    if not isinstance(name, str) or not 0 < len(name) <= 200:
        raise Violation("a call whose name is not a short string")
    if not isinstance(args, dict):
        raise Violation("a call whose arguments are not a JSON object")
    return ident, CallRequest(kind=kind, name=name, arguments=args)


def _describe(exc: BaseException) -> str:
    try:
        return bounded.scrub(f"{type(exc).__name__}: {exc}")[:500]
    except Exception:  # an exception whose str() fails
        return type(exc).__name__


def _refusal(reason: str) -> CallAnswer:
    return CallAnswer(ok=False, error=f"gg refused this call: {reason}", error_type="bad_call")


class Membrane:
    """Serves one program's membrane: validates, counts, answers (one call at a time).

    Args:
        tools: the names of the registry tools this run offers.
        handler: answers calls; ``None`` (shell commands, the probe) means any call
            is a violation.
        limits: ``message_bytes``, ``membrane_bytes`` and ``calls`` are enforced here.

    After :meth:`serve` returns, read :attr:`ready`, :attr:`result`,
    :attr:`compile_report` (the guest's compiler refused the program),
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
        self.compile_report: CompileReport | None = None
        self.violation: str | None = None
        self.calls = 0
        self.received = 0
        """Bytes of messages read so far (newlines included)."""
        self.closed = False
        self.handler_seconds = 0.0
        self.handler_started: float | None = None
        self.idle = asyncio.Event()
        self.idle.set()

    def fresh(self) -> Membrane:
        """A new membrane with this one's tools, handler and limits (for a program run anew)."""
        return Membrane(tools=sorted(self._tools), handler=self._handler, limits=self._limits)

    @property
    def message_bytes(self) -> int:
        """The longest message accepted, in bytes, not counting its newline."""
        return self._limits.message_bytes

    async def serve(self, reader: PipeReader, writer: PipeWriter | None) -> None:
        """Read and answer messages until EOF or a violation (then :attr:`violation` is set).

        Never raises for anything the program sent; an exception of the handler (other
        than ``ToolError``) propagates.
        """
        try:
            while (line := await self._next_line(reader)) is not None:
                if not await self._handle(line, writer):
                    return
        except Violation as exc:
            self.violation = f"the program sent gg {exc}"

    async def _next_line(self, reader: PipeReader) -> bytes | None:
        """The next line without its newline; ``None`` at a clean EOF."""
        limit = self._limits.message_bytes
        try:
            line = await reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:
            self.closed = True
            if exc.partial:
                raise Violation("a message cut off by the end of the channel") from None
            return None
        except asyncio.LimitOverrunError:
            raise Violation(f"a message longer than {limit} bytes (the limit)") from None
        if len(line) - 1 > limit:
            raise Violation(f"a message longer than {limit} bytes (the limit)")
        self.received += len(line)
        if self.received > self._limits.membrane_bytes:
            raise Violation(
                f"more than {self._limits.membrane_bytes} bytes of messages (the limit for "
                "one program)"
            )
        return line[:-1]

    async def _handle(self, line: bytes, writer: PipeWriter | None) -> bool:
        """Parse and act on one line; ``False`` when the answers can no longer be sent."""
        try:
            if len(line) > _OFF_LOOP_BYTES:
                message, maybe = await asyncio.to_thread(_parse, line)
            else:
                message, maybe = _parse(line)
        except bounded.BadJSON as exc:
            framed = _SDK_CALL.match(line)
            if framed is None:
                raise Violation(str(exc)) from None
            return await self._refuse(int(framed[1]), f"the program sent gg {exc}", writer)
        return await self._take(message, maybe, writer)

    def _expect_running(self) -> None:
        if not self.ready:
            raise Violation("a message before the sandbox was ready")
        if self.result is not None or self.compile_report is not None:
            raise Violation("a message after its result")

    async def _take(
        self, message: dict[str, Any], maybe_surrogates: bool, writer: PipeWriter | None
    ) -> bool:
        kind = message.get("kind")
        if kind == "ready":
            if self.ready or set(message) != {"kind"}:
                raise Violation("a second 'ready' message")
            self.ready = True
            return True
        self._expect_running()
        if kind == "result":
            self.result = _result(message)
            return True
        if kind == "compile_error":
            if self.calls:
                raise Violation("a compile_error message after the program made calls")
            self.compile_report = _compile_report(message)
            return True
        ident, request = _request(message)
        bad = None
        if maybe_surrogates:
            bad = bounded.lone_surrogate(request.name, "the call's name") or bounded.lone_surrogate(
                request.arguments, "arguments"
            )
        if bad is not None:
            return await self._refuse(ident, (
                f"it holds text that is not valid Unicode (a lone surrogate {bad}); send "
                "valid text only (encode binary data, for example as base64)"), writer)  # fmt: skip
        self._count()
        if self._handler is None or writer is None:
            raise Violation("a call where none is possible")
        answer = await self._answer(request)
        return await self._send(writer, ident, answer)

    def _count(self) -> None:
        self.calls += 1
        if self.calls > self._limits.calls:
            raise Violation(f"more than {self._limits.calls} calls (the limit)")

    async def _refuse(self, ident: int, reason: str, writer: PipeWriter | None) -> bool:
        """Answer a call gg will not take with ``bad_call`` (it counts as a call)."""
        self._expect_running()
        self._count()
        if self._handler is None or writer is None:
            raise Violation(f"a call where none is possible ({reason})")
        return await self._send(writer, ident, _refusal(reason))

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
            answer = CallAnswer(ok=False, error=_describe(exc), error_type="tool_error")
        finally:
            self.handler_seconds += time.monotonic() - self.handler_started
            self.handler_started = None
            self.idle.set()
        if not isinstance(answer, CallAnswer):
            raise TypeError(f"the sandbox handler returned {type(answer).__name__}, not CallAnswer")
        return answer

    async def _send(self, writer: PipeWriter, ident: int, answer: CallAnswer) -> bool:
        message = {"id": ident, "ok": answer.ok, "value": answer.value}
        message |= {"error": answer.error, "error_type": answer.error_type}
        try:
            line = bounded.dumps(message)
        except Exception as exc:  # a value JSON cannot carry (or whose str() fails)
            message |= {"ok": False, "value": None, "error_type": "tool_error"}
            message["error"] = f"gg could not send the result: {_describe(exc)}"
            line = bounded.dumps(message)
        try:
            writer.write(line.encode("utf-8") + b"\n")
            await writer.drain()
        except (ConnectionError, OSError):
            return False  # the program is gone or closed its end; nothing more to answer
        return True
