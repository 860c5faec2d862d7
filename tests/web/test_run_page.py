"""A run's page in a real headless Chromium (issue 15, Must show).

A scripted session produces a superseded declaration, a blocked gate, a revoked ending,
a tool output carrying HTML and script, and a ceiling's diagnosis; the page must show
each, and the hostile text as text. Then a board run in another process: its run page
follows the stream without a reload, each event on the page within a second.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from board_support import make_repo
from playwright.sync_api import Page
from web_board_driver import HOSTILE
from web_support import Served, StreamWatch, artefacts, run_board

import gg
from gg.stream import read_events
from gg.testing import ScriptedModel, call
from support import ended_output

HOOK = "test -f fixed.txt || { echo 'tests fail: fixed.txt missing' >&2; exit 2; }"


def _finish(summary: str) -> gg.ToolCall:
    return gg.ToolCall(name="finish", arguments={"summary": summary})


def _scripted_run(workspace: Path) -> gg.RunResult:
    workspace.mkdir()
    (workspace / "hostile.txt").write_text(f"tool output {HOSTILE}\n")
    replies = [
        gg.Reply(tool_calls=(_finish("first"), _finish(f"second {HOSTILE}"))),
        gg.Reply(
            tool_calls=(
                _finish("done"),
                gg.ToolCall(name="read_file", arguments={"path": "missing.txt"}),
            )
        ),
        call("read_file", path="hostile.txt"),
        call("read_file", path="hostile.txt"),
    ]
    agent = gg.Agent(
        model=ScriptedModel(replies),
        workspace=workspace,
        hooks=[gg.CommandHook(command=HOOK, timeout_s=30)],
        ceilings={"max_turns": 3},
    )
    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API holds this thread's loop
        return pool.submit(agent.run, "Fix it.").result()


def test_a_run_page_shows_revoked_superseded_blocked_and_the_diagnosis(
    page: Page, tmp_path: Path
) -> None:
    result = _scripted_run(tmp_path / "ws")
    assert result.status == "stopped" and result.diagnosis
    events = list(read_events(result.stream))
    kinds = {e.type for e in events}
    assert {"ending_superseded", "gate_blocked", "ending_revoked", "ceiling_tripped"} <= kinds
    with Served(tmp_path / "ws") as served:
        page.goto(f"{served.url}runs/{result.run_id}")
        run = page.locator(".gg-run")
        assert run.locator(".ev.superseded").count() == 1
        assert "1" in (run.locator(".ev.superseded").text_content() or "")
        assert run.locator(".ev.revoked").count() == 1
        blocked = run.locator(".ev.gate-blocked")
        assert blocked.count() == 1 and "fixed.txt missing" in (blocked.text_content() or "")
        ceiling = next(e for e in events if isinstance(e, gg.stream.CeilingTripped))
        shown = run.locator(".ev.ceiling .diagnosis").text_content() or ""
        assert ceiling.diagnosis.split("\n")[0][:60] in shown
        assert "stream intact" in (run.locator(".run-head .verdict").text_content() or "")
        text = run.text_content() or ""
        assert f"second {HOSTILE}" in text, "the hostile summary is shown as text"
        assert f"tool output {HOSTILE}" in text, "the hostile tool output is shown as text"
        assert page.evaluate("window.__pwned") is None, "hostile markup ran"
        assert page.locator("main img, main script").count() == 0
        page.screenshot(path=str(artefacts() / "run.png"), full_page=True)


RECORDER = """() => {
  window.__loaded = 1;
  window.__seen = {};
  document.addEventListener("gg:event", function () {
    window.__seen[document.body.getAttribute("data-last-line")] = Date.now();
  });
}"""


def test_a_run_page_follows_a_board_run_in_another_process_within_a_second(
    page: Page, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path / "repo")
    watch = StreamWatch(repo)
    watch.start()
    with Served(repo) as served:
        proc = run_board(repo, delay=0.3)
        deadline = time.monotonic() + 60
        while watch.stream is None or not watch.written:
            assert time.monotonic() < deadline and proc.poll() is None, ended_output(proc)
            time.sleep(0.02)
        page.goto(f"{served.url}runs/{watch.stream.parent.name}")
        page.evaluate(RECORDER)
        after = int((page.get_attribute("body", "data-live") or "").rsplit("=", 1)[1])
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 1, (out, err)
        page.wait_for_function("() => document.getElementById('live').textContent === 'run over'")
        watch.done.set()
        watch.join()
        seen = page.evaluate("window.__seen")
        assert page.evaluate("window.__loaded") == 1, "the page was reloaded"
        lines = watch.stream.read_bytes().splitlines()
        live = [n for n in range(after + 1, len(lines) + 1) if b'"checkpoint"' not in lines[n - 1]]
        assert len(live) > 20
        late = {
            n: round(seen[str(n)] / 1000 - watch.written[n], 3) if str(n) in seen else None
            for n in live
            if str(n) not in seen or seen[str(n)] / 1000 - watch.written[n] >= 1.0
        }
        assert not late, f"events not on the page within 1 s (seconds late, None: never): {late}"
        shown = page.locator(".gg-run .ev:not(.checkpoint)").count()
        assert shown == sum(1 for line in lines if b'"type":"checkpoint"' not in line)
        # the header, the session tree and the charts followed too (event: summary)
        sessions = len({json.loads(line).get("session_id") for line in lines} - {None})
        assert page.locator(".gg-run > section.sessions .card").count() == sessions == 8
        assert page.locator(".gg-run > section.charts .session-chart").count() == sessions
        assert "stopped (exit 1)" in (page.locator(".gg-run > .run-head").text_content() or "")
