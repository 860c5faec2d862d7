"""The first code to run in a sandboxed process: confine it, then hand over.

Standard library only: this file runs under the sandbox's own interpreter
(``/usr/bin/python3`` on Debian), which has no third-party packages. gg starts
it as ``python3 -I -S -B -c STUB CONFIG_JSON`` (the stub runs this file's code as gg
compiled it, or this source: :mod:`gg.sandbox.bytecode`); ``CONFIG_JSON`` is written
by :mod:`gg.sandbox.launch` and holds no secret.

In order, it:

1. moves the membrane pipes to fds 3 (requests, guest to gg) and 4 (answers,
   gg to guest) and closes every other inherited fd but 0-2;
2. changes to the workspace (still as root when gg runs as root, so the
   workspace's parent directories need not be searchable by the sandbox uid);
   JavaScript only where they are not (:func:`confine`);
3. sets rlimits (CPU, AS or DATA, FSIZE, NOFILE, NPROC, CORE);
4. ``unshare`` layer only: enters new net/ipc/uts/pid/mount namespaces (and a
   user namespace when gg is not root), makes every mount private, and forks
   pid 1 of the new pid namespace, which mounts a fresh procfs on ``/proc``
   (see :func:`enter_pid_namespace`): ``/proc`` then lists the sandbox's own
   processes only (issue 9, adversary finding F8). The outer process confines
   itself (steps 6-7, no file access at all) and waits;
5. builds the Landlock ruleset (after step 4, so that its ``/proc`` rule names
   the fresh procfs); ``rlimit`` layer only: forks the **reaper** (see
   :func:`become_reaper`), which stays outside the program's confinement and
   kills every descendant when the program's process ends or gg asks (SIGTERM);
6. drops to the dedicated uid/gid when one is given;
7. applies Landlock (files, TCP, signals, abstract sockets) when asked,
   sets ``no_new_privs`` and loads the seccomp filter gg compiled (no mount
   can be made or undone after this: Landlock and seccomp both forbid it);
8. ``unshare`` layer only: pid 1 forks the program's process (each dies with
   its parent);
9. writes ``{"kind": "ready"}`` on fd 3 and runs the Python program
   (``runner.py``), or execs Deno (in ``/`` when the sandbox uid can enter the
   workspace by its path, then the runner enters it: see :func:`reachable`) or
   ``/bin/sh -c``.

A failure before step 9 prints ``gg-boot: <why>`` on stderr and exits 121;
gg turns that into :class:`gg.errors.SandboxError`.
"""

from __future__ import annotations

import _frozen_importlib_external
import _json
import ctypes
import errno
import fcntl
import gc
import marshal
import os
import resource
import sys
import time

# Only what a JavaScript or shell start needs is imported: typing, json, contextlib and
# signal's enums would cost about 9 ms of CPU at every start (issue 11); _json and
# _signal are the C modules under json and signal.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal
    from typing import Any, NoReturn
else:
    import _signal as signal

BOOT_FAILED = 121
_CLONE = {
    "net": 0x40000000,
    "ipc": 0x08000000,
    "uts": 0x04000000,
    "pid": 0x20000000,
    "mnt": 0x00020000,
}
_CLONE_NEWUSER = 0x10000000
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 2, 4, 8
_MS_REC, _MS_PRIVATE = 0x4000, 0x40000
_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4
_PR_SET_SECCOMP = 22
_PR_CAPBSET_DROP = 24
_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_NO_NEW_PRIVS = 38
_REAP_DEADLINE_S = 10.0
_WALL = 0x40000000
"""``__WALL``: wait for every kind of child (also those cloned without SIGCHLD)."""
_SECCOMP_MODE_FILTER = 2
_SYS_LANDLOCK = {"create": 444, "add_rule": 445, "restrict": 446}

_libc = ctypes.CDLL(None, use_errno=True)


def fail(why: str) -> NoReturn:
    """Report a confinement failure on stderr and exit with :data:`BOOT_FAILED`."""
    os.write(2, f"gg-boot: {why}\n".encode(errors="replace"))
    os._exit(BOOT_FAILED)


