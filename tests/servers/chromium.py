"""Open a page in headless Chromium and read what a person would see, over the DevTools protocol.

Chromium (Debian's ``/usr/bin/chromium``) starts headless with ``--remote-debugging-port=0``
on loopback and writes the port it took to ``DevToolsActivePort`` in its profile; the test
connects to the page's DevTools WebSocket (websocket-client) and evaluates JavaScript in it:
``innerText`` is the text as rendered (CSS applied, hidden elements left out) and
``getComputedStyle`` the colours a reader sees. The browser is stopped on exit; its profile
lives in the folder the caller gives.

Usage::

    with Browser(tmp_path) as browser:
        page = browser.evaluate(html_path, "document.body.innerText")
"""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def require_chromium() -> str:
    """The Chromium binary; skips the test when it is not installed."""
    if CHROMIUM is None:
        pytest.skip("chromium is not installed")
    return CHROMIUM


class Browser:
    """One headless Chromium for the duration of a ``with`` block.

    Parameters
    ----------
    profile_dir : Path
        An empty folder for the browser's profile (deleted with it).
    timeout_s : float
        How long to wait for the browser to listen and a page to load.
    """

    def __init__(self, profile_dir: Path, timeout_s: float = 60.0) -> None:
        self.profile_dir = profile_dir
        self.timeout_s = timeout_s
        self.port: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._ids = itertools.count(1)

    def __enter__(self) -> Browser:
        binary = require_chromium()
        self._proc = subprocess.Popen(
            [
                binary,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--no-first-run",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
                f"--user-data-dir={self.profile_dir}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port_file = self.profile_dir / "DevToolsActivePort"  # "PORT\n/devtools/browser/ID"
        deadline = time.monotonic() + self.timeout_s
        while self.port is None and time.monotonic() < deadline and self._proc.poll() is None:
            lines = port_file.read_text().splitlines() if port_file.exists() else []
            if len(lines) >= 2:
                self.port = int(lines[0])
            time.sleep(0.05)
        if self.port is None:
            self.__exit__(None, None, None)
            raise AssertionError(f"chromium did not open its DevTools port ({port_file})")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()

    def evaluate(self, page: Path, expression: str) -> Any:
        """Open ``page`` in a new tab, wait until it has loaded, and return the value of the
        JavaScript ``expression`` evaluated in it (JSON-serialisable)."""
        import websocket  # websocket-client

        base = f"http://127.0.0.1:{self.port}"
        uri = page.resolve().as_uri()
        # the endpoint decodes its query once: "?" or "%3F" in a path would cut the file name
        target = httpx.put(f"{base}/json/new?{quote(uri, safe='')}", timeout=10).json()
        ws = websocket.create_connection(
            target["webSocketDebuggerUrl"], timeout=self.timeout_s, suppress_origin=True
        )
        try:
            deadline = time.monotonic() + self.timeout_s
            # a new tab is a loaded about:blank at first (href: percent-encoded as Chromium does)
            loaded = "location.protocol === 'file:' && document.readyState === 'complete'"
            while not self._call(ws, loaded):
                assert time.monotonic() < deadline, f"{page} did not finish loading"
                time.sleep(0.05)
            return self._call(ws, expression)
        finally:
            ws.close()
            httpx.get(f"{base}/json/close/{target['id']}", timeout=10)

    def _call(self, ws: Any, expression: str) -> Any:
        call_id = next(self._ids)
        ws.send(
            json.dumps(
                {
                    "id": call_id,
                    "method": "Runtime.evaluate",
                    "params": {"expression": expression, "returnByValue": True},
                }
            )
        )
        while True:
            message = json.loads(ws.recv())
            if message.get("id") == call_id:
                result = message["result"]
                assert "exceptionDetails" not in result, result
                return result["result"].get("value")
