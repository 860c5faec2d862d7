"""The warm sandbox's fork server (zygote): one per session, inside the sandbox (issue 11).

Standard library only. ``boot.py`` execs this file's code in mode ``zygote``
after the layer's namespaces are entered (never the program's confinement)
and calls :func:`serve` with its own module (``boot``) and the loaded runner.
The interpreter, the runner and its imports are then warm: each program
costs one ``fork``.

The control channel is an ``AF_UNIX`` stream socket on fd 3, one JSON line
per message. gg sends ``run`` with three descriptors attached
(``SCM_RIGHTS``: the output pipe, the request pipe, the answer pipe), as soon
as the zygote is free: before the program exists (while the model thinks)::

    <- {"kind": "run", "sdk": "...", "rlimits": [...],
        "drop": {"uid": 61003, "gid": 61000} | null, "landlock": {...} | null,
        "reaper": false, "workspace": "..."}
    <- {"kind": "kill"}                      (while it runs: stop it now)
    -> {"kind": "exit", "status": 0}          (the program's process ended)
    -> {"kind": "exit", "status": 0, "reaped": false}   (or: it is ending, below)
    -> {"kind": "reaped"}                     (then: that process is gone)
    -> {"kind": "clean", "clean": true}       (its leftovers are gone)

Per program, the forked child puts the pipes on fds 1-2, 3 and 4 and its
exit note (a pipe to the zygote) on fd 5, closes every other descriptor,
sets the program's rlimits, builds its Landlock ruleset, drops to its uid,
loads the seccomp filter and only then announces ``ready``: the same
confinement, in the same order, as a cold start
(``boot.py``). Then, still before any program code, it binds ``sdk`` (the
SDK its program most likely has) and waits: gg writes the program itself as
the first line of the answer pipe (``runner.run_primed``), so a program's
turn pays neither the fork nor the confinement. The zygote is a child
subreaper: when the child ends, every process it left is killed before its
``exit`` is reported (no process outlives its turn; none is left when
``/proc/self/task/*/children`` lists none); then ``/tmp`` and ``/dev/shm``
(or the run's private tmp) are emptied when anything is in them, after the
report when nothing was left running, and ``clean`` says whether all of it
worked; gg never gives a zygote another program before it reported
``clean: true``.

A JavaScript program's message has ``"exec": true`` and Deno's ``argv`` and ``env`` (and
``"exe": true`` with Deno's executable as a fourth descriptor outside bubblewrap): its
child takes the same confinement, then execs Deno with ``runner.js``
(:func:`_exec_child`); the runner writes no exit note, so its end is reported once
it is reaped. Every message may carry ``ident`` (the workspace's device and inode):
a child whose workspace, opened by its path, is another directory fails.

The end is reported early when it can be (issue 11): freeing a forked
interpreter's memory takes the kernel about a millisecond, after the program
can no longer run. As the runner ends it closes its pipes to gg and writes
its exit status on the exit note; the zygote then reads ``/proc``: once every
thread of the child is exiting (``PF_EXITING``: it entered ``do_exit``,
which never returns to user code), none of them has a child and the zygote
has no other, nothing of the program can run any more, and ``exit`` goes out
with ``reaped: false``, and ``reaped`` once the child is reaped (gg's own
work for the turn overlaps the wait; ``Sandbox.run`` returns only after
it); ``clean`` is false when its real status differs from the note's. The
note is only a hint (the program can write it too): without that evidence
within 3 ms the zygote waits for the exit as before. The ``rlimit``
layer's programs run under a reaper of their own and are always reported
after their exit.

What a child still shares with its zygote's other children: the
address-space layout of what the zygote loaded, and ``str``/``bytes`` hash
randomisation (the hash secret is fixed when the interpreter starts, so a
fork cannot draw its own; each zygote has its own, and gg retires a zygote
after 100 programs). That residual is accepted: hash randomisation hardens
a server against keys chosen by someone else (hash flooding); every program
of a zygote is the same session's (one workspace, one model), and a program
that learns the secret can slow down only what it could slow down anyway,
within its own limits. Drawing a secret per program would need a fresh
interpreter per program, which is the cost the zygote exists to avoid. The
``random`` module is reseeded in each child; ``os.urandom``, ``secrets``
and ``uuid`` read the kernel's generator and share nothing.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import select
import shutil
import signal
import socket
import stat
import sys
import time
from typing import Any

_MAX_MESSAGE = 64 << 20
_KILL_GRACE_S = 12.0
_SDK_CACHE = 4
"""Compiled SDKs a zygote keeps (a session's arms differ in their tools)."""
_NOTE_FD = 5
"""The child's end of its exit note: the runner writes its exit status there as it ends."""
_PF_EXITING = 0x4
"""``PF_EXITING`` in ``/proc/PID/stat``'s flags: the thread entered ``do_exit`` for good."""
_NOTE_WAIT_S = 0.003
"""How long a note may precede the evidence that every thread of the child is exiting."""


def _read_message(sock: socket.socket, pending: bytearray, fds: list[int]) -> Any:
    """The next JSON line from gg (``None`` at EOF); attached descriptors go to ``fds``."""
    while b"\n" not in pending:
        data, got, _, _ = socket.recv_fds(sock, 1 << 20, 8)
        fds.extend(got)
        if not data:
            return None
        pending += data
        if len(pending) > _MAX_MESSAGE:
            return None
    line, _, rest = bytes(pending).partition(b"\n")
    pending[:] = rest
    return json.loads(line)


def _send(sock: socket.socket, message: dict[str, Any]) -> None:
    sock.sendall((json.dumps(message, separators=(",", ":")) + "\n").encode())


def _same_workspace(fd: int, msg: dict[str, Any]) -> None:
    """Raise unless ``fd`` is the workspace directory gg checked (``ident``: dev, inode).

    A workspace swapped away and back since the zygote started is another directory:
    the child would otherwise run its program in the one it opened by path.
    """
    ident = msg.get("ident")
    st = os.fstat(fd)
    if ident is not None and [st.st_dev, st.st_ino] != list(ident):
        raise OSError("the workspace is no longer the directory the zygote was made for")


def _confine(boot: Any, msg: dict[str, Any], bpf: Any) -> None:
    """A program's confinement, in a cold start's order; then ``ready`` goes to gg.

    Its rlimits, its Landlock ruleset (built while every path can be opened), the
    ``rlimit`` layer's reaper, the uid drop and the seccomp filter (``boot.py``).
    """
    boot.set_rlimits(msg["rlimits"])
    ruleset = boot.landlock_ruleset(msg["landlock"]) if msg.get("landlock") else None
    if msg.get("reaper"):
        boot.become_reaper()
    boot._drop_and_lock(msg, ruleset, bpf)
    boot.announce_ready()


def _exec_child(boot: Any, msg: dict[str, Any], fds: list[int], bpf: Any) -> None:
    """In the forked child of a JavaScript program: confined as a cold start is, then Deno.

    The pipes go on fds 1-2, 3 and 4 (Deno re-opens 3 and 4 by ``/dev/fd``); the exit
    note is closed (the runner writes none: the zygote waits for the exit itself); Deno's
    executable comes as a descriptor (the ``unshare`` and ``rlimit`` layers) or by its
    path in the sandbox (``/gg/deno``). The child stays in ``/`` and its runner enters
    the workspace when its program comes, unless the slot uid cannot reach it by its
    path (``boot.reachable``): then it enters it now, as root. Never returns.
    """
    try:
        out, req, ans, *exe, note = fds
        os.close(note)
        for source, target in ((out, 1), (out, 2), (req, 3), (ans, 4)):
            os.dup2(source, target, inheritable=True)
        exe_fd = None
        if exe:  # on fd 5, close-on-exec
            os.dup2(exe[0], _NOTE_FD, inheritable=False)
            exe_fd = _NOTE_FD
        # received descriptors are inheritable: nothing but 0-4 reaches Deno
        os.closerange(_NOTE_FD if exe_fd is None else _NOTE_FD + 1, 65536)
        boot.arm_parent_death()
        if not boot.reachable(msg["workspace"], msg.get("drop")):
            os.chdir(msg["workspace"])
            here = os.open(".", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
            _same_workspace(here, msg)
            os.close(here)
        _confine(boot, msg, bpf)
        argv = [str(a) for a in msg["argv"]]
        env = {str(k): str(v) for k, v in dict(msg["env"]).items()}
    except BaseException as exc:
        boot.fail(f"the warm sandbox could not confine a program: {exc}")
    try:
        os.execve(exe_fd if exe_fd is not None else argv[0], argv, env)
    except OSError as exc:
        os.write(2, f"gg: cannot start {argv[0]}: {exc}\n".encode())
    os._exit(127)


def _child(
    boot: Any, runner: dict[str, Any], msg: dict[str, Any], fds: list[int], bpf: Any, sdk: Any
) -> None:
    """In the forked child: the program's confinement, then the program. Never returns."""
    if msg.get("exec"):
        _exec_child(boot, msg, fds, bpf)
    try:
        out, req, ans, note = fds
        for source, target in ((out, 1), (out, 2), (req, 3), (ans, 4), (note, _NOTE_FD)):
            os.dup2(source, target, inheritable=True)
        os.closerange(_NOTE_FD + 1, 65536)
        boot.arm_parent_death()
        # Opened now, as root if gg is (its parents may be closed to the slot uid); entered
        # when the program comes: a waiting child holds no workspace as its cwd.
        home = os.open(msg["workspace"], os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        _same_workspace(home, msg)
        _confine(boot, msg, bpf)
    except BaseException as exc:
        boot.fail(f"the warm sandbox could not confine a program: {exc}")
    sys.argv = ["<program>"]
    if "random" in sys.modules:  # its state came from the zygote: every child reseeds
        sys.modules["random"].seed()
    exit_note = None if msg.get("reaper") else _NOTE_FD  # else: the reaper's child runs it
    runner["run_primed"](str(msg.get("sdk") or ""), msg["workspace"], sdk, exit_note, home)
    os._exit(0)


def _sdk_code(runner: dict[str, Any], source: Any, cache: dict[str, Any]) -> Any:
    """``source`` (the SDK's) compiled, once per distinct SDK; ``None``: the child compiles it.

    The code object is immutable and each child executes it into a module of its own, so
    nothing of one program's SDK reaches the next; the few SDKs of a session are kept.
    """
    if not isinstance(source, str) or not source:
        return None
    if source not in cache:
        try:
            code = runner["compile_sdk"](source)
        except BaseException:  # the child compiles it again, and reports what went wrong
            return None
        if len(cache) >= _SDK_CACHE:
            cache.pop(next(iter(cache)))
        cache[source] = code
    return cache[source]


def _empty(path: str, keep: list[str]) -> bool:
    """Remove everything inside ``path`` but mount points; whether it worked.

    Directories are made writable first. Mount points and the directories above ``keep``
    stay (the workspace may lie in ``/tmp``).
    """

    def fix(func: Any, target: str, _exc: Any) -> None:
        parent = os.path.dirname(target)
        for place in (parent, target):
            try:
                if stat.S_ISDIR(os.lstat(place).st_mode):
                    os.chmod(place, 0o700)
            except OSError:
                pass
        with contextlib.suppress(OSError):
            func(target)

    try:
        names = os.listdir(path)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    left = []
    for name in names:
        full = os.path.join(path, name)
        if _kept(full, keep):
            left.append(name)
            continue
        if os.path.isdir(full) and not os.path.islink(full):
            shutil.rmtree(full, onerror=fix)
        else:
            with contextlib.suppress(OSError):
                os.unlink(full)
    return sorted(os.listdir(path)) == sorted(left)


def _kept(path: str, keep: list[str]) -> bool:
    if os.path.ismount(path):
        return True
    return any(k == path or k.startswith(path.rstrip("/") + "/") for k in keep)


def _untouched(places: list[str], keep: list[str]) -> bool:
    """Whether every scratch place holds nothing but what is kept (then no sweep is needed)."""
    for place in places:
        try:
            names = os.listdir(place)
        except FileNotFoundError:
            continue
        except OSError:
            return False
        if not all(_kept(os.path.join(place, name), keep) for name in names):
            return False
    return True


def _children() -> list[int] | None:
    """This process's live children, from ``/proc/self/task/*/children``; ``None``: unknown.

    The zygote is a child subreaper, so every process a program left is its child by
    the time the program's own process has been reaped: none means none is left.
    """
    found: list[int] = []
    try:
        for task in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{task}/children", "rb") as f:
                found += [int(pid) for pid in f.read().split()]
    except (OSError, ValueError):
        return None
    return found


def _left(boot: Any) -> bool:
    """Whether any process of the program's outlived it."""
    children = _children()
    if children is None:
        return bool(boot._descendants(os.getpid(), boot._parents()))
    return bool(children)


def _clean(boot: Any, places: list[str], drop: Any, keep: list[str], left: bool) -> bool:
    """Empty the program's scratch places, as its uid when it had one; whether it worked.

    With nothing ``left`` running and nothing in the places, there is nothing to do.
    """
    if not left and _untouched(places, keep):
        return True
    pid = os.fork()
    if pid == 0:
        try:
            if drop:
                os.setgroups([])
                os.setresgid(int(drop["gid"]), int(drop["gid"]), int(drop["gid"]))
                os.setresuid(int(drop["uid"]), int(drop["uid"]), int(drop["uid"]))
                with contextlib.suppress(OSError):  # the zygote has no CAP_KILL: as the uid
                    os.kill(-1, signal.SIGKILL)
            ok = all([_empty(p, keep) for p in places])
        except BaseException:
            ok = False
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    boot.kill_descendants(os.getpid())  # same uid (no drop), and reaps what kill(-1) ended
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def _exiting(child: int) -> bool:
    """Whether ``child`` can run no code any more and nothing else of its program runs.

    Every thread of it has ``PF_EXITING`` (it entered ``do_exit``, which never returns to
    user code; the kernel only tears down its memory and closes its files after that),
    none of them has a child, and the zygote has no child but ``child``. A process can
    no longer be forked once its thread group is exiting (``copy_process`` refuses under
    a pending fatal signal), so nothing new can appear after a ``True``.
    """
    try:
        for tid in os.listdir(f"/proc/{child}/task"):
            with open(f"/proc/{child}/task/{tid}/stat", "rb") as f:
                flags = int(f.read().rsplit(b")", 1)[1].split()[6])
            if not flags & _PF_EXITING:
                return False
            with open(f"/proc/{child}/task/{tid}/children", "rb") as f:
                if f.read().split():
                    return False
    except (OSError, ValueError, IndexError):
        return False
    return _children() == [child]


def _noted(poller: Any, note: int, pidfd: int, child: int, heed: bool) -> int | None:
    """After the child's exit note: its status once :func:`_exiting` holds, else ``None``.

    The note is the runner's word only (the program can write it too); the evidence is
    read from ``/proc`` for at most :data:`_NOTE_WAIT_S`, then gg waits for the exit.
    One note per child is read (a second one is not looked at); not ``heed``: none is.
    """
    try:
        byte = os.read(note, 1) if heed else b""
    except OSError:
        byte = b""
    poller.unregister(note)
    deadline = time.monotonic() + _NOTE_WAIT_S
    while byte:
        if _exiting(child):
            return byte[0]
        if time.monotonic() > deadline or select.select([pidfd], [], [], 0.0001)[0]:
            return None
    return None


def _watch(
    sock: socket.socket, child: int, reaper: bool, pending: bytearray, note: int
) -> tuple[int, bool, bool]:
    """Wait for ``child`` (or its exit note); a ``kill`` from gg (or gg gone) stops it.

    Returns:
        Its status, whether gg is still there, and whether the status came from the
        note, before the child was reaped (its memory is still being freed).
    """
    pidfd = os.pidfd_open(child)
    alive, killed_at = True, None
    poller = select.poll()
    for fd in (pidfd, sock.fileno(), *([] if reaper else [note])):
        poller.register(fd, select.POLLIN)
    try:
        while True:
            timeout = None if killed_at is None else 100
            events = dict(poller.poll(timeout))
            if note in events:  # after a kill, only the exit itself counts
                if (noted := _noted(poller, note, pidfd, child, killed_at is None)) is not None:
                    return noted, alive, True
                continue
            if pidfd in events:
                _, status = os.waitpid(child, 0)
                return boot_status(status), alive, False
            if sock.fileno() in events:
                msg = _read_message(sock, pending, [])
                if msg is None:
                    alive = False
                    poller.unregister(sock.fileno())
                if msg is None or msg.get("kind") == "kill":
                    signal.pidfd_send_signal(pidfd, signal.SIGTERM if reaper else signal.SIGKILL)
                    killed_at = killed_at or _now()
            if killed_at is not None and _now() - killed_at > _KILL_GRACE_S:
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    finally:
        os.close(pidfd)


def _now() -> float:
    return float(os.times().elapsed)


def boot_status(status: int) -> int:
    """A ``wait`` status as a shell reports it: ``128 + signal`` when killed."""
    return 128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def serve(boot: Any, runner: dict[str, Any], bpf: Any, places: list[str]) -> None:
    """Serve ``run`` requests on fd 3 until gg closes it; every program in a fresh child."""
    sock = socket.socket(fileno=3)
    pending, sdks = bytearray(), dict[str, Any]()
    while True:
        fds: list[int] = []
        msg = _read_message(sock, pending, fds)
        if msg is None:
            os._exit(0)
        if msg.get("kind") == "kill" and not fds:
            continue  # too late: gg asked as the program ended by itself
        if msg.get("kind") != "run" or len(fds) != (4 if msg.get("exe") else 3):
            for fd in fds:
                os.close(fd)
            _send(sock, {"kind": "exit", "status": 121})
            _send(sock, {"kind": "clean", "clean": False})
            continue
        sdk = None if msg.get("exec") else _sdk_code(runner, msg.get("sdk"), sdks)
        note, note_w = os.pipe()
        gc.freeze()  # what the child shares stays out of its collections (fewer copied pages)
        child = os.fork()
        if child == 0:
            sock.close()
            os.close(note)
            _child(boot, runner, msg, [*fds, note_w], bpf, sdk)
        for fd in (*fds, note_w):
            os.close(fd)
        try:
            status, alive, early = _watch(sock, child, bool(msg.get("reaper")), pending, note)
        finally:
            os.close(note)
        _report(sock, boot, msg, places, (child, status, alive, early))


def _report(
    sock: socket.socket, boot: Any, msg: dict[str, Any], places: list[str], end: tuple[Any, ...]
) -> None:
    """Report a program's end (``exit``), then whether its leftovers are gone (``clean``).

    ``end`` is ``(pid, status, gg_alive, early)``. Early (the child's threads are all
    exiting and nothing else runs, :func:`_exiting`), ``exit`` goes first and the child
    is reaped after it, while gg goes on: its status must then match the note. Otherwise
    any process the program left is killed before ``exit`` is sent.
    """
    child, status, alive, early = end
    keep, drop = [str(msg.get("workspace", "/"))], msg.get("drop")
    honest = True
    if early:
        if alive:
            _send(sock, {"kind": "exit", "status": status, "reaped": False})
        _, real = os.waitpid(child, 0)  # the rest of its exit (freeing its memory)
        honest = boot_status(real) == status
        if alive:
            _send(sock, {"kind": "reaped"})
    left = _left(boot)
    if left:  # no process outlives its turn: these die before the turn goes on
        clean = _clean(boot, places, drop, keep, left)
    if alive and not early:
        _send(sock, {"kind": "exit", "status": status})
    if not left:  # nothing runs: emptying the scratch places can follow the turn
        clean = _clean(boot, places, drop, keep, left)
    if not alive:
        os._exit(0)
    _send(sock, {"kind": "clean", "clean": clean and honest and not (early and left)})
