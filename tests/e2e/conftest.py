"""The browser the e2e tests share: Debian's chromium under playwright, one per test module."""

from __future__ import annotations

import pytest

from tests.e2e.browser import launch, missing


@pytest.fixture(scope="module")
def browser():
    reason = missing()
    if reason:
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = launch(playwright)
        yield browser
        browser.close()
