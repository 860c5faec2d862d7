"""Rendering the stream for an operator (SPEC O2): live, replayed, or followed.

:class:`Renderer` turns each event into one or a few readable lines on a rich
console. ``gg run`` uses it as a stream listener (with a spinner while the
model thinks), ``gg show`` feeds it a finished stream and adds a summary, and
``gg watch`` feeds it a growing one.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeAlias, assert_never

from rich.console import Console
from rich.panel import Panel
from rich.status import Status
from rich.table import Table
from rich.text import Text

from gg.stream import (
    CeilingTripped,
    Checkpoint,
    EndingDeclared,
    EndingRefused,
    EndingRevoked,
    EndingSuperseded,
    ErrorTurn,
    Event,
    GateBlocked,
    GatePassed,
    IssueStateChanged,
    RetryEvent,
    RunEnded,
    RunResumed,
    RunStarted,
    SessionEnded,
    SessionStarted,
    ToolCalled,
    ToolResult,
    TurnEvent,
)
from gg.terminal import inert, inert_text, line

__all__ = ["Renderer", "summary_table"]

Part: TypeAlias = str | tuple[str, str]
"""A piece of a rendered line: text, or (text, gg's own style)."""

_Progress: TypeAlias = RunStarted | SessionStarted | TurnEvent | ToolCalled | ToolResult
"""The events of a run's and a session's progress."""
_Declaring: TypeAlias = (
    ErrorTurn
    | EndingDeclared
    | EndingRefused
    | EndingSuperseded
    | EndingRevoked
    | GatePassed
    | GateBlocked
)
"""The events of a turn's error, declarations and gate."""
_Ends: TypeAlias = CeilingTripped | SessionEnded | RunEnded
"""The events that stop or end a session or the run."""


def _args(arguments: Mapping[str, object] | str, limit: int = 120) -> str:
    r"""A call's arguments on one line, made inert and cut to ``limit``.

    Values are written as JSON literals (so JSON's own escapes, ``\u001b``, for C0),
    then made inert (issue 9 item 8).
    """
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


def _spec(settings: object) -> object:
    """The run's model spec, ``settings["model"]["spec"]``.

    ``None`` when a stream (perhaps unverified) holds something else there: a replay
    never crashes on a field's shape.
    """
    model = settings.get("model") if isinstance(settings, dict) else None
    return model.get("spec") if isinstance(model, dict) else None


def _ended_by(ending: Mapping[str, object]) -> str:
    """The call of a ``session_ended`` ending record, ``?`` when a forged one has none."""
    return str(ending.get("call", "?"))


def _run_warnings(e: RunStarted) -> list[Part]:
    """run_started's warnings (issue 9): commands on the host, protected files changed."""
    out: list[Part] = []
    if e.commands == "host":
        out += [
            ("\n   run_command runs on the host", "yellow"),
            ' ([sandbox] commands = "host"): commands run as gg\'s user, outside the sandbox',
        ]
    if e.config_changed:
        out += [
            ("\n   changed since the last run:", "yellow"),
            " " + ", ".join(str(c) for c in e.config_changed),
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

    def __call__(self, event: Event) -> None:
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

    def _spin(self, event: Event) -> None:
        if isinstance(event, TurnEvent):
            self._written = ""
        if self._status is None:
            return
        if isinstance(event, SessionStarted | TurnEvent | GateBlocked | ErrorTurn):
            turn = (event.turn or 0) + (0 if isinstance(event, TurnEvent) else 1)
            self._status.update(
                line((f"{event.session_id}: waiting for the model (turn {turn})…", "dim"))
            )
            self._status.start()
        if isinstance(event, RunEnded):
            self._status.stop()

    def _line(self, e: Event) -> Text | None:
        sid: Part = (f"{e.session_id} ", "dim") if e.session_id else ""
        match e:
            case RunStarted() | SessionStarted() | TurnEvent() | ToolCalled() | ToolResult():
                return _progress_line(e, sid)
            case (
                ErrorTurn()
                | EndingDeclared()
                | EndingRefused()
                | EndingSuperseded()
                | EndingRevoked()
                | GatePassed()
                | GateBlocked()
            ):
                return _declaring_line(e, sid)
            case CeilingTripped() | SessionEnded() | RunEnded():
                return self._end_line(e, sid)
            case Checkpoint():
                return None
            case RunResumed():
                return line(
                    ("↻ resumed", "bold cyan"),
                    f" run {e.from_run}: session {e.resumed_session} goes on after "
                    f"{e.turns} turn(s)",
                )
            case RetryEvent():
                wait = f"retrying in {e.wait_s:.1f} s"
                failed = f"↻ {e.provider} attempt {e.attempt} failed"
                return line(sid, (failed, "yellow"), f", {wait}: {_one_line(e.cause, 200)}")
            case IssueStateChanged():
                why: Part = f": {_one_line(e.diagnosis, 200)}" if e.diagnosis else ""
                head = f"issue #{e.issue} {e.event.replace('_', ' ')}"
                return line((head, "bold"), f" → {e.state} (round {e.round})", why)
            case _:
                assert_never(e)

    def _end_line(self, e: _Ends, sid: Part) -> Text | None:
        match e:
            case CeilingTripped():
                title = line(f"ceiling: {e.ceiling}")
                self.console.print(Panel(inert_text(e.diagnosis), title=title, border_style="red"))
                return None
            case SessionEnded():
                turns = f"{e.turns} turn{'' if e.turns == 1 else 's'}"
                if e.ending:
                    ended = f"■ session ended by {_ended_by(e.ending)}"
                    return line(sid, (ended, "bold green"), f" after {turns}")
                why = ""  # a ceiling's diagnosis had its panel; a model failure has only this
                if e.ceiling is None and e.diagnosis:
                    why = f": {_one_line(e.diagnosis, 400)}"
                return line(sid, ("■ session stopped", "bold red"), f" after {turns}{why}")
            case RunEnded():
                colour = "green" if e.status == "ended" else "red"
                return line((f"run {e.status}", f"bold {colour}"), f" (exit {e.exit_code})")
            case _:
                assert_never(e)


def _progress_line(e: _Progress, sid: Part) -> Text:
    """A run's or a session's start, a turn, a call or its result."""
    match e:
        case RunStarted():
            return line(
                (f"gg run {e.run_id}", "bold"),
                f" · workspace {e.workspace} · model {_spec(e.settings)} · sandbox {e.isolation}",
                *_run_warnings(e),
            )
        case SessionStarted():
            parent = f" · parent {e.parent}" if e.parent else ""
            return line(
                sid,
                ("▶ session", "bold cyan"),
                f" role {e.role} · mode {e.mode} · "
                f"model {e.model}{parent}\n   task: {_one_line(e.task)}",
            )
        case TurnEvent():
            u = e.usage
            calls = ", ".join(e.calls) or "no calls"
            said: Part = (f"\n   “{_one_line(e.text)}”", "dim") if e.text.strip() else ""
            return line(
                sid,
                (f"turn {e.turn}", "bold"),
                f" · {e.seconds:.2f} s · {u.input_tokens}→{u.output_tokens} tok · {calls}",
                said,
            )
        case ToolCalled():
            return line(f"   → {e.name}({_args(e.arguments)})")
        case ToolResult():
            return line("   ", ("←", "green" if e.ok else "red"), " ", _one_line(e.excerpt, 140))
        case _:
            assert_never(e)


def _declaring_line(e: _Declaring, sid: Part) -> Text:
    """An error turn, a declaration, a refusal, a supersede or revoke, a gate result.

    ``gate_blocked`` says "the hook itself failed" exactly when its ``failed`` flag, the
    one classification of :attr:`gg.hooks.HookOutcome.status`, says so (SPEC H1, S6).
    """
    match e:
        case ErrorTurn():
            return line(sid, ("✗ error turn", "red"), f" {e.kind}: {_one_line(e.message)}")
        case EndingDeclared():
            return line(sid, (f"◆ {e.call} declared", "magenta"), " ", _args(e.arguments, 200))
        case EndingRefused():
            refused = f"✗ {e.call} refused ({e.reason})"
            return line(sid, (refused, "red"), f": {_one_line(e.message)}")
        case EndingSuperseded():
            return line(sid, (f"{e.count} earlier declaration(s) superseded", "yellow"))
        case EndingRevoked():
            return line(sid, (f"↺ {e.call} revoked", "yellow"), f": {_one_line(e.error)}")
        case GatePassed():
            return line(sid, ("✓ ending gate passed", "green"), f" ({e.hooks} agent-stop hook(s))")
        case GateBlocked():
            broken: Part = (" (the hook itself failed)", "red") if e.failed else ""
            return line(
                sid,
                (f"⛔ ending gate blocked by agent-stop hook {e.hook}", "yellow"),
                broken,
                f": {_one_line(e.reason, 300)}",
            )
        case _:
            assert_never(e)


def _stopped(e: SessionEnded) -> str:
    """How a stopped session ended, for the summary.

    The ceiling, or the model's failure with its diagnosis (``stopped (model): the
    model (openai-compat) failed: ...``).
    """
    if e.ceiling is not None:
        return f"stopped ({e.ceiling})"
    return f"stopped (model): {_one_line(e.diagnosis, 200)}" if e.diagnosis else "stopped (model)"


@dataclass(slots=True)
class _Row:
    """One session's row of :func:`summary_table`."""

    role: str
    turns: int = 0
    end: str = "unfinished"


def summary_table(events: list[Event]) -> Table:
    """A per-session summary of a finished run: turns, error turns, gate blocks, how it ended.

    Every cell is inert text (issue 9 item 8): session ids, roles and endings come
    from the stream, which may be forged.
    """
    table = Table(title="sessions", show_lines=False)
    for col in ("session", "role", "turns", "error turns", "gate blocks", "ended by"):
        table.add_column(col)
    rows: dict[str, _Row] = {}
    errors: Counter[str] = Counter()
    blocks: Counter[str] = Counter()
    for e in events:
        sid = e.session_id
        if sid is None:
            continue
        match e:
            case SessionStarted():
                rows.setdefault(sid, _Row(role=e.role)).end = "unfinished"
            case TurnEvent() if sid in rows:
                rows[sid].turns = max(rows[sid].turns, e.turn or 0)
            case ErrorTurn():
                errors[sid] += 1
            case GateBlocked():
                blocks[sid] += 1
            case SessionEnded() if sid in rows:
                rows[sid].turns = e.turns
                rows[sid].end = _ended_by(e.ending) if e.ending else _stopped(e)
            case _:
                pass  # the other events add nothing to the summary
    for sid, r in rows.items():
        table.add_row(
            *(
                inert_text(str(cell))
                for cell in (sid, r.role, r.turns, errors[sid], blocks[sid], r.end)
            )
        )
    return table
