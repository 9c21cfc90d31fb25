"""InfluxDB 1.x (``influxd``, Debian ``influxdb``) on 127.0.0.1, for the v1 write/query path.

The temporary config points meta/data/wal at a temp dir, binds HTTP and the RPC (backup)
service to free loopback ports, disables usage reporting, the self-monitor store, continuous
queries and every other listener. Readiness: ``GET /ping`` answers 204.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import httpx

from tests.conftest import free_port
from tests.servers._process import ServerProcess

INFLUXD = shutil.which("influxd")

_CONFIG = """\
reporting-disabled = true
bind-address = "127.0.0.1:{rpc_port}"

[meta]
  dir = "{root}/meta"

[data]
  dir = "{root}/data"
  wal-dir = "{root}/wal"
  query-log-enabled = false

[http]
  enabled = true
  bind-address = "127.0.0.1:{port}"
  log-enabled = false

[monitor]
  store-enabled = false

[subscriber]
  enabled = false

[continuous_queries]
  enabled = false
"""


class InfluxDB(ServerProcess):
    """``influxd -config <temp>`` on a free loopback port; restartable on the same port.

    Parameters
    ----------
    root : Path
        Empty directory for config, data and the log (``influxd.log``).

    Attributes
    ----------
    url : str
        ``http://127.0.0.1:PORT``.
    """

    def __init__(self, root: Path):
        super().__init__()
        if INFLUXD is None:
            raise FileNotFoundError("influxd not installed (Debian package influxdb)")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = root / "influxdb.conf"
        config.write_text(_CONFIG.format(root=root, port=self.port, rpc_port=free_port()))
        self.argv = [INFLUXD, "-config", str(config)]
        self.ready_url = f"{self.url}/ping"
        self.log_path = root / "influxd.log"

    def query(self, influxql: str, database: str | None = None) -> list[dict[str, Any]]:
        """Run InfluxQL via ``POST /query`` (epoch=ns); returns the statement's series list.

        Raises
        ------
        RuntimeError
            The server answered with an error.
        """
        params = {"q": influxql, "epoch": "ns"}
        if database is not None:
            params["db"] = database
        answer = httpx.post(f"{self.url}/query", params=params, timeout=10).json()
        if "error" in answer:
            raise RuntimeError(f"InfluxQL {influxql!r}: {answer['error']}")
        result = answer["results"][0]
        if "error" in result:
            raise RuntimeError(f"InfluxQL {influxql!r}: {result['error']}")
        return result.get("series", [])

    def create_database(self, name: str) -> None:
        """``CREATE DATABASE name``."""
        self.query(f'CREATE DATABASE "{name}"')
