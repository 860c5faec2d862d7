"""One stream event as an HTML fragment, like ``gg show`` prints it (SPEC O1, O2; issue 15).

:func:`render_event` draws any :data:`gg.stream.Event`: the run page lists a
session's events with it, and the app appends each new one live (server-sent
events). The outer element is ``<div class="ev ..." data-session="<session id>"
data-kind="<event type>" data-turn="<turn>">``; every text in it is escaped and
long ones are folded (:mod:`gg.web.markup`); a ``submit_program`` program is
highlighted (:mod:`gg.web.highlight`). The words are the SPEC's: **ending**,
**declaration**, **superseded**, **revoked**, **ending gate**, **agent-stop
hook**, **ceiling**, **diagnosis**, **error turn**.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TypeAlias, assert_never

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
from gg.web.chart import TurnPoint, point_attrs
from gg.web.highlight import guess_language, program_html
from gg.web.markup import (
    AttrValue,
    Child,
    Markup,
    as_text,
    el,
    fold,
    json_text,
    secrets_read_once,
    short,
)

__all__ = ["ending_html", "model_spec", "plural", "render_event"]

_Progress: TypeAlias = RunStarted | SessionStarted | TurnEvent | ToolCalled | ToolResult
_Declaring: TypeAlias = (
    ErrorTurn
    | EndingDeclared
    | EndingRefused
    | EndingSuperseded
    | EndingRevoked
    | GatePassed
    | GateBlocked
)
_Ends: TypeAlias = CeilingTripped | SessionEnded | RunEnded
_Other: TypeAlias = Checkpoint | RunResumed | RetryEvent | IssueStateChanged

_CLOCK = re.compile(r"\d{4}-\d\d-\d\dT(\d\d:\d\d:\d\d(?:\.\d+)?)Z?\Z")


def plural(n: int, word: str) -> str:
    """``"1 turn"``, ``"3 turns"``."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def model_spec(settings: object) -> str:
    """The run's model spec, ``settings["model"]["spec"]``.

    ``"?"`` when a forged stream holds something else there.
    """
    model = settings.get("model") if isinstance(settings, dict) else None
    spec = model.get("spec") if isinstance(model, dict) else None
    return as_text(spec, 200) if spec is not None else "?"


def _clock(at: str) -> str:
    """The time of day of an ISO 8601 stamp (``18:12:20.606``); the stamp itself if odd."""
    m = _CLOCK.match(at[:40])
    return m.group(1) if m else short(at, 40)


def _event(
    e: Event,
    cls: str,
    head: Sequence[Child],
    *body: Child,
    data: Mapping[str, AttrValue] | None = None,
) -> Markup:
    """The outer element of an event: its time, its head line, then its body."""
    attrs: dict[str, AttrValue] = {
        "class": f"ev {cls}",
        "data-session": e.session_id or "",
        "data-kind": e.type,
        "data-turn": e.turn,
        **(data or {}),
    }
    when = el("time", {"datetime": short(e.at, 40)}, _clock(e.at))
    return el("div", attrs, el("div", {"class": "ev-head"}, when, " ", *head), *body)


def _tag(text: str, cls: str) -> Markup:
    """A short coloured label written by gg (``turn 3``, ``revoked``)."""
    return el("span", {"class": f"tag {cls}"}, text)


def ending_html(call: str, arguments: Mapping[str, object]) -> Markup:
    """An ending's arguments: a ``finish`` summary, ``request_changes`` items, or nothing.

    Args:
        call: ``finish``, ``approve`` or ``request_changes`` (anything else from a forged
            stream: its arguments as JSON text).
        arguments: the ending's arguments (``{"summary": ...}``, ``{"items": [...]}``).
    """
    summary, items = arguments.get("summary"), arguments.get("items")
    if call == "finish" and isinstance(summary, str):
        return el("div", {"class": "summary"}, fold(summary, lines=12))
    if call == "request_changes" and isinstance(items, list):
        shown = [
            el("li", None, fold(item if isinstance(item, str) else json_text(item), lines=6))
            for item in items[:100]
        ]
        more = (
            [el("li", {"class": "cut"}, f"… {len(items) - 100} more")] if len(items) > 100 else []
        )
        return el("ol", {"class": "items"}, *shown, *more)
    if call == "approve" and not arguments:
        return Markup("")
    return fold(json_text(dict(arguments)), lines=12, cls="json")