def _check(result: int, what: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        fail(f"{what} failed: {os.strerror(err)} (errno {err})")
    return result


def move_fds(fds: dict[str, int | None]) -> dict[str, int]:
    """Put the request pipe on fd 3 and the answer pipe on fd 4; close every other fd but 0-2.

    Returns the other kept fds (``seccomp``, ``exe``) by name, at their new numbers.
    """
    high = {k: fcntl.fcntl(v, fcntl.F_DUPFD, 100) for k, v in fds.items() if v is not None}
    os.closerange(3, 100)
    for name, target in (("req", 3), ("ans", 4)):
        if name in high:
            source = high.pop(name)
            os.dup2(source, target, inheritable=True)
            os.close(source)
    start = 100
    for fd in [*sorted(high.values()), 65536]:
        os.closerange(start, fd)
        start = fd + 1
    for fd in high.values():
        os.set_inheritable(fd, False)
    return high


def set_rlimits(limits: list[list[Any]]) -> None:
    """Apply ``[[name, soft, hard], ...]`` (names without ``RLIMIT_``)."""
    for name, soft, hard in limits:
        try:
            resource.setrlimit(getattr(resource, "RLIMIT_" + name), (int(soft), int(hard)))
        except (ValueError, OSError) as exc:
            fail(f"setrlimit {name}={soft}/{hard}: {exc}")


def _write_id_maps(uid: int, gid: int) -> None:
    with open("/proc/self/setgroups", "w") as f:
        f.write("deny")
    with open("/proc/self/uid_map", "w") as f:
        f.write(f"{uid} {uid} 1")
    with open("/proc/self/gid_map", "w") as f:
        f.write(f"{gid} {gid} 1")


def enter_namespaces(spec: dict[str, Any]) -> None:
    """``unshare`` layer: move into new namespaces (a user namespace too when not root).

    The new pid namespace takes effect for children: see :func:`fork_into_namespace`.
    """
    flags = 0
    for name in spec["namespaces"]:
        flags |= _CLONE[name]
    if spec.get("userns"):
        uid, gid = os.getuid(), os.getgid()
        _check(_libc.prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0), "prctl(PR_SET_DUMPABLE)")
        _check(_libc.unshare(flags | _CLONE_NEWUSER), "unshare")
        _write_id_maps(uid, gid)
    else:
        _check(_libc.unshare(flags), "unshare")
    if flags & _CLONE["mnt"]:  # nothing mounted here may reach the host's mount table
        _check(_libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None), "making mounts private")


def enter_pid_namespace(outer: Any) -> None:
    """Fork pid 1 of the new pid namespace and mount a fresh procfs on ``/proc`` there.

    Returns in pid 1, whose ``/proc`` (in the private mount namespace of
    :func:`enter_namespaces`) shows only the processes of the new pid
    namespace: no host process, no command line but the sandbox's own. The
    outer process calls ``outer()`` (it confines itself) and then waits and
    mirrors pid 1's exit status; pid 1 dies with it (``PR_SET_PDEATHSIG``).
    A procfs that cannot be mounted is a boot failure, never the host's ``/proc``.
    """
    _fork_and_wait(outer)
    flags = _MS_NOSUID | _MS_NODEV | _MS_NOEXEC
    _check(_libc.mount(b"proc", b"/proc", b"proc", flags, None), "mounting a private /proc")


def fork_program() -> None:
    """Fork the program's process from pid 1, which stays its reaper; returns in the child.

    pid 1 reaps every orphan and mirrors the program's exit status; when it
    dies the kernel kills every process left in the namespace.
    """
    arm_parent_death()  # dropping privileges cleared the setting made at the fork
    _fork_and_wait(None)


