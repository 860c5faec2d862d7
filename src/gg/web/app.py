"""The routes of ``gg serve`` (issue 15): read-only pages and feeds of one workspace.

=========================  ==============================================================
``GET /``                  the board page: columns by state, then the runs
``GET /fragments/board``   the board page's live part alone (what ``/events/board`` sends)
``GET /runs/{run_id}``     one run's page (404 unless the id names a run of the workspace)
``GET /events/board``      server-sent events: the board fragment on each change
``GET /events/runs/{id}``  server-sent events: each new event of the run, then its verdict
``GET /static/{name}``     gg's CSS and JavaScript (nothing else is served from disk)
=========================  ==============================================================

:class:`Guard` wraps the app: any method but GET and HEAD is refused (405: nothing here
acts), a ``Host`` header that is not one the server was bound for is refused (400: a web
page elsewhere cannot reach a loopback server through DNS rebinding), and every response
carries a Content-Security-Policy that runs only ``/static/`` scripts, so even markup that
got through unescaped could run nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Collection
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gg.web.assets import APP_CSS, APP_JS
from gg.web.live import FeedSlots, WorkspaceView, board_feed, run_feed
from gg.web.pages import board_page, not_found_page, run_page
from gg.web.runpage import RUN_CSS, RUN_JS
from gg.web.streams import RunFile, find_run, read_run

__all__ = ["CSP", "Guard", "create_app"]

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)
"""Only gg's own scripts run; nothing is loaded from elsewhere."""

_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
]

_STATIC = {
    "gg.css": (APP_CSS, "text/css"),
    "gg.js": (APP_JS, "text/javascript"),
    "run.css": (RUN_CSS, "text/css"),
    "run.js": (RUN_JS, "text/javascript"),
}


def host_name(header: str) -> str:
    """The host part of a ``Host`` header, lower case: ``[::1]:8000`` gives ``::1``."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1 : header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


class Guard:
    """ASGI middleware: GET/HEAD only, known ``Host`` only, security headers on all.

    Args:
        app: the app to guard.
        hosts: the host names a request may name (``None``: any, for a server the
            operator bound to a non-loopback address on purpose).
    """

    def __init__(self, app: ASGIApp, hosts: Collection[str] | None) -> None:
        self.app = app
        self.hosts = None if hosts is None else frozenset(h.lower() for h in hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Handle one ASGI connection: refuse it, or pass it on with the headers added."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self._refusal(scope)
        if refusal is not None:
            await refusal(scope, receive, self._with_headers(send))
            return
        await self.app(scope, receive, self._with_headers(send))

    def _refusal(self, scope: Scope) -> Response | None:
        if scope["method"] not in ("GET", "HEAD"):
            return PlainTextResponse("read-only: GET only", 405, headers={"Allow": "GET, HEAD"})
        if self.hosts is not None:
            raw = dict(scope["headers"]).get(b"host", b"").decode("latin-1")
            if host_name(raw) not in self.hosts:
                return PlainTextResponse("unknown Host header", 400)
        return None

    @staticmethod
    def _with_headers(send: Send) -> Send:
        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *_HEADERS]}
            await send(message)

        return sending


def _stream(feed: AsyncIterator[str]) -> StreamingResponse:
    return StreamingResponse(
        feed, media_type="text/event-stream", headers={"X-Accel-Buffering": "no"}
    )


def create_app(
    workspace: Path, *, hosts: Collection[str] | None = None, trust_config: bool = False
) -> ASGIApp:
    """The ASGI app of ``gg serve`` for ``workspace``, guarded by :class:`Guard`.

    Args:
        workspace: the workspace whose board and runs are shown (resolved here).
        hosts: the ``Host`` names accepted (``None``: any).
        trust_config: read a store a changed ``gg.toml`` newly names (the trust rule).

    Returns:
        The app (routes in the module doc).
    """
    ws = workspace.resolve()
    view = WorkspaceView(ws, trust_config=trust_config)

    slots = FeedSlots()

    async def board(request: Request) -> Response:
        return HTMLResponse(board_page(ws, await asyncio.to_thread(view.html)))

    async def fragment(request: Request) -> Response:
        return HTMLResponse(await asyncio.to_thread(view.html))

    async def run(request: Request) -> Response:
        found = find_run(ws, request.path_params["run_id"])
        if found is None:
            return HTMLResponse(not_found_page(ws, "no such run in this workspace"), 404)
        return HTMLResponse(await asyncio.to_thread(_run_html, ws, found))  # off the loop

    async def board_events(request: Request) -> Response:
        return _follow(slots, board_feed(view))

    async def run_events(request: Request) -> Response:
        found = find_run(ws, request.path_params["run_id"])
        if found is None:
            return PlainTextResponse("no such run", 404)
        return _follow(slots, run_feed(found, _after(request)))

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in _STATIC:
            return PlainTextResponse("not found", 404)
        text, media = _STATIC[name]
        return Response(text, media_type=media)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        view.close()

    routes = [
        Route("/", board),
        Route("/fragments/board", fragment),
        Route("/runs/{run_id}", run),
        Route("/events/board", board_events),
        Route("/events/runs/{run_id}", run_events),
        Route("/static/{name}", static),
    ]
    return Guard(Starlette(routes=routes, lifespan=lifespan), hosts)


def _run_html(ws: Path, found: RunFile) -> str:
    """A run's page, read and rendered (in a worker thread: a long stream holds up nothing)."""
    read = read_run(found)
    return run_page(ws, found.run_id, read.events, read.verdict, read.lines)


def _follow(slots: FeedSlots, feed: AsyncIterator[str]) -> Response:
    """``feed`` as server-sent events in a slot of ``slots``; 503, said plainly, when full."""
    if slots.take():
        return _stream(slots.held(feed))
    text = (
        f"gg serve already follows {slots.limit} live pages, its most: close some of the "
        "board or run pages open on it and reload this one"
    )
    return PlainTextResponse(text, 503, headers={"Retry-After": "5"})


def _after(request: Request) -> int:
    """The lines a run page already has: ``?after=N`` or a reconnect's ``Last-Event-ID``."""
    best = 0
    for raw in (request.query_params.get("after", ""), request.headers.get("last-event-id", "")):
        if raw.isdigit() and len(raw) < 12:
            best = max(best, int(raw))
    return best
