"""VictoriaMetrics (Debian ``victoria-metrics``) on 127.0.0.1: the influxdb-client v2 write path.

It accepts ``POST /api/v2/write`` line protocol (what influxdb-client's WriteApi sends) and
stores field ``f`` of measurement ``m`` as series ``m_f`` with the tags as labels; read back
with ``/api/v1/export`` (raw samples, millisecond timestamps). Readiness: ``GET /health``.
PromQL (MetricsQL) at ``/api/v1/query``; Prometheus text with timestamps imported at
``/api/v1/import/prometheus``. The ``victoriametrics`` fixture starts a fresh one per test
(imported by the conftest of each folder that uses it).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import free_port
from tests.servers._process import ServerProcess, fresh

VICTORIA_METRICS = shutil.which("victoria-metrics")


class VictoriaMetrics(ServerProcess):
    """``victoria-metrics`` with its data in ``root``, restartable on the same port.

    Attributes
    ----------
    url : str
        ``http://127.0.0.1:PORT``.
    """

    def __init__(self, root: Path):
        super().__init__()
        if VICTORIA_METRICS is None:
            raise FileNotFoundError("victoria-metrics not installed (Debian victoria-metrics)")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.argv = [
            VICTORIA_METRICS,
            f"-storageDataPath={root / 'data'}",
            f"-httpListenAddr=127.0.0.1:{self.port}",
            "-loggerLevel=WARN",
        ]
        self.ready_url = f"{self.url}/health"
        self.log_path = root / "victoria-metrics.log"

    def export(self, match: str) -> list[dict[str, Any]]:
        """``POST /api/v1/export`` with ``match[]=match``: one dict per series with
        ``metric`` (labels), ``values`` and ``timestamps`` (ms).

        Calls ``/internal/force_flush`` first: freshly written samples otherwise become
        searchable only after the in-memory buffers are flushed (seconds later).
        """
        httpx.get(f"{self.url}/internal/force_flush", timeout=10).raise_for_status()
        response = httpx.post(f"{self.url}/api/v1/export", data={"match[]": match}, timeout=10)
        response.raise_for_status()
        return [json.loads(line) for line in response.text.splitlines() if line]


@pytest.fixture
def victoriametrics(tmp_path: Path) -> Iterator[VictoriaMetrics]:
    """A fresh VictoriaMetrics; stopped after the test."""
    with fresh(VictoriaMetrics, tmp_path / "vm", VICTORIA_METRICS, "victoria-metrics") as server:
        yield server
