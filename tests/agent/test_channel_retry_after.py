"""A server that asks to be left alone (503 + ``Retry-After``) is left alone that long.

No real server here can be made to answer 503 on cue, so a stdlib HTTP server on loopback
plays an overloaded InfluxDB v1 ``/write``: 503 ``Retry-After: 1`` twice, then 204.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from tests.agent.conftest import jsonl_samples, running_agent, wait_for, write_config


class Overloaded(BaseHTTPRequestHandler):
    calls: ClassVar[list[tuple[float, int, bytes]]] = []  # (monotonic s, status, body)

    def log_message(self, *_: object) -> None:  # no access log on stderr
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["content-length"]))
        status = 503 if len(self.calls) < 2 else 204
        self.calls.append((time.monotonic(), status, body))
        self.send_response(status)
        if status == 503:
            self.send_header("Retry-After", "1")
        self.send_header("content-length", "0")
        self.end_headers()


@pytest.fixture
def overloaded() -> Iterator[ThreadingHTTPServer]:
    Overloaded.calls = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Overloaded)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def test_retry_after_is_honoured_and_nothing_is_lost(
    tmp_path: Path, overloaded: ThreadingHTTPServer
) -> None:
    url = f"http://127.0.0.1:{overloaded.server_address[1]}"
    sink = {"type": "influx_v1", "url": url, "database": "eams", "max_backoff_s": 0.1}
    config = write_config(tmp_path, sinks=[sink, {"type": "jsonl", "path": "samples.jsonl"}])
    with running_agent(config):
        wait_for(lambda: len(Overloaded.calls) >= 4, "writes after the server recovered")
    times = [t for t, _, _ in Overloaded.calls]
    assert [s for _, s, _ in Overloaded.calls[:3]] == [503, 503, 204]
    assert times[1] - times[0] >= 0.95 and times[2] - times[1] >= 0.95  # not max_backoff_s
    delivered = [
        line
        for _, status, body in Overloaded.calls
        if status == 204
        for line in body.decode().splitlines()
    ]
    assert delivered == [s.to_line_protocol() for s in jsonl_samples(tmp_path / "samples.jsonl")]
