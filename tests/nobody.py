"""Run a command as the unprivileged uid 65534 with gg's code and interpreter reachable.

CI clones the repository under ``/root`` (mode 0700), and the interpreter may
live there too (pyenv): uid 65534 could reach neither. :func:`as_nobody`
wraps a command so that, in a private mount namespace of its own (as root),
every directory above the paths gg needs that others cannot search is
covered by a tmpfs (mode 0755) with those paths bound back, and then the
command runs under ``setpriv`` as 65534. Nothing outside that namespace sees
any change. Needs root, ``unshare`` and ``setpriv``.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import sys
import tempfile
from pathlib import Path

NOBODY = 65534
REPO = Path(__file__).resolve().parents[1]


def _needed() -> list[Path]:
    paths = {
        REPO,
        Path(sys.prefix).resolve(),
        Path(sys.base_prefix).resolve(),
        Path(sys.executable).resolve().parent,
    }
    return sorted(paths)


def _blocking(paths: list[Path]) -> list[Path]:
    """The outermost ancestors of ``paths`` that others cannot search (``o+x`` missing)."""
    found: list[Path] = []
    for path in paths:
        for parent in [*reversed(path.parents)][1:]:
            if any(parent.is_relative_to(b) for b in found):
                break
            if not os.stat(parent).st_mode & 0o001:
                found.append(parent)
                break
    return found


def _wrapper() -> Path:
    needed = _needed()
    blocking = _blocking(needed)
    digest = hashlib.sha256(repr((needed, blocking)).encode()).hexdigest()[:12]
    tmp = Path(tempfile.gettempdir())
    script = tmp / f"gg-test-nobody-{digest}.sh"
    lines = ["set -e"]
    keep = [p for p in needed if any(p.is_relative_to(b) for b in blocking)]
    for i, path in enumerate(keep):
        stash = tmp / f"gg-test-nobody-{digest}-{i}"
        stash.mkdir(mode=0o700, exist_ok=True)
        lines.append(f"mount --bind {shlex.quote(str(path))} {shlex.quote(str(stash))}")
    for top in blocking:
        lines.append(f"mount -t tmpfs -o mode=755 tmpfs {shlex.quote(str(top))}")
    for i, path in enumerate(keep):
        stash = tmp / f"gg-test-nobody-{digest}-{i}"
        lines.append(f"mkdir -p {shlex.quote(str(path))}")
        lines.append(f"mount --bind {shlex.quote(str(stash))} {shlex.quote(str(path))}")
    lines.append(f'exec setpriv --reuid={NOBODY} --regid={NOBODY} --clear-groups "$@"')
    # written whole, then renamed: a parallel test worker may be running the same script
    part = script.with_name(f"{script.name}.{os.getpid()}")
    part.write_text("\n".join(lines) + "\n")
    os.replace(part, script)
    return script


def as_nobody(argv: list[str]) -> list[str]:
    """``argv`` wrapped to run as uid and gid 65534 (see the module doc)."""
    return ["unshare", "--mount", "--propagation", "private", "sh", str(_wrapper()), *argv]
