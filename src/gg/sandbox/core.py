"""The sandbox seam: compile a program, run it with its SDK, run a shell command (SPEC M2, M3).

What it promises, under every layer (see :class:`~gg.sandbox.host.Isolation`):
each program runs in a fresh process tree started with an environment built
from nothing (no API key or other variable of gg's), as a dedicated uid when
gg is root, with rlimits and a seccomp denylist, and the tree is killed when
the program ends or passes a limit. Under ``bwrap`` it sees only ``/usr``,
the run's files and the workspace (the one writable place besides a private
``/tmp``), has no network and no capability. Under ``unshare`` it has no
network (new net namespace) and Landlock confines files, TCP and signals.
Under ``bwrap`` and ``unshare``, ``/proc`` is a procfs of the sandbox's own
pid namespace (in a private mount namespace): no host process is listed or
reachable by pid.
Under ``rlimit``, Landlock (when the kernel has it) is the only file and
network barrier besides seccomp's socket ban. In every layer: no datagram
socket can be made (seccomp), so nothing reaches a host AF_UNIX socket;
nothing the program starts outlives it (pid namespace, or under ``rlimit``
boot.py's subreaper); SysV IPC lives in the layer's IPC namespace, or is
denied (``rlimit``); each run may add at most ``write_bytes`` / ``write_files``
to the workspace (:mod:`gg.sandbox.writes`).

What it does not promise: protection from kernel bugs; a memory limit for a
program's processes taken together (limits are per process); that a program
cannot read files the sandbox uid may read inside the directories the layer
leaves visible (``/usr``; under ``unshare``/``rlimit`` also the guest code);
under ``rlimit`` (no pid namespace), that a shell command cannot list the
host's processes and read their command lines, status and other
world-readable ``/proc`` entries (never the environment or memory of a
process of another uid, nor of gg, which is non-dumpable); fairness between
concurrent programs beyond their own limits.
Under ``rlimit`` without Landlock the program can write world-writable
directories such as ``/tmp``. Under ``unshare`` and ``rlimit`` the program
starts in the workspace, but if a parent directory of the workspace is not
searchable by the sandbox uid, only relative paths reach it (bubblewrap
binds the workspace, so it has no such limit); these two layers also keep
programs out of ``/proc`` (Landlock; shell commands may read it). It is not a
defence against a malicious gg configuration (the tool handler runs in gg,
with gg's rights).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import re
import secrets
import shlex
import signal
import tempfile
import time
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from gg.errors import SandboxError, UserError
from gg.models.base import ToolSpec
from gg.sandbox.accounts import is_shared, kill_all, share_workspace
from gg.sandbox.checks import (
    CHECK_TIMEOUT_S,
    CompileProblem,
    js_problem,
    python_problem,
    text_problem,
)
from gg.sandbox.deno import Key as DenoKey
from gg.sandbox.deno import Spare, Spares
from gg.sandbox.host import Isolation, host_facts, state_dir
from gg.sandbox.isolation import probe
from gg.sandbox.limits import Limits
from gg.sandbox.membrane import CompileReport, Handler, Membrane, Result
from gg.sandbox.process import Outcome, supervise, watch
from gg.sandbox.quiet import Quiet
from gg.sandbox.runs import Options, prepared, run_blocking
from gg.sandbox.sdk import sdk_source
from gg.sandbox.tree import remove_tree
from gg.sandbox.writes import CapName, WriteCap
from gg.sandbox.zygote import Key, Pool, Zygote
from gg.shell import ShellResult

__all__ = ["CompileProblem", "ProgramResult", "Sandbox", "ShellResult"]

Language = Literal["python", "javascript"]
LimitName = Literal[
    "wall", "cpu", "memory", "output", "processes", "file_size", "membrane",
    "write_bytes", "write_files",
]  # fmt: skip
_CHECK_TIMEOUT_S = 20
_CHANNEL_BROKEN = 120  # guest/runner.py and runner.js: the result could not be sent


@dataclass(frozen=True, slots=True, kw_only=True)
class ProgramResult:
    """How one program run went (the turn's feedback is made from it, SPEC M2)."""

    output: str
    """What it printed: stdout and stderr interleaved, cut with a marker past the limit."""
    returned: str | None
    """Python: ``repr`` of a final expression statement's value; JavaScript: the module's
    ``export default`` value. ``None`` when there is none (or it is ``None``/``undefined``)."""
    error: str | None
    """The runtime error (a traceback excerpt, or which limit it passed); ``None`` if the
    program ran to its end. Not ``None`` means any ending it declared is revoked (SPEC S9)."""
    limit: LimitName | None
    """The limit that ended it, if one did."""
    seconds: float
    """Wall-clock seconds, start to cleanup."""
    calls: int = 0
    """SDK calls it made."""
    compile_problem: CompileProblem | None = None
    """Set when the program was not run because it does not compile (Python: the guest's
    compiler refused it) or its text was refused (too large, not valid Unicode); ``error``
    then holds the same message."""


def _signal_of(returncode: int | None) -> int | None:
    if returncode is None:
        return None
    if returncode < 0:
        return -returncode
    return returncode - 128 if 128 < returncode < 160 else None


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


_JS_OOM = re.compile(r"out of memory|heap limit|Failed to reserve", re.IGNORECASE)


def _not_run(problem: CompileProblem) -> ProgramResult:
    return ProgramResult(output="", returned=None, error=problem.message, limit=None,
                         seconds=0.0, compile_problem=problem)  # fmt: skip


def _js_parser_crash(outcome: Outcome, membrane: Membrane) -> CompileReport | None:
    """Report Deno's parser overflowing its stack as a compile problem, not a crash.

    Deno's parser (Rust) overflowing its stack aborts the process before the program
    runs (a nesting bomb): that is the program's compile problem, not a crash.
    """
    if membrane.calls or "has overflowed its stack" not in outcome.output[-2000:]:
        return None
    problem = js_problem(outcome.output[-2000:])
    return CompileReport(message=problem.message, line=problem.line, column=problem.column)


_SOURCES: dict[str, tuple[str, str]] = {
    "python": ("program.py", "sdk.py"),
    "javascript": ("program.mjs", "sdk.mjs"),
}
"""Per language: the names of its program's and its SDK's files."""


class _NotForked(Exception):
    """The zygote was gone before it took the program (nothing of it ran)."""


class Sandbox:
    """Runs programs and shell commands under the strongest isolation this machine offers.

    Args:
        limits: the limits of every program and command.
        isolation: the layer; ``None`` probes (honouring ``GG_SANDBOX``). A given layer
            is checked once by a trial run.
        warm: run Python programs as forks of a warm sandbox, and JavaScript programs in
            a Deno exec'd by such a fork (or started whole, :attr:`forked_js`) before
            they came (issue 11); ``False``, or a warm sandbox that cannot start, runs
            each program in a sandbox started for it.

    Raises:
        gg.errors.SandboxError: the layer does not work here.
        gg.errors.UserError: ``GG_SANDBOX`` names no layer.
    """

    def __init__(
        self, *, limits: Limits | None = None, isolation: Isolation | None = None, warm: bool = True
    ) -> None:
        self.limits = limits or Limits()
        self.warm = warm
        """Whether Python programs fork from a warm sandbox (:meth:`warm_up`)."""
        self.isolation: Isolation = probe(isolation.value if isolation else None)
        self._closed = False
        self.quiet = Quiet()
        """Counts this sandbox's live processes (a trusted hook waits for none, issue 9)."""
        self._protect: tuple[str, ...] = ()
        self._protect_keys: tuple[str, ...] = ()
        self._pool = Pool()
        weakref.finalize(self, self._pool.close)  # a sandbox never closed: no zygote stays
        self._spares = Spares()
        weakref.finalize(self, self._spares.close)
        self.forked_js = True
        """Whether JavaScript programs exec Deno from a warm zygote's child (issue 11: it
        saves each one bubblewrap's and the boot's start); ``False``, or after such a zygote
        could not start, each one runs in a Deno started for it before it came
        (:mod:`.deno`)."""

    def protect(self, paths: Sequence[Path], *, root: Path | None = None) -> None:
        """Bind these files read-only over the workspace in every later process.

        Under bubblewrap only (issue 9 item 2: ``gg.toml`` and hook scripts); other layers
        cannot hide a file inside a writable directory, and gg checks the files' hashes
        instead. A path that is not a regular file when a process starts is skipped.

        Args:
            paths: the files (absolute, or relative to ``root``).
            root: the run's workspace. Given, each path inside it is bound at the same
                relative path in whatever workspace a process runs in (a board worktree:
                finding F6); a path outside it is dropped. ``None``: the paths are bound
                only where they lie inside a process's workspace.
        """
        if root is None:
            self._protect = tuple(str(Path(p).absolute()) for p in paths)
            self._protect_keys = ()
            return
        base = Path(root).absolute()
        keys = [(base / p).relative_to(base) for p in paths if (base / p).is_relative_to(base)]
        self._protect, self._protect_keys = (), tuple(k.as_posix() for k in keys)

    def _protected(self, workspace: Path) -> tuple[str, ...]:
        """The files bound read-only for a process in ``workspace`` (see :meth:`protect`)."""
        keyed = (str(workspace / k) for k in self._protect_keys)
        return tuple(dict.fromkeys([*self._protect, *keyed]))

    def protected(self, workspace: Path) -> tuple[str, ...]:
        """The files bound read-only for a process in ``workspace`` (a long-lived MCP server's)."""
        return self._protected(Path(workspace))

    def _key(self, workspace: Path, language: Language = "python", read_only: bool = False) -> Key:
        protect = self._protected(workspace)
        return Key(self.isolation, workspace, self.limits, protect, language, read_only)

    def _deno_key(self, workspace: Path, read_only: bool) -> DenoKey:
        protect = self._protected(workspace)
        return DenoKey(self.isolation, workspace, self.limits, protect, read_only)

    def warm_up(self, workspace: Path, *, language: Language, read_only: bool = False) -> None:
        """Start the warm sandbox for ``workspace`` in the background (issue 11).

        Call it when a session starts, while the model thinks: the first program run
        with this ``read_only`` then finds a zygote with its child waiting (a Deno, for
        JavaScript) ready. A no-op without a running event loop or on a
        closed sandbox. Never raises: a warm start that fails is made again by
        :meth:`run`, which reports.
        """
        if self._closed or not self.warm:
            return
        try:
            asyncio.get_running_loop()
            ws = Path(workspace).resolve()
            if language == "javascript" and host_facts().deno is not None:
                if self.forked_js:
                    self._pool.warm(self._key(ws, language, read_only))
                else:
                    self._spares.warm(self._deno_key(ws, read_only))
            elif language == "python":
                self._pool.warm(self._key(ws, language, read_only))
        except (RuntimeError, OSError):
            return

    def describe(self) -> dict[str, object]:
        """What is in force, for the stream's ``run_started`` event (SPEC M3, O1)."""
        facts = host_facts()
        layer = self.isolation
        user = [] if facts.is_root else ["user"]
        namespaces = {
            Isolation.BWRAP: ["pid", "net", "ipc", "uts", "mount", "cgroup", *user],
            Isolation.UNSHARE: ["pid", "net", "ipc", "uts", *user],
            Isolation.RLIMIT: [],
        }[layer]
        return {
            "isolation": layer.value,
            "namespaces": namespaces,
            "landlock_abi": facts.landlock_abi if layer is not Isolation.BWRAP else 0,
            "seccomp": facts.seccomp,
            "dedicated_uid": facts.is_root,
            "javascript": facts.deno is not None,
        }

    def _workspace(self, workspace: Path) -> Path:
        if self._closed:
            raise SandboxError("this sandbox is closed")
        path = Path(workspace).resolve()
        if not path.is_dir():
            raise UserError(f"the workspace {str(path)!r} is not a directory")
        return path

    def _need_deno(self) -> None:
        if host_facts().deno is None:
            raise SandboxError(
                "JavaScript programs need Deno: install the PyPI package 'deno' "
                "(or set GG_DENO to a deno binary)"
            )

    def compile(self, program: str, *, language: Language) -> CompileProblem | None:
        """Check that ``program`` compiles, without running it (SPEC S5: else an error turn).

        Never in gg's process (issue 9 item 6): first the text itself is checked
        (``Limits.program_bytes``, valid Unicode); then Python compiles in a child
        process of the sandbox's interpreter under the memory and CPU limits, and
        JavaScript is parsed by Deno in the sandbox, as the module it will run as.
        Either blocks for tens of milliseconds (see :meth:`acompile`).

        Returns:
            ``None`` if it compiles, else the :class:`CompileProblem` (also when the
            compiler passed a limit or the check's time, 20 s).

        Raises:
            gg.errors.SandboxError: the check itself could not start.
        """
        if language not in ("python", "javascript"):
            raise UserError(f"unknown program language {language!r}")
        problem = text_problem(program, self.limits)
        if problem is not None:
            return problem
        if language == "python":
            return python_problem(program, self.limits)
        return self._js_check(program)

    def _js_check(self, program: str) -> CompileProblem | None:
        self._need_deno()
        files = {"program.mjs": program, "stop.mjs": "Deno.exit(0);\n"}
        files["check.mjs"] = 'import "./stop.mjs";\nimport "./program.mjs";\n'
        workspace = Path(tempfile.mkdtemp(prefix="check-", dir=state_dir()))
        try:
            with prepared(
                mode="check", isolation=self.isolation, limits=self.limits,
                workspace=workspace, files=files,
            ) as job:  # fmt: skip
                done = run_blocking(job, timeout_s=CHECK_TIMEOUT_S)
        finally:
            with contextlib.suppress(OSError):
                remove_tree(workspace)
        if not done.ready:
            raise SandboxError(f"the JavaScript syntax check could not start: {done.output[-500:]}")
        if done.timed_out:
            return CompileProblem(
                message=(
                    f"Deno's parser did not finish within {CHECK_TIMEOUT_S} s (the program is "
                    "too large or too deeply nested)"
                ),
                line=None, column=None,
            )  # fmt: skip
        return None if done.returncode == 0 else js_problem(done.output)

    async def acompile(self, program: str, *, language: Language) -> CompileProblem | None:
        """:meth:`compile`, off the event loop."""
        return await asyncio.to_thread(self.compile, program, language=language)

    async def precheck(self, program: str, *, language: Language) -> CompileProblem | None:
        """What must pass before :meth:`run`, without a second process (issue 11).

        The text check (size, valid Unicode), for both languages. Both are compiled by
        the run itself, inside the sandbox (Python by the runner, JavaScript by Deno's
        module load): a problem comes back as :attr:`ProgramResult.compile_problem`.
        """
        return text_problem(program, self.limits)

    async def run(
        self,
        program: str,
        *,
        language: Language,
        workspace: Path,
        tools: Sequence[ToolSpec],
        handler: Handler,
        read_only: bool = False,
    ) -> ProgramResult:
        """Run ``program`` with the SDK for ``tools`` bound to ``gg`` (SPEC M2, M3).

        Every SDK call is passed to ``handler`` (one at a time, in order). Check the
        program first (:meth:`precheck`). A text gg refuses (over ``Limits.program_bytes``,
        not valid Unicode) is not run, and a program is compiled in the sandbox before
        it runs (Python by the runner, JavaScript as Deno loads its module graph, a
        missing import included): both give :attr:`ProgramResult.compile_problem`.

        Args:
            program: the program's source.
            language: ``"python"`` or ``"javascript"``.
            workspace: the directory the program works in (its cwd; the one writable
                place besides a private tmp).
            tools: the arm's registry tools (the SDK also declares the three endings).
            handler: answers each call (see :data:`gg.sandbox.membrane.Handler`).
            read_only: the workspace is read-only to the program (a reviewer's, issue 16;
                see :meth:`enforces_read_only`).

        Returns:
            The :class:`ProgramResult`; a limit or a bad message is a runtime error there.

        Raises:
            gg.errors.SandboxError: the sandbox could not start the program at all.
            Exception: whatever ``handler`` raised (other than ``ToolError``), after the
                program was stopped.
        """
        ws = self._workspace(workspace)
        if (problem := text_problem(program, self.limits)) is not None:
            return _not_run(problem)
        if language == "javascript":
            self._need_deno()
            files = {"program.mjs": program, "sdk.mjs": sdk_source(tools, language=language)}
        elif language == "python":
            files = {"program.py": program, "sdk.py": sdk_source(tools, language=language)}
        else:
            raise UserError(f"unknown program language {language!r}")
        if host_facts().is_root and not is_shared(ws):
            await asyncio.to_thread(share_workspace, ws)
        membrane = Membrane(tools=[t.name for t in tools], handler=handler, limits=self.limits)
        async with self.quiet.process():
            forked = language == "python" or self.forked_js
            if forked and self.warm:
                warm = await self._run_warm(membrane, ws, files, language, read_only)
                if warm is not None:
                    return warm
                membrane = membrane.fresh()
            if language == "javascript":
                return await self._run_deno(membrane, ws, files, read_only)
            return await self._run_program(membrane, language, ws, files, read_only)

    def enforces_read_only(self) -> bool:
        """Whether ``read_only`` is enforced here.

        It is under bubblewrap (a read-only bind) or where the kernel has Landlock; under
        ``rlimit`` without Landlock nothing enforces it.
        """
        return self.isolation is Isolation.BWRAP or host_facts().landlock_abi >= 1

    async def _run_warm(
        self,
        membrane: Membrane,
        ws: Path,
        files: dict[str, str],
        language: Language,
        read_only: bool = False,
    ) -> ProgramResult | None:
        """Run a program as a fresh child of the workspace's zygote (issue 11).

        A JavaScript child execs Deno once confined (:class:`~gg.sandbox.zygote.Key`).
        Returns ``None`` when no zygote could start or take the program (nothing of the
        program ran): the caller runs it cold (JavaScript: in a started Deno,
        :mod:`.deno`), and this sandbox stops trying that language's zygotes.
        """
        source = _SOURCES[language]
        try:
            zygote = await self._pool.take(self._key(ws, language, read_only), files[source[1]])
        except (SandboxError, OSError):
            if language == "javascript":
                self.forked_js = False
            else:
                self.warm = False
            return None
        try:
            outcome, cap = await self._fork_and_watch(zygote, membrane, files, source)
            await zygote.reaped()  # its process may still be exiting: gone before the turn ends
        except _NotForked:
            return None
        finally:
            self._pool.give_back(zygote)
        if not membrane.ready:
            raise SandboxError(f"the sandbox could not start the program: {outcome.output[-800:]}")
        return self._program_result(outcome, membrane, language, cap)

    async def _fork_and_watch(
        self, zygote: Zygote, membrane: Membrane, files: dict[str, str], source: tuple[str, str]
    ) -> tuple[Outcome, WriteCap]:
        """Hand the program to ``zygote``'s waiting child and watch it to its end.

        The zygote stays usable only if the program ended by itself and the zygote
        cleaned up after it.
        """
        cap = self._write_cap(zygote.written())
        try:
            primed = zygote.take_primed()
        except SandboxError as exc:
            raise _NotForked from exc
        try:
            started = time.monotonic()
            uid, sweep = primed.uid, None
            if uid is not None and self.isolation is not Isolation.BWRAP:
                sweep = lambda: kill_all(uid, host_facts().python)  # noqa: E731
            # watch owns the descriptors from here and closes them: the primed child, held
            # until the zygote is clean, must never close those numbers again (by then they
            # may name the next program's pipes)
            fds, primed.fds = primed.fds, ()  # type: ignore[assignment]

            async def go() -> None:  # once gg watches: the program, written to the child
                try:
                    program, sdk = files[source[0]], files[source[1]]
                    await zygote.send_program(fds[2], primed, program, sdk, self.limits.wall_s)
                except SandboxError as exc:
                    raise _NotForked from exc

            outcome = await watch(
                primed.child, membrane=membrane, fds=fds, started=started,
                wall_s=self.limits.wall_s, output_bytes=self.limits.output_bytes, sweep=sweep,
                writes=cap, go=go,
            )  # fmt: skip
        except BaseException:
            zygote.close()  # the handler raised (or gg was cancelled): nothing of it stays
            primed.release()
            raise
        zygote.programs += 1
        normal = outcome.stopped is None and membrane.result is not None
        zygote.usable = normal and zygote.proc.poll() is None  # and, later, its report: clean
        zygote.hold_until_clean(primed)
        return outcome, cap

    async def _run_deno(
        self, membrane: Membrane, ws: Path, files: dict[str, str], read_only: bool
    ) -> ProgramResult:
        """Run a JavaScript program in a started Deno of its own (issue 11, :mod:`.deno`).

        Warm: a spare started for this workspace while the model thought (then its
        replacement is started); else, or when that one died, one started now.
        """
        try:
            return await self._deno_once(membrane, ws, files, read_only, self.warm)
        except _NotForked:  # the warm Deno died before its program: nothing of it ran
            pass
        try:
            return await self._deno_once(membrane.fresh(), ws, files, read_only, False)
        except _NotForked as exc:
            why = exc.__cause__ or "its Deno ended before the program began"
            raise SandboxError(f"the sandbox could not start the program: {why}") from exc

    async def _deno_once(
        self, membrane: Membrane, ws: Path, files: dict[str, str], read_only: bool, warm: bool
    ) -> ProgramResult:
        """Run it in a spare (``warm``) or in a Deno started now.

        Raises:
            _NotForked: the Deno was gone when told to go (nothing of the program ran).
        """
        key = self._deno_key(ws, read_only)
        program, sdk = files["program.mjs"], files["sdk.mjs"]
        spare = self._spares.take(key, sdk) if warm else Spare.start(key, sdk)

        async def go() -> None:  # once gg watches it: the program may run
            try:
                await spare.go()
            except OSError as exc:
                raise _NotForked from exc

        try:
            fds = spare.stage(program, sdk)
            cap = self._write_cap(spare.job.written)
            outcome = await watch(
                spare.begun.child, membrane=membrane, fds=fds, started=time.monotonic(),
                wall_s=self.limits.wall_s, output_bytes=self.limits.output_bytes,
                sweep=spare.job.sweep, writes=cap, go=go,
            )  # fmt: skip
        finally:
            spare.close()
        if not membrane.ready:
            raise SandboxError(f"the sandbox could not start the program: {outcome.output[-800:]}")
        return self._program_result(outcome, membrane, "javascript", cap)

    async def _run_program(
        self,
        membrane: Membrane,
        language: Language,
        ws: Path,
        files: dict[str, str],
        read_only: bool = False,
    ) -> ProgramResult:
        options = Options(protect=self._protected(ws), read_only=read_only)
        with prepared(
            mode=language, isolation=self.isolation, limits=self.limits, workspace=ws,
            files=files, options=options,
        ) as job:  # fmt: skip
            cap = self._write_cap(job.written)
            outcome = await supervise(
                job.plan, membrane=membrane, pipes=job.hand_over(),
                wall_s=self.limits.wall_s, output_bytes=self.limits.output_bytes,
                sweep=job.sweep, writes=cap,
            )  # fmt: skip
        if not membrane.ready:
            raise SandboxError(f"the sandbox could not start the program: {outcome.output[-800:]}")
        return self._program_result(outcome, membrane, language, cap)

    def _write_cap(self, written: Sequence[Path]) -> WriteCap:
        lim = self.limits
        return WriteCap(written, max_bytes=lim.write_bytes, max_files=lim.write_files)

    def _program_result(
        self, outcome: Outcome, membrane: Membrane, language: Language, cap: WriteCap
    ) -> ProgramResult:
        result: Result | None = membrane.result
        if outcome.stopped in ("write_bytes", "write_files"):
            name: CapName = "write_bytes" if outcome.stopped == "write_bytes" else "write_files"
            limit: LimitName | None = name
            error: str | None = cap.message(name)
        else:
            limit, error = self._limit_and_error(outcome, membrane, result, language)
        report = membrane.compile_report
        if report is None and result is None and language == "javascript" and limit is None:
            report = _js_parser_crash(outcome, membrane)
        if report is not None and limit is None and result is None:
            return replace(_not_run(CompileProblem(
                message=report.message, line=report.line, column=report.column,
            )), output=outcome.output, seconds=outcome.seconds)  # fmt: skip
        return ProgramResult(
            output=outcome.output,
            returned=result.returned if result is not None and limit is None else None,
            error=error,
            limit=limit,
            seconds=outcome.seconds,
            calls=membrane.calls,
        )

    def _limit_and_error(
        self, outcome: Outcome, membrane: Membrane, result: Result | None, language: Language
    ) -> tuple[LimitName | None, str | None]:
        lim = self.limits
        sig = _signal_of(outcome.returncode)
        if outcome.stopped == "wall":
            return (
                "wall",
                f"the program passed its wall-clock limit of {lim.wall_s:g} s and was stopped",
            )
        if outcome.stopped == "output":
            return (
                "output",
                f"the program printed more than {lim.output_bytes} bytes and was stopped",
            )
        if outcome.stopped == "membrane":
            return "membrane", f"{membrane.violation}; the program was stopped"
        if result is not None:  # the runner reported: the program reached its end or raised
            return (None, None) if result.error is None else _result_limit(result, lim)
        if sig == signal.SIGXCPU or (sig == signal.SIGKILL and outcome.seconds >= lim.cpu_s):
            return "cpu", f"the program passed its CPU limit of {lim.cpu_s:g} s and was stopped"
        if language == "javascript" and _JS_OOM.search(outcome.output[-2000:]):
            return "memory", f"the program ran out of memory (its limit is {lim.memory_mb} MiB)"
        if outcome.returncode == _CHANNEL_BROKEN:
            return None, "the program closed its channel to gg (the SDK's pipe) before it finished"
        if sig is not None:
            return None, f"the program was killed by {_signal_name(sig)} before it finished"
        return None, (
            f"the program stopped before its end without reporting to gg (exit status "
            f"{outcome.returncode}): a program must run to its last statement"
        )

    async def run_shell(
        self,
        command: str,
        *,
        workspace: Path,
        timeout_s: float,
        read_only: bool = False,
        stdin: bytes | None = None,
        env: Mapping[str, str] | None = None,
        binds: Sequence[str] = (),
    ) -> ShellResult:
        """Run ``/bin/sh -c command`` in the workspace, sandboxed (``run_command``, hooks).

        Same isolation and limits as a program (``/etc`` is visible read-only under
        bubblewrap and Landlock, for the tools' configuration), except: the wall clock
        is ``timeout_s``, the CPU limit is at least ``timeout_s``, and past the output
        cap gg keeps the head and the tail (it stops the command at 100 times the cap).

        Args:
            command: the shell command line.
            workspace: its working directory.
            timeout_s: wall-clock seconds.
            read_only: the workspace is read-only (bubblewrap's bind, or Landlock; under
                ``rlimit`` without Landlock nothing enforces it). Agent-stop hooks (issue 9).
            stdin: bytes the command reads on stdin (UTF-8 text without a NUL); given,
                stderr is kept apart in :attr:`ShellResult.stderr`.
            env: variables added to the sandbox's own environment (nothing of gg's).
            binds: directories made visible read-only at their own path (a tool prefix).

        Raises:
            gg.errors.SandboxError: the sandbox could not start the command.
            gg.errors.UserError: ``stdin`` is not NUL-free UTF-8.
        """
        ws = self._workspace(workspace)
        marker = f"gg-stderr-{secrets.token_hex(8)}"
        shell = command if stdin is None else _split_stderr(command, stdin, marker)
        if host_facts().is_root:
            await asyncio.to_thread(share_workspace, ws)
        options = Options(
            read_only=read_only,
            env=tuple((env or {}).items()),
            binds=tuple(binds),
            protect=self._protected(ws),
        )
        result = await self._run_shell_line(shell, ws, timeout_s, options)
        return result if stdin is None else _stderr_apart(result, marker)

    async def _run_shell_line(
        self, shell: str, ws: Path, timeout_s: float, options: Options
    ) -> ShellResult:
        """Run the shell line ``shell`` in ``ws`` once no trusted hook holds the sandbox.

        Raises:
            gg.errors.SandboxError: the sandbox could not start the command.
        """
        membrane = Membrane(tools=[], handler=None, limits=self.limits)
        async with self.quiet.process():
            with prepared(
                mode="shell", isolation=self.isolation, limits=self.limits, workspace=ws,
                files={}, command=shell, wall_s=timeout_s, options=options,
            ) as job:  # fmt: skip
                cap = self._write_cap(job.written)
                outcome = await supervise(
                    job.plan, membrane=membrane, pipes=job.hand_over(), wall_s=timeout_s,
                    output_bytes=self.limits.output_bytes, shell=True, sweep=job.sweep,
                    writes=cap,
                )  # fmt: skip
        if not membrane.ready:
            raise SandboxError(f"the sandbox could not start the command: {outcome.output[-800:]}")
        return _shell_result(outcome, cap, self.limits)

    async def aclose(self) -> None:
        """Release the sandbox.

        Programs already running finish; new ones are refused; the warm zygotes are stopped.
        """
        self._closed = True
        self._pool.close()
        self._spares.close()

    async def __aenter__(self) -> Sandbox:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _split_stderr(command: str, stdin: bytes, marker: str) -> str:
    """A wrapper that feeds ``stdin`` (a here-document) and prints stderr after ``marker``."""
    try:
        text = stdin.decode("utf-8")
    except UnicodeDecodeError:
        raise UserError("a sandboxed command's stdin must be UTF-8 text") from None
    end = f"GG_STDIN_{marker.rsplit('-', 1)[-1]}"
    if "\0" in text or end in text:
        raise UserError("a sandboxed command's stdin holds a NUL or the here-document's end")
    err = f'"${{TMPDIR:-/tmp}}/.{marker}"'
    return (
        f"/bin/sh -c {shlex.quote(command)} 2>{err} <<'{end}'\n{text.rstrip(chr(10))}\n{end}\n"
        f"c=$?; printf '\\n%s\\n' {marker}; cat {err} 2>/dev/null; exit $c\n"
    )


def _stderr_apart(result: ShellResult, marker: str) -> ShellResult:
    """Move what the :func:`_split_stderr` wrapper printed after ``marker`` into ``stderr``.

    Without the marker (the wrapper never reached it), all of it stays in ``output``.
    """
    output, found, stderr = result.output.rpartition(f"\n{marker}\n")
    if not found:
        output, stderr = stderr, ""
    return dataclasses.replace(result, output=output, stderr=stderr)


def _shell_result(outcome: Outcome, cap: WriteCap, lim: Limits) -> ShellResult:
    output = outcome.output
    limit: LimitName | None = None
    stopped = outcome.stopped
    cap_name: CapName | None = None
    if stopped == "write_bytes":
        cap_name = "write_bytes"
    elif stopped == "write_files":
        cap_name = "write_files"
    if stopped == "output":
        output += f"\n[gg: the command printed over {100 * lim.output_bytes} bytes; stopped]"
    elif cap_name is not None:
        limit = cap_name
        output += f"\n[gg: {cap.message(cap_name, what='command')}]"
    elif stopped == "wall":
        limit = "wall"
    stopped_by_gg = limit in ("write_bytes", "write_files")
    code = -9 if stopped_by_gg or outcome.returncode is None else outcome.returncode
    return ShellResult(
        exit_code=None if stopped == "wall" else code,
        output=output,
        timed_out=stopped == "wall",
        seconds=outcome.seconds,
        limit=limit,
    )


def _result_limit(result: Result, lim: Limits) -> tuple[LimitName | None, str | None]:
    error = result.error or ""
    hints: dict[str, tuple[LimitName, str]] = {
        "memory": ("memory", f"its memory limit is {lim.memory_mb} MiB"),
        "processes": ("processes", f"its process limit is {lim.processes}"),
        "file_size": ("file_size", f"its file size limit is {lim.file_size_mb} MiB"),
    }
    if result.limit in hints:
        name, hint = hints[result.limit]
        return name, f"{error}\n(the program passed a sandbox limit: {hint})"
    return None, error
