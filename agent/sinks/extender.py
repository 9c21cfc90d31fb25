"""Push to the scheduler extender: ``POST {url}/telemetry`` with ``{"samples": [...]}``.

The body is pinned in ``docs/architecture.md`` (agent contract): each sample is
:meth:`TelemetrySample.to_json`; the extender answers 202 ``{"accepted": n}``, or 400 naming
the bad sample (then the batch is dropped and counted, never retried).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import httpx

from eams.agent.config import ExtenderSinkConfig
from eams.agent.sinks.http import post
from eams.telemetry import TelemetrySample

_JSON = {"content-type": "application/json"}


class ExtenderSink:
    """Push samples to the extender's ingest endpoint."""

    def __init__(self, name: str, config: ExtenderSinkConfig):
        self.name = name
        self._url = f"{config.url}/telemetry"
        self._client = httpx.Client(timeout=config.timeout_s)

    def encode(self, sample: TelemetrySample) -> str:
        """The sample as a compact JSON object."""
        return json.dumps(sample.to_json(), separators=(",", ":"))

    def write(self, batch: Sequence[str]) -> None:
        """POST ``{"samples": [...]}``; see :meth:`eams.agent.sinks.base.Sink.write`."""
        body = '{"samples":[' + ",".join(batch) + "]}"
        post(self._client, self.name, self._url, body.encode(), headers=_JSON)

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()
