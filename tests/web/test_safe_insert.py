"""Every path that puts server HTML in a page goes through one sanitising parse.

A loopback server of the test's own sends, over SSE, fragments a hostile server could
(a ``<script>``, an ``onerror``, ``javascript:`` URLs, SVG tricks) to a page with gg's
real scripts and no Content-Security-Policy: nothing in them may run, on the run page
(``ggAppendEvent``, the summary, ``ggReplaceSessions``) or on the board.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from playwright.sync_api import Page

from gg.web.assets import APP_JS
from gg.web.runpage import RUN_JS

HOSTILE = (
    '<img class="bad" src="/missing.png" onerror="window.__pwned=\'img\'">'
    "<script>window.__pwned='script'</script>"
    '<a id="js" href="java\tscript:void(window.__pwned=\'href\')">link</a>'
    '<svg><a id="svgjs" xlink:href="javascript:void(window.__pwned=\'svg\')"><text>t</text></a>'
    '<animate attributeName="href" to="javascript:void(window.__pwned=\'anim\')"/></svg>'
    "<iframe srcdoc=\"<script>parent.__pwned='iframe'</script>\"></iframe>"
    "<object data=\"javascript:void(window.__pwned='object')\"></object>"
    "<details open ontoggle=\"window.__pwned='toggle'\"><summary>s</summary></details>"
)
EVENT = (
    f'<article class="event" data-session="s1" data-kind="note">{HOSTILE}'
    '<p id="marker">arrived</p></article>'
)
SUMMARY = (
    f'<div class="gg-run"><header class="run-head">{HOSTILE}<p id="head2">fresh head</p>'
    "</header></div>"
)
BOARD = f'<section class="board">{HOSTILE}<p id="marker">arrived</p></section>'

RUN_BODY = (
    '<div id="run-events"><div class="gg-run"><header class="run-head">old</header>'
    '<section class="sessions"><p>tree</p></section><div id="gg-events"></div></div></div>'
)
WATCH = (
    "<script>window.__errors=0;"
    "document.addEventListener('error',function(){window.__errors+=1;},true);</script>"
)


def _frame(kind: str, data: str) -> bytes:
    return (f"event: {kind}\n" + "".join(f"data: {x}\n" for x in data.split("\n")) + "\n").encode()


class _Handler(BaseHTTPRequestHandler):
    pages: dict[str, tuple[str, bytes]] = {}

    def do_GET(self) -> None:
        found = self.pages.get(self.path)
        if found is None:
            self.send_error(404)
            return
        media, body = found
        self.send_response(200)
        self.send_header("Content-Type", media)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def hostile_server() -> Iterator[str]:
    """A loopback server: a run page and a board page with gg's scripts, hostile feeds."""

    def doc(body: str, live: str) -> bytes:
        return (
            f'<!doctype html><html><head>{WATCH}<script src="/static/run.js" defer></script>'
            '<script src="/static/gg.js" defer></script></head>'
            f'<body data-live="{live}">{body}</body></html>'
        ).encode()

    _Handler.pages = {
        "/run": ("text/html", doc(RUN_BODY, "/feed/run")),
        "/board": ("text/html", doc('<div id="board-live"></div>', "/feed/board")),
        "/static/run.js": ("text/javascript", RUN_JS.encode()),
        "/static/gg.js": ("text/javascript", APP_JS.encode()),
        "/feed/run": (
            "text/event-stream",
            _frame("event", EVENT) + _frame("summary", SUMMARY) + _frame("end", ""),
        ),
        "/feed/board": ("text/event-stream", _frame("board", BOARD) + _frame("end", "")),
    }
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _nothing_ran(page: Page, images: int) -> None:
    # each hostile /missing.png failed to load: its onerror (if kept) had its turn
    page.wait_for_function(f"window.__errors >= {images}")
    page.evaluate(  # follow both links as a click would
        "['#js', '#svgjs'].forEach(s => document.querySelector(s)"
        ".dispatchEvent(new MouseEvent('click', {bubbles: true, cancelable: true})))"
    )
    page.wait_for_timeout(300)  # a javascript: navigation would have run by now
    assert page.evaluate("window.__pwned") is None
    assert (
        page.evaluate("document.body.querySelectorAll('script,iframe,object,animate').length") == 0
    )
    bad = page.evaluate(
        "Array.from(document.body.querySelectorAll('*')).flatMap(e => Array.from(e.attributes)"
        ".filter(a => /^on/i.test(a.name) || /script:/i.test(a.value)).map(a => a.name))"
    )
    assert bad == []


def test_a_run_pages_live_fragments_cannot_run_anything(page: Page, hostile_server: str) -> None:
    page.goto(f"{hostile_server}/run")
    page.wait_for_selector("#marker")
    page.wait_for_selector("#head2")  # the summary was put in too
    assert page.evaluate("window.ggLive.events") == 1
    _nothing_ran(page, 2)
    fresh = page.evaluate(
        "h => !!window.ggReplaceSessions(h)",
        f'<section class="sessions">{HOSTILE}<p id="tree2">t</p></section>',
    )
    assert fresh and page.locator("#tree2").count() == 1
    page.wait_for_function("window.__errors >= 3")
    assert page.evaluate("window.__pwned") is None


def test_the_boards_live_fragment_cannot_run_anything(page: Page, hostile_server: str) -> None:
    page.goto(f"{hostile_server}/board")
    page.wait_for_selector("#marker")
    _nothing_ran(page, 1)
