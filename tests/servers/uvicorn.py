"""Launch the EAMS extender (``eams extender serve``, i.e. uvicorn) on a free loopback port.

It runs ``python -m eams.scheduler.extender.cli`` — the same click command as
``eams extender serve`` without importing every other component (starts twice as fast).

The server is a real subprocess: tests and benchmarks talk to it over a socket exactly as
kube-scheduler would. Ready when ``GET /healthz`` answers; stopped with SIGTERM (uvicorn's
graceful shutdown), SIGKILL after 10 s.

Usage::

    with ExtenderServer(tmp_path / "extender.log", mode="active", calibrations_dir=cal) as srv:
        httpx.post(f"{srv.url}/filter", json=args)
"""

from __future__ import annotations

import socket
import sys
from pathlib import Path

from tests.servers._process import ServerProcess


def _free_tcp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ExtenderServer(ServerProcess):
    """``eams extender serve`` on 127.0.0.1 (a subprocess).

    Parameters
    ----------
    log_path : Path
        Where the server's stdout/stderr go.
    mode : {"shadow", "active"}
    calibrations_dir : Path, optional
    window_ms : float
        Batch window W, ms.
    port : int, optional
        A free port is picked when omitted.
    """

    def __init__(
        self,
        log_path: Path,
        *,
        mode: str = "active",
        calibrations_dir: Path | None = None,
        window_ms: float = 200.0,
        port: int | None = None,
    ) -> None:
        super().__init__()
        self.port = port or _free_tcp_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.ready_url = f"{self.url}/healthz"
        self.log_path = log_path
        self.argv = [sys.executable, "-m", "eams.scheduler.extender.cli", "--host", "127.0.0.1"]
        self.argv += ["--port", str(self.port), "--mode", mode, "--window-ms", str(window_ms)]
        self.argv += ["--log-level", "warning"]
        if calibrations_dir is not None:
            self.argv += ["--calibrations", str(calibrations_dir)]