def arm_parent_death() -> None:
    """SIGKILL this process when its parent dies (``PR_SET_PDEATHSIG``).

    The kernel clears the setting on a change of uid or gid, so call it again
    after :func:`drop_privileges`.
    """
    _check(_libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl(PDEATHSIG)")


def _fork_and_wait(before_wait: Any) -> None:
    """Fork; the child returns. The parent reaps children until the first ends, then exits so.

    The child dies with its parent. The parent runs ``before_wait()`` (if
    given) first. It may be pid 1, so it reaps every orphan; it exits with the
    first child's status (``128 + signal`` if killed).
    """
    child = os.fork()
    if child == 0:
        arm_parent_death()
        return
    os.closerange(3, 65536)  # it needs none: not the pipes, nor any other
    os.chdir("/")  # a waiting process holds no workspace as its cwd (issue 11)
    if before_wait is not None:
        before_wait()
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            os._exit(BOOT_FAILED)
        except InterruptedError:
            continue
        if pid == child:
            os._exit(_status(status))


_REAPER_SIGNALS = {signal.SIGTERM, signal.SIGCHLD}


def become_reaper() -> None:
    """``rlimit`` layer: fork; the child returns (the program's process), the parent reaps.

    The parent becomes a child subreaper (``PR_SET_CHILD_SUBREAPER``) before the
    fork, so every process the program starts that leaves its parent (``setsid``,
    a double fork) is re-parented to it rather than to init. It stays outside
    the program's confinement: as root it keeps root's uid (the program gets the
    slot uid); otherwise Landlock's signal scope (ABI 6+) keeps the program from
    signalling it, and it is not dumpable. When the program's process ends, or
    on SIGTERM from gg, it kills every descendant (:func:`kill_descendants`) and
    exits with the program's status (``128 + 9`` when stopped by gg).

    SIGTERM and SIGCHLD stay blocked in the parent and are taken with
    ``sigwaitinfo``: no handler, so no window in which a SIGTERM is noted but the
    wait goes on (gg then waited its whole grace for a program blocked on a full
    membrane pipe).
    """
    _check(_libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), "prctl(PR_SET_CHILD_SUBREAPER)")
    signal.pthread_sigmask(signal.SIG_BLOCK, _REAPER_SIGNALS)
    child = os.fork()
    if child == 0:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _REAPER_SIGNALS)
        return
    os.closerange(3, 65536)
    os.chdir("/")
    _libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    code = _wait_for(child)
    kill_descendants(os.getpid())
    os._exit(code)


def _wait_for(child: int) -> int:
    """Wait until ``child`` ends or SIGTERM comes, and return its exit status.

    The status is ``128 + signal`` if it was killed, or ``128 + SIGKILL`` when gg stopped
    it. Other children met meanwhile are reaped.
    """
    while True:
        while True:  # reap what has ended, without blocking
            try:
                pid, status = os.waitpid(-1, os.WNOHANG | _WALL)
            except ChildProcessError:
                return BOOT_FAILED
            if pid == 0:
                break
            if pid == child:
                return _status(status)
        if signal.sigwaitinfo(_REAPER_SIGNALS).si_signo == signal.SIGTERM:
            return 128 + signal.SIGKILL


def _status(status: int) -> int:
    """A ``wait`` status as a shell reports it: ``128 + signal`` when killed."""
    return 128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def _parents() -> dict[int, int]:
    """Map pid -> parent pid of every process this one can see in ``/proc``."""
    out: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            out[int(name)] = int(fields[1])
        except (OSError, IndexError, ValueError):
            continue
    return out


def _descendants(root: int, parents: dict[int, int]) -> list[int]:
    """Every descendant of ``root``, parents before their children (breadth first).

    So a shell is killed before the child it waits for and never reports that child's
    death into the program's output.
    """
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    found: dict[int, None] = {}
    todo = [root]
    while todo:
        for pid in children.get(todo.pop(0), []):
            if pid not in found:
                found[pid] = None
                todo.append(pid)
    return list(found)


def _kill_if_still(pid: int, tree: set[int], root: int) -> None:
    """SIGKILL ``pid`` through a pidfd, if it is still a descendant (no pid-reuse race)."""
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        return
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
        if ppid in tree or ppid == root:
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    except (OSError, IndexError, ValueError):
        pass
    finally:
        os.close(pidfd)


