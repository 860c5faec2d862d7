"""Built-in registry tools (SPEC T1, §10 Built-in tools) and the shell runner they share.

Capabilities: ``files`` offers ``read_file``, ``write_file``, ``list_dir`` and
``search_text``; ``shell`` offers ``run_command``. Every path is relative to
the workspace; one that leaves it (``..``, absolute, or a symlink pointing
out) raises :class:`gg.errors.WorkspaceEscape`, a tool error the model sees,
not a crash.

The file tools run in gg's process, on the host, but every path resolves and
opens in one step beneath a handle of the workspace (:mod:`gg.tools.safefs`,
issue 9 item 1): no check-then-use window a racing program could win; regular
files only, size-capped, in a worker thread under a deadline so the event
loop never blocks. ``search_text`` matches with RE2 (:mod:`gg.tools.search`).

What this module does not promise: ``run_command`` outside a sandbox runs a
real shell with the user's rights, a scrubbed environment and a timeout (as
root, without ``CAP_SYS_PTRACE``, ``CAP_SYS_ADMIN`` and ``CAP_PERFMON``:
:func:`gg.guard.host_command`, so it cannot read gg's ``/proc/<pid>/environ``).
The sandbox (SPEC M3) replaces :func:`spawn_command`.

:func:`run_shell` is also what agent-stop command hooks run on (:mod:`gg.hooks`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import stat
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Protocol, TypeVar

from pydantic import Field

from gg.errors import SandboxError, ToolError
from gg.guard import host_command
from gg.tools.registry import Registry, ToolContext, cap_text, tool
from gg.tools.safefs import Beneath, check_path, open_beneath, read_beneath, run_blocking
from gg.tools.search import Search

__all__ = [
    "ShellResult",
    "Spawn",
    "default_registry",
    "list_dir",
    "read_file",
    "run_command",
    "run_shell",
    "scrubbed_env",
    "search_text",
    "spawn_command",
    "spawn_shell",
    "write_file",
]

_T = TypeVar("_T")
_READ_LIMIT = 8_000_000  # bytes: read_file refuses larger files
_SEARCH_MAX_HITS = 200
_LIST_MAX = 1_000
_PATTERN_MAX = 2_000  # characters of a search_text pattern
_FILE_DEADLINE_S = 10.0  # seconds a read_file / write_file / list_dir call may take
_SEARCH_DEADLINE_S = 10.0  # seconds a search_text call may take
_ENV_KEEP = frozenset(
    {"PATH", "HOME", "LANG", "LANGUAGE", "TERM", "TZ", "USER", "LOGNAME", "SHELL",
     "TMPDIR", "TEMP", "TMP", "COLUMNS", "LINES"}
)  # fmt: skip


# ---------------------------------------------------------------- paths


def _shown(path: str) -> str:
    """How a tool path is shown in results: normalised, relative ('.' for the root)."""
    return os.path.normpath(path)


async def _off_loop(fn: Callable[[], _T], what: str) -> _T:
    return await run_blocking(fn, timeout_s=_FILE_DEADLINE_S, what=what)


# ---------------------------------------------------------------- files


_READ_ONLY = (
    "this session may not change the workspace (a reviewer reads and runs checks; "
    "the implementer makes the changes): nothing was written"
)


def _top_level_hint(workspace: Path, path: str) -> str | None:
    """The path's last part when the workspace holds a regular file of that name at its top
    level (``/workspace/NOTES.md`` -> ``NOTES.md``): a small model often invents a prefix.
    Only a plain name is looked up, relative to the workspace's descriptor (nothing
    followed)."""
    name = path.rstrip("/").rsplit("/", 1)[-1]
    if not name or name in (".", "..") or name == path or "\x00" in name:
        return None
    try:
        fd = os.open(workspace, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            st = os.lstat(name, dir_fd=fd)
        finally:
            os.close(fd)
    except OSError:
        return None
    return name if stat.S_ISREG(st.st_mode) else None


@tool(access="read")
async def read_file(path: str, *, ctx: ToolContext) -> str:
    """Read a text file of the workspace and return its content.

    Args:
        path: The file to read, relative to the workspace root.
    """
    try:
        check_path(path)
        data = await _off_loop(lambda: read_beneath(ctx.workspace, path, cap=_READ_LIMIT),
                               "read_file")  # fmt: skip
    except ToolError as exc:
        hint = _top_level_hint(ctx.workspace, path)
        if hint is None:
            raise
        raise ToolError(
            f"{exc}; did you mean {hint!r}? (the workspace has it at its top)"
        ) from None
    if b"\x00" in data[:8192]:
        raise ToolError(
            f"{path!r} is a binary file ({len(data):,} bytes); read_file reads text only"
        )
    return data.decode("utf-8", errors="replace")


@tool
async def write_file(path: str, content: str, *, ctx: ToolContext) -> str:
    """Write a text file in the workspace, replacing it if it exists.

    Missing parent directories are created.

    Args:
        path: The file to write, relative to the workspace root.
        content: The file's whole new content (UTF-8 text).
    """
    if ctx.read_only:
        raise ToolError(_READ_ONLY)
    check_path(path)
    try:
        data = content.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ToolError(f"the content is not valid Unicode text: {exc.reason}") from None

    def write() -> str:
        with Beneath(ctx.workspace) as root:
            return root.write(path, data, guard=_protected_guard(ctx, root))

    written = await _off_loop(write, "write_file")
    return f"wrote {len(content):,} characters to {written}"


def _protected_guard(ctx: ToolContext, root: Beneath) -> Callable[[int, str], None] | None:
    """A :meth:`Beneath.write` guard refusing gg's own files: ``gg.toml`` and the hook
    scripts the run hashed at start (issue 9 item 2), found by their directory's identity
    and name in this session's workspace, so no alias path or link reaches them."""
    snapshot = ctx.run.snapshot if ctx.run is not None else None
    if snapshot is None:
        return None
    keys = {p.relative_to(snapshot.workspace).as_posix() for p in snapshot.inside()}
    keys.add("gg.toml")
    protected: dict[tuple[int, int, str], str] = {}
    for key in keys:
        parent, _, name = key.rpartition("/")
        try:
            fd = root.open(parent or ".", kind="directory")
        except (ToolError, OSError):
            continue  # not there now: nothing to protect under that name
        try:
            st = os.fstat(fd)
        finally:
            os.close(fd)
        protected[(st.st_dev, st.st_ino, name)] = key

    def guard(dir_fd: int, name: str) -> None:
        st = os.fstat(dir_fd)
        key = protected.get((st.st_dev, st.st_ino, name))
        if key is not None:
            raise ToolError(
                f"{key!r} is gg's own configuration or an agent-stop hook's script; "
                "agents cannot change it (a person edits it between runs)"
            )

    return guard


