"""Ceilings and the diagnosis an operator acts on (SPEC S6).

A ceiling stops a run early. Per session: consecutive error turns (default 3),
error rate over a sliding window (default more than 50% of the last 10 turns,
once 10 turns exist), consecutive endings blocked by the gate (default 8),
turns per session (default 50). A ``repeated_call`` error turn (an identical call
made more than ``repeated_calls`` times, default 2, with nothing changed) counts like
any other error turn. Per run: a budget of tokens, cost and wall
time (0 = none). The values come from ``[ceilings]`` in ``gg.toml``.

A :class:`Diagnosis` says which ceiling, the counts, the kinds of the recent
error turns and an excerpt of the last replies, and blames the right party:
when the gate kept blocking because a hook itself failed, it says the hook is
broken. A stopped session is never dressed up as an ending.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from gg.config import CeilingSettings

__all__ = [
    "Budget",
    "CeilingName",
    "Ceilings",
    "Diagnosis",
    "ErrorKind",
    "SessionCeilings",
    "describe_kinds",
]

ErrorKind: TypeAlias = Literal[
    "no_tool_call",
    "no_program",
    "unknown_tool",
    "bad_arguments",
    "ending_refused",
    "compile_error",
    "repeated_call",
]
"""The kinds of error turn (SPEC S5, §10). ``repeated_call``: the same call (same tool, same
arguments; in code mode the same program) made more than ``repeated_calls`` times while the
workspace did not change (:mod:`gg.progress`)."""

CeilingName: TypeAlias = Literal[
    "consecutive_errors", "error_rate", "gate_blocks", "max_turns", "budget"
]

_KIND_WORDS: dict[str, str] = {
    "no_tool_call": "replied with prose and no tool call",
    "no_program": "replied without calling submit_program",
    "unknown_tool": "called a tool that is not offered",
    "bad_arguments": "sent arguments that did not fit the tool's schema",
    "ending_refused": "made an ending call that was refused",
    "compile_error": "submitted a program that did not compile",
    "repeated_call": "repeated the same call with nothing changed in between",
}


_DEFAULTS = CeilingSettings()
"""``[ceilings]``'s defaults: the one source of every ceiling's default value."""


@dataclass(frozen=True, kw_only=True)
class Ceilings:
    """Ceiling values for a run (SPEC S6, §10 ``[ceilings]``). 0 means none for budgets.

    Each default is ``[ceilings]``'s (:class:`gg.config.CeilingSettings`).
    """

    consecutive_errors: int = _DEFAULTS.consecutive_errors
    """Error turns in a row that stop a session."""
    error_rate: float = _DEFAULTS.error_rate
    """Stop when the share of error turns in the window is *more* than this."""
    error_window: int = _DEFAULTS.error_window
    """Size of the sliding window, in turns; the rate applies once it is full."""
    gate_blocks: int = _DEFAULTS.gate_blocks
    """Endings blocked by the gate in a row that stop a session."""
    max_turns: int = _DEFAULTS.max_turns
    """Turns per session."""
    repeated_calls: int = _DEFAULTS.repeated_calls
    """Times one identical call may be made while the workspace does not change; the next
    one is a ``repeated_call`` error turn (0 = no limit). Default: ``[ceilings]`` in
    :class:`gg.config.CeilingSettings`."""
    max_tokens: int = _DEFAULTS.max_tokens
    """Run budget in input+output tokens (0 = none)."""
    max_seconds: float = _DEFAULTS.max_seconds
    """Run budget in wall-clock seconds (0 = none)."""
    max_cost: float = _DEFAULTS.max_cost
    """Run budget in cost units of the price table (0 = none)."""

    @classmethod
    def from_settings(cls, settings: CeilingSettings) -> Ceilings:
        """The ceilings ``[ceilings]`` describes (every field has the same name).

        Args:
            settings: the validated ``[ceilings]`` section.

        Returns:
            Ceilings with each of its values.
        """
        return cls(**settings.model_dump())


@dataclass(frozen=True, kw_only=True)
class Diagnosis:
    """Why a session stopped, in words an operator acts on (SPEC S6).

    Attributes:
        ceiling: the ceiling that tripped, or ``None`` for a model failure.
        message: the full diagnosis text.
        counts: the numbers behind it (e.g. ``{"consecutive_errors": 3}``).
        recent_kinds: kinds of the recent error turns, oldest first.
        last_replies: short excerpts of the last replies, oldest first.
    """

    ceiling: CeilingName | None
    message: str
    counts: dict[str, float] = field(default_factory=dict)
    recent_kinds: tuple[str, ...] = ()
    last_replies: tuple[str, ...] = ()

    def __str__(self) -> str:
        return self.message


def describe_kinds(kinds: list[str] | tuple[str, ...]) -> str:
    """``"no_tool_call x2, bad_arguments x1"``, most common first."""
    return ", ".join(f"{k} x{n}" for k, n in Counter(kinds).most_common())


def _replies_text(replies: tuple[str, ...]) -> str:
    if not replies:
        return ""
    shown = "; ".join(repr(r) for r in replies[-3:])
    return f" Last replies: {shown}."


def _repeats(replies: tuple[str, ...]) -> str:
    if len(replies) >= 2 and len(set(replies)) == 1:
        return f" The model repeated the same reply at least {len(replies)} times at the end."
    return ""


@dataclass(slots=True)
class Budget:
    """A run's spending so far, checked against its ceilings (SPEC S6 budget)."""

    ceilings: Ceilings
    tokens: int = 0
    cost: float = 0.0
    started: float = field(default_factory=time.monotonic)

    def add(self, *, tokens: int, cost: float) -> None:
        """Count one reply's tokens and cost."""
        self.tokens += tokens
        self.cost += cost

    def check(self) -> Diagnosis | None:
        """A budget diagnosis if any budget is spent, else ``None``."""
        c = self.ceilings
        seconds = self.seconds()
        if c.max_tokens and self.tokens > c.max_tokens:
            return _over("tokens", self.tokens, c.max_tokens)
        if c.max_cost and self.cost > c.max_cost:
            return _over("cost", self.cost, c.max_cost)
        if c.max_seconds and seconds > c.max_seconds:
            return _over("seconds", round(seconds, 1), c.max_seconds)
        return None

    def seconds(self) -> float:
        """Wall-clock seconds the run has spent so far (a resumed run's earlier time too)."""
        return time.monotonic() - self.started

    def seconds_left(self) -> float | None:
        """Seconds until ``max_seconds`` is spent (0 when it is), ``None`` without one.

        The turn loop runs each session under this deadline, so the bound holds
        inside a turn: the model call, tools and hooks are cancelled at it (issue 12).
        """
        limit = self.ceilings.max_seconds
        return None if not limit else max(limit - self.seconds(), 0.0)

    def out_of_time(self) -> Diagnosis:
        """The ``budget`` diagnosis of a run whose ``max_seconds`` deadline passed."""
        limit = self.ceilings.max_seconds
        return _over("seconds", round(max(self.seconds(), limit), 1), limit)


