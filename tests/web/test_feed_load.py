"""Live feeds do their reading and rendering off the event loop, and are capped in number.

A run page following a long stream reads, checks and renders it in a worker thread,
a bounded chunk at a time: the server answers other requests while that feed catches
up. At most :data:`gg.web.live.MAX_FEEDS` feeds are open at once; one more is a 503
that says why, and a slot is free again once a page goes away.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
import urllib.parse
from pathlib import Path

from web_support import Served

import gg
from gg.stream import StreamWriter, parse_event
from gg.testing import ScriptedModel, call
from gg.web.live import MAX_FEEDS

EVENTS = 6000
"""Events of the long run: a few MB, under one read of the old whole-batch poll."""


def _long_run(workspace: Path) -> str:
    """A sealed run of :data:`EVENTS` turns, tool calls and results; its id."""
    workspace.mkdir(exist_ok=True)
    model = ScriptedModel([call("finish", summary="done")])
    seed = gg.Agent(model=model, workspace=workspace).run("do it")
    lines = [json.loads(line) for line in seed.stream.read_text().splitlines()]
    run_dir = seed.stream.parent.parent / f"{seed.run_id}-long"
    run_dir.mkdir(mode=0o700)
    writer = StreamWriter(run_dir / "stream.jsonl")

    def emit(obj: dict[str, object]) -> None:
        writer.emit(
            parse_event(json.dumps({k: v for k, v in obj.items() if k not in ("seq", "chain")}))
        )

    emit(lines[0])
    body = [o for o in lines[1:-1] if o["type"] in ("turn", "tool_call", "tool_result")]
    assert body, [o["type"] for o in lines]
    for n in range(EVENTS):
        emit(body[n % len(body)])
    emit(lines[-1])
    writer.close()
    return run_dir.name


def _connect(url: str) -> http.client.HTTPConnection:
    parts = urllib.parse.urlsplit(url)
    return http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=120)


def test_a_feed_catching_up_holds_no_other_request(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    run_id = _long_run(workspace)
    order: list[str] = []
    with Served(workspace) as served:
        feed = _connect(served.url)
        feed.request("GET", f"/events/runs/{run_id}?after=0")
        answer = feed.getresponse()
        assert answer.status == 200
        first = answer.read1(65536)
        assert b"event:" in first  # the feed has begun catching up

        def other() -> None:
            conn = _connect(served.url)
            conn.request("GET", "/static/gg.css")
            got = conn.getresponse()
            got.read()
            order.append(f"css {got.status}")

        asker = threading.Thread(target=other)
        asker.start()
        seen, tail = first.count(b"event: event"), first
        while b"event: end" not in tail:
            chunk = answer.read1(65536)
            assert chunk, "the feed closed before its end"
            seen += chunk.count(b"event: event")
            tail = tail[-64:] + chunk
        assert seen >= EVENTS  # it did catch up on the whole stream
        order.append("feed end")
        asker.join(60)
        feed.close()
    assert order == ["css 200", "feed end"], order


def test_live_feeds_are_capped_and_a_closed_one_frees_its_slot(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with Served(workspace) as served:
        open_feeds = []
        for _ in range(MAX_FEEDS):
            conn = _connect(served.url)
            conn.request("GET", "/events/board")
            got = conn.getresponse()
            assert got.status == 200
            assert b"event: board" in got.read1(65536)
            open_feeds.append(conn)
        conn = _connect(served.url)
        conn.request("GET", "/events/board")
        refused = conn.getresponse()
        assert refused.status == 503
        said = refused.read().decode()
        assert f"already follows {MAX_FEEDS} live pages" in said and "close some" in said
        conn.close()
        open_feeds.pop().close()
        deadline = time.monotonic() + 30
        while True:  # the server sees the page go away, then has a slot again
            conn = _connect(served.url)
            conn.request("GET", "/events/board")
            got = conn.getresponse()
            if got.status == 200:
                break
            got.read()
            conn.close()
            assert time.monotonic() < deadline, "the closed feed's slot was never given back"
            time.sleep(0.2)
        conn.close()
        for c in open_feeds:
            c.close()
