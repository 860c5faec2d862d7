"""Build the command line, environment and boot configuration of one sandboxed process.

One :class:`Plan` per process: a Python program, a JavaScript program, a
JavaScript syntax check, a shell command, or the probe. The process always
starts as ``<python> -I -S -B -c STUB CONFIG``: ``guest/boot.py``, its code compiled by gg
(:mod:`gg.sandbox.bytecode`) when the interpreter matches, else its source; under
bubblewrap for :attr:`Isolation.BWRAP`; ``boot.py`` applies what the config
says and then runs the program. Nothing of gg's environment is passed on:
the child's environment is built here from scratch.

Paths inside the sandbox: the workspace keeps its own absolute path (under
bubblewrap it is bind-mounted there); ``/gg/guest`` and ``/gg/run`` hold the
guest code and the run's files under bubblewrap. When gg is root,
bubblewrap runs privileged (no user namespace, every capability dropped but
``CAP_SETUID``/``CAP_SETGID``/``CAP_SETPCAP``) so that it can bind any
workspace; ``boot.py`` then empties the capability bounding set and becomes
the slot uid before any program code runs. Otherwise bubblewrap runs as gg's
user in a new user namespace.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from gg.disk import disk_full, is_disk_full
from gg.sandbox.accounts import SANDBOX_GID
from gg.sandbox.bytecode import BOOT_STUB, needed, write_compiled
from gg.sandbox.host import GUEST_DIR, SYSTEM_PATH, HostFacts, Isolation
from gg.sandbox.limits import Limits

__all__ = ["Mode", "Plan", "deno_config", "plan", "program_config", "scratch_places"]

Mode = Literal["python", "javascript", "check", "shell", "probe", "zygote"]
_MIB = 1 << 20
_JS_RESERVE_MB = 1536  # each V8 isolate (main, Worker) reserves ~512 MiB of code range up front
_READ_ONLY = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32")
_DROP_CAPS = ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP")
"""What boot.py keeps under privileged bubblewrap: just enough to drop to the slot uid."""
_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")


@dataclass(slots=True, kw_only=True)
class Plan:
    """How to start one sandboxed process. The caller owns (and closes) ``fds``."""

    argv: list[str]
    env: dict[str, str]
    pass_fds: tuple[int, ...]
    user: int | None = None
    """Start the process as this uid; ``None``: as gg's user (boot.py drops privileges)."""
    group: int | None = None
    fds: list[int] = field(default_factory=list)
    """Descriptors opened for the child; close them once it has started."""
    reaper: bool = False
    """The process is ``boot.py``'s reaper (``rlimit`` layer): stop it with SIGTERM, so that
    it kills every descendant, before killing its process group."""
    stdin: int | None = None
    """A descriptor the process reads its boot configuration from (``None``: ``/dev/null``);
    one of ``fds``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Spec:
    """What to run, where and how (the inputs of :func:`plan`)."""

    mode: Mode
    isolation: Isolation
    facts: HostFacts
    limits: Limits
    workspace: Path
    run_dir: Path
    uid: int | None
    req_fd: int
    ans_fd: int | None = None
    seccomp_fd: int | None = None
    command: str = ""
    wall_s: float = 0
    read_only: bool = False
    """The workspace is read-only: agent-stop hooks (issue 9 item 5), a reviewer's programs
    (issue 16) and their zygotes."""
    env: tuple[tuple[str, str], ...] = ()
    """Shell mode: variables added to (or replacing) the built environment (a hook's
    ``pass_env``, a ``PATH`` with a tool prefix first)."""
    binds: tuple[str, ...] = ()
    """Directories (or files) made visible read-only at their own path (a hook's interpreter
    prefix, a hook script outside the workspace)."""
    protect: tuple[str, ...] = ()
    """Files inside the workspace bound read-only over it under bubblewrap (gg.toml, hook
    scripts: issue 9 item 2). A path that is not a regular file now is skipped."""
    deno: bool = False
    """A zygote whose children exec Deno (issue 11): Deno is bound into it, as for a
    JavaScript process."""


def _rlimits(spec: Spec, nproc_base: int) -> list[list[int | str]]:
    lim = spec.limits
    cpu = max(1, int(lim.cpu_s + 0.999))
    if spec.mode == "shell":
        cpu = max(cpu, int(spec.wall_s + 1))
    out: list[list[int | str]] = [
        ["CPU", cpu, cpu + 1],
        ["FSIZE", lim.file_size_mb * _MIB, lim.file_size_mb * _MIB],
        ["NOFILE", lim.open_files, lim.open_files],
        ["NPROC", nproc_base + lim.processes, nproc_base + lim.processes],
        ["CORE", 0, 0],
    ]
    if spec.mode in ("python", "probe", "zygote"):
        out.append(["AS", lim.memory_mb * _MIB, lim.memory_mb * _MIB])
    else:
        data = (lim.memory_mb + _JS_RESERVE_MB) * _MIB
        out.append(["DATA", data, data])
    return out


def _own_process_count() -> int:
    """Processes and threads of gg's own uid (RLIMIT_NPROC counts them when gg is not root)."""
    uid, count = os.getuid(), 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:  # gg itself is non-dumpable: its /proc entry belongs to root
                if entry.stat().st_uid == uid or entry.name == str(os.getpid()):
                    count += len(os.listdir(f"/proc/{entry.name}/task"))
            except OSError:
                continue
    return count


