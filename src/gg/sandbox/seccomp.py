"""The seccomp denylist every sandboxed process runs under (SPEC M3).

gg compiles the filter here, in its own process, with ``pyseccomp`` (ctypes
over the system's libseccomp2), and hands the BPF bytes to the sandbox's
``boot.py``, which loads them with ``prctl`` after every other step. The
sandboxed interpreter needs no third-party package for it.

Denied with ``EPERM``: creating sockets and anything network-facing
(``socket``, ``connect``, ``bind``, ``listen``; ``socketpair`` stays allowed
for local pipes such as asyncio's), tracing and reading other processes'
memory, namespaces and mounts (``unshare``, ``setns``, ``mount``...,
``clone`` with a ``CLONE_NEW*`` flag), kernel keyrings, BPF,
``perf_event_open``, ``userfaultfd``, ``io_uring`` (which could bypass the
rest), module loading, reboot and clock setting. ``clone3`` answers
``ENOSYS``, so C libraries fall back to ``clone``, whose flags can be checked.
Syscalls of a foreign ABI (x32, i386) kill the process (libseccomp's default).

What it does not promise: it is a denylist; anything not named is allowed.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import tempfile

__all__ = ["DENIED_SYSCALLS", "seccomp_bpf"]

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


@functools.cache
def seccomp_bpf() -> bytes | None:
    """The compiled filter as raw BPF (``struct sock_filter`` array), or ``None``.

    Returns:
        The program's bytes (a multiple of 8), cached; ``None`` when pyseccomp or
        libseccomp is not installed (the sandbox then runs without seccomp and
        says so in :meth:`gg.sandbox.Sandbox.describe`).
    """
    try:
        import pyseccomp as seccomp  # type: ignore[import-untyped]
    except (ImportError, OSError, AttributeError):
        return None
    filt = seccomp.SyscallFilter(seccomp.ALLOW)
    for name in DENIED_SYSCALLS:
        try:
            filt.add_rule(seccomp.ERRNO(errno.EPERM), name)
        except (OSError, ValueError):
            continue  # not a syscall on this architecture
    clone = "clone"
    for flag in _CLONE_NEW_FLAGS:
        filt.add_rule(
            seccomp.ERRNO(errno.EPERM), clone, seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag)
        )
    with contextlib.suppress(OSError, ValueError):
        filt.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    with tempfile.TemporaryFile() as out:
        filt.export_bpf(out)
        out.seek(0)
        data = out.read()
    return data or None