def kill_descendants(root: int) -> None:
    """SIGKILL and reap every descendant of ``root`` (this process), until none is left.

    A process forked between a scan and the kills has a killed parent, so it is
    re-parented to ``root`` and found by the next scan. Gives up after
    :data:`_REAP_DEADLINE_S` (gg's own kill and sweep follow).
    """
    deadline = time.monotonic() + _REAP_DEADLINE_S
    while time.monotonic() < deadline:
        order = _descendants(root, _parents())
        tree = set(order)
        for pid in order:
            _kill_if_still(pid, tree, root)
        reaped = _reap_all()
        if not tree and not reaped:
            return
        if not reaped:
            time.sleep(0.005)


def _reap_all() -> bool:
    """Reap every child that has ended; whether any was."""
    any_reaped = False
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG | _WALL)
        except ChildProcessError:
            return any_reaped
        if pid == 0:
            return any_reaped
        any_reaped = True


def drop_privileges(uid: int, gid: int) -> None:
    """Empty the capability bounding set, then become ``uid``/``gid`` (no other groups) for good."""
    for cap in range(64):
        if _libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() != errno.EINVAL:
            fail(f"cannot drop capability {cap} from the bounding set")
    try:
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
    except OSError as exc:
        fail(f"cannot drop to uid {uid}: {exc}")
    if os.getuid() != uid or os.geteuid() != uid:
        fail("uid did not change")


# Landlock (kernel 5.13+): access rights by ABI version.
_LL_FILE = 1 | 2 | 4  # EXECUTE, WRITE_FILE, READ_FILE
_LL_READ = 1 | 4 | 8  # EXECUTE, READ_FILE, READ_DIR


def _landlock_fs_rights(abi: int) -> int:
    rights = (1 << 13) - 1  # EXECUTE .. MAKE_SYM
    if abi >= 2:
        rights |= 1 << 13  # REFER
    if abi >= 3:
        rights |= 1 << 14  # TRUNCATE
    if abi >= 5:
        rights |= 1 << 15  # IOCTL_DEV
    return rights


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def landlock_ruleset(spec: dict[str, Any]) -> int:
    """Build a Landlock ruleset from ``{"abi", "rw", "ro", "files"}`` (paths); returns its fd.

    Must run before dropping privileges, so that every path can be opened.
    ``rw`` directories get every right, ``ro`` paths read and execute,
    ``files`` (character devices such as ``/dev/null``) read and write.
    TCP bind/connect (ABI 4+) and signals/abstract sockets leaving the
    domain (ABI 6+) are denied with no exception.
    """
    abi = int(spec["abi"])
    fs = _landlock_fs_rights(abi)
    attr = _RulesetAttr(fs, 3 if abi >= 4 else 0, 3 if abi >= 6 else 0)
    size = ctypes.sizeof(_RulesetAttr) if abi >= 6 else (16 if abi >= 4 else 8)
    ruleset = _check(
        _libc.syscall(_SYS_LANDLOCK["create"], ctypes.byref(attr), ctypes.c_size_t(size), 0),
        "landlock_create_ruleset",
    )
    file_rights = fs & (_LL_FILE | (1 << 14) | (1 << 15))
    groups = (("rw", fs), ("ro", _LL_READ), ("files", file_rights & ~1))
    for key, rights in groups:
        for path in spec.get(key, []):
            _landlock_allow(ruleset, path, rights, file_rights)
    return ruleset


