"""A run's stream as an HTML page body, like ``gg show`` prints it (SPEC O1, O2; issue 15 item 2).

:func:`render_run` draws a finished or growing run from its events: a header (the
run, its model and mode, when, how it ended, the tamper check's verdict), the
sessions as a tree (a subagent under its parent; on a board, each issue's
implementer, reviewers and merge agent grouped under the issue) each with its role,
mode, turns, error turns, declarations (the endings declared, refusals, the
superseded count, revocations), the ending gate's results (passed, blocked by which
agent-stop hook and why), the ceilings tripped with their diagnoses and how it
ended; then each session's events in order (:func:`render_event`); then a
turns-over-time chart per session (:mod:`gg.web.chart`, inline SVG).

The app (:mod:`gg.web`) wraps the fragment in its page and serves :data:`RUN_CSS`
and :data:`RUN_JS` with it. Live, it appends each new event's :func:`render_event`
fragment with ``ggAppendEvent(html)`` (which also draws the session's chart again on a
new turn), and may replace the session tree with :func:`render_sessions`' fragment
through ``ggReplaceSessions(html)``. Every text from a model, a program, a tool, a hook
or the stream itself is escaped (:mod:`gg.web.markup`): a forged stream is shown, never
obeyed.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

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
    RunEnded,
    RunStarted,
    SessionEnded,
    SessionStarted,
    TurnEvent,
)
from gg.web.assets import SAFE_JS
from gg.web.chart import CHART_JS, TurnPoint, turns_chart
from gg.web.highlight import CODE_CSS
from gg.web.markup import Child, Markup, as_text, el, fold, join, secrets_read_once, short
from gg.web.runevents import ending_html, model_spec, plural, render_event

__all__ = ["MAX_EVENTS_SHOWN", "RUN_CSS", "RUN_JS", "render_event", "render_run", "render_sessions"]

MAX_EVENTS_SHOWN = 5000
"""Most events listed per session on one page (the rest are counted: ``gg show`` has all)."""
_MAX_DEPTH = 24
"""Deeper subagents are listed at this depth (a forged stream may chain thousands)."""


@dataclass(slots=True, kw_only=True)
class _Session:
    """What the page says of one session, gathered from its events."""

    sid: str
    started: SessionStarted | None = None
    events: list[Event] = field(default_factory=list)
    turns: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    declared: list[EndingDeclared] = field(default_factory=list)
    refused: list[EndingRefused] = field(default_factory=list)
    superseded: int = 0
    revoked: list[EndingRevoked] = field(default_factory=list)
    passed: int = 0
    blocked: list[GateBlocked] = field(default_factory=list)
    ceilings: list[CeilingTripped] = field(default_factory=list)
    ended: SessionEnded | None = None
    times_ended: int = 0
    """``session_ended`` events: more than one when a board's implementer goes on after a review."""
    points: list[TurnPoint] = field(default_factory=list)


def _note(s: _Session, e: Event) -> None:
    """Count ``e`` into its session's summary."""
    s.events.append(e)
    match e:
        case SessionStarted():
            s.started = s.started or e
        case TurnEvent():
            s.turns = max(s.turns, e.turn or 0, len(s.points) + 1)
            tokens = e.usage.input_tokens + e.usage.output_tokens
            s.points.append(
                TurnPoint(
                    turn=e.turn or len(s.points) + 1, tokens=tokens, seconds=e.seconds, at=e.at
                )
            )
        case ErrorTurn():
            s.errors[e.kind] += 1
        case EndingDeclared():
            s.declared.append(e)
        case EndingRefused():
            s.refused.append(e)
        case EndingSuperseded():
            s.superseded += max(0, e.count)
        case EndingRevoked():
            s.revoked.append(e)
        case GatePassed():
            s.passed += 1
        case GateBlocked():
            s.blocked.append(e)
        case CeilingTripped():
            s.ceilings.append(e)
        case SessionEnded():
            s.ended = e
            s.times_ended += 1
            s.turns = max(s.turns, e.turns)
        case _:
            pass  # calls, results, checkpoints, retries: listed, not summed up


