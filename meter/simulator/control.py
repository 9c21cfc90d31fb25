"""A tiny loopback HTTP endpoint to drive a running simulator (``eams meter simulate``).

- ``GET  /outlets``              → 200, JSON list of every outlet's ground truth (W, A, Wh,
  outlet state, node power state, MAC).
- ``PUT  /outlets/{n}/load``     body ``{"utilisation": 0.5}`` → 200 with outlet n's new state.
- ``PUT  /outlets/{n}/node``     body ``{"action": "suspend"}`` or ``{"action": "soft_off"}``:
  the node's OS suspends to RAM or powers off (as ``systemctl suspend`` / ``poweroff``) → 200;
  409 when the node is not running.

400 on a bad body, 404 on an unknown outlet or path, each with ``{"error": ...}``. Outlets are
switched over SNMP and nodes woken by Wake-on-LAN, as on the real hardware, not here.
Example: ``curl -X PUT -d '{"utilisation": 0.8}' http://127.0.0.1:PORT/outlets/2/load``.
Built on the standard library's ``http.server`` (one request per thread).
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import asdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import cast

from eams.meter.simulator.agent import PduSimulator
from eams.meter.simulator.errors import SimulatorError

_PATH = re.compile(r"^/outlets/(\d+)/(load|node)/?$")
MAX_BODY_BYTES = 4096
NODE_ACTIONS = ("suspend", "soft_off")


def outlets_json(sim: PduSimulator) -> list[dict]:
    """Every outlet's ground truth: ``outlet`` (1-based), :class:`OutletState` fields, ``mac``."""
    return [
        {"outlet": n, **asdict(sim.state(n)), "mac": sim.mac(n)}
        for n in range(1, sim.outlet_count + 1)
    ]


def _utilisation(body: dict) -> float:
    utilisation = body["utilisation"]
    if isinstance(utilisation, bool) or not isinstance(utilisation, int | float):
        raise ValueError(f"utilisation {utilisation!r} is not a number")
    if not 0 <= utilisation <= 1:
        raise ValueError(f"utilisation {utilisation} is outside [0, 1]")
    return float(utilisation)


def _node_action(body: dict) -> str:
    action = body["action"]
    if action not in NODE_ACTIONS:
        raise ValueError(f"action {action!r} is not one of {', '.join(NODE_ACTIONS)}")
    return str(action)


class ControlServer:
    """Serve the load-control endpoint of ``sim`` on ``host:port`` (0 = a free port).

    Use as a context manager, or call :meth:`start` / :meth:`stop`.

    Raises
    ------
    SimulatorError
        If the TCP port cannot be bound.
    """

    def __init__(self, sim: PduSimulator, host: str = "127.0.0.1", port: int = 0) -> None:
        handler = type("_Handler", (_Handler,), {"sim": sim})
        try:
            self._server = ThreadingHTTPServer((host, port), handler)
        except OSError as exc:
            raise SimulatorError(
                f"cannot bind the control endpoint on TCP {host}:{port}: {exc.strerror or exc}"
            ) from exc
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """``http://HOST:PORT``."""
        host, port = self._server.server_address[:2]
        # typeshed types the host as str | bytes | bytearray (any address family); an AF_INET
        # HTTP server's is the str from getsockname()
        return f"http://{cast(str, host)}:{port}"

    def start(self) -> ControlServer:
        """Start serving on a private thread; returns ``self``."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join()
        self._server.server_close()

    def __enter__(self) -> ControlServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class _Handler(BaseHTTPRequestHandler):
    sim: PduSimulator

    def log_message(self, format: str, *args: object) -> None:  # quiet: no access log
        return

    def _send(self, status: int, payload: object) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/outlets":
            self._send(200, outlets_json(self.sim))
        else:
            self._send(404, {"error": f"no resource {self.path}"})

    def do_PUT(self) -> None:
        match = _PATH.match(self.path)
        if match is None:
            self._send(404, {"error": f"no resource {self.path}; use /outlets/N/load or /node"})
            return
        outlet, what = int(match.group(1)), match.group(2)
        length = int(self.headers.get("Content-Length") or 0)
        expected = '{"utilisation": 0..1}' if what == "load" else '{"action": "suspend"|"soft_off"}'
        try:
            if not 0 < length <= MAX_BODY_BYTES:
                raise ValueError(f"body of {length} bytes")
            body = json.loads(self.rfile.read(length))
            if not isinstance(body, dict):
                raise ValueError(f"{body!r} is not an object")
            value = _utilisation(body) if what == "load" else _node_action(body)
        except (ValueError, KeyError, TypeError) as exc:
            self._send(400, {"error": f"expected {expected}: {exc}"})
            return
        try:
            self.sim.state(outlet)  # 404 for an unknown outlet, before any change
        except SimulatorError as exc:
            self._send(404, {"error": str(exc)})
            return
        try:
            if what == "load":
                self.sim.set_load(outlet, float(value))
            elif value == "suspend":
                self.sim.suspend(outlet)
            else:
                self.sim.soft_off(outlet)
        except SimulatorError as exc:  # the node is not running
            self._send(409, {"error": str(exc)})
            return
        self._send(200, {"outlet": outlet, **asdict(self.sim.state(outlet))})