@tool(access="read")
async def list_dir(path: str = ".", *, ctx: ToolContext) -> str:
    """List a workspace directory: one entry a line, directories ending in '/'.

    Args:
        path: The directory to list, relative to the workspace root.
    """
    check_path(path)
    names, total = await _off_loop(lambda: _list(ctx.workspace, path), "list_dir")
    if not names:
        return f"{_shown(path)} is empty"
    lines = names[:_LIST_MAX]
    if total > _LIST_MAX:
        lines.append(f"[... {total - _LIST_MAX:,} more entries not shown]")
    return "\n".join(lines)


def _list(workspace: Path, path: str) -> tuple[list[str], int]:
    """Entry lines of a directory opened beneath ``workspace``, sorted, and their count."""
    fd = open_beneath(workspace, path, kind="directory")
    try:
        with os.scandir(fd) as entries:
            lines = sorted(_entry_line(e) for e in entries)
    except OSError as exc:
        raise ToolError(f"cannot list {path!r}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    return lines, len(lines)


def _entry_line(entry: os.DirEntry[str]) -> str:
    if entry.is_symlink():
        return f"{entry.name}@"
    return f"{entry.name}/" if entry.is_dir(follow_symlinks=False) else entry.name


@tool(access="read")
async def search_text(pattern: str, path: str = ".", *, ctx: ToolContext) -> str:
    """Search the workspace's text files for a regular expression.

    Returns one hit a line as 'file:line: text', at most 200 hits. Skips binary
    files, files over 2 MB, symlinks, and directories such as .git and node_modules.

    Args:
        pattern: A regular expression in RE2 syntax (as ripgrep: no backreferences or
            lookaround), matched against each line.
        path: The file or directory to search, relative to the workspace root.
    """
    check_path(path)
    if len(pattern) > _PATTERN_MAX:
        raise ToolError(f"the pattern is {len(pattern):,} characters; at most {_PATTERN_MAX:,}")
    search = Search(
        pattern=pattern, deadline=time.monotonic() + _SEARCH_DEADLINE_S, max_hits=_SEARCH_MAX_HITS
    )
    hits = await run_blocking(lambda: search.run(ctx.workspace, path),
                              timeout_s=_SEARCH_DEADLINE_S + 1, what="search_text")  # fmt: skip
    if not hits:
        return f"no match for {pattern!r} in {_shown(path)}"
    if len(hits) >= _SEARCH_MAX_HITS:
        hits.append(f"[stopped at {_SEARCH_MAX_HITS} hits; narrow the pattern or path]")
    return "\n".join(hits)


# ---------------------------------------------------------------- shell


def scrubbed_env(pass_env: tuple[str, ...] = ()) -> dict[str, str]:
    """The environment a command gets: gg's, minus everything not on a short allowlist.

    Kept: ``PATH``, ``HOME``, ``LANG``, ``LC_*``, ``TERM``, ``TZ``, ``USER``,
    ``SHELL``, temp-dir variables and the like; never API keys or other
    secrets (SPEC M3, C3).

    Args:
        pass_env: further variable names to pass through (a hook's explicit opt-in).
    """
    keep = _ENV_KEEP.union(pass_env)
    return {k: v for k, v in os.environ.items() if k in keep or k.startswith("LC_")}


class Spawn(Protocol):
    """Starts a shell command as a process; swap it to run commands elsewhere (a sandbox)."""

    async def __call__(
        self, command: str, *, cwd: Path, env: Mapping[str, str], stdin: bool
    ) -> asyncio.subprocess.Process:
        """Start ``command`` with pipes for stdout and stderr (and stdin when asked)."""
        ...


async def spawn_shell(
    command: str, *, cwd: Path, env: Mapping[str, str], stdin: bool
) -> asyncio.subprocess.Process:
    """Start ``command`` through ``/bin/sh`` in its own session (so its group can be killed).

    Raises:
        OSError: the process could not start (e.g. ``cwd`` is missing).
    """
    return await asyncio.create_subprocess_shell(
        command,
        cwd=cwd,
        env=dict(env),
        stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )


async def spawn_command(
    command: str, *, cwd: Path, env: Mapping[str, str], stdin: bool
) -> asyncio.subprocess.Process:
    """The one place ``run_command`` starts its process. The sandbox (SPEC M3) replaces it."""
    return await spawn_shell(command, cwd=cwd, env=env, stdin=stdin)


@dataclass(frozen=True, kw_only=True)
class ShellResult:
    """What a finished (or killed) shell command left behind."""

    exit_code: int | None
    """The exit status; negative for a signal; ``None`` when killed on timeout."""
    stdout: str
    """Standard output, head and tail kept when longer than the capture limit."""
    stderr: str
    """Standard error, same capping."""
    timed_out: bool
    """True when the timeout killed it."""
    seconds: float
    """Wall time from start to exit."""


class _Capture:
    """Keeps the head and tail of a byte stream, up to ``limit`` bytes in all."""

    def __init__(self, limit: int) -> None:
        self.head, self.tail, self.total = bytearray(), bytearray(), 0
        self.head_limit, self.tail_limit = limit - limit // 2, limit // 2

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk and self.tail_limit:
            self.tail += chunk
            del self.tail[: max(len(self.tail) - self.tail_limit, 0)]

    def text(self) -> str:
        cut = self.total - len(self.head) - len(self.tail)
        mid = f"\n[... {cut:,} bytes cut ...]\n" if cut else ""
        return self.head.decode("utf-8", "replace") + mid + self.tail.decode("utf-8", "replace")


async def _pump(stream: asyncio.StreamReader | None, capture: _Capture) -> None:
    if stream is None:
        return
    while chunk := await stream.read(65_536):
        capture.add(chunk)


async def _feed(proc: asyncio.subprocess.Process, data: bytes) -> None:
    if proc.stdin is None:
        return
    try:
        proc.stdin.write(data)
        await proc.stdin.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass  # the command does not read its stdin: fine
    finally:
        proc.stdin.close()


async def _exited(proc: asyncio.subprocess.Process) -> None:
    """Return once ``proc`` has exited, even while a grandchild holds its pipes open.

    Python 3.11's ``Process.wait()`` also waits for every pipe to close, so
    this polls the exit status (backing off from 1 ms to 50 ms) beside it.
    """
    waiter = asyncio.ensure_future(proc.wait())
    delay = 0.001
    try:
        while proc.returncode is None and not waiter.done():
            await asyncio.wait({waiter}, timeout=delay)
            delay = min(delay * 2, 0.05)
    finally:
        waiter.cancel()


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


async def run_shell(
    command: str,
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout_s: float,
    stdin: bytes | None = None,
    capture_limit: int = 64_000,
    spawn: Spawn = spawn_shell,
) -> ShellResult:
    """Run a shell command to its end or its timeout, then kill what it left running.

    The command runs in its own process group. When it exits, or its timeout
    passes, or the caller is cancelled, the whole group is killed (background
    jobs do not outlive it), and pipes still held open by an escaped
    grandchild are abandoned after a short grace, never waited on.

    Args:
        command: a ``/bin/sh`` command line.
        cwd: its working directory.
        env: its whole environment (see :func:`scrubbed_env`).
        timeout_s: wall-time limit in seconds.
        stdin: bytes written to its standard input, or ``None`` for no input.
        capture_limit: bytes kept of each of stdout and stderr (head and tail).
        spawn: how to start the process.

    Returns:
        A :class:`ShellResult`.

    Raises:
        OSError: the process could not be started.
    """
    start = time.monotonic()
    proc = await spawn(command, cwd=cwd, env=env, stdin=stdin is not None)
    out, err = _Capture(capture_limit), _Capture(capture_limit)
    tasks = [
        asyncio.create_task(_pump(proc.stdout, out)),
        asyncio.create_task(_pump(proc.stderr, err)),
    ]
    if stdin is not None:
        tasks.append(asyncio.create_task(_feed(proc, stdin)))
    timed_out = False
    try:
        await asyncio.wait_for(_exited(proc), timeout_s)
    except TimeoutError:
        timed_out = True
    finally:
        _kill_group(proc)
        await _settle(proc, tasks)
    return ShellResult(
        exit_code=None if timed_out else proc.returncode,
        stdout=out.text(),
        stderr=err.text(),
        timed_out=timed_out,
        seconds=time.monotonic() - start,
    )


async def _settle(proc: asyncio.subprocess.Process, tasks: list[asyncio.Task[None]]) -> None:
    """Reap the killed process; give the pipe readers a short grace, then drop them."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(_exited(proc), 5)
    _, pending = await asyncio.wait(tasks, timeout=0.5)
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.wait(pending)
        transport = getattr(proc, "_transport", None)  # no public way to drop held pipes
        if transport is not None:
            transport.close()


def _format_result(result: ShellResult) -> str:
    parts = [] if result.timed_out else [f"exit code: {result.exit_code}"]
    if result.stdout:
        parts.append(f"stdout:\n{result.stdout.rstrip()}")
    if result.stderr:
        parts.append(f"stderr:\n{result.stderr.rstrip()}")
    if not (result.stdout or result.stderr):
        parts.append("(no output)")
    return "\n".join(parts)


async def _run_in_sandbox(command: str, timeout_s: float, ctx: ToolContext) -> str | None:
    """Run ``command`` in the run's sandbox (SPEC M3, issue 3 item 7), or ``None`` when the
    tool runs outside a run or ``[sandbox] commands = "host"``."""
    run = ctx.run
    if run is None or run.settings.sandbox.commands != "sandbox":
        if ctx.read_only:  # on the host nothing would keep the workspace as it is
            raise ToolError(
                "this session may not change the workspace, and commands run on the host "
                'here ([sandbox] commands = "host"), so run_command is not available; '
                "read the files with read_file, list_dir and search_text"
            )
        return None
    try:
        sandbox = run.sandbox()
        if ctx.read_only and not sandbox.enforces_read_only():
            raise ToolError(
                "this session may not change the workspace, and the sandbox here cannot keep "
                "it read-only (no bubblewrap, no Landlock), so run_command is not available"
            )
        result = await sandbox.run_shell(
            command, workspace=ctx.workspace, timeout_s=timeout_s, read_only=ctx.read_only
        )
    except SandboxError as exc:
        raise ToolError(f"the sandbox could not run the command: {exc}") from None
    text = cap_text(result.output.rstrip() or "(no output)", ctx.output_cap)
    if result.timed_out:
        raise ToolError(
            f"command timed out after {timeout_s:g} s; it and its child processes "
            f"were killed. Output so far:\n{text}"
        )
    return f"exit code: {result.exit_code}\n{text}"


@tool(access="command")
async def run_command(
    command: Annotated[str, Field(min_length=1)],
    timeout_s: Annotated[float, Field(gt=0, le=3600)] = 60,
    *,
    ctx: ToolContext,
) -> str:
    """Run a shell command in the workspace and return its exit code and output.

    The command runs through /bin/sh with the workspace as its working directory,
    in the run's sandbox (no network, nothing writable outside the workspace, no
    secrets in its environment). It and every process it started are killed
    when it ends or times out.

    Args:
        command: The shell command line to run.
        timeout_s: Seconds before the command is killed (at most 3600).
    """
    sandboxed = await _run_in_sandbox(command, timeout_s, ctx)
    if sandboxed is not None:
        return sandboxed
    try:
        result = await run_shell(
            host_command(command),  # as root: no CAP_SYS_PTRACE & co. (issue 9, F1)
            cwd=ctx.workspace,
            env={**scrubbed_env(), "PWD": str(ctx.workspace)},
            timeout_s=timeout_s,
            capture_limit=ctx.output_cap,
            spawn=spawn_command,
        )
    except OSError as exc:
        raise ToolError(f"could not start the command: {exc}") from None
    text = _format_result(result)
    if result.timed_out:
        raise ToolError(
            cap_text(
                f"command timed out after {timeout_s:g} s; it and its child processes "
                f"were killed. Output so far:\n{text}",
                ctx.output_cap,
            )
        )
    return text


def default_registry() -> Registry:
    """A new registry holding the built-ins: capabilities ``files`` and ``shell`` (SPEC T1)."""
    registry = Registry()
    for builtin in (read_file, write_file, list_dir, search_text):
        registry.register(builtin, capability="files")
    registry.register(run_command, capability="shell")
    return registry
