"""One MCP server's connection for a run, on the official ``mcp`` SDK (the ``[mcp]`` extra).

A :class:`Connection` owns one server: it starts it (a stdio process from
:mod:`gg.mcp.process`, or a streamable-HTTP session), initializes an SDK
:class:`mcp.ClientSession`, lists the server's tools, and then serves
:meth:`Connection.call_tool` until :meth:`Connection.aclose`. Every SDK context
(transport, session, their task groups) is entered and left in one background task
of its own, so a run's cancellation never lands inside the SDK's cancel scopes.

stdio messages are read line by line with a bound (:data:`gg.mcp.process.LINE_LIMIT`);
a line that is not JSON-RPC is dropped. Nothing a call does
can hang gg: each call races the per-call timeout and the server's end (the process
exited, the session broke), and whichever comes first is a :class:`~gg.errors.ToolError`
naming the server and why.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import ClientSession
from mcp import types as mt
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.message import SessionMessage

from gg.config import McpServerSettings
from gg.errors import ConfigError, ToolError
from gg.mcp.process import ServerProcess, start_process
from gg.sandbox import Sandbox
from gg.text import cut

__all__ = ["Connection", "RemoteTool"]

_MAX_TOOLS = 500
_MAX_PAGES = 50
_ERROR_CAP = 2_000
_CLOSE_S = 5.0
_EXIT_WAIT_S = 1.0
_HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")

Streams = tuple[
    MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]
]


class RemoteTool:
    """A tool as the server listed it: its name, description and input schema."""

    def __init__(self, name: str, description: str, schema: object) -> None:
        self.name = name
        self.description = description
        self.schema = schema


def headers_from_env(server: McpServerSettings) -> dict[str, str]:
    """The server's HTTP headers with ``${NAME}`` replaced from gg's environment.

    Raises:
        ConfigError: a named variable is not set.
    """
    out: dict[str, str] = {}
    for key, value in server.headers.items():
        missing = [m for m in _VAR.findall(value) if m not in os.environ]
        if missing:
            raise ConfigError(
                f"MCP server {server.name!r}: header {key!r} needs the environment variable "
                f"{missing[0]}, which is not set",
                key="tools.mcp.headers",
            )
        out[key] = _VAR.sub(lambda m: os.environ[m.group(1)], value)
    return out


def result_text(result: mt.CallToolResult) -> str:
    """The text of a tool result: its text blocks, other blocks named, or its structured part."""
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, mt.TextContent):
            parts.append(block.text)
        elif isinstance(block, mt.ImageContent | mt.AudioContent):
            parts.append(f"[{block.type}: {block.mime_type}, {len(block.data)} base64 characters]")
        elif isinstance(block, mt.ResourceLink):
            parts.append(f"[resource link: {block.uri}]")
        elif isinstance(block, mt.EmbeddedResource):
            res = block.resource
            text = res.text if isinstance(res, mt.TextResourceContents) else "(binary)"
            parts.append(f"[resource {res.uri}]\n{text}")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, default=str))
    return "\n".join(parts) if parts else "(no output)"


async def _read_lines(proc: asyncio.subprocess.Process, send: MemoryObjectSendStream[Any]) -> None:
    """Server stdout -> SDK: one JSON-RPC message a line; ends at EOF or an over-long line."""
    assert proc.stdout is not None
    async with send:
        while True:
            try:
                line = await proc.stdout.readline()
            except (ValueError, asyncio.LimitOverrunError):
                return  # a line past the bound: the connection ends (calls fail, gg goes on)
            if not line:
                return
            if not line.strip():
                continue
            try:
                message = mt.jsonrpc_message_adapter.validate_json(line, by_name=False)
            except ValueError:
                continue  # not JSON-RPC (a server's stray print): dropped, nothing logged
            await send.send(SessionMessage(message))


async def _write_lines(
    proc: asyncio.subprocess.Process, receive: MemoryObjectReceiveStream[SessionMessage]
) -> None:
    """SDK -> server stdin, one JSON line per message; ends when the pipe breaks."""
    assert proc.stdin is not None
    async with receive:
        async for message in receive:
            data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
            try:
                proc.stdin.write(data.encode() + b"\n")
                await proc.stdin.drain()
            except (OSError, RuntimeError):
                return


@contextlib.asynccontextmanager
async def _stdio_streams(proc: asyncio.subprocess.Process) -> AsyncIterator[Streams]:
    """The SDK's stream pair over a server process's stdin and stdout."""
    read_send, read_receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_receive = anyio.create_memory_object_stream[SessionMessage](0)
    async with anyio.create_task_group() as tg:
        tg.start_soon(_read_lines, proc, read_send)
        tg.start_soon(_write_lines, proc, write_receive)
        try:
            yield read_receive, write_send
        finally:
            tg.cancel_scope.cancel()
            for stream in (read_receive, write_send):
                await stream.aclose()


def _why(exc: BaseException) -> str:
    """One line for an exception, a group's first leaf: ``Type: message``, bounded."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = " ".join(str(exc).split()) or "(no message)"
    return cut(f"{type(exc).__name__}: {text}", _ERROR_CAP)