def _sessions(events: Sequence[Event]) -> dict[str, _Session]:
    """Each session's summary, in the order the sessions first appear."""
    out: dict[str, _Session] = {}
    for e in events:
        if e.session_id is not None:
            _note(out.setdefault(e.session_id, _Session(sid=e.session_id)), e)
    return out


_BOARD_TASK = re.compile(r"(Implement|Review|Merge) issue #(\d+)")
_BOARD_ROLE = {"Implement": "implementer", "Review": "reviewer", "Merge": "merge agent"}


def _board_label(s: _Session, board: bool) -> str | None:
    """On a board run, the session's board role read off its task (``reviewer of issue #2``)."""
    if not board or s.started is None:
        return None
    m = _BOARD_TASK.match(s.started.task)
    if m:
        return f"{_BOARD_ROLE[m.group(1)]} of issue #{m.group(2)}"
    if s.started.task.startswith("The reviewers requested changes"):
        return "implementer (changes requested)"
    return None


def _fact(name: str, *value: Child, wide: bool = False) -> Markup:
    """One ``<dt>``/``<dd>`` pair of a summary; a ``wide`` one takes a whole row of a card."""
    return join([el("dt", None, name), el("dd", {"class": "wide" if wide else None}, *value)])


def _last_end(s: _Session) -> Markup:
    """A session's end: the ending and its arguments, stopped by a ceiling, or unfinished."""
    e = s.ended
    if e is None:
        return el("span", {"class": "tag quiet"}, "not ended (still going, or its run was killed)")
    if e.ending:
        call = as_text(e.ending.get("call", "?"), 100)
        args = {k: v for k, v in e.ending.items() if k != "call"}
        return join([el("span", {"class": "tag ok"}, f"ended by {call}"), ending_html(call, args)])
    why = e.ceiling or "model"
    said = [fold(e.diagnosis, lines=4)] if e.diagnosis and not e.ceiling else []
    return join([el("span", {"class": "tag bad"}, f"stopped ({why})"), *said])


def _how_ended(s: _Session) -> Markup:
    """:func:`_last_end`, said to be the last when the session went on after ending."""
    if s.times_ended < 2:
        return _last_end(s)
    went_on = f"went on after ending; ended {s.times_ended} times, the last: "
    return join([el("span", {"class": "tag quiet"}, went_on), _last_end(s)])


def _declarations(s: _Session) -> Markup:
    """The declarations: each ending declared, refusals, superseded count, revocations."""
    calls = Counter(d.call for d in s.declared)
    parts: list[Child] = [
        ", ".join(f"{c} x{n}" if n > 1 else c for c, n in calls.items()) or "none"
    ]
    if s.refused:
        parts.append(el("span", {"class": "tag bad"}, f"{len(s.refused)} refused"))
    if s.superseded:
        said = f"{plural(s.superseded, 'declaration')} superseded"
        parts.append(el("span", {"class": "tag warn superseded"}, said))
    revoked = [
        el(
            "li",
            {"class": "revoked"},
            el("span", {"class": "tag warn"}, f"{r.call} revoked"),
            ": ",
            short(r.error, 200),
        )
        for r in s.revoked[:20]
    ]
    if revoked:
        parts.append(el("ul", {"class": "revocations"}, *revoked))
    return join(parts)


def _gate(s: _Session) -> Markup:
    """The ending gate's results: how often it passed, and each block with its reason."""
    parts: list[Child] = [el("span", {"class": "tag ok"}, f"passed {s.passed}")] if s.passed else []
    if s.blocked:
        parts.append(el("span", {"class": "tag bad"}, f"blocked {len(s.blocked)}"))
        rows = []
        for b in s.blocked[:20]:
            broken = (
                [el("span", {"class": "tag bad"}, "the hook itself failed")] if b.failed else []
            )
            hook = el("code", None, short(b.hook, 200))
            rows.append(
                el(
                    "li",
                    {"class": "blocked"},
                    "blocked by ",
                    hook,
                    *broken,
                    ": ",
                    el("span", {"class": "reason"}, short(b.reason, 300)),
                )
            )
        if len(s.blocked) > 20:
            rows.append(el("li", {"class": "cut"}, f"… {len(s.blocked) - 20} more"))
        parts.append(el("ul", {"class": "blocks"}, *rows))
    return join(parts or ["not reached"])


