"""A stdio MCP server's process: in the run's sandbox by default, or on the host (SPEC M3).

Sandboxed (``[[tools.mcp]] sandboxed = true``, the default), the server starts as a
shell-mode process of the run's sandbox (:func:`gg.sandbox.runs.prepared`): the same
isolation layer, limits and protected files as ``run_command`` (no network, the
workspace its working directory and only writable place), its CPU limit a day
since it lives as long as the run, and an environment built from scratch: ``PATH``
(gg's interpreter prefixes first, bound read-only, so a server written in Python
finds gg's packages), the sandbox's own variables and the ``pass_env`` names. The
command's directory and the files its arguments name outside ``/usr`` are bound
read-only at their own path (:mod:`gg.mcp.binds`). On the host (``sandboxed =
false``) it runs as gg's user with :func:`gg.shell.scrubbed_env` plus ``pass_env``, in
the workspace.

Either way the process is in a process group of its own, handed to
:func:`gg.reaper.watch` (killed even if gg is), its stderr drained into a bounded
tail (for the error a failed start or a death reports), and :meth:`ServerProcess.stop`
kills the whole group.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import signal
from collections import deque
from collections.abc import Callable
from pathlib import Path

from gg import reaper
from gg.config import McpServerSettings
from gg.guard import host_command
from gg.mcp.binds import interpreter_prefixes, sandbox_path, server_binds
from gg.sandbox import Sandbox
from gg.sandbox.runs import Options, prepared
from gg.shell import scrubbed_env
from gg.text import cut

__all__ = ["LINE_LIMIT", "ServerProcess", "start_process"]

LINE_LIMIT = 16 << 20
"""The longest JSON-RPC line gg reads from a server (bytes); a longer one ends the server."""
_LIFETIME_S = 86_400.0
_TAIL = 4_000
_GRACE_S = 1.0


class _Tail:
    """The last few thousand characters a process wrote on stderr."""

    def __init__(self) -> None:
        self._chunks: deque[bytes] = deque()
        self._size = 0

    def add(self, chunk: bytes) -> None:
        self._chunks.append(chunk)
        self._size += len(chunk)
        while self._size > _TAIL and len(self._chunks) > 1:
            self._size -= len(self._chunks.popleft())

    def text(self) -> str:
        return cut(b"".join(self._chunks).decode("utf-8", "replace").strip(), _TAIL, keep="tail")


class ServerProcess:
    """A running stdio server: its pipes, its stderr tail, and how to stop it.

    Args:
        proc: the process (its own process group, watched by :mod:`gg.reaper`).
        cleanup: undoes what starting it took (the sandbox's run directory, a uid slot).
    """

    def __init__(self, proc: asyncio.subprocess.Process, cleanup: contextlib.ExitStack) -> None:
        self.proc = proc
        self.stderr = _Tail()
        self._cleanup = cleanup
        self._drain = asyncio.ensure_future(self._read_stderr())
        self.exited = asyncio.ensure_future(proc.wait())
        """Done when the process has exited (its result: the exit status)."""

    async def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        with contextlib.suppress(OSError, ValueError):
            while chunk := await self.proc.stderr.read(65_536):
                self.stderr.add(chunk)

    def describe_exit(self) -> str:
        """Why the process is gone, for the model or the operator: its status and stderr."""
        code = self.proc.returncode
        status = "is still running" if code is None else f"exited with status {code}"
        if code is not None and code < 0:
            status = f"was killed by {signal.Signals(-code).name}"
        tail = self.stderr.text()
        return f"the server {status}" + (f"; its stderr ends: {tail}" if tail else "")

    async def stop(self) -> None:
        """Close its stdin, then kill its process group (TERM, then KILL); idempotent."""
        pid = self.proc.pid
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError, RuntimeError):
                self.proc.stdin.close()
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if self.proc.returncode is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, sig)
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(asyncio.shield(self.exited), _GRACE_S)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)  # whatever the server left in its group
        reaper.forget(pid)
        self._drain.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._drain
        await asyncio.to_thread(self._cleanup.close)


def _line(server: McpServerSettings) -> str:
    assert server.command is not None
    return "exec " + shlex.join([server.command, *server.args])


async def _sandboxed(server: McpServerSettings, sandbox: Sandbox, workspace: Path) -> ServerProcess:
    """Start ``server`` as a shell-mode process of ``sandbox`` (see the module docstring)."""
    env = {"PATH": sandbox_path()}
    env |= {k: os.environ[k] for k in server.pass_env if k in os.environ}
    binds = [*interpreter_prefixes(), *server_binds(server)]
    options = Options(
        env=tuple(env.items()),
        binds=tuple(binds),
        protect=sandbox.protected(workspace),
        read_only=server.access == "read",  # what the operator said it does: enforced
    )
    stack = contextlib.ExitStack()
    try:
        job = stack.enter_context(
            prepared(
                mode="shell",
                isolation=sandbox.isolation,
                limits=sandbox.limits,
                workspace=workspace,
                files={},
                command=_line(server),
                wall_s=_LIFETIME_S,
                options=options,
            )
        )
        req_read, _, child_fds = job.hand_over()
        stack.callback(os.close, req_read)  # boot.py's "ready" lands here; kept open
        plan = job.plan
        child = [*child_fds, *plan.fds]
        stack.callback(_close_all, child)
        proc = await asyncio.create_subprocess_exec(
            *plan.argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=plan.env, pass_fds=plan.pass_fds,
            start_new_session=True, user=plan.user, group=plan.group,
            extra_groups=[] if plan.user is not None else None, cwd="/", limit=LINE_LIMIT,
        )  # fmt: skip
        _close_all(child)
        if job.sweep is not None:
            stack.callback(job.sweep)
    except BaseException:
        stack.close()
        raise
    reaper.watch(proc.pid)
    return ServerProcess(proc, stack)


def _close_all(fds: list[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
    fds.clear()


async def _on_host(server: McpServerSettings, workspace: Path) -> ServerProcess:
    """Start ``server`` on the host as gg's user, scrubbed environment plus ``pass_env``."""
    reaper.ready()  # the child registers its own group (gg.reaper)
    proc = await asyncio.create_subprocess_shell(
        host_command(_line(server)), cwd=workspace, env=scrubbed_env(tuple(server.pass_env)),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, start_new_session=True,
        preexec_fn=reaper.die_with_parent, limit=LINE_LIMIT,
    )  # fmt: skip
    reaper.watch(proc.pid)
    return ServerProcess(proc, contextlib.ExitStack())


async def start_process(
    server: McpServerSettings, *, workspace: Path, sandbox: Callable[[], Sandbox]
) -> ServerProcess:
    """Start the stdio server ``server`` for a run in ``workspace``.

    Args:
        server: its ``[[tools.mcp]]`` entry (with a ``command``).
        workspace: the run's workspace (resolved): the server's working directory.
        sandbox: the run's sandbox, made on first use (:meth:`gg.Run.sandbox`).

    Returns:
        The running process.

    Raises:
        OSError: the process could not start.
        gg.errors.SandboxError: no sandbox works here (a sandboxed server).
    """
    if server.sandboxed:
        return await _sandboxed(server, sandbox(), workspace)
    return await _on_host(server, workspace)
