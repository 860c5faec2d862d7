"""The started Deno: a confined JavaScript process started whole before its program (issue 11).

Deno cannot fork. By default a JavaScript program's Deno is exec'd by a child
forked from a warm zygote (:mod:`gg.sandbox.zygote`, a ``"javascript"`` key),
which saves each one bubblewrap's and the boot's start. This module is the other
warm path, for a sandbox whose JavaScript zygote could not start
(``Sandbox.forked_js``): a :class:`Spare`
is one whole JavaScript run started early: the run directory, the uid slot,
the pipes, bubblewrap (or the ``unshare``/``rlimit`` layer's ``boot.py``) with
every rlimit, Landlock rule, the uid drop and the seccomp filter applied, and
Deno with ``runner.js`` loaded, blocked on its answer pipe. It is started
exactly as a cold run is (:func:`gg.sandbox.runs.prepared`,
:func:`gg.sandbox.process.start`); only the time differs. While it waits it
also pays what every program would pay first: Deno's first timer and message
port, its module loader, and the SDK of the previous program of the same key
(``sdk-warm.mjs``: a session's programs almost always have the same tools); the
constant entry modules (``entry.mjs``, ``start.mjs``) are written at the start.
When a program comes, gg writes it and its SDK into the spare's run
directory (the runner keeps the preloaded SDK when it is the same text),
writes ``{"kind": "go"}`` on its answer pipe, and watches it as it watches any
program (:func:`gg.sandbox.process.watch`: the wall clock starts then).

Each spare runs exactly one program and is then gone: no state (a global, a
timer, an open file, a child) can pass from one program to the next. A spare
found dead when a program comes is discarded, never used; with no spare
ready the program's run is started on the spot (the cold path, which is a
spare started now). :class:`Spares` keeps one ready per :class:`Key`, and
starts its replacement when one is taken, while the program runs and the
model thinks. (Starting it only once the program has ended was measured
too: no faster with a thinking model, and with a zero-latency one each turn
then waits for the whole start of the next Deno, about 1.8x slower.)

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

__all__ = ["ENTRY", "WARM_SDK", "Key", "Spare", "Spares", "identity"]

_SPARES = 2
"""Spares kept per key: Deno cannot fork, and a start costs about 40 ms of CPU, so with a
model that answers at once one spare is always still starting when the next turn comes;
two overlap their starts with the turns (issue 11)."""
_KEYS = 4
"""Spares are kept for this many keys (workspaces), the most recently used."""
ENTRY = {
    "entry.mjs": 'import "./start.mjs";\nimport "./program.mjs";\n',
    "start.mjs": 'globalThis[Symbol.for("gg.started")]();\n',
}
"""The module runner.js imports first: parsed and linked with the program before it runs
(so a syntax or link error is reported by the run itself, issue 11). Written at the start."""
WARM_SDK = "sdk-warm.mjs"
"""The SDK a waiting runner preloads (the previous program's, in its run directory)."""


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
        sdk: the SDK source it loads while it waits (``None``: none).
    """

    def __init__(
        self,
        key: Key,
        stack: contextlib.ExitStack,
        job: Prepared,
        begun: Started,
        sdk: str | None = None,
    ) -> None:
        self.key, self.job, self.begun, self.sdk = key, job, begun, sdk
        self._stack = stack
        self._watched = False
        self._warm_sdk = False
        self._identity = identity(key.workspace)

    @classmethod
    def start(cls, key: Key, sdk: str | None = None) -> Spare:
        """Start a spare for ``key`` (blocking: a few milliseconds; Deno loads meanwhile).

        Args:
            key: what it is for.
            sdk: the SDK source (:func:`gg.sandbox.sdk.sdk_source`) it should load while
                it waits, if one is expected; a program with another SDK still runs in it.

        Raises:
            gg.errors.SandboxError: no uid slot, or the workspace cannot be shared.
            OSError: the process could not be started.
        """
        stack = contextlib.ExitStack()
        files = dict(ENTRY) | ({WARM_SDK: sdk} if sdk is not None else {})
        try:
            options = Options(protect=key.protect, read_only=key.read_only)
            run = prepared(
                mode="javascript", isolation=key.isolation, limits=key.limits,
                workspace=key.workspace, files=files, options=options,
            )  # fmt: skip
            job = stack.enter_context(run)
            begun = start(job.plan, pipes=job.hand_over())
        except BaseException:
            stack.close()
            raise
        return cls(key, stack, job, begun, sdk)

    def alive(self) -> bool:
        """Whether it can still take its program (else it is discarded, never used).

        It must run, and its workspace must be the directory it was started for
        (bubblewrap bound that one: a workspace removed and made again is another).
        """
        if self._watched or self.begun.child.poll() is not None:
            return False
        return self._identity is not None and identity(self.key.workspace) == self._identity

    def stage(self, program: str, sdk: str) -> tuple[int, int, int | None]:
        """Write ``program`` and ``sdk`` into its run directory; :meth:`go` lets it run them.

        The runner uses the SDK it preloaded when ``sdk`` is that same text.

        Args:
            program: the program's source (``program.mjs``).
            sdk: its SDK's source (``sdk.mjs``).

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
        (self.job.run_dir / "program.mjs").write_text(program, encoding="utf-8")
        (self.job.run_dir / "sdk.mjs").write_text(sdk, encoding="utf-8")  # if the warm one fails
        self._warm_sdk = sdk == self.sdk
        return self.begun.fds

    async def go(self) -> None:
        """Let it run the staged program (:meth:`stage`): one line on its answer pipe.

        Raises:
            OSError: it is gone.
        """
        answers = self.begun.fds[2]
        assert answers is not None
        line = {"kind": "go", "cwd": str(self.key.workspace), "warm_sdk": self._warm_sdk}
        os.write(answers, (json.dumps(line) + "\n").encode())  # an empty pipe: cannot block

    def close(self) -> None:
        """Release it: kill it if it never ran its program, free the uid slot and run dir."""
        if not self._watched:
            self._watched = True
            self.begun.discard()
        self._stack.close()


def identity(path: Path) -> tuple[int, int] | None:
    """``(st_dev, st_ino)`` of ``path``; ``None``: it is not there."""
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
        self._sdk: dict[Key, str] = {}
        self._closed = False

    def warm(self, key: Key, spares: int = _SPARES) -> None:
        """Start spares for ``key`` soon (on the running loop) until ``spares`` are ready.

        Each loads the SDK of the last program taken for ``key`` while it waits.
        """
        if not self._closed:
            asyncio.get_running_loop().call_soon(self._fill, key, spares)

    def _fill(self, key: Key, spares: int) -> None:
        ready = self._live(key)
        self._ready[key] = self._ready.pop(key)  # the most recently used key goes last
        for old in list(self._ready)[:-_KEYS]:
            self._sdk.pop(old, None)
            for spare in self._ready.pop(old):
                spare.close()
        while not self._closed and len(ready) < spares:
            try:
                ready.append(Spare.start(key, self._sdk.get(key)))
            except Exception:  # the next take starts one itself, and says why
                return

    def _live(self, key: Key) -> list[Spare]:
        ready = self._ready.setdefault(key, [])
        for spare in [s for s in ready if not s.alive()]:
            ready.remove(spare)
            spare.close()
        return ready

    def take(self, key: Key, sdk: str) -> Spare:
        """A live spare for ``key``, or one started now (the cold path); then refill.

        Args:
            key: what the program needs.
            sdk: the program's SDK source (the next spares for ``key`` preload it).

        Raises:
            gg.errors.SandboxError: no uid slot, or the workspace cannot be shared.
            OSError: the process could not be started.
        """
        ready = self._live(key)
        self._sdk[key] = sdk
        spare = ready.pop(0) if ready else Spare.start(key, sdk)
        self.warm(key)
        return spare

    def close(self) -> None:
        """Close every spare; none is started after this."""
        self._closed = True
        for ready in self._ready.values():
            for spare in ready:
                spare.close()
        self._ready.clear()
        self._sdk.clear()