def _ceilings(s: _Session) -> Markup:
    """Each ceiling tripped, with its diagnosis."""
    return join(
        el(
            "div",
            {"class": "ceiling", "data-ceiling": c.ceiling},
            el("span", {"class": "tag bad"}, c.ceiling),
            el("div", {"class": "diagnosis"}, fold(c.diagnosis, lines=10)),
        )
        for c in s.ceilings[:10]
    )


def _card(s: _Session, board: bool) -> Markup:
    """A session's summary card in the tree."""
    st = s.started
    errors = ", ".join(f"{k} x{n}" for k, n in s.errors.most_common())
    facts = [
        _fact("role", st.role if st else "?"),
        _fact("mode", f"{st.mode} ({st.language})" if st else "?"),
        _fact("model", st.model if st else "?"),
        _fact("turns", str(s.turns)),
        _fact("error turns", str(sum(s.errors.values())), f" ({errors})" if errors else ""),
        _fact("declarations", _declarations(s), wide=True),
        _fact("ending gate", _gate(s), wide=True),
    ]
    if s.ceilings:
        facts.append(_fact("ceiling", _ceilings(s), wide=True))
    facts.append(_fact("ended", _how_ended(s), wide=True))
    label = _board_label(s, board)
    title: list[Child] = [el("a", {"href": f"#session-{s.sid}", "class": "sid"}, s.sid)]
    if label:
        title += [" ", el("span", {"class": "board-role"}, label)]
    if st and st.task:
        title += [" ", el("span", {"class": "task-line"}, short(st.task, 120))]
    return el(
        "div",
        {"class": "card", "data-session": s.sid},
        el("div", {"class": "card-title"}, *title),
        el("dl", {"class": "facts"}, *facts),
    )


def _node(s: _Session, board: bool, *sub: Child) -> Markup:
    """One session's ``<li>`` in the tree: its card, then its subagents' list."""
    return el("li", {"class": "node", "data-session": s.sid}, _card(s, board), *sub)


@dataclass(slots=True)
class _Tree:
    """The sessions' parent links, walked once each (a forged stream may loop or chain)."""

    sessions: dict[str, _Session]
    board: bool
    children: dict[str, list[str]] = field(default_factory=dict)
    seen: set[str] = field(default_factory=set)

    def branch(self, sid: str, depth: int) -> Markup:
        """``sid``'s node with its subagents nested, flat below :data:`_MAX_DEPTH`."""
        self.seen.add(sid)
        kids = [k for k in self.children.get(sid, []) if k not in self.seen]
        if not kids:
            return _node(self.sessions[sid], self.board)
        if depth < _MAX_DEPTH:
            sub = el("ul", {"class": "tree"}, *(self.branch(k, depth + 1) for k in kids))
            return _node(self.sessions[sid], self.board, sub)
        flat, todo = [], list(reversed(kids))  # deeper: the rest in order, no recursion
        while todo:
            k = todo.pop()
            if k not in self.seen:
                self.seen.add(k)
                flat.append(_node(self.sessions[k], self.board))
                todo += reversed(self.children.get(k, []))
        return _node(self.sessions[sid], self.board, el("ul", {"class": "tree flat"}, *flat))


def _issue_of(s: _Session, board: bool) -> str | None:
    """The board issue a session works on (``#3``), read off its task, or ``None``."""
    label = _board_label(s, board)
    m = _BOARD_TASK.match(s.started.task) if label and s.started else None
    return m.group(2) if m else None


