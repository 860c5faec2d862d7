"""Rendering the stream for an operator (SPEC O2): live, replayed, or followed.

:class:`Renderer` turns each event into one or a few readable lines on a rich
console. ``gg run`` uses it as a stream listener (with a spinner while the
model thinks), ``gg show`` feeds it a finished stream and adds a summary, and
``gg watch`` feeds it a growing one.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.status import Status
from rich.table import Table

from gg.stream import Event

__all__ = ["Renderer", "summary_table"]


def _args(arguments: dict[str, Any] | str, limit: int = 120) -> str:
    if isinstance(arguments, str):
        text = arguments
    else:
        text = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in arguments.items())
    return text if len(text) <= limit else text[:limit] + "…"


def _one_line(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit] + "…"


def _run_warnings(e: Any) -> str:
    """run_started's warnings (issue 9): commands on the host, protected files changed."""
    out = ""
    if getattr(e, "commands", "sandbox") == "host":
        out += ("\n   [yellow]run_command runs on the host[/] ([sandbox] commands = \"host\"): "
                "commands run as gg's user, outside the sandbox")
    changed = getattr(e, "config_changed", None) or []
    if changed:
        out += (f"\n   [yellow]changed since the last run:[/] "
                f"{escape(', '.join(str(c) for c in changed))}")
    return out


class Renderer:
    """Prints events readably. Call it with each event (it is a stream listener).

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
        line = self._line(event)
        if line:
            self.console.print(line)
        self._spin(event)

    def delta(self, text: str) -> None:
        """Show reply text as a provider streams it (the spinner's line), SPEC O2."""
        if self._status is None or not text:
            return
        self._written = (self._written + text)[-200:]
        tail = " ".join(self._written.split())[-70:]
        self._status.update(f"[dim]the model is writing: {escape(tail)}")

    def _spin(self, event: Any) -> None:
        if event.type == "turn":
            self._written = ""
        if self._status is None:
            return
        if event.type in ("session_started", "turn", "gate_blocked", "error_turn"):
            sid = event.session_id
            self._status.update(f"[dim]{sid}: waiting for the model (turn "
                                f"{(event.turn or 0) + (0 if event.type == 'turn' else 1)})…")
            self._status.start()
        if event.type == "run_ended":
            self._status.stop()

    def _line(self, e: Any) -> str | None:
        t = e.type
        sid = f"[dim]{e.session_id}[/] " if getattr(e, "session_id", None) else ""
        if t == "run_started":
            return (f"[bold]gg run {e.run_id}[/] · workspace {escape(e.workspace)} · "
                    f"model {escape(str(e.settings.get('model', {}).get('spec')))} · "
                    f"sandbox {e.isolation}{_run_warnings(e)}")
        if t == "session_started":
            parent = f" · parent {e.parent}" if e.parent else ""
            return (f"{sid}[bold cyan]▶ session[/] role {e.role} · mode {e.mode} · "
                    f"model {escape(e.model)}{parent}\n   task: {escape(_one_line(e.task))}")
        if t == "turn":
            u = e.usage
            text = f"\n   [dim]“{escape(_one_line(e.text))}”[/]" if e.text.strip() else ""
            calls = ", ".join(e.calls) or "no calls"
            return (f"{sid}[bold]turn {e.turn}[/] · {e.seconds:.2f} s · "
                    f"{u.input_tokens}→{u.output_tokens} tok · {escape(calls)}{text}")
        if t == "tool_call":
            return f"   → {escape(e.name)}({escape(_args(e.arguments))})"
        if t == "tool_result":
            colour = "green" if e.ok else "red"
            return f"   [{colour}]←[/] {escape(_one_line(e.excerpt, 140))}"
        return self._line_ending(e, t, sid)

    def _line_ending(self, e: Any, t: str, sid: str) -> str | None:
        if t == "error_turn":
            return f"{sid}[red]✗ error turn[/] {e.kind}: {escape(_one_line(e.message))}"
        if t == "ending_declared":
            return f"{sid}[magenta]◆ {e.call} declared[/] {escape(_args(e.arguments, 200))}"
        if t == "ending_refused":
            return f"{sid}[red]✗ {e.call} refused ({e.reason})[/]: {escape(_one_line(e.message))}"
        if t == "ending_superseded":
            return f"{sid}[yellow]{e.count} earlier declaration(s) superseded[/]"
        if t == "ending_revoked":
            return f"{sid}[yellow]↺ {e.call} revoked[/]: {escape(_one_line(e.error))}"
        if t == "gate_passed":
            return f"{sid}[green]✓ ending gate passed[/] ({e.hooks} agent-stop hook(s))"
        if t == "gate_blocked":
            broken = " [red](the hook itself failed)[/]" if e.failed else ""
            return (f"{sid}[yellow]⛔ ending gate blocked by agent-stop hook "
                    f"{escape(e.hook)}[/]{broken}: "
                    f"{escape(_one_line(e.reason, 300))}")
        if t == "ceiling_tripped":
            self.console.print(Panel(escape(e.diagnosis), title=f"ceiling: {e.ceiling}",
                                     border_style="red"))
            return None
        if t == "session_ended":
            turns = f"{e.turns} turn{'' if e.turns == 1 else 's'}"
            if e.ending:
                call = e.ending["call"]
                return f"{sid}[bold green]■ session ended by {call}[/] after {turns}"
            return f"{sid}[bold red]■ session stopped[/] after {turns}"
        if t == "run_ended":
            colour = "green" if e.status == "ended" else "red"
            return f"[bold {colour}]run {e.status}[/] (exit {e.exit_code})"
        return None


def summary_table(events: list[Event]) -> Table:
    """A per-session summary of a finished run: turns, error turns, gate blocks, how it ended."""
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
            rows[sid]["end"] = e.ending["call"] if e.ending else f"stopped ({e.ceiling or 'model'})"
    for sid, r in rows.items():
        table.add_row(sid, r["role"], str(r["turns"]), str(errors[sid]), str(blocks[sid]),
                      r["end"])
    return table
