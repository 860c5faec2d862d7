"""Choose the isolation layer: the strongest one that really works here (SPEC M3).

:func:`probe` tries each layer once, strongest first, by starting a
sandboxed ``boot.py`` that confines itself and reports ready (about 30 ms a
layer), and caches the answer for the life of the process. ``GG_SANDBOX``
(or the ``forced`` argument) names one layer instead; if that layer does not
work on this machine, :func:`probe` says why rather than falling back.

Prerequisites checked before the trial: ``bwrap`` needs the bubblewrap
binary; ``unshare`` needs Landlock (without it the host file tree would be
writable wherever the uid may write); ``rlimit`` needs nothing. The
``unshare`` trial also mounts the sandbox's own ``/proc`` (``boot.py``): where
the kernel refuses that (when gg is not root, in a container whose ``/proc``
has entries masked by other mounts), the trial fails with that reason, and
the sandbox never falls back to showing the host's ``/proc``.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from pathlib import Path

from gg.errors import SandboxError, UserError
from gg.sandbox.host import Isolation, host_facts, state_dir
from gg.sandbox.limits import Limits
from gg.sandbox.runs import prepared, run_blocking
from gg.sandbox.tree import remove_tree

__all__ = ["Isolation", "probe"]

_ORDER = (Isolation.BWRAP, Isolation.UNSHARE, Isolation.RLIMIT)
_cache: dict[str | None, Isolation] = {}
_lock = threading.Lock()


def _missing(layer: Isolation) -> str | None:
    facts = host_facts()
    if layer is Isolation.BWRAP and not facts.bwrap:
        return "bubblewrap is not installed (Debian: apt-get install bubblewrap)"
    if layer is Isolation.UNSHARE and facts.landlock_abi < 1:
        return "the kernel has no Landlock, which this layer relies on for the file system"
    if not os.access(facts.python, os.X_OK):
        return f"the sandbox interpreter {facts.python!r} is missing"
    return None


def trial(layer: Isolation) -> str | None:
    """Start one confined process under ``layer``; ``None`` if it worked, else why not."""
    why = _missing(layer)
    if why:
        return why
    workspace = Path(tempfile.mkdtemp(prefix="probe-", dir=state_dir()))
    try:
        with prepared(
            mode="probe", isolation=layer, limits=Limits(), workspace=workspace, files={}
        ) as job:
            done = run_blocking(job, timeout_s=20)
    except (OSError, SandboxError) as exc:
        return f"could not start: {exc}"
    finally:
        with contextlib.suppress(OSError):
            remove_tree(workspace)
    if done.ready and done.returncode == 0:
        return None
    text = done.output.strip().splitlines()
    detail = text[-1] if text else f"exit status {done.returncode}"
    return "timed out" if done.timed_out else detail


def probe(forced: str | None = None) -> Isolation:
    """The isolation layer to use here (cached per ``forced`` value).

    Args:
        forced: ``"bwrap"``, ``"unshare"`` or ``"rlimit"``; defaults to the environment
            variable ``GG_SANDBOX``; empty or unset means "the strongest that works".

    Returns:
        The layer.

    Raises:
        gg.errors.UserError: ``forced`` names no layer.
        gg.errors.SandboxError: the forced layer does not work here (the message says
            why), or no layer works at all.
    """
    if forced is None:
        forced = os.environ.get("GG_SANDBOX") or None
    with _lock:
        if forced in _cache:
            return _cache[forced]
        if forced is not None:
            try:
                layer = Isolation(forced.strip().lower())
            except ValueError:
                names = ", ".join(i.value for i in Isolation)
                raise UserError(
                    f"GG_SANDBOX={forced!r} names no sandbox layer; use {names}"
                ) from None
            why = trial(layer)
            if why:
                raise SandboxError(f"the {layer.value!r} sandbox layer does not work here: {why}")
            _cache[forced] = layer
            return layer
        reasons = []
        for layer in _ORDER:
            why = trial(layer)
            if why is None:
                _cache[None] = layer
                return layer
            reasons.append(f"{layer.value}: {why}")
        raise SandboxError("no sandbox layer works on this machine; " + "; ".join(reasons))
