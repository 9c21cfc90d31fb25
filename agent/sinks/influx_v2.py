"""InfluxDB v2 write API (``/api/v2/write``) through influxdb-client, precision ns.

Batching: the agent's sink channel sends up to ``batch_size`` records per request and this
sink writes each batch with influxdb-client's *synchronous* WriteApi, so a write returns only
when the server acknowledged it. influxdb-client's own batching WriteApi is not used because it
acknowledges in a background thread (``flush()`` is a no-op in 1.50) and gives up on points
after its retries: such points could no longer be put back into the spool. The client is closed
on exit. Also accepted by VictoriaMetrics (tests) and InfluxDB 3.x.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager

from influxdb_client import InfluxDBClient, WritePrecision
from influxdb_client.client.write_api import SYNCHRONOUS
from influxdb_client.rest import ApiException
from urllib3.exceptions import HTTPError

from eams.agent.config import InfluxV2SinkConfig
from eams.agent.errors import SinkError
from eams.agent.sinks.base import status_error
from eams.telemetry import TelemetrySample


class InfluxV2Sink:
    """Write line protocol with influxdb-client to ``bucket`` of ``org``."""

    def __init__(self, name: str, config: InfluxV2SinkConfig):
        self.name = name
        self._url = config.url
        self._bucket = config.bucket
        self._org = config.org
        self._client = InfluxDBClient(
            url=config.url,
            token=config.token_value(),
            org=config.org,
            timeout=int(config.timeout_s * 1000),
            retries=False,  # retries belong to the channel, which spools meanwhile
        )
        self._write_api = self._client.write_api(write_options=SYNCHRONOUS)

    def encode(self, sample: TelemetrySample) -> str:
        """The sample's line (:meth:`TelemetrySample.to_line_protocol`)."""
        return sample.to_line_protocol()

    def write(self, batch: Sequence[str]) -> None:
        """Write the lines with ``WritePrecision.NS``; see :meth:`.base.Sink.write`."""
        with self._translate():
            self._write_api.write(
                bucket=self._bucket,
                org=self._org,
                record="\n".join(batch),  # one string: no per-record work in the client
                write_precision=WritePrecision.NS,  # type: ignore[arg-type]  # a str constant
            )

    @contextmanager
    def _translate(self) -> Iterator[None]:
        try:
            yield
        except ApiException as exc:
            headers: Mapping[str, str] = exc.headers or {}
            raise status_error(
                self.name,
                self._url,
                exc.status or 0,
                str(exc.body or exc.reason),
                headers.get("Retry-After"),
            ) from exc
        except HTTPError as exc:
            raise SinkError(f"{self.name}: {self._url}: {exc!r}", retryable=True) from exc

    def close(self) -> None:
        """Close the write API and the client (idempotent)."""
        self._write_api.close()
        self._client.close()
