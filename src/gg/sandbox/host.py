"""What this machine offers the sandbox: the isolation layers and the facts they rest on.

Detection only; nothing here starts a sandboxed process (``isolation.probe``
does, to check that a layer really works).
"""

from __future__ import annotations

import ctypes
import functools
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from gg.errors import SandboxError
from gg.sandbox.seccomp import seccomp_bpf

__all__ = ["GUEST_DIR", "HostFacts", "Isolation", "host_facts", "state_dir"]

GUEST_DIR = Path(__file__).resolve().parent / "guest"
"""The in-sandbox code: ``boot.py``, ``runner.py``, ``runner.js``."""

SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


class Isolation(StrEnum):
    """The isolation layer in force, strongest first (SPEC M3; named in ``run_started``)."""

    BWRAP = "bwrap"
    """bubblewrap: new user/pid/net/ipc/uts/mount namespaces, only /usr and the workspace
    visible (read-only but the workspace), no capabilities, plus every ``rlimit`` measure."""
    UNSHARE = "unshare"
    """``unshare(2)`` of net/ipc/uts/pid namespaces plus Landlock (files, TCP, signals),
    plus every ``rlimit`` measure. The host file tree stays visible where Landlock allows."""
    RLIMIT = "rlimit"
    """A separate process under a dedicated uid (when gg is root), rlimits, seccomp and,
    when the kernel has it, Landlock. No namespaces: the weakest layer."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HostFacts:
    """What the sandbox can use on this machine."""

    is_root: bool
    """gg runs as root: programs then run as a dedicated uid (see ``accounts``)."""
    python: str
    """The interpreter that runs ``boot.py`` and Python programs (stdlib only)."""
    python_prefix: str | None
    """A directory to bind read-only for ``python`` when it lives outside ``/usr``."""
    bwrap: str | None
    """The bubblewrap binary, if installed."""
    deno: str | None
    """The Deno binary (PyPI package ``deno``), if installed."""
    landlock_abi: int
    """The kernel's Landlock ABI version; 0 when unavailable."""
    seccomp: bool
    """Whether gg can compile a seccomp filter (``pyseccomp`` + libseccomp)."""


def _guest_python() -> tuple[str, str | None]:
    chosen = os.environ.get("GG_SANDBOX_PYTHON")
    if not chosen:
        chosen = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable
    path = os.path.realpath(chosen)
    if path.startswith("/usr/"):
        return path, None
    return path, os.path.dirname(os.path.dirname(path))


def _find_deno() -> str | None:
    chosen = os.environ.get("GG_DENO")
    if chosen:
        return os.path.realpath(chosen) if os.access(chosen, os.X_OK) else None
    try:
        from deno import find_deno_bin  # type: ignore[import-untyped]

        return os.path.realpath(str(find_deno_bin()))
    except (ImportError, FileNotFoundError):
        found = shutil.which("deno")
        return os.path.realpath(found) if found else None


def _landlock_abi() -> int:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        abi = libc.syscall(444, None, ctypes.c_size_t(0), 1)  # LANDLOCK_CREATE_RULESET_VERSION
    except (OSError, AttributeError):
        return 0
    return max(int(abi), 0)


@functools.cache
def host_facts() -> HostFacts:
    """Detect once what this machine offers (paths, privileges, kernel features)."""
    python, prefix = _guest_python()
    bwrap = shutil.which("bwrap", path=f"{SYSTEM_PATH}:{os.environ.get('PATH', '')}")
    return HostFacts(
        is_root=os.geteuid() == 0,
        python=python,
        python_prefix=prefix,
        bwrap=os.path.realpath(bwrap) if bwrap else None,
        deno=_find_deno(),
        landlock_abi=_landlock_abi(),
        seccomp=seccomp_bpf() is not None,
    )


def state_dir() -> Path:
    """The private directory of gg for run dirs and uid-slot locks: ``$TMPDIR/gg-sandbox-<euid>``.

    Mode 0711: the sandbox uid can reach a run dir by its (random) name, but not list.

    Raises:
        gg.errors.SandboxError: if the path exists and is not a directory owned by gg's user
            (someone else made it; gg will not use it).
    """
    path = Path(tempfile.gettempdir()) / f"gg-sandbox-{os.geteuid()}"
    try:
        path.mkdir(mode=0o711, exist_ok=True)
        st = path.lstat()
    except OSError as exc:
        raise SandboxError(
            f"cannot create the sandbox state directory {str(path)!r}: {exc}"
        ) from exc
    if not path.is_dir() or path.is_symlink() or st.st_uid != os.geteuid():
        raise SandboxError(f"{str(path)!r} is not a directory owned by gg's user; remove it")
    os.chmod(path, 0o711)
    return path
