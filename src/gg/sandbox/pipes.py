"""gg's ends of a sandboxed process's pipes, served by the event loop with no transport.

A program's output, requests and answers cross three pipes (:mod:`gg.sandbox.process`).
:class:`PipeReader` and :class:`PipeWriter` read and write those descriptors directly
from the event loop's reader and writer callbacks: no transport, protocol or stream
object is built per program, and a chunk that arrives wakes one waiting coroutine.
Issue 11: a warm code turn's own host work is counted in microseconds, and setting up
three asyncio pipe transports (each taking a turn of the loop) was a good part of it.

The reader holds at most about twice its ``limit`` (past that it stops reading until the
consumer catches up), so a program that writes without end fills the pipe, not gg's
memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import os

__all__ = ["PipeReader", "PipeWriter"]

_CHUNK = 65536


class PipeReader:
    """The read end ``fd`` of a pipe (owned: :meth:`close` closes it).

    Args:
        fd: the descriptor (made non-blocking here).
        limit: the longest line :meth:`readuntil` returns, in bytes with its separator;
            reading pauses while more than ``2 * limit`` bytes are buffered.
    """

    def __init__(self, fd: int, limit: int) -> None:
        os.set_blocking(fd, False)
        self.fd, self.limit = fd, limit
        self._loop = asyncio.get_running_loop()
        self._buffer = bytearray()
        self._eof = False
        self._reading = False
        self._closed = False
        self._waiter: asyncio.Future[None] | None = None
        self._resume()

    def _resume(self) -> None:
        if not (self._reading or self._eof or self._closed):
            self._loop.add_reader(self.fd, self._ready)
            self._reading = True

    def _pause(self) -> None:
        if self._reading:
            self._loop.remove_reader(self.fd)
            self._reading = False

    def _ready(self) -> None:
        try:
            chunk = os.read(self.fd, _CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""  # the pipe broke: as good as its end
        if chunk:
            self._buffer += chunk
            if len(self._buffer) > 2 * self.limit:
                self._pause()
        else:
            self._eof = True
            self._pause()
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def _more(self) -> None:
        """Wait for the next chunk (or the end)."""
        self._resume()
        self._waiter = self._loop.create_future()
        await self._waiter

    async def read(self, n: int = _CHUNK) -> bytes:
        """At most ``n`` bytes, as soon as there are any; ``b""`` at the end of the pipe."""
        while not self._buffer and not self._eof:
            await self._more()
        data = bytes(self._buffer[:n])
        del self._buffer[:n]
        return data

    async def readuntil(self, separator: bytes = b"\n") -> bytes:
        """The next line, ``separator`` included.

        Raises:
            asyncio.IncompleteReadError: the pipe ended first (``partial`` is what was left).
            asyncio.LimitOverrunError: no separator within ``limit`` bytes (nothing consumed).
        """
        scanned = 0
        while True:
            at = self._buffer.find(separator, scanned)
            if at >= 0:
                line = bytes(self._buffer[: at + len(separator)])
                del self._buffer[: at + len(separator)]
                return line
            scanned = max(0, len(self._buffer) - len(separator) + 1)
            if len(self._buffer) > self.limit:
                raise asyncio.LimitOverrunError("no separator within the limit", scanned)
            if self._eof:
                partial = bytes(self._buffer)
                self._buffer.clear()
                raise asyncio.IncompleteReadError(partial, None)
            await self._more()

    def close(self) -> None:
        """Stop reading and close the descriptor (once); a waiting read sees the end."""
        if self._closed:
            return
        self._pause()
        self._closed = self._eof = True
        with contextlib.suppress(OSError):
            os.close(self.fd)
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


class PipeWriter:
    """The write end ``fd`` of a pipe (owned: :meth:`close` closes it).

    :meth:`write` writes what the pipe takes at once and keeps the rest; :meth:`drain`
    waits until all of it is written.
    """

    def __init__(self, fd: int) -> None:
        os.set_blocking(fd, False)
        self.fd = fd
        self._loop = asyncio.get_running_loop()
        self._pending = bytearray()
        self._error: OSError | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._closed = False

    def write(self, data: bytes) -> None:
        """Write ``data`` (or queue what the pipe cannot take now).

        Raises:
            OSError: an earlier write failed (the reader is gone), or this end is closed.
        """
        if self._closed:
            raise BrokenPipeError("the pipe is closed")
        if self._error is not None:
            raise self._error
        if self._pending:
            self._pending += data
            return
        try:
            sent = os.write(self.fd, data)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError as exc:
            self._error = exc
            raise
        if sent < len(data):
            self._pending += data[sent:]
            self._loop.add_writer(self.fd, self._ready)

    def _ready(self) -> None:
        try:
            sent = os.write(self.fd, self._pending)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._error, sent = exc, len(self._pending)
        del self._pending[:sent]
        if not self._pending:
            self._loop.remove_writer(self.fd)
            waiter, self._waiter = self._waiter, None
            if waiter is not None and not waiter.done():
                waiter.set_result(None)

    async def drain(self) -> None:
        """Wait until every byte written is in the pipe.

        Raises:
            OSError: the reader is gone (``BrokenPipeError``) or this end was closed.
        """
        while self._pending and not self._closed:
            self._waiter = self._loop.create_future()
            await self._waiter
        if self._error is not None:
            raise self._error
        if self._pending:
            raise BrokenPipeError("the pipe was closed before all of it was written")

    def close(self) -> None:
        """Close the descriptor (once); a waiting :meth:`drain` raises."""
        if self._closed:
            return
        self._closed = True
        if self._pending:
            self._loop.remove_writer(self.fd)
        with contextlib.suppress(OSError):
            os.close(self.fd)
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