def _over(what: str, used: float, limit: float) -> Diagnosis:
    """The ``budget`` ceiling's diagnosis: ``used`` of ``what`` over ``limit`` (SPEC S6)."""
    return Diagnosis(
        ceiling="budget",
        message=(
            f"the run spent its budget: {used:g} {what} used, over the limit of {limit:g} "
            f"(raise [ceilings] max_{what} in gg.toml, or give the agent a smaller task)."
        ),
        counts={what: used, f"max_{what}": limit},
    )


@dataclass(slots=True)
class SessionCeilings:
    """One session's error-turn and gate bookkeeping against :class:`Ceilings`."""

    ceilings: Ceilings
    turns: int = 0
    consecutive_errors: int = 0
    gate_blocks: int = 0
    gate_failures: int = 0
    _window: deque[bool] = field(default_factory=deque)
    _kinds: deque[str] = field(default_factory=lambda: deque(maxlen=10))
    _replies: deque[str] = field(default_factory=lambda: deque(maxlen=3))
    _last_block: tuple[str, str, bool] | None = None
    _script_changed: bool = False

    def record_turn(self, kind: ErrorKind | None, reply_excerpt: str) -> None:
        """Count one turn; ``kind`` is its error kind or ``None`` for a good turn."""
        self.turns += 1
        self._replies.append(reply_excerpt[:200])
        window = self._window
        window.append(kind is not None)
        if len(window) > self.ceilings.error_window:
            window.popleft()
        if kind is None:
            self.consecutive_errors = 0
        else:
            self.consecutive_errors += 1
            self._kinds.append(kind)

    def record_gate(
        self,
        *,
        blocked: bool,
        hook: str = "",
        reason: str = "",
        failed: bool = False,
        script_changed: bool = False,
    ) -> None:
        """Count one gate check: blocked or passed.

        Blocked by ``hook`` (whether the hook ``failed`` or not), or blocked with the hook
        not run at all because its script changed (``script_changed``).
        """
        if not blocked:
            self.gate_blocks = self.gate_failures = 0
            return
        self.gate_blocks += 1
        self.gate_failures = self.gate_failures + 1 if failed else 0
        self._last_block = (hook, reason, failed)
        self._script_changed = script_changed

    def check(self) -> Diagnosis | None:
        """The first tripped ceiling's diagnosis, or ``None``."""
        c = self.ceilings
        if self.consecutive_errors >= c.consecutive_errors:
            return self._consecutive()
        window = self._window
        if len(window) >= c.error_window:
            errors = sum(window)
            if errors / len(window) > c.error_rate:
                return self._rate(errors, len(window))
        if self.gate_blocks >= c.gate_blocks:
            return self._gate()
        if self.turns >= c.max_turns:
            return Diagnosis(
                ceiling="max_turns",
                message=(
                    f"the session took {self.turns} turns, its limit, without an ending that "
                    "passed the gate (raise [ceilings] max_turns, or split the task)."
                    + _repeats(tuple(self._replies))
                    + _replies_text(tuple(self._replies))
                ),
                counts={"turns": self.turns, "max_turns": c.max_turns},
                last_replies=tuple(self._replies),
            )
        return None

    def _consecutive(self) -> Diagnosis:
        n = self.consecutive_errors
        kinds = tuple(self._kinds)[-n:]
        if set(kinds) == {"no_tool_call"}:
            what = f"the model replied with prose {n} times in a row; it never called a tool"
        elif set(kinds) == {"no_program"}:
            what = f"the model replied {n} times in a row without submitting a program"
        elif set(kinds) == {"repeated_call"}:
            what = (
                f"the model repeated a call it had already made {n} times in a row, with "
                "nothing changed in between; it never moved on to change a file or end"
            )
        else:
            what = f"{n} error turns in a row ({describe_kinds(kinds)})"
        if len(set(kinds)) > 1:
            words = "; ".join(dict.fromkeys(_KIND_WORDS[k] for k in kinds))
            what = f"{what}: the model {words}"
        return Diagnosis(
            ceiling="consecutive_errors",
            message=f"{what}.{_replies_text(tuple(self._replies))}",
            counts={"consecutive_errors": n, "limit": self.ceilings.consecutive_errors},
            recent_kinds=kinds,
            last_replies=tuple(self._replies),
        )

    def _rate(self, errors: int, size: int) -> Diagnosis:
        kinds = tuple(self._kinds)
        return Diagnosis(
            ceiling="error_rate",
            message=(
                f"{errors} of the last {size} turns were error turns (more than "
                f"{self.ceilings.error_rate:.0%}): {describe_kinds(kinds)}. The model keeps "
                f"failing between good turns.{_replies_text(tuple(self._replies))}"
            ),
            counts={"errors": errors, "window": size, "rate": errors / size},
            recent_kinds=kinds,
            last_replies=tuple(self._replies),
        )

    def _gate(self) -> Diagnosis:
        hook, reason, failed = self._last_block or ("", "", False)
        n = self.gate_blocks
        if failed and self.gate_failures >= n and self._script_changed:
            message = (  # gg refused to run a changed hook script (issue 9): no on_error helps
                f"the agent-stop hook {hook!r} is broken for this run: it could not run on the "
                f"last {n} endings: {reason}. "
                "Its script was changed during the run (by the agent, or by someone else on the "
                "host); check and restore it, then start a new run."
            )
        elif failed and self.gate_failures >= n:
            message = (
                f"the agent-stop hook {hook!r} is broken: it failed on each of the last {n} "
                f"endings ({reason}). The endings were blocked by the hook failing, not by the "
                'model\'s work: fix the hook, raise its timeout_s, or set on_error = "pass". '
                "(A check that blocks on purpose exits 2 or answers "
                '{"decision": "block"}; any other exit is the hook failing, SPEC H1.)'
            )
        else:
            message = (
                f"the ending gate blocked {n} endings in a row; the model could not satisfy it. "
                f"Last block by hook {hook!r}: {reason[:400]}"
            )
        return Diagnosis(
            ceiling="gate_blocks",
            message=message,
            counts={"gate_blocks": n, "hook_failures": self.gate_failures},
            last_replies=tuple(self._replies),
        )
