"""A run's stream as HTML (issue 15 item 2): a stand-in until the run page's renderer lands.

Only the contract is kept here: :func:`render_run`, :func:`render_event`, :data:`RUN_CSS`
and :data:`RUN_JS`. Every text is escaped.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from gg.stream import Event
from gg.web.escape import h

__all__ = ["RUN_CSS", "RUN_JS", "render_event", "render_run"]

RUN_CSS = ".ev{font-family:monospace;white-space:pre-wrap;margin:2px 0}"
RUN_JS = ""


def render_event(event: Event) -> str:
    """One event as an ``<li class="ev" data-session=...>`` fragment, every text escaped."""
    fields = event.model_dump(mode="json", exclude={"run_id", "at"})
    text = json.dumps(fields, ensure_ascii=False)
    return (
        f'<li class="ev ev-{h(event.type)}" data-session="{h(event.session_id or "")}">'
        f"<b>{h(event.type)}</b> {h(text, 4000)}</li>"
    )


def render_run(events: Sequence[Event], *, verdict: str | None) -> str:
    """The run's events in one list, after the tamper check's verdict."""
    head = f'<p class="verdict">{h(verdict)}</p>' if verdict else ""
    items = "".join(render_event(e) for e in events)
    return f'{head}<ol class="events" data-session-events="">{items}</ol>'
