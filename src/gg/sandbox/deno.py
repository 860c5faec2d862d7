"""The warm Deno: a confined JavaScript process started before its program (issue 11).

Deno cannot fork, so there is no JavaScript zygote. Instead a :class:`Spare`
is one whole JavaScript run started early: the run directory, the uid slot,
the pipes, bubblewrap (or the ``unshare``/``rlimit`` layer's ``boot.py``) with
every rlimit, Landlock rule, the uid drop and the seccomp filter applied, and
Deno with ``runner.js`` loaded, blocked on its answer pipe. It is started
exactly as a cold run is (:func:`gg.sandbox.runs.prepared`,
:func:`gg.sandbox.process.start`); only the time differs. When a program
comes, gg writes it and the SDK into the spare's run directory, writes
``{"kind": "go"}`` on its answer pipe, and watches it as it watches any
program (:func:`gg.sandbox.process.watch`: the wall clock starts then).

Each spare runs exactly one program and is then gone: no state (a global, a
timer, an open file, a child) can pass from one program to the next. A spare
found dead when a program comes is discarded, never used; with no spare
ready the program's run is started on the spot (the cold path, which is a
spare started now). :class:`Spares` keeps one ready per :class:`Key`, and
starts its replacement when one is taken, while the program runs and the
model thinks.

While it waits, nothing in ``/proc`` names the workspace: the boot config
and bubblewrap's arguments come through pipes, Deno's permissions from the
run's ``deno.json``, and Deno starts in ``/`` (:func:`gg.sandbox.launch.deno_config`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from gg.sandbox.host import Isolation
from gg.sandbox.limits import Limits
from gg.sandbox.process import Started, start
from gg.sandbox.runs import Options, Prepared, prepared

__all__ = ["Key", "Spare", "Spares"]

_SPARES = 1
_KEYS = 4
"""Spares are kept for this many keys (workspaces), the most recently used."""


@dataclass(frozen=True, slots=True)
class Key:
    """What a spare is bound to: its layer, workspace, limits, protected files, mode."""

    isolation: Isolation
    workspace: Path
    limits: Limits
    protect: tuple[str, ...]
    read_only: bool


class Spare:
    """One started, confined JavaScript run waiting for its program (use it once).

    Args:
        key: what it was started for.
        stack: holds the run's :func:`~gg.sandbox.runs.prepared` context (uid slot,
            run directory); closed by :meth:`close`.
        job: the prepared run.
        begun: the started process.
    """

    def __init__(
        self, key: Key, stack: contextlib.ExitStack, job: Prepared, begun: Started
    ) -> None:
        self.key, self.job, self.begun = key, job, begun
        self._stack = stack
        self._watched = False
        self._identity = _identity(key.workspace)

    @classmethod
    def start(cls, key: Key) -> Spare:
        """Start a spare for ``key`` (blocking: a few milliseconds; Deno loads meanwhile).

        Raises:
            gg.errors.SandboxError: no uid slot, or the workspace cannot be shared.
            OSError: the process could not be started.
        """
        stack = contextlib.ExitStack()
        try:
            options = Options(protect=key.protect, read_only=key.read_only)
            run = prepared(
                mode="javascript", isolation=key.isolation, limits=key.limits,
                workspace=key.workspace, files={}, options=options,
            )  # fmt: skip
            job = stack.enter_context(run)
            begun = start(job.plan, pipes=job.hand_over())
        except BaseException:
            stack.close()
            raise
        return cls(key, stack, job, begun)

    def alive(self) -> bool:
        """Whether it can still take its program (else it is discarded, never used).

        It must run, and its workspace must be the directory it was started for
        (bubblewrap bound that one: a workspace removed and made again is another).
        """
        if self._watched or self.begun.child.poll() is not None:
            return False
        return self._identity is not None and _identity(self.key.workspace) == self._identity

    def go(self, files: dict[str, str]) -> tuple[int, int, int | None]:
        """Write the program's ``files`` into its run directory and let it load them.

        Returns:
            gg's ends ``(output_read, requests_read, answers_write)``, for
            :func:`gg.sandbox.process.watch`, which closes them.

        Raises:
            OSError: the files or the go could not be written (the process is gone).
        """
        if self._watched:
            raise OSError("this warm process already ran a program")
        self._watched = True
        assert self.job.run_dir is not None
        for name, text in files.items():
            (self.job.run_dir / name).write_text(text, encoding="utf-8")
        answers = self.begun.fds[2]
        assert answers is not None
        go = json.dumps({"kind": "go", "cwd": str(self.key.workspace)}) + "\n"
        os.write(answers, go.encode())  # the pipe is empty: a short write cannot block
        return self.begun.fds

    def close(self) -> None:
        """Release it: kill it if it never ran its program, free the uid slot and run dir."""
        if not self._watched:
            self._watched = True
            self.begun.discard()
        self._stack.close()


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


class Spares:
    """One ready :class:`Spare` per :class:`Key`, replaced as soon as it is taken.

    Spares are started on the event loop's thread (the sandbox's processes die with
    the thread that forked them), from a callback, so that a start never delays the
    program being handed over.
    """

    def __init__(self) -> None:
        self._ready: dict[Key, list[Spare]] = {}
        self._closed = False

    def warm(self, key: Key, spares: int = _SPARES) -> None:
        """Start spares for ``key`` soon (on the running loop) until ``spares`` are ready."""
        if not self._closed:
            asyncio.get_running_loop().call_soon(self._fill, key, spares)

    def _fill(self, key: Key, spares: int) -> None:
        ready = self._live(key)
        self._ready[key] = self._ready.pop(key)  # the most recently used key goes last
        for old in list(self._ready)[:-_KEYS]:
            for spare in self._ready.pop(old):
                spare.close()
        while not self._closed and len(ready) < spares:
            try:
                ready.append(Spare.start(key))
            except Exception:  # the next take starts one itself, and says why
                return

    def _live(self, key: Key) -> list[Spare]:
        ready = self._ready.setdefault(key, [])
        for spare in [s for s in ready if not s.alive()]:
            ready.remove(spare)
            spare.close()
        return ready

    def take(self, key: Key) -> Spare:
        """A live spare for ``key``, or one started now (the cold path); then refill.

        Raises:
            gg.errors.SandboxError: no uid slot, or the workspace cannot be shared.
            OSError: the process could not be started.
        """
        ready = self._live(key)
        spare = ready.pop(0) if ready else Spare.start(key)
        self.warm(key)
        return spare

    def close(self) -> None:
        """Close every spare; none is started after this."""
        self._closed = True
        for ready in self._ready.values():
            for spare in ready:
                spare.close()
        self._ready.clear()
