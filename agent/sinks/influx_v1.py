"""InfluxDB v1 write API: ``POST {url}/write?db=..&precision=ns`` with line protocol.

Served by InfluxDB 1.x and by the v1-compatibility endpoints of 2.x and 3.x (there, the
username is any string and the password an API token). Source: InfluxDB 1.8 HTTP API
reference, "/write"; the timestamp precision is always sent explicitly (``ns``).
"""

from __future__ import annotations

from collections.abc import Sequence

import httpx

from eams.agent.config import InfluxV1SinkConfig
from eams.agent.sinks.http import post
from eams.telemetry import TIMESTAMP_PRECISION, TelemetrySample


class InfluxV1Sink:
    """Write line protocol to an InfluxDB v1 ``/write`` endpoint (HTTP basic auth if given)."""

    def __init__(self, name: str, config: InfluxV1SinkConfig):
        self.name = name
        self._url = f"{config.url}/write"
        self._params = {"db": config.database, "precision": TIMESTAMP_PRECISION}
        if config.retention_policy:
            self._params["rp"] = config.retention_policy
        self._client = httpx.Client(auth=config.credentials(), timeout=config.timeout_s)

    def encode(self, sample: TelemetrySample) -> str:
        """The sample's line (:meth:`TelemetrySample.to_line_protocol`)."""
        return sample.to_line_protocol()

    def write(self, batch: Sequence[str]) -> None:
        """POST the lines; see :meth:`eams.agent.sinks.base.Sink.write`."""
        post(self._client, self.name, self._url, "\n".join(batch).encode(), params=self._params)

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()