async def _list(session: ClientSession) -> list[RemoteTool]:
    """Every tool the server lists, page by page (at most 500 tools, 50 pages)."""
    tools: list[mt.Tool] = []
    cursor: str | None = None
    for _ in range(_MAX_PAGES):  # a server that pages forever: the start timeout ends it
        params = None if cursor is None else mt.PaginatedRequestParams(cursor=cursor)
        page = await session.list_tools(params=params)
        tools += page.tools
        if len(tools) > _MAX_TOOLS:
            raise ValueError(f"it lists more than {_MAX_TOOLS} tools")
        cursor = page.next_cursor
        if not cursor:
            break
    return [RemoteTool(t.name, t.description or "", t.input_schema) for t in tools]


class Connection:
    """One configured MCP server, connected for one run (see the module docstring).

    Args:
        server: its ``[[tools.mcp]]`` entry.
        workspace: the run's workspace (a stdio server's working directory).
        sandbox: the run's sandbox, made on first use (a sandboxed stdio server runs there).
    """

    def __init__(
        self, server: McpServerSettings, *, workspace: Path, sandbox: Callable[[], Sandbox]
    ) -> None:
        self.server = server
        self._workspace, self._sandbox = workspace, sandbox
        self._process: ServerProcess | None = None
        self._session: ClientSession | None = None
        self._headers: dict[str, str] = {}
        self.tools: list[RemoteTool] = []
        """The server's tools, once :meth:`start` returned."""
        self._ready, self._ended, self._closing = asyncio.Event(), asyncio.Event(), asyncio.Event()
        self._failure: str | None = None
        self._owner: asyncio.Task[None] | None = None

    async def start(self) -> list[RemoteTool]:
        """Start the server, initialize the session and list its tools.

        Returns:
            The server's tools.

        Raises:
            ConfigError: the server could not start, broke off, or did not list its tools
                within ``start_timeout_s`` (one line naming the server and why); whatever
                was started is stopped.
        """
        name, limit = self.server.name, self.server.start_timeout_s
        self._headers = headers_from_env(self.server)
        try:
            if self.server.command is not None:
                self._process = await start_process(
                    self.server, workspace=self._workspace, sandbox=self._sandbox
                )
        except Exception as exc:
            await self.aclose()
            raise ConfigError(f"MCP server {name!r} could not start: {_why(exc)}") from None
        self._owner = asyncio.ensure_future(self._own())
        ready = asyncio.ensure_future(self._ready.wait())
        watch: set[asyncio.Future[Any]] = {ready, self._owner}
        if self._process is not None:
            watch.add(self._process.exited)
        await asyncio.wait(watch, timeout=limit, return_when=asyncio.FIRST_COMPLETED)
        ready.cancel()
        if not self._ready.is_set():
            if self._process is not None and self._owner.done():  # its exit status, if it died
                await asyncio.wait({self._process.exited}, timeout=_EXIT_WAIT_S)
            timeout = f"it did not list its tools within {limit:g} s"
            reason = self._gone(self._failure or timeout) if self._exited() else None
            reason = reason or self._failure or timeout
            await self.aclose()
            raise ConfigError(f"MCP server {name!r} could not start: {reason}", key="tools.mcp")
        return self.tools

    def _transport(self) -> contextlib.AbstractAsyncContextManager[Any]:
        if self._process is not None:
            return _stdio_streams(self._process.proc)
        return self._http()

    @contextlib.asynccontextmanager
    async def _http(self) -> AsyncIterator[Any]:
        assert self.server.url is not None
        async with (
            httpx2.AsyncClient(headers=self._headers, timeout=_HTTP_TIMEOUT) as client,
            streamable_http_client(self.server.url, http_client=client) as streams,
        ):
            yield streams

    async def _own(self) -> None:
        """Own every SDK context: enter, initialize, list, serve until closing, leave."""
        try:
            async with contextlib.AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport())
                session = await stack.enter_async_context(ClientSession(read, write))
                await session.initialize()
                self.tools = await _list(session)
                self._session = session
                self._ready.set()
                await self._closing.wait()
        except Exception as exc:
            self._failure = _why(exc)
        finally:
            self._session = None
            self._ended.set()

    def _gone(self, fallback: str = "the connection ended") -> str:
        """Why the server is gone: the process's exit and stderr, or the connection's error."""
        if self._process is not None and self._process.proc.returncode is not None:
            return self._process.describe_exit()
        return self._failure or fallback

    async def call_tool(self, name: str, arguments: dict[str, Any], timeout_s: float) -> str:
        """Call the server's tool ``name`` (:class:`gg.mcp.tool.Caller`).

        Returns:
            The result's text (:func:`result_text`), not yet cut.

        Raises:
            ToolError: the server is gone, the call failed or returned an error, the server
                ended during the call, or no answer came within ``timeout_s``.
        """
        who = f"MCP server {self.server.name!r}"
        session = self._session
        if session is None or self._ended.is_set() or self._exited():
            raise ToolError(f"{who} is not running: {self._gone()}")
        call = asyncio.ensure_future(session.call_tool(name, arguments))  # gg's clock, below
        ended = asyncio.ensure_future(self._ended.wait())
        watch: set[asyncio.Future[Any]] = {call, ended}
        if self._process is not None:
            watch.add(self._process.exited)
        try:
            await asyncio.wait(watch, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
        finally:
            ended.cancel()
            if not call.done():
                call.cancel()
                await asyncio.wait({call}, timeout=_CLOSE_S)
        if not call.done() or call.cancelled():
            if self._exited() or self._ended.is_set():
                raise ToolError(f"{who} stopped during the call to {name!r}: {self._gone()}")
            raise ToolError(
                f"{who} did not answer the call to {name!r} within {timeout_s:g} s (its "
                "timeout_s); the call was abandoned"
            )
        return await self._answer(call, name)

    async def _answer(self, call: asyncio.Future[mt.CallToolResult], name: str) -> str:
        who = f"MCP server {self.server.name!r}"
        try:
            result = call.result()
        except Exception as exc:
            if self._process is not None:  # a broken pipe: let the exit status arrive
                await asyncio.wait({self._process.exited}, timeout=_EXIT_WAIT_S)
            why = self._gone() if self._exited() else _why(exc)
            raise ToolError(f"{who}: the call to {name!r} failed: {why}") from None
        text = result_text(result)
        if result.is_error:
            raise ToolError(f"{who}: tool {name!r} returned an error: {cut(text, _ERROR_CAP)}")
        return text

    def _exited(self) -> bool:
        return self._process is not None and self._process.proc.returncode is not None

    async def aclose(self) -> None:
        """Leave the session and stop the server (its whole process group); idempotent."""
        self._closing.set()
        owner = self._owner
        if owner is not None and not owner.done():
            with contextlib.suppress(asyncio.TimeoutError, Exception):
                await asyncio.wait_for(asyncio.shield(owner), _CLOSE_S)
            if not owner.done():
                owner.cancel()
                await asyncio.wait({owner}, timeout=_CLOSE_S)
        if self._process is not None:
            await self._process.stop()
