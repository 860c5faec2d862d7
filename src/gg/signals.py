"""SIGINT, SIGTERM and SIGHUP end a run cleanly (issue 12 item 3; SPEC O3).

While :func:`cancel_on_signals` is in force, the first of these signals
cancels the task that runs the run: the session's model call, tools and hooks
are cancelled (each kills its process group, :mod:`gg.reaper`), ``async with
run:`` writes ``run_ended`` with the signal in its diagnosis, and the caller
reports it with exit code ``128 + signal``: 130 (SIGINT), 143 (SIGTERM), 129
(SIGHUP). A second signal while gg winds down is ignored: the wind-down is
short and bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["STOP_SIGNALS", "Interrupt", "cancel_on_signals", "caught", "interrupted_diagnosis"]

STOP_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""The signals that stop a run the way Ctrl-C does."""


@dataclass(slots=True)
class Interrupt:
    """Which stop signal, if any, cancelled the run's task.

    Attributes:
        signum: the signal's number, ``None`` while none came.
    """

    signum: int | None = None

    @property
    def exit_code(self) -> int:
        """``128 + signum`` (130 for SIGINT when no signal was recorded)."""
        return 128 + (self.signum or signal.SIGINT)


_active: list[Interrupt] = []
"""The interrupts of the :func:`cancel_on_signals` blocks in force, innermost last."""


def caught() -> int | None:
    """The stop signal the innermost :func:`cancel_on_signals` block caught, else ``None``."""
    return _active[-1].signum if _active else None


def interrupted_diagnosis(signum: int | None, run_id: str = "RUN_ID") -> str:
    """The diagnosis of a run a signal stopped (``None``: Ctrl-C or a cancelled task).

    Args:
        signum: the signal's number, or ``None``.
        run_id: the interrupted run's id, named in the ``gg resume`` hint.

    Returns:
        e.g. ``"the run was interrupted by SIGTERM (signal 15): ..."``.
    """
    if signum is None:
        return "the run was interrupted by the operator (Ctrl-C, or its task was cancelled)"
    name = signal.Signals(signum).name
    return (
        f"the run was interrupted by {name} (signal {signum}); continue it with gg resume {run_id}"
    )


@contextlib.contextmanager
def cancel_on_signals() -> Iterator[Interrupt]:
    """Within the block, SIGINT/SIGTERM/SIGHUP cancel the current task (once).

    The signal is recorded on the yielded :class:`Interrupt`.

    Must run inside a task of the running loop. Off the main thread (where Python
    cannot take signals) the block changes nothing and the interrupt stays empty.
    """
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    interrupt = Interrupt()
    installed: list[signal.Signals] = []

    def on_signal(signum: int) -> None:
        if interrupt.signum is None and task is not None:
            interrupt.signum = signum
            task.cancel()

    if task is not None and threading.current_thread() is threading.main_thread():
        for sig in STOP_SIGNALS:
            with contextlib.suppress(ValueError, RuntimeError, NotImplementedError):
                loop.add_signal_handler(sig, on_signal, int(sig))
                installed.append(sig)
    _active.append(interrupt)
    try:
        yield interrupt
    finally:
        _active.remove(interrupt)
        for sig in installed:
            with contextlib.suppress(ValueError, RuntimeError):
                loop.remove_signal_handler(sig)