def _arguments(e: ToolCalled, language: str | None) -> Markup:
    """A call's arguments: a program highlighted, anything else as bounded JSON text."""
    args = e.arguments
    program = args.get("program") if isinstance(args, dict) else None
    if e.name == "submit_program" and isinstance(program, str):
        lang = language if language in ("python", "javascript") else guess_language(program)
        return program_html(program, lang or "python")
    text = args if isinstance(args, str) else json_text(args)
    return fold(text, lines=12, cls="json")


def _progress(e: _Progress, language: str | None) -> Markup:
    """A run's or a session's start, a turn, a call or its result."""
    match e:
        case RunStarted():
            return _run_started(e)
        case SessionStarted():
            parent = f" · parent {e.parent}" if e.parent else ""
            resumed = [_tag("resumed", "warn")] if e.resumed else []
            head = [_tag(f"▶ session {e.session_id}", "session"), " role ", e.role]
            head += [f" · mode {e.mode} · language {e.language} · arm {e.arm}"]
            head += [f" · model {e.model}{parent}", *resumed]
            task = el("div", {"class": "task"}, "task: ", fold(e.task, lines=8, chars=1200))
            return _event(e, "session-started", head, task)
        case TurnEvent():
            u = e.usage
            cost = f" · cost {u.cost:.4f}" if u.cost else ""
            calls = ", ".join(e.calls) or "no calls"
            head = [_tag(f"turn {e.turn}", "turn"), f" · {e.seconds:.2f} s"]
            head += [f" · {u.input_tokens}→{u.output_tokens} tok{cost} · ", short(calls, 300)]
            said = [el("div", {"class": "reply"}, fold(e.text, lines=8))] if e.text.strip() else []
            point = TurnPoint(
                turn=e.turn or 0, tokens=u.input_tokens + u.output_tokens, seconds=e.seconds
            )
            return _event(e, "turn", head, *said, data=point_attrs(point))
        case ToolCalled():
            return _event(e, "tool-call", [_tag("→", "call"), " ", e.name], _arguments(e, language))
        case ToolResult():
            mark = _tag("← ok", "ok") if e.ok else _tag("← tool error", "bad")
            return _event(e, "tool-result", [mark, " ", e.name], fold(e.excerpt))
        case _:
            assert_never(e)


def _run_started(e: RunStarted) -> Markup:
    """The run's start: workspace, model, sandbox; the warnings ``gg show`` prints too."""
    head = [_tag(f"gg run {e.run_id}", "run"), f" · model {model_spec(e.settings)}"]
    head += [f" · sandbox {e.isolation}"]
    body: list[Child] = [el("div", {"class": "where"}, "workspace ", e.workspace)]
    if e.commands == "host":
        body.append(
            el(
                "p",
                {"class": "warn"},
                'run_command runs on the host ([sandbox] commands = "host"): commands run as '
                "gg's user, outside the sandbox",
            )
        )
    if e.config_changed:
        changed = ", ".join(str(c) for c in e.config_changed[:50])
        body.append(el("p", {"class": "warn"}, "changed since the last run: ", changed))
    return _event(e, "run-started", head, *body)


def _declaring(e: _Declaring) -> Markup:
    """An error turn, a declaration, a refusal, a supersede or revocation, a gate result."""
    match e:
        case ErrorTurn():
            head: list[Child] = [_tag("✗ error turn", "bad"), f" {e.kind}"]
            return _event(e, "error-turn", head, fold(e.message, lines=8))
        case EndingDeclared():
            head = [_tag(f"◆ {e.call} declared", "declared")]
            return _event(e, "declared", head, ending_html(e.call, e.arguments))
        case EndingRefused():
            head = [_tag(f"✗ {e.call} refused", "bad"), f" ({e.reason})"]
            return _event(e, "refused", head, fold(e.message, lines=8))
        case EndingSuperseded():
            said = f"{plural(e.count, 'earlier declaration')} superseded"
            return _event(e, "superseded", [_tag(said, "warn")])
        case EndingRevoked():
            head = [_tag(f"↺ {e.call} revoked", "warn")]
            return _event(e, "revoked", head, fold(e.error, lines=12))
        case GatePassed():
            said = f" ({plural(e.hooks, 'agent-stop hook')})"
            return _event(e, "gate-passed", [_tag("✓ ending gate passed", "ok"), said])
        case GateBlocked():
            head = [_tag("⊘ ending gate blocked", "bad"), " by agent-stop hook "]
            head.append(el("code", None, short(e.hook, 300)))
            if e.failed:
                head.append(_tag("the hook itself failed", "bad"))
            reason = el("div", {"class": "reason"}, fold(e.reason, lines=12))
            return _event(e, "gate-blocked", head, reason)
        case _:
            assert_never(e)


