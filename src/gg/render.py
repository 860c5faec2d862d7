"""Rendering the stream for an operator (SPEC O2): live, replayed, or followed.

:class:`Renderer` turns each event into one or a few readable lines on a rich
console. ``gg run`` uses it as a stream listener (with a spinner while the
model thinks), ``gg show`` feeds it a finished stream and adds a summary, and
``gg watch`` feeds it a growing one.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, TypeAlias

from rich.console import Console
from rich.panel import Panel
from rich.status import Status
from rich.table import Table
from rich.text import Text

from gg.stream import Event
from gg.terminal import inert, inert_text, line

__all__ = ["Renderer", "summary_table"]

Part: TypeAlias = str | tuple[str, str]
"""A piece of a rendered line: text, or (text, gg's own style)."""


def _args(arguments: dict[str, Any] | str, limit: int = 120) -> str:
    """A call's arguments on one line: values as JSON literals (so JSON's own escapes,
    ``\\u001b``, for C0), then made inert (issue 9 item 8), cut to ``limit``."""
    if isinstance(arguments, str):
        text = arguments
    else:
        text = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in arguments.items())
    text = inert(text)
    return text if len(text) <= limit else text[:limit] + "…"


def _one_line(text: str, limit: int = 160) -> str:
    """``text`` made inert (issue 9 item 8), on one line, cut to ``limit`` characters."""
    flat = " ".join(inert(text).split())
    return flat if len(flat) <= limit else flat[:limit] + "…"


def _spec(settings: Any) -> object:
    """``settings["model"]["spec"]``, or ``None`` when a stream (perhaps unverified) holds
    something else there: a replay never crashes on a field's shape."""
    model = settings.get("model") if isinstance(settings, dict) else None
    return model.get("spec") if isinstance(model, dict) else None


def _run_warnings(e: Any) -> list[Part]:
    """run_started's warnings (issue 9): commands on the host, protected files changed."""
    out: list[Part] = []
    if getattr(e, "commands", "sandbox") == "host":
        out += [
            ("\n   run_command runs on the host", "yellow"),
            ' ([sandbox] commands = "host"): commands run as gg\'s user, outside the sandbox',
        ]
    changed = getattr(e, "config_changed", None) or []
    if changed:
        out += [
            ("\n   changed since the last run:", "yellow"),
            " " + ", ".join(str(c) for c in changed),
        ]
    return out


