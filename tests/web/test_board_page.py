"""The board page in a real headless Chromium (issue 15, Must show).

A scripted board runs for real in another process (:mod:`web_board_driver`); ``gg serve``
runs for real in a third; the page is driven by Playwright on the system's Chromium.
"""

from __future__ import annotations

import time
from pathlib import Path

from board_support import make_repo
from playwright.sync_api import Page
from web_board_driver import HOSTILE_SUMMARY, HOSTILE_TITLE, ITEM
from web_support import Served, StreamWatch, artefacts, run_board

from gg.board import Board

# a function, not an expression: Playwright evaluates an expression with eval, which the
# page's Content-Security-Policy forbids (as it should)
LIVE = "() => document.getElementById('live').textContent === 'live'"
RECORDER = """() => {
  window.__loaded = 1;
  window.__seen = {};
  function look() {
    var row = document.querySelector("tr[data-run]");
    if (!row) { return; }
    var n = Number(row.getAttribute("data-events")), now = Date.now();
    for (var i = 1; i <= n; i++) { if (!(i in window.__seen)) { window.__seen[i] = now; } }
  }
  document.addEventListener("gg:board", look);
  look();
}"""


def _numbers(page: Page, state: str) -> list[int]:
    cards = page.locator(f'.column[data-state="{state}"] article.card')
    return sorted(int(n) for n in cards.evaluate_all("els => els.map(e => e.dataset.issue)"))


def _finished_board(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "repo")
    proc = run_board(repo)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 1, (out, err)  # #3 is stuck
    return repo


def test_a_finished_board_shows_its_columns_verdicts_and_merges(page: Page, tmp_path: Path) -> None:
    repo = _finished_board(tmp_path)
    with Board(repo) as board:
        states = {i.number: i.state.value for i in board.list()}
    assert states == {1: "done", 2: "done", 3: "stuck"}
    with Served(repo) as served:
        page.goto(served.url)
        for state in ("open", "implementing", "reviewing", "merging", "done", "stuck"):
            assert _numbers(page, state) == sorted(n for n, s in states.items() if s == state)
        first = page.locator('article[data-issue="1"]')
        verdicts = first.locator(".verdict").evaluate_all("els => els.map(e => e.dataset.verdict)")
        assert verdicts == ["request_changes", "approve"]
        assert first.locator(".verdict .items li").text_content() == ITEM
        assert (first.locator(".result.merged").text_content() or "").startswith("merged ")
        stuck = page.locator('article[data-issue="3"] .result.diag').text_content() or ""
        assert stuck.strip(), "a stuck issue shows its diagnosis"
        second = page.locator('article[data-issue="2"]')
        assert second.locator(".title").text_content() == HOSTILE_TITLE
        assert second.locator(".summary").text_content() == HOSTILE_SUMMARY
        assert page.evaluate("window.__pwned") is None, "hostile markup ran"
        assert page.locator("main img, main script").count() == 0
        row = page.locator("tr[data-run]")
        assert row.count() == 1 and row.get_attribute("data-state") == "stopped"
        assert row.get_attribute("data-seal") == "intact"
        assert (row.locator(".seal").get_attribute("title") or "").startswith("stream intact")
        page.screenshot(path=str(artefacts() / "board.png"), full_page=True)


def test_the_board_page_follows_a_board_run_in_another_process_within_a_second(
    page: Page, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path / "repo")
    with Served(repo) as served:
        page.goto(served.url)
        page.wait_for_function(LIVE)
        page.evaluate(RECORDER)
        watch = StreamWatch(repo)
        watch.start()
        proc = run_board(repo, delay=0.25)
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 1, (out, err)
        time.sleep(1.5)
        watch.done.set()
        watch.join()
        seen = page.evaluate("window.__seen")
        assert page.evaluate("window.__loaded") == 1, "the page was reloaded"
        assert len(watch.written) > 50
        late = {
            n: round(seen[str(n)] / 1000 - t, 3) if str(n) in seen else None
            for n, t in watch.written.items()
            if str(n) not in seen or seen[str(n)] / 1000 - t >= 1.0
        }
        assert not late, f"events not on the page within 1 s (seconds late, None: never): {late}"
        assert _numbers(page, "done") == [1, 2] and _numbers(page, "stuck") == [3]