def _tree(sessions: dict[str, _Session], board: bool) -> Markup:
    """The sessions as nested lists: each subagent under its parent.

    Sessions whose parent is not in the stream, and those of a (forged) parent cycle,
    are listed at the top; nesting stops at :data:`_MAX_DEPTH`. On a board run the top
    sessions are grouped by issue (``li.issue-group``): implementer, reviewers, merge agent.
    """
    tree = _Tree(sessions, board)
    roots: list[str] = []
    for sid, s in sessions.items():
        parent = s.started.parent if s.started else None
        if parent is not None and parent in sessions and parent != sid:
            tree.children.setdefault(parent, []).append(sid)
        else:
            roots.append(sid)
    groups: dict[str | None, list[Markup]] = {}
    for sid in roots:
        groups.setdefault(_issue_of(sessions[sid], board), []).append(tree.branch(sid, 0))
    items: list[Child] = []
    for issue, nodes in groups.items():
        if issue is None:
            items += nodes
            continue
        title = el("div", {"class": "issue-title"}, f"issue #{issue}")
        sub = el("ul", {"class": "tree"}, *nodes)
        items.append(el("li", {"class": "issue-group", "data-issue": issue}, title, sub))
    cycle = [tree.branch(sid, 0) for sid in sessions if sid not in tree.seen]
    return el("ul", {"class": "tree root"}, *items, *cycle)


def _stamp(at: str) -> datetime | None:
    """An ISO 8601 stamp parsed, or ``None`` (a forged stream may hold anything)."""
    try:
        return datetime.fromisoformat(at[:40].replace("Z", "+00:00"))
    except ValueError:
        return None


def _when(first: Event, last: Event) -> str:
    """``2026-12-01 18:12:20 UTC, 0.1 s`` from the first event to the last."""
    start, end = _stamp(first.at), _stamp(last.at)
    if start is None:
        return short(first.at, 40)
    said = start.strftime("%Y-%m-%d %H:%M:%S UTC")
    if end is not None and end >= start:
        said += f", {(end - start).total_seconds():.1f} s"
    return said


def _mode(settings: object) -> str:
    """The root session's mode and language from the run's settings (``code (python)``)."""
    session = settings.get("session") if isinstance(settings, dict) else None
    if not isinstance(session, dict):
        return "?"
    return f"{as_text(session.get('mode', '?'), 40)} ({as_text(session.get('language', '?'), 40)})"


def _verdict(verdict: str) -> Markup:
    """The tamper check's verdict (:meth:`gg.seal.Intact.message` and its peers), coloured."""
    if verdict.startswith("stream intact but"):
        cls = "warn"
    elif verdict.startswith("stream intact"):
        cls = "ok"
    else:
        cls = "bad"  # STREAM ALTERED, TRUNCATED, UNVERIFIED: the stream cannot be trusted
    return el("p", {"class": f"verdict {cls}"}, short(verdict, 1000))


def _ended(events: Sequence[Event]) -> Markup:
    """How the run ended: ``ended (exit 0)``, ``stopped (exit 1)`` and its diagnosis, or not."""
    end = next((e for e in reversed(events) if isinstance(e, RunEnded)), None)
    if end is None:
        return el(
            "span",
            {"class": "tag warn"},
            "no run_ended: the run is still going, or its process was killed or crashed",
        )
    cls = "ok" if end.status == "ended" else "bad"
    mark = el("span", {"class": f"tag {cls}"}, f"{end.status} (exit {end.exit_code})")
    return join([mark, fold(end.diagnosis, lines=6)] if end.diagnosis else [mark])


def _header(events: Sequence[Event], verdict: str | None) -> Markup:
    """The run's header: id, model, mode, when, how it ended, the verdict."""
    start = next((e for e in events if isinstance(e, RunStarted)), None)
    run_id = start.run_id if start else (events[0].run_id if events else "?")
    facts = [_fact("model", model_spec(start.settings) if start else "?")]
    facts.append(_fact("mode", _mode(start.settings) if start else "?"))
    if events:
        facts.append(_fact("when", _when(events[0], events[-1])))
    if start:
        facts.append(_fact("sandbox", start.isolation))
        facts.append(_fact("workspace", start.workspace))
    facts.append(_fact("ended", _ended(events)))
    parts: list[Child] = [el("h1", None, "run ", el("span", {"class": "run-id"}, run_id))]
    if verdict is not None:
        parts.append(_verdict(verdict))
    parts.append(el("dl", {"class": "facts"}, *facts))
    return el("header", {"class": "run-head", "data-run": run_id}, *parts)