class Renderer:
    """Prints events readably. Call it with each event (it is a stream listener).

    Every string of an event is untrusted (a forged stream is read by ``gg show``
    too): it is shown through :mod:`gg.terminal` (inert, never markup), issue 9
    item 8.

    Args:
        console: where to print (default: stdout).
        spinner: show a "waiting for the model" spinner between turns (live runs).
    """

    def __init__(self, console: Console | None = None, *, spinner: bool = False) -> None:
        self.console = console or Console(highlight=False)
        self._status: Status | None = None
        if spinner and self.console.is_terminal:
            self._status = self.console.status("starting…")
        self._turns: dict[str | None, int] = {}
        self._written = ""

    def __call__(self, event: Any) -> None:
        """Render one event."""
        text = self._line(event)
        if text is not None:
            self.console.print(text)
        self._spin(event)

    def delta(self, text: str) -> None:
        """Show reply text as a provider streams it (the spinner's line), SPEC O2."""
        if self._status is None or not text:
            return
        self._written = (self._written + text)[-200:]
        tail = " ".join(inert(self._written).split())[-70:]
        self._status.update(line(("the model is writing: " + tail, "dim")))

    def _spin(self, event: Any) -> None:
        if event.type == "turn":
            self._written = ""
        if self._status is None:
            return
        if event.type in ("session_started", "turn", "gate_blocked", "error_turn"):
            turn = (event.turn or 0) + (0 if event.type == "turn" else 1)
            self._status.update(
                line((f"{event.session_id}: waiting for the model (turn {turn})…", "dim"))
            )
            self._status.start()
        if event.type == "run_ended":
            self._status.stop()

    def _line(self, e: Any) -> Text | None:
        t = e.type
        sid: Part = (f"{e.session_id} ", "dim") if getattr(e, "session_id", None) else ""
        if t == "run_started":
            return line(
                (f"gg run {e.run_id}", "bold"),
                f" · workspace {e.workspace} · model {_spec(e.settings)} · sandbox {e.isolation}",
                *_run_warnings(e),
            )
        if t == "session_started":
            parent = f" · parent {e.parent}" if e.parent else ""
            return line(
                sid,
                ("▶ session", "bold cyan"),
                f" role {e.role} · mode {e.mode} · "
                f"model {e.model}{parent}\n   task: {_one_line(e.task)}",
            )
        if t == "turn":
            u = e.usage
            calls = ", ".join(e.calls) or "no calls"
            said: Part = (f"\n   “{_one_line(e.text)}”", "dim") if e.text.strip() else ""
            return line(
                sid,
                (f"turn {e.turn}", "bold"),
                f" · {e.seconds:.2f} s · {u.input_tokens}→{u.output_tokens} tok · {calls}",
                said,
            )
        if t == "tool_call":
            return line(f"   → {e.name}({_args(e.arguments)})")
        if t == "tool_result":
            return line("   ", ("←", "green" if e.ok else "red"), " ", _one_line(e.excerpt, 140))
        return self._line_ending(e, t, sid)

    def _line_ending(self, e: Any, t: str, sid: Part) -> Text | None:
        if t == "error_turn":
            return line(sid, ("✗ error turn", "red"), f" {e.kind}: {_one_line(e.message)}")
        if t == "ending_declared":
            return line(sid, (f"◆ {e.call} declared", "magenta"), " ", _args(e.arguments, 200))
        if t == "ending_refused":
            return line(
                sid, (f"✗ {e.call} refused ({e.reason})", "red"), f": {_one_line(e.message)}"
            )
        if t == "ending_superseded":
            return line(sid, (f"{e.count} earlier declaration(s) superseded", "yellow"))
        if t == "ending_revoked":
            return line(sid, (f"↺ {e.call} revoked", "yellow"), f": {_one_line(e.error)}")
        if t == "gate_passed":
            return line(sid, ("✓ ending gate passed", "green"), f" ({e.hooks} agent-stop hook(s))")
        if t == "gate_blocked":
            broken: Part = (" (the hook itself failed)", "red") if e.failed else ""
            return line(
                sid,
                (f"⛔ ending gate blocked by agent-stop hook {e.hook}", "yellow"),
                broken,
                f": {_one_line(e.reason, 300)}",
            )
        if t == "ceiling_tripped":
            self.console.print(
                Panel(
                    inert_text(e.diagnosis), title=line(f"ceiling: {e.ceiling}"), border_style="red"
                )
            )
            return None
        return self._line_end(e, t, sid)

    @staticmethod
    def _line_end(e: Any, t: str, sid: Part) -> Text | None:
        if t == "session_ended":
            turns = f"{e.turns} turn{'' if e.turns == 1 else 's'}"
            if e.ending:
                return line(
                    sid,
                    (f"■ session ended by {e.ending.get('call', '?')}", "bold green"),
                    f" after {turns}",
                )
            return line(sid, ("■ session stopped", "bold red"), f" after {turns}")
        if t == "run_ended":
            colour = "green" if e.status == "ended" else "red"
            return line((f"run {e.status}", f"bold {colour}"), f" (exit {e.exit_code})")
        return None


def summary_table(events: list[Event]) -> Table:
    """A per-session summary of a finished run: turns, error turns, gate blocks, how it ended.

    Every cell is inert text (issue 9 item 8): session ids, roles and endings come
    from the stream, which may be forged.
    """
    table = Table(title="sessions", show_lines=False)
    for col in ("session", "role", "turns", "error turns", "gate blocks", "ended by"):
        table.add_column(col)
    rows: dict[str, dict[str, Any]] = {}
    errors: Counter[str] = Counter()
    blocks: Counter[str] = Counter()
    for e in events:
        sid = getattr(e, "session_id", None)
        if sid is None:
            continue
        if e.type == "session_started":
            rows.setdefault(sid, {"role": e.role, "turns": 0})["end"] = "unfinished"
        elif e.type == "turn" and sid in rows:
            rows[sid]["turns"] = max(rows[sid]["turns"], e.turn or 0)
        elif e.type == "error_turn":
            errors[sid] += 1
        elif e.type == "gate_blocked":
            blocks[sid] += 1
        elif e.type == "session_ended" and sid in rows:
            rows[sid]["turns"] = e.turns
            rows[sid]["end"] = (
                str(e.ending.get("call", "?")) if e.ending else f"stopped ({e.ceiling or 'model'})"
            )
    for sid, r in rows.items():
        table.add_row(
            *(
                inert_text(str(cell))
                for cell in (sid, r["role"], r["turns"], errors[sid], blocks[sid], r["end"])
            )
        )
    return table
