"""Small parts of gg.web on their own: the SSE framing, the Host check, the browser finder."""

from __future__ import annotations

from pathlib import Path

import pytest
from web_support import chromium

from gg.state import state_path
from gg.web.app import host_name
from gg.web.escape import h
from gg.web.live import REFRESH_BYTES, WorkspaceView, sse
from gg.web.streams import MAX_SUMMARY_BYTES


def test_no_payload_can_forge_an_sse_field() -> None:
    text = sse("event", "a\r\nevent: board\rdata: x\nid: 9\n\n", event_id=3)
    assert text.startswith("event: event\nid: 3\n")
    body = text.split("\n")[2:-2]
    assert all(line.startswith("data: ") for line in body), body
    assert text.endswith("\n\n") and text.count("\n\n") == 1


def test_escaping_covers_attributes_controls_and_secrets() -> None:
    assert (
        h("<a href=\"x\" onclick='y'>&")
        == "&lt;a href=&quot;x&quot; onclick=&#x27;y&#x27;&gt;&amp;"
    )
    assert h("\x1b[31mred\u202e") == "\\x1b[31mred\\u202e"
    assert "sk-ant-" not in h("key sk-ant-api03-" + "A" * 40)
    assert h("x" * 1000, 100).startswith("x" * 50) and len(h("x" * 1000, 100)) <= 100


@pytest.mark.parametrize(
    ("header", "name"),
    [("127.0.0.1:8000", "127.0.0.1"), ("[::1]:80", "::1"), ("LocalHost", "localhost"), ("", "")],
)
def test_the_host_header_is_read_as_a_name(header: str, name: str) -> None:
    assert host_name(header) == name


def test_a_missing_chromium_fails_the_browser_tests_never_skips(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(pytest.fail.Exception, match="scripts/setup"):
        chromium()


def test_the_board_page_reads_a_bounded_amount_of_all_streams_per_look(
    workspace: Path,
) -> None:
    runs = state_path(workspace) / "runs"
    for n in range(3):  # three runs of 6 MiB each: more than one look may read
        run = runs / f"run-{n}"
        run.mkdir(parents=True)
        line = b'{"type":"turn","at":"2026-12-01T00:00:00.000Z"}\n'
        (run / "stream.jsonl").write_bytes(line * (6 * 1024 * 1024 // len(line)))
    view = WorkspaceView(workspace)
    view.refresh()
    read = sum(s.tail.offset for s in view._runs.values())
    assert REFRESH_BYTES - len(line) <= read <= REFRESH_BYTES
    assert not any(s.tail.cut for s in view._runs.values())
    for _ in range(10):
        view._looked = 0.0
        view.refresh()
    assert all(s.tail.offset == s.tail.size() for s in view._runs.values())
    assert "run-0" in view.html() and "(cut)" not in view.html()


def test_a_stream_longer_than_the_list_reads_is_marked_cut(workspace: Path) -> None:
    run = state_path(workspace) / "runs" / "huge"
    run.mkdir(parents=True)
    line = b'{"type":"turn","at":"2026-12-01T00:00:00.000Z"}\n'
    first = b'{"type":"run_started","run_id":"huge","settings":{},"isolation":"x"}\n'
    (run / "stream.jsonl").write_bytes(first + line * (9 * 1024 * 1024 // len(line)))
    view = WorkspaceView(workspace)
    for _ in range(5):
        view._looked = 0.0
        view.refresh()
    (summary,) = view._runs.values()
    assert summary.tail.cut and summary.tail.offset == MAX_SUMMARY_BYTES
    assert "(cut)" in view.html()
    assert summary.seal == "unkeyed" and "8 MiB" in summary.verdict