def _listed(events: Sequence[Event], language: str | None) -> list[Markup]:
    """The events of one group as fragments (checkpoints left out, at most the cap)."""
    shown = [e for e in events if not isinstance(e, Checkpoint)]
    out = [render_event(e, language=language) for e in shown[:MAX_EVENTS_SHOWN]]
    if len(shown) > MAX_EVENTS_SHOWN:
        more = len(shown) - MAX_EVENTS_SHOWN
        out.append(el("p", {"class": "cut"}, f"… {more} more events (gg show has them all)"))
    return [Markup(x) for x in out]


def _event_sections(events: Sequence[Event], sessions: dict[str, _Session]) -> Markup:
    """The run's own events, then each session's, in order."""
    run_events = [e for e in events if e.session_id is None]
    parts = [
        el(
            "section",
            {"class": "session-events run-events"},
            el("h2", None, "run"),
            el("div", {"class": "events", "data-events-of": ""}, *_listed(run_events, None)),
        )
    ]
    for sid, s in sessions.items():
        st = s.started
        what = f" · {st.role} · {st.mode} ({st.language})" if st else ""
        parts.append(
            el(
                "section",
                {"class": "session-events", "id": f"session-{sid}"},
                el("h2", None, f"session {sid}", el("small", None, what)),
                el(
                    "div",
                    {"class": "events", "data-events-of": sid},
                    *_listed(s.events, st.language if st else None),
                ),
            )
        )
    return el("div", {"id": "gg-events"}, *parts)


def _charts(sessions: dict[str, _Session]) -> Markup:
    """A turns-over-time chart per session."""
    figures = [
        el(
            "div",
            {"class": "session-chart", "data-session": sid},
            el("h3", None, f"session {sid}: {plural(len(s.points), 'turn')}"),
            turns_chart(s.points, title=f"session {sid}: tokens and seconds per turn"),
        )
        for sid, s in sessions.items()
    ]
    return el("section", {"class": "charts"}, el("h2", None, "turns over time"), *figures)


def render_run(events: Sequence[Event], *, verdict: str | None) -> str:
    """A run's page body: header, session tree, each session's events, charts (issue 15 item 2).

    Args:
        events: the run's stream events in order (:func:`gg.stream.read_events`;
            for a damaged stream, the ones before the damage), perhaps none yet.
        verdict: the tamper check's verdict line (:meth:`gg.seal.Intact.message` and
            its peers), or ``None`` when the stream was not checked.

    Returns:
        An HTML fragment (``<div class="gg-run">``): every text in it escaped, long
        ones folded. It needs :data:`RUN_CSS` (and :data:`RUN_JS` for live appends and
        the fold buttons) inlined in the page.
    """
    with secrets_read_once():
        return _page(events, verdict)


def _sessions_section(sessions: dict[str, _Session], board: bool) -> Markup:
    """``<section class="sessions">``: the heading and the tree."""
    return el("section", {"class": "sessions"}, el("h2", None, "sessions"), _tree(sessions, board))


def render_sessions(events: Sequence[Event]) -> str:
    """The run page's session tree alone, to replace it on a live page (``ggReplaceSessions``).

    Args:
        events: the run's events so far, in order (as for :func:`render_run`).

    Returns:
        The ``<section class="sessions">`` :func:`render_run` draws for ``events``: every
        session's card (role, mode, turns, error turns, declarations, the ending gate's
        results, ceilings and diagnoses, how it ended) as of the last event.
    """
    with secrets_read_once():
        board = any(isinstance(e, IssueStateChanged) for e in events)
        return _sessions_section(_sessions(events), board)