def _landlock_allow(ruleset: int, path: str, rights: int, file_rights: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # a path this machine does not have
    try:
        if not os.path.isdir(f"/proc/self/fd/{fd}"):
            rights &= file_rights
        rule = _PathBeneath(rights, fd)
        _check(
            _libc.syscall(_SYS_LANDLOCK["add_rule"], ruleset, 1, ctypes.byref(rule), 0),
            f"landlock_add_rule {path}",
        )
    finally:
        os.close(fd)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def read_filter(seccomp_fd: int | None) -> bytes | None:
    """The seccomp BPF gg wrote on ``seccomp_fd`` (read to EOF, then closed); ``None`` if no fd."""
    if seccomp_fd is None:
        return None
    chunks = []
    while True:
        chunk = os.read(seccomp_fd, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(seccomp_fd)
    bpf = b"".join(chunks)
    if not bpf or len(bpf) % 8:
        fail("the seccomp filter is empty or malformed")
    return bpf


def lock_down(ruleset: int | None, bpf: bytes | None) -> None:
    """Set no_new_privs, enforce the Landlock ruleset, load the seccomp BPF (see read_filter)."""
    _check(_libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
    if ruleset is not None:
        _check(_libc.syscall(_SYS_LANDLOCK["restrict"], ruleset, 0), "landlock_restrict_self")
        os.close(ruleset)
    if bpf is None:
        return
    buf = ctypes.create_string_buffer(bpf, len(bpf))
    prog = _SockFprog(len(bpf) // 8, ctypes.cast(buf, ctypes.c_void_p))
    _check(
        _libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0),
        "prctl(PR_SET_SECCOMP)",
    )


def announce_ready() -> None:
    """Tell gg that confinement is complete (the first message on fd 3, before any program code)."""
    os.write(3, b'{"kind": "ready"}\n')


def _exec(config: dict[str, Any], exe_fd: int | None) -> NoReturn:
    argv = [str(a) for a in config["argv"]]
    env = dict(os.environ)
    if config["mode"] in ("shell", "check"):
        for fd in (3, 4):
            _close(fd)
    try:
        if exe_fd is not None:
            os.execve(exe_fd, argv, env)
        os.execve(argv[0], argv, env)
    except OSError as exc:
        os.write(2, f"gg: cannot start {argv[0]}: {exc}\n".encode())
        os._exit(127)


def _drop_and_lock(config: dict[str, Any], ruleset: int | None, bpf: bytes | None) -> None:
    drop = config.get("drop")
    if drop:
        drop_privileges(int(drop["uid"]), int(drop["gid"]))
    lock_down(ruleset, bpf)


def _confine_outer(config: dict[str, Any], bpf: bytes | None) -> None:
    """Confine the ``unshare`` layer's outer process (it only waits).

    It gets the program's uid and filter, and under Landlock no file access at all.
    """
    spec = config.get("landlock")
    ruleset = landlock_ruleset({"abi": spec["abi"]}) if spec else None
    _drop_and_lock(config, ruleset, bpf)


def reachable(workspace: str, drop: dict[str, Any] | None) -> bool:
    """Whether ``drop``'s uid and gid can enter ``workspace`` by its path (``True``: no drop).

    Tried, not guessed from mode bits (ACLs count): as root, with the sandbox ids made
    the effective ones and no other groups for the moment, ``faccessat(AT_EACCESS)``
    asks for search on every parent and the workspace itself; then root's ids and
    groups come back. Where it can, a JavaScript process's runner enters the workspace
    only when its program comes (:func:`confine`, issue 11).

    Returns ``False`` when an id cannot be changed (the process then enters as root).
    Never raises; ids that cannot be taken back are a boot failure (:func:`fail`, 121).
    """
    if not drop:
        return True
    groups, egid = os.getgroups(), os.getegid()
    done = 0  # how many of the three changes were made (and are undone, in reverse)
    try:
        os.setgroups([])
        done = 1
        os.setegid(int(drop["gid"]))
        done = 2
        os.seteuid(int(drop["uid"]))
        done = 3
        return os.access(workspace, os.X_OK, effective_ids=True)
    except OSError:
        return False  # it enters as root, as every other mode does
    finally:
        try:
            if done >= 3:
                os.seteuid(0)
            if done >= 2:
                os.setegid(egid)
            if done >= 1:
                os.setgroups(groups)
        except OSError as exc:
            fail(f"cannot take root's ids back: {exc}")


def confine(config: dict[str, Any], fds: dict[str, int]) -> None:
    """Steps 2-8 of the module docstring; returns in the (possibly forked) program process.

    JavaScript enters the workspace here only where the sandbox uid could not enter it
    by its path (:func:`reachable`); elsewhere it never has it as its cwd, not even
    for a moment: a spare starting is seen in ``/proc`` as much as one waiting (issue 11).
    """
    workspace = config["workspace"]
    if config["mode"] != "javascript" or not reachable(workspace, config.get("drop")):
        try:
            os.chdir(workspace)
        except OSError as exc:
            fail(f"cannot enter the workspace: {exc}")
    set_rlimits(config["rlimits"])
    bpf = read_filter(fds.get("seccomp"))
    if config.get("unshare"):
        enter_namespaces(config["unshare"])
        enter_pid_namespace(lambda: _confine_outer(config, bpf))
    ruleset = landlock_ruleset(config["landlock"]) if config.get("landlock") else None
    if config.get("reaper"):
        become_reaper()
    _drop_and_lock(config, ruleset, bpf)
    if config.get("unshare"):
        fork_program()


def _load(config: dict[str, Any], key: str, name: str) -> dict[str, Any]:
    """Execute a guest file (``runner.py``, ``zygote.py``); its namespace.

    Its code compiled by gg (``NAME.pyc`` in the run's directory) when the file's magic
    number is this interpreter's, else its source (``gg.sandbox.bytecode``).
    """
    path = config[key]
    namespace: dict[str, Any] = {"__name__": name}
    exec(_code(path, config.get("compiled")), namespace)
    return namespace


def _code(path: str, compiled: str | None) -> Any:
    if compiled:
        try:
            with open(f"{compiled}/{path.rsplit('/', 1)[-1]}c", "rb") as f:
                data = f.read()
        except OSError:
            data = b""
        if data[:4] == _frozen_importlib_external.MAGIC_NUMBER:
            return marshal.loads(data[16:])
    with open(path, encoding="utf-8") as f:
        return compile(f.read(), path, "exec")


def zygote(config: dict[str, Any], fds: dict[str, int]) -> NoReturn:
    """Mode ``zygote`` (issue 11): enter the layer's namespaces, then serve programs.

    Only what every program shares is done here: the workspace as cwd, the
    namespaces (``unshare``: pid 1 of the new pid namespace is the zygote), a
    child subreaper, not dumpable, dying with gg. The program's own confinement
    (rlimits, Landlock, uid, seccomp) is applied per program in the forked child
    (``zygote.py``). The seccomp filter is read once and kept.
    """
    runner = _load(config, "runner", "gg_runner")
    server = _load(config, "zygote", "gg_zygote")
    set_rlimits([["CORE", 0, 0]])
    bpf = read_filter(fds.get("seccomp"))
    if config.get("unshare"):
        enter_namespaces(config["unshare"])
        enter_pid_namespace(lambda: _confine_outer(config, bpf))
    os.chdir("/")  # each child enters the workspace itself, before it drops its uid
    arm_parent_death()
    _check(_libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), "prctl(PR_SET_CHILD_SUBREAPER)")
    _libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    gc.freeze()  # what every child shares stays out of its collections (fewer copied pages)
    announce_ready()
    server["serve"](sys.modules[__name__], runner, bpf, list(config["scratch"]))
    os._exit(0)


class _Decoding:
    """The settings ``_json.make_scanner`` reads: plain JSON, as ``json.loads`` decodes it."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = float


def _loads(text: str) -> dict[str, Any]:
    """``json.loads`` of gg's config (one object), without importing the json package."""
    start = len(text) - len(text.lstrip())
    settings: Any = _Decoding()
    value, end = _json.make_scanner(settings)(text, start)
    if not isinstance(value, dict) or text[end:].strip():
        fail("the boot config is not one JSON object")
    return value


def _close(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        return  # already closed


def main() -> NoReturn:
    """Confine this process as ``sys.argv[1]`` (JSON) says, then run what it names."""
    if sys.argv[1] == "@stdin":  # a zygote: no workspace path on its command line
        config = _loads(sys.stdin.buffer.read().decode())
        null = os.open("/dev/null", os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
    else:
        config = _loads(sys.argv[1])
    fds = move_fds(dict(config["fds"]))
    if config["mode"] == "zygote":
        zygote(config, fds)
    runner: dict[str, Any] = {"__name__": "gg_runner"}
    if config["mode"] == "python":  # load it (and its imports) while every path is reachable
        runner = _load(config, "runner", "gg_runner")
    confine(config, fds)
    announce_ready()
    if config["mode"] == "probe":
        os._exit(0)
    if "main" not in runner:
        _exec(config, fds.get("exe"))
    sys.argv = ["<program>"]
    runner["main"](config["run_dir"], config["workspace"])
    os._exit(0)


if __name__ == "__main__":
    main()
