"""A run's sandboxed processes, counted, so a trusted hook can run while none does (issue 9).

A trusted agent-stop hook runs a workspace script on the host as gg's user.
gg hashes the script just before it runs it, but a sandboxed process of the
same run (a subagent's program, another issue's command on a board) could
swap the script's directory between that check and the hook's start
(adversary finding F18). :meth:`Quiet.exclusive` closes the window: it waits
until no sandboxed process of the run is alive, and holds new ones back
until the hook is done. Nothing a program starts outlives its turn (every
layer kills the whole tree), so while the hook runs no agent code runs.

What it does not promise: anything about processes not started through this
sandbox (``[sandbox] commands = "host"``), or about the host-side file
tools (they never rename; ``write_file`` refuses the hook's scripts).
A trusted hook on a session whose parent's program is still running (a
subagent spawned from a program) cannot get its quiet moment: it waits its
timeout, then the gate blocks, saying why.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

__all__ = ["Quiet"]


class Quiet:
    """Counts live sandboxed processes; :meth:`exclusive` runs with none alive."""

    def __init__(self) -> None:
        self._live = 0
        self._held = False
        self._cond: asyncio.Condition | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _condition(self) -> asyncio.Condition:
        loop = asyncio.get_running_loop()
        if self._cond is None or self._loop is not loop:  # a new event loop (a new run)
            self._cond, self._loop = asyncio.Condition(), loop
        return self._cond

    @contextlib.asynccontextmanager
    async def process(self) -> AsyncIterator[None]:
        """Wrap one sandboxed process: wait while a trusted hook holds the sandbox.

        The wait has no time limit: the hook's own timeout bounds how long it holds;
        cancelling the caller is the only other way out.
        """
        cond = self._condition()
        async with cond:
            await cond.wait_for(lambda: not self._held)
            self._live += 1
        try:
            yield
        finally:
            async with cond:
                self._live -= 1
                cond.notify_all()

    @contextlib.asynccontextmanager
    async def exclusive(self, *, timeout_s: float) -> AsyncIterator[None]:
        """Wait until no process is alive, then hold new ones back for the body.

        The wait lasts at most ``timeout_s`` seconds.

        Raises:
            TimeoutError: processes kept running for ``timeout_s`` seconds.
        """
        cond = self._condition()
        async with cond:
            await asyncio.wait_for(
                cond.wait_for(lambda: not self._held and self._live == 0), timeout_s
            )
            self._held = True
        try:
            yield
        finally:
            async with cond:
                self._held = False
                cond.notify_all()