def _page(events: Sequence[Event], verdict: str | None) -> Markup:
    """:func:`render_run`'s work."""
    sessions = _sessions(events)
    board = any(isinstance(e, IssueStateChanged) for e in events)
    tools = el(
        "div",
        {"class": "fold-tools"},
        el("button", {"type": "button", "data-fold-all": "open"}, "unfold all"),
        el("button", {"type": "button", "data-fold-all": "close"}, "fold all"),
    )
    return el(
        "div",
        {"class": "gg-run"},
        _header(events, verdict),
        _sessions_section(sessions, board),
        tools,
        _event_sections(events, sessions),
        _charts(sessions),
    )


RUN_JS: str = (
    SAFE_JS
    + """
(function () {
  "use strict";"""
    + CHART_JS
    + """
  function eventsOf(sid) {
    var all = document.querySelectorAll("[data-events-of]");
    for (var i = 0; i < all.length; i++) {
      if (all[i].getAttribute("data-events-of") === sid) { return all[i]; }
    }
    return null;
  }
  function newSession(sid) {
    var root = document.getElementById("gg-events");
    if (!root) { return null; }
    var section = document.createElement("section");
    section.className = "session-events";
    section.id = "session-" + sid;
    var title = document.createElement("h2");
    title.textContent = "session " + sid;
    var box = document.createElement("div");
    box.className = "events";
    box.setAttribute("data-events-of", sid);
    section.appendChild(title);
    section.appendChild(box);
    root.appendChild(section);
    return box;
  }
  function chartOf(sid) {
    var all = document.querySelectorAll(".session-chart[data-session]");
    for (var i = 0; i < all.length; i++) {
      if (all[i].getAttribute("data-session") === sid) { return all[i]; }
    }
    var charts = document.querySelector(".gg-run .charts");
    if (!charts) { return null; }
    var holder = document.createElement("div");
    holder.className = "session-chart";
    holder.setAttribute("data-session", sid);
    var title = document.createElement("h3");
    title.textContent = "session " + sid + ": 0 turns";
    holder.appendChild(title);
    charts.appendChild(holder);
    return holder;
  }
  /* Append one render_event() fragment (HTML made and escaped by gg) to its session. */
  function firstElement(fragment) {  /* through the one sanitising parse (gg.web.assets) */
    var nodes = window.ggSafeNodes(fragment);
    for (var i = 0; i < nodes.length; i++) { if (nodes[i].nodeType === 1) { return nodes[i]; } }
    return null;
  }
  window.ggAppendEvent = function (fragment) {
    var ev = firstElement(fragment);
    if (!ev) { return null; }
    var sid = ev.getAttribute("data-session") || "";
    var box = eventsOf(sid) || newSession(sid);
    if (!box) { return null; }
    box.appendChild(ev);
    if (ev.getAttribute("data-kind") === "turn") {
      var holder = chartOf(sid);
      if (holder) { window.ggRedrawChart(holder, box); }
    }
    return ev;
  };
  /* Replace the session tree with a render_sessions() fragment (HTML made by gg). */
  window.ggReplaceSessions = function (fragment) {
    var old = document.querySelector(".gg-run .sessions");
    if (!old) { return null; }
    var fresh = firstElement(fragment);
    if (!fresh || !fresh.classList.contains("sessions")) { return null; }
    old.replaceWith(fresh);
    return fresh;
  };
  document.addEventListener("click", function (e) {
    var button = e.target && e.target.closest ? e.target.closest("[data-fold-all]") : null;
    if (!button) { return; }
    var open = button.getAttribute("data-fold-all") === "open";
    document.querySelectorAll(".gg-run details.fold").forEach(function (d) { d.open = open; });
  });
})();
"""
)
"""The run page's script: ``ggAppendEvent(html)`` for live appends (the session's chart drawn
again on each new turn, :data:`gg.web.chart.CHART_JS`), the fold-all buttons."""

