"""What a session has done so far, for the two nudges small models need (SPEC S5, issue 16).

**Repeated calls.** A call is *identical* to an earlier one when it names the
same tool with the same arguments (compared as canonical JSON: keys sorted); in
code mode, when it submits the same program (compared after trimming white
space at its ends). :meth:`Progress.repeats` says how many times it was made
*while the workspace did not change*; once that reaches the limit
(``[ceilings] repeated_calls``, default 2), the mode does not run it and the turn
is a ``repeated_call`` error turn, counted by the ceilings like any other.

What counts as a change: a successful call of a ``write`` or ``command`` tool
(:attr:`gg.tools.registry.Tool.access`; a command could have changed anything),
and in code mode a program run that may write (any program, unless the
workspace is read-only to it). A change resets the counts of every *other*
call; the changing call keeps its own, so the same write, the same command or
the same program run three times with nothing else between is a repeat too. In
a read-only session (a reviewer's) nothing is a change. Ending calls are never
counted: a blocked ending is declared again by design (SPEC S12).

**Looks done.** :meth:`Progress.looks_done` gives the reason the task looks
done, for the per-turn reminder (:func:`gg.prompts.ending_reminder`): a
command that passed (``exit code: 0``) after the last write; for a reviewer, a
command it ran; or the last two turns made only calls it had made before.

**Resuming.** :meth:`Progress.state` is what a session's ``checkpoint`` event
keeps of it (issue 12 item 4) and :meth:`Progress.restore` puts it back, so a
session ``gg resume`` (or a board run) continues counts repeats and gives the
reminder exactly as the uninterrupted session would have.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from gg.errors import UserError

__all__ = ["Progress", "call_key"]

_PASSED = re.compile(r"\Aexit code: 0\b")
_STALE_TURNS = 2
_FLAGS = ("wrote", "checked", "fresh")
_KEPT_COUNTS = 256
"""Counts a checkpoint keeps at most (the latest calls): its size stays bounded."""


def call_key(name: str, arguments: Any) -> str:
    """The identity of a call: its name and a digest of its arguments as canonical JSON.

    Bounded (a few dozen characters, whatever the arguments), so a checkpoint that
    keeps the counts stays small.
    """
    if name == "submit_program" and isinstance(arguments, dict):
        program = arguments.get("program")
        if isinstance(program, str):
            arguments = {"program": program.strip()}
    text = json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=repr)
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return f"{name}\x00{digest}"


@dataclass(slots=True, kw_only=True)
class Progress:
    """One session's record of its calls (see the module docstring).

    Attributes:
        limit: times one identical call may be made with nothing changed (0 = no limit).
        review: the session is a reviewer's (its commands change nothing; the task looks
            done once it has run one).
    """

    limit: int
    review: bool = False
    _counts: dict[str, int] = field(default_factory=dict)
    _wrote: bool = False
    _checked: bool = False
    _fresh: bool = False
    _stale: int = 0
    last_read: str | None = None
    """The ``path`` of the last successful ``read`` call that named one (a file to change)."""

    @property
    def wrote(self) -> bool:
        """A write tool call has succeeded in this session (a reviewer never writes)."""
        return self._wrote

    def repeats(self, name: str, arguments: Any) -> int | None:
        """How many times this call was made with nothing changed, at the limit.

        When that count reaches the limit the call is a ``repeated_call`` and is not
        run; else ``None``.
        """
        n = self._counts.get(call_key(name, arguments), 0)
        return n if self.limit and n >= self.limit else None

    def note(self, name: str, arguments: Any, *, changed: bool) -> None:
        """Count a call that ran (a registry tool call in tool-calling mode, a program).

        Args:
            name: the tool's name (``submit_program`` for a program).
            arguments: its arguments.
            changed: it may have changed the workspace (a ``write`` or ``command`` tool
                that succeeded; a program run that may write). Ignored for a reviewer.
        """
        key = call_key(name, arguments)
        seen = self._counts.get(key, 0)
        changed = changed and not self.review
        if changed:
            self._counts = {key: seen + 1}
        else:
            self._counts[key] = seen + 1
        self._fresh = self._fresh or changed or seen == 0

    def observe(self, *, access: str, ok: bool, result: str = "", arguments: Any = None) -> None:
        """Record what a registry tool call did toward the ending.

        Both modes; in code mode for each call a program makes (the program itself is
        what :meth:`note` counts).

        Args:
            access: the tool's :attr:`gg.tools.registry.Tool.access`.
            ok: it succeeded.
            result: its result text (a command's, to see whether it passed).
            arguments: its arguments (a read's ``path`` is kept as :attr:`last_read`).
        """
        path = arguments.get("path") if isinstance(arguments, dict) else None
        if ok and access == "read" and isinstance(path, str) and path.strip(" ./"):
            self.last_read = path
        if ok and access == "write" and not self.review:
            self._wrote, self._checked = True, False
        if access == "command" and ok and (self.review or (self._wrote and _PASSED.match(result))):
            self._checked = True

    def end_turn(self) -> None:
        """Close a turn: a turn that made no new call and changed nothing is *stale*."""
        self._stale = 0 if self._fresh else self._stale + 1
        self._fresh = False

    def looks_done(self) -> str | None:
        """Why the task looks done, in words for the reminder, or ``None``."""
        if self._checked and self.review:
            return "you have run a check on the work"
        if self._checked:
            return "you changed the workspace and a command you ran after that passed"
        if self._stale >= _STALE_TURNS:
            return f"your last {self._stale} turns only repeated calls you had already made"
        return None

    def state(self) -> dict[str, Any]:
        """What a checkpoint keeps of this record (JSON): counts, flags, stale turns.

        Returns:
            ``{"counts": {call key: times} (the latest 256), "wrote", "checked",
            "fresh": bool, "stale": int, "last_read": str | None}``.
        """
        latest = list(self._counts.items())[-_KEPT_COUNTS:]
        return {
            "counts": dict(latest),
            "wrote": self._wrote,
            "checked": self._checked,
            "fresh": self._fresh,
            "stale": self._stale,
            "last_read": self.last_read,
        }

    def restore(self, state: object) -> None:
        """Put back what :meth:`state` returned (a resumed session, issue 12 item 4).

        Args:
            state: the checkpoint's ``progress`` object.

        Raises:
            UserError: ``state`` is not of :meth:`state`'s shape (nothing is changed).
        """
        if not isinstance(state, dict):
            raise UserError("a checkpoint holds malformed progress counts (not an object)")
        counts, stale, last = state.get("counts"), state.get("stale"), state.get("last_read")
        flags = [state.get(f) for f in _FLAGS]
        if (
            not isinstance(counts, dict)
            or not all(isinstance(k, str) and _count(v) for k, v in counts.items())
            or not _count(stale)
            or not all(isinstance(f, bool) for f in flags)
            or not (last is None or isinstance(last, str))
        ):
            raise UserError("a checkpoint holds malformed progress counts")
        self._counts = dict(counts)
        self._wrote, self._checked, self._fresh = (bool(f) for f in flags)
        self._stale, self.last_read = int(stale or 0), last


def _count(value: object) -> bool:
    """A count: a non-negative int that is not a bool."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
