"""The HTML pages and fragments of ``gg serve`` (issue 15 items 1-3).

:func:`page` wraps a body in gg's layout (its CSS and script from ``/static/``, the live
feed's URL on ``<body data-live>``); :func:`board_page` and :func:`run_page` are the two
pages; :func:`board_fragment` is what the board's live feed sends when the board or a
run changes. Every value from a store or a stream goes through
:func:`gg.web.escape.h`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from gg.stream import Event
from gg.web.boardview import BoardSnapshot, board_html
from gg.web.escape import h, num
from gg.web.markup import secrets_read_once
from gg.web.runpage import render_run
from gg.web.streams import RunSummary

__all__ = ["board_fragment", "board_page", "not_found_page", "page", "run_page", "runs_html"]


def page(title: str, body: str, *, workspace: Path, live: str = "", extra: str = "") -> str:
    """A whole HTML page around ``body`` (gg's own markup, already escaped).

    Args:
        title: the page's title (escaped here).
        body: the page's content.
        workspace: shown in the header (escaped here).
        live: the EventSource URL the script follows, or ``""`` for none.
        extra: more ``<head>`` markup of gg's (the run page's CSS and script).

    Returns:
        The document, ``<!doctype html>`` first.
    """
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{h(title, 200)} · gg</title>"
        '<link rel="stylesheet" href="/static/gg.css">'
        f'{extra}<script src="/static/gg.js" defer></script></head>'
        f'<body data-live="{h(live)}"><header class="top"><a href="/">gg board</a>'
        f'<span class="ws">{h(workspace, 300)}</span><span id="live">static</span></header>'
        f"<main>{body}</main></body></html>"
    )


def runs_html(summaries: Sequence[RunSummary]) -> str:
    """The runs of the workspace as a table, newest first (each row links to its page)."""
    if not summaries:
        return '<p class="note">No runs yet.</p>'
    rows = []
    for s in summaries:
        rid, state = h(s.run.run_id), h(s.state())
        cut = " (cut)" if s.tail.cut else ""
        rows.append(
            f'<tr data-run="{rid}" data-events="{num(s.events)}" data-state="{state}" '
            f'data-seal="{h(s.seal)}">'
            f'<td class="id"><a href="/runs/{rid}">{rid}</a></td><td>{h(s.started, 40)}</td>'
            f'<td class="st-{state}">{state}</td>'
            f'<td class="seal seal-{h(s.seal)}" title="{h(s.verdict, 600)}">{h(s.seal)}</td>'
            f"<td>{num(len(s.sessions))}</td>"
            f'<td class="events">{num(s.events)}{cut}</td>'
            f"<td>{h(s.last_type, 40)} {h(s.last_at, 40)}</td></tr>"
        )
    return (
        '<table class="runs"><thead><tr><th>run</th><th>started (UTC)</th><th>state</th>'
        "<th>stream</th><th>sessions</th><th>events</th><th>last event</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def board_fragment(snapshot: BoardSnapshot, summaries: Sequence[RunSummary]) -> str:
    """The live part of the board page: the columns, then the runs."""
    with secrets_read_once():  # one read of the environment's secrets for the whole board
        return f"{board_html(snapshot)}<h1>Runs</h1>{runs_html(summaries)}"


def board_page(workspace: Path, fragment: str) -> str:
    """The board page (``/``): the board and the runs, following ``/events/board``."""
    body = f'<h1>Board</h1><div id="board-live">{fragment}</div>'
    return page("board", body, workspace=workspace, live="/events/board")


def run_page(
    workspace: Path, run_id: str, events: Sequence[Event], verdict: str, lines: int
) -> str:
    """The page of one run (``/runs/RUN_ID``), following its stream from line ``lines``.

    Args:
        workspace: the workspace (for the header).
        run_id: the run's id (a checked directory name; escaped anyway).
        events: the trusted events read so far.
        verdict: the tamper check's text (in the run's header; the live feed updates it).
        lines: the stream lines already read (the live feed sends the ones after).

    Returns:
        The page.
    """
    body = f'<div id="run-events">{render_run(events, verdict=verdict)}</div>'
    extra = (
        '<link rel="stylesheet" href="/static/run.css"><script src="/static/run.js" defer></script>'
    )
    live = f"/events/runs/{run_id}?after={lines}"
    return page(f"run {run_id}", body, workspace=workspace, live=live, extra=extra)


def not_found_page(workspace: Path, what: str) -> str:
    """A 404 page naming what was asked for (escaped)."""
    body = f'<h1>Not found</h1><p class="error">{h(what, 300)}</p><p><a href="/">board</a></p>'
    return page("not found", body, workspace=workspace)
