"""The system chromium under playwright, and a static server for a test page.

Shared by the browser tests and ``benchmarks/panel_latency.py``; playwright's own browser
downloads are never used.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"  # screenshots, kept out of git
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str | None:
    """Debian's chromium: /usr/bin/chromium, or whichever ``chromium`` is on PATH."""
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else shutil.which("chromium")


def missing() -> str | None:
    """What to install before a browser can run, or None when both parts are there."""
    if chromium_path() is None:
        return "chromium is not installed (apt-get install -y chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install playwright; the system chromium is used)"
    return None


def launch(playwright: Any) -> Any:
    return playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS, headless=True)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Requests for a missing favicon are not worth a line in the test output."""


@contextlib.contextmanager
def serve(root: Path) -> Iterator[str]:
    """Serve ``root`` on an ephemeral 127.0.0.1 port; yields the base URL."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(root)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()


class _CountingHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.server.hits.append(self.path)  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        """Each request is recorded in ``hits``; nothing to print."""


@contextlib.contextmanager
def counting_server() -> Iterator[tuple[str, list[str]]]:
    """A 127.0.0.1 server that answers anything and records each request path: (base URL, hits)."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _CountingHandler)
    httpd.hits = []  # type: ignore[attr-defined]
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", httpd.hits  # type: ignore[attr-defined]
    finally:
        httpd.shutdown()
