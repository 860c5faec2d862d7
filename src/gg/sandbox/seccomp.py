"""The seccomp denylist every sandboxed process runs under (SPEC M3).

gg compiles the filter here, in its own process, with ``pyseccomp`` (ctypes
over the system's libseccomp2), and hands the BPF bytes to the sandbox's
``boot.py``, which loads them with ``prctl`` after every other step. The
sandboxed interpreter needs no third-party package for it.

Denied with ``EPERM``: creating sockets and anything network-facing
(``socket``, ``connect``, ``bind``, ``listen``), tracing and reading other processes'
memory, namespaces and mounts (``unshare``, ``setns``, ``mount``...,
``clone`` with a ``CLONE_NEW*`` flag), kernel keyrings, BPF,
``perf_event_open``, ``userfaultfd``, ``io_uring`` (which could bypass the
rest), module loading, reboot and clock setting. ``clone3`` answers
``ENOSYS``, so C libraries fall back to ``clone``, whose flags can be checked.
Syscalls of a foreign ABI (x32, i386) kill the process (libseccomp's default).

**Datagrams to an address** (issue 9, item 7). ``socketpair`` stays allowed for
local channels (asyncio's self-pipe, ``multiprocessing.Pipe``, subprocess
helpers), but only for ``AF_UNIX`` stream and seqpacket sockets: a datagram
socket can be aimed at any bound address with ``sendto``/``sendmsg``, while a
connected stream socket refuses an address (``EISCONN``) and a seqpacket one
ignores it. With ``socket`` denied as well, no datagram socket can exist in the
sandbox, which closes ``sendto``, ``sendmsg`` and ``sendmmsg`` to a pathname or
abstract ``AF_UNIX`` address (seccomp cannot read ``msg_name`` inside the
message, so the type of socket is what is checked). As a second bar,
``sendto`` with a destination address is refused outright (``send`` passes
none). Landlock on this kernel (ABI 7) scopes abstract sockets and signals but
not pathname sockets, so seccomp is the bar for those in every layer.

**Other processes' settings**: ``prlimit64`` on another process (a program of
gg's own uid under ``rlimit`` could shrink gg's file-size or open-file limits
and kill it mid-run), and ``setpriority``, ``ioprio_set`` and the
``sched_set*`` calls aimed at another process, are denied; on the calling
process itself (pid 0) they work as usual.

**SysV IPC** (``shmget``, ``semget``, ``msgget`` and their operations) and
**POSIX message queues** (``mq_open``...) are denied when the layer has no IPC
namespace (``rlimit``), and for programs forked from a warm zygote: objects made
there would outlive the program. POSIX shared memory (files in ``/dev/shm``) is not affected.

What it does not promise: it is a denylist; anything not named is allowed.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import platform
import tempfile
from typing import Any

__all__ = ["DENIED_SYSCALLS", "SYSV_IPC_SYSCALLS", "XATTR_WRITES", "seccomp_bpf"]

DENIED_SYSCALLS: tuple[str, ...] = (
    "socket", "connect", "bind", "listen", "accept", "accept4",
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns",
    "mount_setattr", "move_mount", "open_tree", "fsopen", "fsconfig", "fsmount", "fspick",
    "bpf", "keyctl", "add_key", "request_key", "perf_event_open", "userfaultfd",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    "reboot", "swapon", "swapoff", "acct", "quotactl", "syslog",
    "open_by_handle_at", "name_to_handle_at", "fanotify_init", "lookup_dcookie",
    "iopl", "ioperm", "modify_ldt", "uselib", "settimeofday", "clock_settime", "adjtimex",
    "clock_adjtime", "sethostname", "setdomainname", "vhangup", "nfsservctl",
)  # fmt: skip
"""Syscalls answered with ``EPERM``."""

SYSV_IPC_SYSCALLS: tuple[str, ...] = (
    "shmget", "shmat", "shmctl", "semget", "semop", "semtimedop", "semctl",
    "msgget", "msgsnd", "msgrcv", "msgctl",
    "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr",
)  # fmt: skip
"""Denied with ``EPERM`` where IPC objects would outlive a program: layers without an IPC
namespace, and every program forked from a warm zygote (they share its namespace).
POSIX message queues live in the IPC namespace too (adversary F1)."""

XATTR_WRITES: tuple[str, ...] = (
    "setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr",
)  # fmt: skip
"""Denied with ``EPERM`` to read-only programs (a reviewer's, issue 16): Landlock does not
cover extended attributes, and the sandbox group's ACL would let them write a workspace
file's ``user.*`` attributes (adversary F1 of the read-only zygotes)."""
_XATTR_WRITES_X86_64 = (463, 466)
"""``setxattrat`` and ``removexattrat`` (Linux 6.13) by number on x86_64: the libseccomp
here does not know their names, and a name it does not know adds no rule."""

_AF_UNIX = 1
_SOCK_TYPE_MASK = 0xF
_LOCAL_SOCKET_TYPES = (1, 5)  # SOCK_STREAM, SOCK_SEQPACKET: no datagram can carry an address

_CLONE_NEW_FLAGS = (
    0x00020000,  # CLONE_NEWNS
    0x02000000,  # CLONE_NEWCGROUP
    0x04000000,  # CLONE_NEWUTS
    0x08000000,  # CLONE_NEWIPC
    0x10000000,  # CLONE_NEWUSER
    0x20000000,  # CLONE_NEWPID
    0x40000000,  # CLONE_NEWNET
    0x00000080,  # CLONE_NEWTIME
)


def _deny(filt: Any, seccomp: Any, name: str | int, *args: Any) -> None:
    with contextlib.suppress(OSError, ValueError):  # not a syscall on this architecture
        filt.add_rule(seccomp.ERRNO(errno.EPERM), name, *args)


def _socket_rules(filt: Any, seccomp: Any) -> None:
    """``socketpair`` for AF_UNIX stream/seqpacket only; ``sendto`` without an address only."""
    _deny(filt, seccomp, "socketpair", seccomp.Arg(0, seccomp.NE, _AF_UNIX))
    for kind in range(_SOCK_TYPE_MASK + 1):
        if kind not in _LOCAL_SOCKET_TYPES:
            rule = seccomp.Arg(1, seccomp.MASKED_EQ, _SOCK_TYPE_MASK, kind)
            _deny(filt, seccomp, "socketpair", rule)
    _deny(filt, seccomp, "sendto", seccomp.Arg(4, seccomp.NE, 0))


_SELF_ONLY: tuple[tuple[str, int], ...] = (
    ("prlimit64", 0), ("setpriority", 1), ("ioprio_set", 1), ("sched_setaffinity", 0),
    ("sched_setscheduler", 0), ("sched_setparam", 0), ("sched_setattr", 0),
)  # fmt: skip
"""Syscalls and the index of their pid argument: allowed only with pid 0 (the caller)."""


@functools.cache
def seccomp_bpf(*, deny_sysv_ipc: bool = False, deny_xattr: bool = False) -> bytes | None:
    """The compiled filter as raw BPF (``struct sock_filter`` array), or ``None``.

    Args:
        deny_sysv_ipc: also deny :data:`SYSV_IPC_SYSCALLS` (layers without an IPC
            namespace; issue 9, item 7).
        deny_xattr: also deny :data:`XATTR_WRITES` (read-only programs).

    Returns:
        The program's bytes (a multiple of 8), cached per argument; ``None`` when
        pyseccomp or libseccomp is not installed (the sandbox then runs without
        seccomp and says so in :meth:`gg.sandbox.Sandbox.describe`).
    """
    try:
        import pyseccomp as seccomp  # type: ignore[import-untyped]
    except (ImportError, OSError, AttributeError):
        return None
    filt = seccomp.SyscallFilter(seccomp.ALLOW)
    for name in DENIED_SYSCALLS + (SYSV_IPC_SYSCALLS if deny_sysv_ipc else ()):
        _deny(filt, seccomp, name)
    if deny_xattr:
        for name in XATTR_WRITES:
            _deny(filt, seccomp, name)
        if platform.machine() == "x86_64":
            for number in _XATTR_WRITES_X86_64:
                _deny(filt, seccomp, number)
    _socket_rules(filt, seccomp)
    for name, arg in _SELF_ONLY:
        _deny(filt, seccomp, name, seccomp.Arg(arg, seccomp.NE, 0))
    for flag in _CLONE_NEW_FLAGS:
        _deny(filt, seccomp, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    with contextlib.suppress(OSError, ValueError):
        filt.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    with tempfile.TemporaryFile() as out:
        filt.export_bpf(out)
        out.seek(0)
        data = out.read()
    return data or None