def _tmp(spec: Spec) -> str:
    return "/tmp" if spec.isolation is Isolation.BWRAP else str(spec.run_dir / "tmp")


def _env(spec: Spec) -> dict[str, str]:
    tmp = _tmp(spec)
    env = {"PATH": SYSTEM_PATH, "LANG": "C.UTF-8", "HOME": tmp, "TMPDIR": tmp}
    env["GIT_CONFIG_GLOBAL"] = f"{_run_path(spec)}/gitconfig"
    if spec.mode in ("javascript", "check"):
        env |= {"DENO_DIR": f"{tmp}/.deno", "NO_COLOR": "1", "DENO_NO_UPDATE_CHECK": "1"}
    if spec.mode == "shell":
        env |= {"TERM": "dumb", "PYTHONDONTWRITEBYTECODE": "1", **dict(spec.env)}
    return env


def _run_path(spec: Spec) -> str:
    return "/gg/run" if spec.isolation is Isolation.BWRAP else str(spec.run_dir)


def _deno_base(spec: Spec, deno: str) -> list[str]:
    base = [deno, "run", "--no-prompt", "--no-lock", "--no-remote", "--no-npm", "--no-code-cache"]
    heap = max(16, spec.limits.memory_mb * 3 // 4)
    return [*base, f"--v8-flags=--max-old-space-size={heap}"]


def _deno_argv(spec: Spec, deno: str) -> list[str]:
    """Deno's command line: no path of the workspace in it (see :func:`deno_config`)."""
    run = _run_path(spec)
    if spec.mode == "check":
        return [*_deno_base(spec, deno), "--no-config", f"{run}/check.mjs"]
    # -q: no "experimental" notice for the permission set in the program's output
    config = [f"--config={run}/deno.json", "-P=gg", "-q"]
    return [*_deno_base(spec, deno), *config, f"{run}/runner.js", run]


def deno_config(spec: Spec) -> str:
    """The ``deno.json`` of a JavaScript run: its permissions, and nothing else (JSON text).

    Read: the run's own modules, the answer pipe, the workspace and tmp; write: the request
    pipe, the workspace and tmp. No network, environment, subprocess, FFI or system
    information. In a file rather than on the command line, so that a warm process
    waiting for its program (issue 11) shows no workspace path in ``/proc``.
    """
    run = _run_path(spec)
    reads = [f"{run}/{name}.mjs" for name in ("sdk", "sdk-warm", "program", "entry", "start")]
    reads.append("/dev/fd/4")
    shared = [str(spec.workspace), _tmp(spec)]
    rules = {"read": [*reads, *shared], "write": ["/dev/fd/3", *shared]}
    return json.dumps({"permissions": {"gg": rules}}, indent=1)


def _landlock(spec: Spec) -> dict[str, object] | None:
    facts = spec.facts
    if spec.isolation is Isolation.BWRAP or facts.landlock_abi < 1:
        return None
    read_only = [*_READ_ONLY, str(spec.run_dir), str(GUEST_DIR)]
    if facts.python_prefix:
        read_only.append(facts.python_prefix)
    if facts.deno and spec.mode in ("javascript", "check"):
        read_only.append(facts.deno)
    if spec.mode == "shell":
        read_only += ["/etc", "/proc", *spec.binds]
    rw = [str(spec.workspace), _tmp(spec)]
    if spec.read_only:
        read_only.append(rw.pop(0))
    return {"abi": facts.landlock_abi, "rw": rw, "ro": read_only, "files": list(_DEVICES)}


def _boot_config(spec: Spec, exe_fd: int | None) -> dict[str, object]:
    bwrap = spec.isolation is Isolation.BWRAP
    guest = "/gg/guest" if bwrap else str(GUEST_DIR)
    root_drops = spec.facts.is_root and spec.uid is not None
    nproc_base = 0 if spec.facts.is_root else _own_process_count()
    argv: list[str] = []
    if spec.mode in ("javascript", "check"):
        argv = _deno_argv(spec, "/gg/deno" if bwrap else str(spec.facts.deno))
    elif spec.mode == "shell":
        argv = ["/bin/sh", "-c", spec.command]
    unshare = None
    if spec.isolation is Isolation.UNSHARE:
        # mnt: a private mount namespace, so that boot.py mounts a procfs of the new pid
        # namespace on /proc (the host's processes and command lines stay out of sight)
        names = ["net", "ipc", "uts", "pid", "mnt"]
        unshare = {"namespaces": names, "userns": not spec.facts.is_root}
    return {
        "mode": spec.mode,
        "zygote": f"{guest}/zygote.py",
        "scratch": scratch_places(spec),
        "workspace": str(spec.workspace),
        "run_dir": _run_path(spec),
        "runner": f"{guest}/runner.py",
        "compiled": _run_path(spec),
        "fds": {"req": spec.req_fd, "ans": spec.ans_fd, "seccomp": spec.seccomp_fd, "exe": exe_fd},
        "rlimits": _rlimits(spec, nproc_base),
        "drop": {"uid": spec.uid, "gid": SANDBOX_GID} if root_drops else None,
        "unshare": unshare,
        "reaper": spec.isolation is Isolation.RLIMIT,
        "landlock": _landlock(spec),
        "argv": argv,
    }


def scratch_places(spec: Spec) -> list[str]:
    """Where a program may leave files besides the workspace (a zygote empties them after it)."""
    if spec.isolation is Isolation.BWRAP:
        return ["/tmp", "/dev/shm"]
    return [str(spec.run_dir / "tmp")]


def program_config(spec: Spec) -> dict[str, object]:
    """The per-program confinement a zygote's child applies (issue 11).

    The same rlimits, Landlock ruleset, uid drop and reaper as a cold start's boot config
    (:func:`_boot_config`), computed now (``RLIMIT_NPROC`` counts gg's processes now).
    For ``spec.mode`` ``"javascript"`` also Deno's command line and environment
    (``argv``, ``env``), which the child execs once confined (``exec``).
    """
    config = _boot_config(spec, None)
    keys = ("workspace", "rlimits", "drop", "landlock", "reaper")
    out = {key: config[key] for key in keys}
    if spec.mode == "javascript":
        out |= {"argv": config["argv"], "env": _env(spec), "exec": True}
    return out


def _bwrap_args(spec: Spec, fds: list[int]) -> list[str]:
    def bind_fd(path: str, dest: str, *, writable: bool = False) -> list[str]:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        fds.append(fd)
        return ["--bind-fd" if writable else "--ro-bind-fd", str(fd), dest]

    args = _bwrap_base(spec)
    if spec.mode == "shell":
        args += ["--ro-bind", "/etc", "/etc"]
    args += ["--proc", "/proc", "--dev", "/dev"]
    for tmp in ("/tmp", "/dev/shm"):  # private, sized, gone with the sandbox (POSIX shm, sem_open)
        args += ["--perms", "1777", "--size", str(spec.limits.tmp_mb * _MIB), "--tmpfs", tmp]
    ws = str(spec.workspace)
    prefix = spec.facts.python_prefix
    extra = [b for b in spec.binds if b != prefix and os.path.exists(b)]
    for path in _mount_parents([ws, "/gg/guest", *([prefix] if prefix else []), *extra]):
        args += ["--perms", "0755", "--dir", path]  # searchable by the slot uid
    for path in [*([prefix] if prefix else []), *extra]:
        args += bind_fd(path, path)
    args += bind_fd(str(GUEST_DIR), "/gg/guest") + bind_fd(str(spec.run_dir), "/gg/run")
    if (spec.mode in ("javascript", "check") or spec.deno) and spec.facts.deno:
        args += bind_fd(spec.facts.deno, "/gg/deno")
    args += [*bind_fd(ws, ws, writable=not spec.read_only), "--chdir", ws]
    # each directory between the workspace and a protected file becomes a mount point (bound
    # onto itself, as writable as before): a mount point cannot be renamed, so no program can
    # move the file's directory away with its read-only bind and put another in its place
    for path in _between(spec.workspace, spec.protect):
        fd = _regular_file_fd(spec.workspace, path, directories=True)
        if fd is not None:
            fds.append(fd)
            args += ["--ro-bind-fd" if spec.read_only else "--bind-fd", str(fd), path]
    for path in spec.protect:  # after the workspace: these stay read-only inside it
        fd = _regular_file_fd(spec.workspace, path, directories=True)
        if fd is not None:
            fds.append(fd)
            args += ["--ro-bind-fd", str(fd), path]
    return [*args, "--"]


def _bwrap_base(spec: Spec) -> list[str]:
    """The bubblewrap arguments: namespaces, capabilities, read-only system directories."""
    args = [str(spec.facts.bwrap), "--die-with-parent", "--new-session", "--hostname", "gg"]
    if spec.facts.is_root:  # privileged bwrap, no user namespace; boot.py drops to the slot uid
        args += ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts"]
        args += ["--unshare-cgroup-try", "--cap-drop", "ALL"]
        args += [a for cap in _DROP_CAPS for a in ("--cap-add", cap)]
    else:
        args += ["--unshare-all", "--unshare-user", "--disable-userns", "--cap-drop", "ALL"]
    args += ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    return args


def _between(workspace: Path, paths: tuple[str, ...]) -> list[str]:
    """The directories strictly between ``workspace`` and each of ``paths``.

    Outermost first, each once.
    """
    out: dict[str, None] = {}
    for path in paths:
        try:
            parts = Path(path).relative_to(workspace).parts
        except ValueError:
            continue
        for i in range(1, len(parts)):
            out[str(workspace.joinpath(*parts[:i]))] = None
    return sorted(out, key=lambda p: p.count("/"))


def _regular_file_fd(workspace: Path, path: str, *, directories: bool = False) -> int | None:
    """An ``O_PATH`` fd of ``path`` if it is a regular file beneath ``workspace``, else ``None``.

    With ``directories``, a directory is accepted too. The path must be reached without
    following a symlink; ``None`` also means a file the agent removed or replaced.
    """
    try:
        parts = Path(path).relative_to(workspace).parts
    except ValueError:
        return None
    flags = os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(workspace, flags | os.O_DIRECTORY)
    try:
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            nxt = os.open(part, flags | (0 if last else os.O_DIRECTORY), dir_fd=fd)
            os.close(fd)
            fd = nxt
        mode = os.fstat(fd).st_mode
        if not parts or not (stat.S_ISREG(mode) or (directories and stat.S_ISDIR(mode))):
            os.close(fd)
            return None
        return fd
    except OSError:
        os.close(fd)
        return None


def _mount_parents(paths: list[str]) -> list[str]:
    """The directories bubblewrap must create above these mount points, outermost first."""
    made = {"/", "/tmp", "/usr", "/proc", "/dev"}
    parents: list[str] = []
    for path in paths:
        for parent in reversed(Path(path).parents):
            text = str(parent)
            if text not in made and not text.startswith(("/usr/", "/proc/", "/dev/")):
                made.add(text)
                parents.append(text)
    return parents


def plan(spec: Spec) -> Plan:
    """The command, environment and descriptors that start ``spec`` under its isolation layer.

    Raises:
        OSError: if a path to bind or execute cannot be opened.
    """
    fds: list[int] = []
    passed = [spec.req_fd, *(fd for fd in (spec.ans_fd, spec.seccomp_fd) if fd is not None)]
    try:
        exe_fd = None
        if spec.isolation is not Isolation.BWRAP and spec.mode in ("javascript", "check"):
            exe_fd = os.open(str(spec.facts.deno), os.O_RDONLY | os.O_CLOEXEC)
            fds.append(exe_fd)
        config = json.dumps(_boot_config(spec, exe_fd), separators=(",", ":"))
        boot_dir = "/gg/guest" if spec.isolation is Isolation.BWRAP else str(GUEST_DIR)
        stub = BOOT_STUB.format(pyc=f"{_run_path(spec)}/boot.pyc", source=f"{boot_dir}/boot.py")
        argv = [spec.facts.python, "-I", "-S", "-B", "-c", stub, config]
        result = Plan(
            argv=argv,
            env=_env(spec),
            pass_fds=(),
            fds=fds,
            reaper=spec.isolation is Isolation.RLIMIT,
        )
        if spec.isolation is Isolation.BWRAP:
            result.argv = _bwrap_args(spec, fds) + argv
        if spec.mode == "javascript":
            (spec.run_dir / "deno.json").write_text(deno_config(spec), encoding="utf-8")
            _hide(result, bwrap=spec.isolation is Isolation.BWRAP)
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    result.pass_fds = tuple(passed + fds)
    return result


def _pipe_of(data: bytes, fds: list[int]) -> int:
    """A pipe holding ``data`` (its read end, added to ``fds``), written before any reader.

    Raises:
        OSError: the pipe cannot be made large enough for ``data``.
    """
    read_fd, write_fd = os.pipe()
    fds.append(read_fd)
    try:
        if len(data) > 65536:  # many protected files: grow the buffer, never block on it
            fcntl.fcntl(write_fd, fcntl.F_SETPIPE_SZ, len(data))
        os.write(write_fd, data)
    finally:
        os.close(write_fd)
    return read_fd


def _hide(result: Plan, *, bwrap: bool) -> None:
    """Take every workspace path off ``result``'s command line (a JavaScript run, issue 11).

    A warm Deno may wait for its program for minutes, and nothing in ``/proc`` should tie
    it to the workspace: ``boot.py`` reads its config from stdin (``@stdin``), bubblewrap
    its arguments from a pipe (``--args``), and Deno starts in ``/`` (``boot.py``; the
    runner enters the workspace once the program came).
    """
    argv, fds = result.argv, result.fds
    result.stdin = _pipe_of(argv[-1].encode(), fds)
    argv[-1] = "@stdin"
    if not bwrap:
        return
    if "--chdir" in argv:
        at = argv.index("--chdir")
        del argv[at : at + 2]
    cut = argv.index("--")
    args_fd = _pipe_of(b"".join(a.encode() + b"\0" for a in argv[1:cut]), fds)
    result.argv = [argv[0], "--args", str(args_fd), *argv[cut:]]


def prepare_run_dir(
    run_dir: Path, *, uid: int | None, isolation: Isolation, mode: Mode = "zygote"
) -> None:
    """Give the run directory its files: the JS runner, a git config, and more.

    Also the guest's Python code a process of ``mode`` loads, compiled
    (:func:`gg.sandbox.bytecode.needed`), and, but under bubblewrap, a private tmp.

    Raises:
        gg.errors.DiskFull: its filesystem is full (issue 12: the run stops, named).
        OSError: another failure to write a file there.
    """
    try:
        _fill(run_dir, uid=uid, isolation=isolation, mode=mode)
    except OSError as e:
        if is_disk_full(e):
            raise disk_full(run_dir, "the sandbox's run directory", e) from None
        raise


def _fill(run_dir: Path, *, uid: int | None, isolation: Isolation, mode: Mode) -> None:
    os.chmod(run_dir, 0o755)
    shutil.copyfile(GUEST_DIR / "runner.js", run_dir / "runner.js")
    guest = "/gg/guest" if isolation is Isolation.BWRAP else str(GUEST_DIR)
    write_compiled(run_dir, guest, needed(mode))
    # The workspace belongs to gg's user, not the slot uid: let git work in it anyway.
    (run_dir / "gitconfig").write_text("[safe]\n\tdirectory = *\n")
    if isolation is not Isolation.BWRAP:
        tmp = run_dir / "tmp"
        tmp.mkdir(mode=0o700)
        if uid is not None:
            os.chown(tmp, uid, SANDBOX_GID)
