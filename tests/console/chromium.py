"""The console's browser tests drive Debian's chromium through Playwright: one place for the
binary, its headless flags, the persistent profile and a page that collects the page's own
errors (console errors and uncaught exceptions), so every test can assert the page stayed clean."""
from __future__ import annotations

import contextlib
import os

import pytest

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def require_chromium() -> None:
    """Called at a test module's import: without the browser its tests are skipped, loudly."""
    if not os.path.exists(CHROMIUM):
        pytest.skip("!!! /usr/bin/chromium ABSENT: browser tests NOT RUN (apt-get install -y chromium) !!!",
                    allow_module_level=True)


@contextlib.contextmanager
def chromium(profile_dir, extra_args=(), viewport=None):
    """A headless chromium (persistent context in ``profile_dir``), closed on the way out."""
    from playwright import sync_api

    with sync_api.sync_playwright() as pw:
        kw = {"viewport": viewport} if viewport else {}
        b = pw.chromium.launch_persistent_context(str(profile_dir), executable_path=CHROMIUM,
                                                  args=ARGS + list(extra_args), headless=True, **kw)
        try:
            yield b
        finally:
            b.close()


def new_page(browser):
    """A page and the list its console errors and uncaught exceptions are appended to."""
    pg = browser.new_page()
    errors: list[str] = []
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    pg.on("pageerror", lambda e: errors.append(str(e)))
    return pg, errors
