"""A headless Chromium for the page tests: Debian's /usr/bin/chromium driven by Playwright.

The tests skip, saying what is missing, when either is absent (`make test` installs
both: the `browser` extra, and the chromium package where it runs as root).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Browser

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


# Package scope, not session: Playwright's sync API runs an event loop in this thread
# while it is open, and tests after these ones call asyncio.run().
@pytest.fixture(name="browser", scope="package")
def _browser() -> Iterator[Browser]:
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip(f"{CHROMIUM} is missing: install Debian's chromium package (make test does)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is missing: pip install -e '.[browser]' (make test does)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True
        )
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture(name="artifacts")
def _artifacts(tmp_path: Path) -> Path:
    """Where a test keeps what a person may want to look at afterwards (screenshots):
    test-artifacts/ in the checkout (ignored by git), else the test's tmp dir."""
    try:
        ARTIFACTS.mkdir(exist_ok=True)
    except OSError:
        return tmp_path
    return ARTIFACTS