def _ends(e: _Ends) -> Markup:
    """A ceiling tripped (its diagnosis), a session's end, the run's end."""
    match e:
        case CeilingTripped():
            head: list[Child] = [_tag(f"ceiling tripped: {e.ceiling}", "bad")]
            diagnosis = el("div", {"class": "diagnosis"}, fold(e.diagnosis, lines=20, chars=4000))
            return _event(e, "ceiling", head, diagnosis)
        case SessionEnded():
            turns = f" after {plural(e.turns, 'turn')}"
            if e.ending:
                call = as_text(e.ending.get("call", "?"), 100)
                args = {k: v for k, v in e.ending.items() if k != "call"}
                head = [_tag(f"■ session ended by {call}", "ok"), turns]
                return _event(e, "session-ended", head, ending_html(call, args))
            why = f" ({e.ceiling})" if e.ceiling else " (model)"
            body = [fold(e.diagnosis, lines=8)] if e.diagnosis else []
            return _event(e, "session-ended", [_tag("■ session stopped", "bad"), why, turns], *body)
        case RunEnded():
            mark = _tag(f"run {e.status}", "ok" if e.status == "ended" else "bad")
            body = [fold(e.diagnosis, lines=8)] if e.diagnosis else []
            return _event(e, "run-ended", [mark, f" (exit {e.exit_code})"], *body)
        case _:
            assert_never(e)


def _other(e: _Other) -> Markup:
    """A checkpoint, a resumption, a model retry, a board issue's move."""
    match e:
        case Checkpoint():
            said = f"checkpoint: {plural(len(e.messages), 'message')} saved for resuming"
            return _event(e, "checkpoint", [_tag(said, "quiet")])
        case RunResumed():
            head = [_tag("↻ resumed", "warn"), f" run {e.from_run}: session {e.resumed_session}"]
            head.append(f" goes on after {plural(e.turns, 'turn')}")
            return _event(e, "resumed", head)
        case RetryEvent():
            head = [_tag(f"↻ {e.provider} attempt {e.attempt} failed", "warn")]
            head.append(f", retrying in {e.wait_s:.1f} s")
            return _event(e, "retry", head, fold(e.cause, lines=4))
        case IssueStateChanged():
            head = [_tag(f"issue #{e.issue} {e.event.replace('_', ' ')}", "issue")]
            head.append(f" → {e.state} (round {e.round})")
            body = [el("div", {"class": "diagnosis"}, fold(e.diagnosis))] if e.diagnosis else []
            return _event(e, "issue-state", head, *body)
        case _:
            assert_never(e)


def render_event(event: Event, *, language: str | None = None) -> str:
    """One event's HTML fragment, for the run page and for live appends over SSE.

    Args:
        event: any stream event (perhaps from a forged stream: every text is escaped).
        language: the session's language arm (``session_started.language``), which
            picks a program's highlighting; without it the program's look decides.

    Returns:
        One ``<div class="ev ..." data-session="..." data-kind="<event type>">``
        element (``data-session`` empty for run-level events).
    """
    with secrets_read_once():
        return _render(event, language)


def _render(event: Event, language: str | None) -> Markup:
    """:func:`render_event`'s work, by the event's group."""
    match event:
        case RunStarted() | SessionStarted() | TurnEvent() | ToolCalled() | ToolResult():
            return _progress(event, language)
        case (
            ErrorTurn()
            | EndingDeclared()
            | EndingRefused()
            | EndingSuperseded()
            | EndingRevoked()
            | GatePassed()
            | GateBlocked()
        ):
            return _declaring(event)
        case CeilingTripped() | SessionEnded() | RunEnded():
            return _ends(event)
        case Checkpoint() | RunResumed() | RetryEvent() | IssueStateChanged():
            return _other(event)
        case _:
            assert_never(event)
