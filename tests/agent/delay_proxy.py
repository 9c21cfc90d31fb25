"""A small delaying HTTP proxy in front of a real server: each request is forwarded after
``delay_s`` (a slow sink), and every line of a write the upstream acknowledged is recorded.

The agent's influx_v1 sink talks to it exactly as to influxd (``POST /write``, keep-alive);
the record of acknowledged lines shows whether any point was delivered twice (InfluxDB itself
cannot: a re-sent point overwrites its twin).
"""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

#: Request headers passed on to the upstream server.
_FORWARDED = ("content-type", "authorization", "content-encoding")


class DelayProxy:
    """Forward every request to ``upstream_url`` after :attr:`delay_s` seconds.

    Parameters
    ----------
    upstream_url : str
        The real server (``http://127.0.0.1:PORT``).
    delay_s : float
        Wait before each request is forwarded (s); may be changed while running.

    Attributes
    ----------
    url : str
        Where the proxy listens (a free loopback port).
    acknowledged_lines : list of str
        Lines of every ``/write`` body the upstream answered with 2xx, in order.
    """

    def __init__(self, upstream_url: str, delay_s: float):
        self.delay_s = delay_s
        self.acknowledged_lines: list[str] = []
        self._lock = threading.Lock()
        self._upstream = httpx.Client(base_url=upstream_url, timeout=10)
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as influxd

            def do_GET(self) -> None:
                self._forward()

            def do_POST(self) -> None:
                self._forward()

            def _forward(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                time.sleep(proxy.delay_s)
                headers = {k: v for k, v in self.headers.items() if k.lower() in _FORWARDED}
                answer = proxy._upstream.request(
                    self.command, self.path, content=body, headers=headers
                )
                if answer.is_success and self.path.startswith("/write"):
                    with proxy._lock:
                        proxy.acknowledged_lines.extend(body.decode().splitlines())
                self.send_response(answer.status_code)
                self.send_header("content-length", str(len(answer.content)))
                for name in ("content-type", "retry-after"):
                    if name in answer.headers:
                        self.send_header(name, answer.headers[name])
                self.end_headers()
                self.wfile.write(answer.content)

            def log_message(self, format: str, *args: object) -> None:
                pass  # quiet

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> DelayProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._upstream.close()
