"""Browser tests: Playwright drives Debian's Chromium against the console on a real server.

Skipped with a reason when Playwright or Chromium is missing; under CI=true a missing one fails
the run instead, so CI can never pass by not running them. Chromium is launched by its path
(RECON_CHROMIUM, default /usr/bin/chromium): no browser is downloaded.

Screenshots of every page go to `--screenshots DIR` (or RECON_SCREENSHOTS), else to the test's
tmp_path, and the path is printed so a person can look at them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
#: Where Debian puts Chromium; RECON_CHROMIUM points elsewhere.
CHROMIUM = os.environ.get("RECON_CHROMIUM", "/usr/bin/chromium")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--screenshots", default=None, help="keep console screenshots in this folder")


def _unavailable(what: str, how: str) -> None:
    if IN_CI:
        pytest.fail(f"{what} is unavailable under CI=true: {how}", pytrace=False)
    pytest.skip(f"{what} unavailable: {how}")


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """A headless Chromium, shared by one module's tests.

    Not by the session: Playwright's sync API keeps an event loop running in this thread for as
    long as it is open, and tests that run later and call asyncio.run() would fail.
    """
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("Playwright", "install it into the venv (pip install playwright)")
        raise AssertionError("unreachable") from None
    if not Path(CHROMIUM).exists():
        _unavailable("Chromium", f"{CHROMIUM} is missing: apt-get install -y chromium")
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield browser
        browser.close()


@pytest.fixture
def screenshots(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    chosen = request.config.getoption("--screenshots", default=None) or os.environ.get(
        "RECON_SCREENSHOTS"
    )
    folder = Path(chosen) if chosen else tmp_path / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    print(f"\nconsole screenshots: {folder}")
    return folder