_CSS = """
.gg-run { font-family: system-ui, sans-serif; font-size: 14px; color: #1d1d1f; }
.gg-run h1 { font-size: 20px; margin: 0 0 6px; }
.gg-run h2 { font-size: 16px; margin: 18px 0 6px; border-bottom: 1px solid #ddd; }
.gg-run h2 small { font-weight: normal; color: #666; margin-left: 6px; }
.gg-run pre { white-space: pre-wrap; overflow-wrap: anywhere; margin: 4px 0;
  padding: 4px 6px; background: #f6f6f6; border-radius: 3px; max-height: 40em; overflow: auto; }
.gg-run dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 10px;
  margin: 4px 0; }
.gg-run dl.facts dt { color: #666; }
.gg-run dl.facts dd { margin: 0; }
.gg-run .tag { display: inline-block; padding: 0 5px; border-radius: 3px; margin-right: 4px;
  background: #eee; font-weight: 600; }
.gg-run .tag.ok { background: #e3f5e1; color: #176c12; }
.gg-run .tag.bad { background: #fde4e1; color: #a4160b; }
.gg-run .tag.warn { background: #fff2d6; color: #8a5300; }
.gg-run .tag.quiet { background: none; color: #888; font-weight: normal; }
.gg-run .tag.declared { background: #f2e6fa; color: #6b1f93; }
.gg-run .tag.session, .gg-run .tag.run { background: #e1effd; color: #0c4f91; }
.gg-run .verdict { padding: 4px 8px; border-radius: 3px; font-weight: 600; }
.gg-run .verdict.ok { background: #e3f5e1; color: #176c12; }
.gg-run .verdict.warn { background: #fff2d6; color: #8a5300; }
.gg-run .verdict.bad { background: #a4160b; color: #fff; }
.gg-run ul.tree { list-style: none; padding-left: 18px; margin: 4px 0;
  border-left: 1px dotted #bbb; }
.gg-run ul.tree.root { padding-left: 0; border-left: none; }
.gg-run .card dl.facts { grid-template-columns: repeat(5, max-content minmax(0, 1fr)); }
.gg-run .card dl.facts dd.wide { grid-column: 2 / -1; }
.gg-run .issue-title { font-weight: 700; margin-top: 6px; }
.gg-run .card { border: 1px solid #ddd; border-radius: 4px; padding: 6px 8px; margin: 4px 0; }
.gg-run .card-title .sid { font-weight: 700; }
.gg-run .card-title .board-role { color: #0c4f91; font-weight: 600; }
.gg-run .card-title .task-line { color: #666; }
.gg-run .ev { border-left: 3px solid #ddd; padding: 2px 8px; margin: 3px 0; }
.gg-run .ev time { color: #888; font-family: ui-monospace, monospace; font-size: 12px; }
.gg-run .ev.error-turn, .gg-run .ev.refused, .gg-run .ev.gate-blocked,
.gg-run .ev.ceiling { border-left-color: #d93025; }
.gg-run .ev.revoked, .gg-run .ev.superseded, .gg-run .ev.retry { border-left-color: #e8a200; }
.gg-run .ev.declared { border-left-color: #8e44ad; }
.gg-run .ev.gate-passed, .gg-run .ev.session-ended { border-left-color: #2e8b2e; }
.gg-run .ev.checkpoint { display: none; }
.gg-run .diagnosis pre { background: #fde4e1; }
.gg-run details.fold > summary { cursor: pointer; color: #0c4f91; }
.gg-run .cut { color: #a4160b; font-style: italic; margin: 2px 0; }
.gg-run .fold-tools { margin: 10px 0 0; }
.gg-run figure.chart { margin: 4px 0 12px; }
.gg-run figure.chart svg { max-width: 100%; height: auto; background: #fcfcfc; }
.gg-run svg .axis { stroke: #999; }
.gg-run svg .line.tokens { stroke: #0c63c5; stroke-width: 1.5; }
.gg-run svg .line.seconds { stroke: #d2691e; stroke-width: 1.5; stroke-dasharray: 4 3; }
.gg-run svg .pt.tokens { fill: #0c63c5; }
.gg-run svg .pt.seconds { fill: #d2691e; }
.gg-run svg .label { font-size: 11px; fill: #555; }
.gg-run svg .label.tokens { fill: #0c63c5; }
.gg-run svg .label.seconds { fill: #d2691e; }
"""

RUN_CSS: str = _CSS + CODE_CSS + "\n"
"""The run page's styles, Pygments' colours included (scoped to ``.gg-run`` and ``.gg-code``)."""
