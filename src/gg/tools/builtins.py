"""Built-in registry tools (SPEC T1, §10 Built-in tools).

Capabilities: ``files`` offers ``read_file``, ``write_file``, ``edit_file``,
``list_dir`` and ``search_text``; ``shell`` offers ``run_command``. Every path is relative to
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
The sandbox (SPEC M3) replaces :func:`spawn_command`. The shell runner itself
(:func:`gg.shell.run_shell`, shared with agent-stop hooks) lives in :mod:`gg.shell`.
"""

from __future__ import annotations

import asyncio
import os
import stat
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, TypeVar

from pydantic import Field

from gg.errors import SandboxError, ToolError
from gg.guard import host_command
from gg.shell import ShellResult, run_shell, scrubbed_env, spawn_shell
from gg.skillpaths import user_skill_file
from gg.text import cut
from gg.tools.edits import Edit, apply_edit
from gg.tools.registry import Registry, ToolContext, tool
from gg.tools.safefs import Beneath, check_path, open_beneath, read_beneath, run_blocking
from gg.tools.search import Search

__all__ = [
    "default_registry",
    "edit_file",
    "list_dir",
    "read_file",
    "run_command",
    "search_text",
    "spawn_command",
    "write_file",
]

_T = TypeVar("_T")
_READ_LIMIT = 8_000_000  # bytes: read_file refuses larger files
_SEARCH_MAX_HITS = 200
_LIST_MAX = 1_000
_PATTERN_MAX = 2_000  # characters of a search_text pattern
_FILE_DEADLINE_S = 10.0  # seconds a read_file / write_file / list_dir call may take
_SEARCH_DEADLINE_S = 10.0  # seconds a search_text call may take


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
    """The path's last part, when the workspace holds a regular file of that name at its top.

    ``/workspace/NOTES.md`` -> ``NOTES.md``: a small model often invents a prefix.
    Only a plain name is looked up, relative to the workspace's descriptor (nothing
    followed).
    """
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
    """Read a text file of the workspace (or of a skill use_skill named) and return it.

    Args:
        path: The file to read, relative to the workspace root; or the absolute path of a
            file in a skill's folder, as use_skill gives it.
        ctx: The run's tool context, injected by gg (not part of the tool's schema).
    """
    skill = user_skill_file(path)  # read-only, beneath the skill's folder (gg.skillpaths)
    base, inner = skill if skill is not None else (ctx.workspace, path)
    try:
        check_path(inner)
        data = await _off_loop(lambda: read_beneath(base, inner, cap=_READ_LIMIT),
                               "read_file")  # fmt: skip
    except ToolError as exc:
        hint = None if skill is not None else _top_level_hint(ctx.workspace, path)
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
        ctx: The run's tool context, injected by gg (not part of the tool's schema).
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


@tool
async def edit_file(path: str, old: str, new: str, *, ctx: ToolContext) -> str:
    """Replace one piece of a workspace text file: the lines old by the lines new.

    old must occur once; when it does not occur as sent, a unique loose match of its
    lines is used and the result says so (:mod:`gg.tools.edits`).

    Args:
        path: The file to change, relative to the workspace root.
        old: The lines to replace, copied from the file with their indentation.
        new: The lines to put in their place (empty to delete them).
        ctx: The run's tool context, injected by gg (not part of the tool's schema).
    """
    if ctx.read_only:
        raise ToolError(_READ_ONLY)
    check_path(path)

    late = time.monotonic() + _FILE_DEADLINE_S  # past it the caller gave up: write nothing

    def edit() -> tuple[str, Edit]:
        with Beneath(ctx.workspace) as root:
            data = read_beneath(ctx.workspace, path, cap=_READ_LIMIT)
            try:
                text = data.decode("utf-8")
                if "\x00" in text[:8192]:
                    raise UnicodeError
                done = apply_edit(text, old, new, name=_shown(path))
                encoded = done.text.encode("utf-8")
            except UnicodeError:
                raise ToolError(
                    f"{path!r} is not UTF-8 text (or new is not): nothing was changed"
                ) from None
            if time.monotonic() > late:
                raise ToolError("edit_file took too long: nothing was changed")
            return root.write(path, encoded, guard=_protected_guard(ctx, root)), done

    written, done = await _off_loop(edit, "edit_file")
    last = done.first + len(done.lines) - 1
    where = f"lines {done.first}-{last}" if last > done.first else f"line {done.first}"
    if done.exact:
        return f"edited {written}: {where} now read:\n" + "\n".join(done.lines)
    kept = f"; kept {done.kept} line(s) you left out" if done.kept else ""
    return f"edited {written} (old matched loosely{kept}): {where} now read:\n" + "\n".join(
        done.lines
    )


def _protected_guard(ctx: ToolContext, root: Beneath) -> Callable[[int, str], None] | None:
    """A :meth:`Beneath.write` guard refusing gg's own files.

    gg's own files are ``gg.toml`` and the hook scripts the run hashed at start (issue 9
    item 2), found by their directory's identity and name in this session's workspace,
    so no alias path or link reaches them.
    """
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
        ctx: The run's tool context, injected by gg (not part of the tool's schema).
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
        ctx: The run's tool context, injected by gg (not part of the tool's schema).
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


async def spawn_command(
    command: str, *, cwd: Path, env: Mapping[str, str], stdin: bool
) -> asyncio.subprocess.Process:
    """The one place ``run_command`` starts its process. The sandbox (SPEC M3) replaces it."""
    return await spawn_shell(command, cwd=cwd, env=env, stdin=stdin)


def _format_result(result: ShellResult) -> str:
    parts = [] if result.timed_out else [f"exit code: {result.exit_code}"]
    if result.output:
        parts.append(f"stdout:\n{result.output.rstrip()}")
    if result.stderr:
        parts.append(f"stderr:\n{result.stderr.rstrip()}")
    if not (result.output or result.stderr):
        parts.append("(no output)")
    return "\n".join(parts)


async def _run_in_sandbox(command: str, timeout_s: float, ctx: ToolContext) -> str | None:
    """Run ``command`` in the run's sandbox (SPEC M3, issue 3 item 7).

    ``None`` when the tool runs outside a run or ``[sandbox] commands = "host"``.
    """
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
    text = cut(result.output.rstrip() or "(no output)", ctx.output_cap, keep="middle")
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
        ctx: The run's tool context, injected by gg (not part of the tool's schema).
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
            cut(
                f"command timed out after {timeout_s:g} s; it and its child processes "
                f"were killed. Output so far:\n{text}",
                ctx.output_cap,
                keep="middle",
            )
        )
    return text


def default_registry() -> Registry:
    """A new registry holding the built-ins: capabilities ``files`` and ``shell`` (SPEC T1)."""
    registry = Registry()
    for builtin in (read_file, write_file, edit_file, list_dir, search_text):
        registry.register(builtin, capability="files")
    registry.register(run_command, capability="shell")
    return registry
