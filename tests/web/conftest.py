"""Fixtures for the browser tests: one headless system Chromium driven by Playwright."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright
from web_support import chromium

# The board tests' helpers (make_repo, the scripted replies' files) are shared: tests/board
# is a rootdir of its own, put on the path here for this directory's tests and driver.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "board"))


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """The system's Chromium, headless (never a browser Playwright downloads)."""
    path = chromium()
    with sync_playwright() as play:
        found = play.chromium.launch(
            executable_path=path, headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            yield found
        finally:
            found.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A fresh page (its own context), 1400x900, closed after the test."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    try:
        yield context.new_page()
    finally:
        context.close()
