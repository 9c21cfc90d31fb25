"""The agent's Prometheus metrics, on its own registry and HTTP server (``/metrics``).

Names follow the Prometheus conventions (base units in the name, ``_total`` for counters,
https://prometheus.io/docs/practices/naming/); the list is also in ``agent/README.md``:

``eams_agent_node_power_watts{node,source}`` (gauge)
    Latest power (W); no series while it is unknown.
``eams_agent_node_headroom_ratio{node}`` (gauge)
    Latest h = 1 − P/P_cap; no series while unknown.
``eams_agent_node_utilisation_ratio{node}`` (gauge)
    Latest CPU utilisation 0–1 (own node only).
``eams_agent_sample_age_seconds{node}`` (gauge)
    Now minus the measured time of the node's latest sample, computed at scrape time.
``eams_agent_samples_total{node,source}`` (counter)
    Samples published; ``source="none"`` when power was unknown.
``eams_agent_queue_points{sink}`` (gauge)
    Records held in memory for the sink (submitted, neither acknowledged nor spooled): at most
    one batch beside the write in flight, plus what arrives during that write; a longer
    backlog goes to the spool (:mod:`eams.agent.channel`).
``eams_agent_spool_points{sink}``, ``eams_agent_spool_bytes{sink}`` (gauges)
    Records (and their bytes) waiting in the sink's spool.
``eams_agent_sink_points_written_total{sink}`` (counter)
    Records the sink acknowledged.
``eams_agent_sink_write_errors_total{sink}`` (counter)
    Failed write requests.
``eams_agent_dropped_points_total{sink,reason}`` (counter)
    Records lost: ``spool_full`` (the spool policy), ``disk_full`` (ENOSPC), ``spool_error``
    (another SQLite failure), ``rejected`` (the sink refused them, e.g. HTTP 400).
``eams_agent_clock_steps_back_total`` (counter)
    Wall-clock steps backwards detected against the monotonic clock.
``eams_agent_skipped_samples_total{reason}`` (counter)
    Ticks not published; ``reason="clock_back"``.
``eams_agent_meter_read_errors_total`` (counter)
    Failed PDU reads (PDU-owner node).
"""

from __future__ import annotations

import contextlib
import time
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server

from eams.agent.errors import AgentError
from eams.telemetry import PowerSource, TelemetrySample

#: Values of the ``reason`` label of ``eams_agent_dropped_points_total``.
DROP_REASONS = ("spool_full", "disk_full", "spool_error", "rejected")


class AgentMetrics:
    """Every metric of one agent, registered on a private :class:`CollectorRegistry`."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.power = Gauge(
            "eams_agent_node_power_watts", "Latest node power", ["node", "source"], registry=r
        )
        self.headroom = Gauge(
            "eams_agent_node_headroom_ratio", "Latest headroom 1 - P/P_cap", ["node"], registry=r
        )
        self.utilisation = Gauge(
            "eams_agent_node_utilisation_ratio", "Latest CPU utilisation", ["node"], registry=r
        )
        self.sample_age = Gauge(
            "eams_agent_sample_age_seconds",
            "Now minus the measured time of the latest sample",
            ["node"],
            registry=r,
        )
        self.samples = Counter(
            "eams_agent_samples", "Samples taken", ["node", "source"], registry=r
        )
        self.queue_points = Gauge(
            "eams_agent_queue_points", "Records held in memory for the sink", ["sink"], registry=r
        )
        self.spool_points = Gauge(
            "eams_agent_spool_points", "Records in the sink's spool", ["sink"], registry=r
        )
        self.spool_bytes = Gauge(
            "eams_agent_spool_bytes", "Record bytes in the sink's spool", ["sink"], registry=r
        )
        self.written = Counter(
            "eams_agent_sink_points_written",
            "Records acknowledged by the sink",
            ["sink"],
            registry=r,
        )
        self.write_errors = Counter(
            "eams_agent_sink_write_errors", "Failed sink write requests", ["sink"], registry=r
        )
        self.dropped = Counter(
            "eams_agent_dropped_points", "Records lost, by reason", ["sink", "reason"], registry=r
        )
        self.clock_steps_back = Counter(
            "eams_agent_clock_steps_back", "Wall-clock steps backwards", registry=r
        )
        self.skipped = Counter(
            "eams_agent_skipped_samples", "Ticks not published", ["reason"], registry=r
        )
        self.meter_errors = Counter("eams_agent_meter_read_errors", "Failed PDU reads", registry=r)
        self._latest_ns: dict[str, int] = {}
        self._server: WSGIServer | None = None

    def add_sink(self, sink: str) -> None:
        """Create the sink's series at 0, so dashboards and alerts see them before any event."""
        for series in (self.queue_points, self.written, self.write_errors):
            series.labels(sink)
        for reason in DROP_REASONS:
            self.dropped.labels(sink, reason)

    def observe(self, sample: TelemetrySample) -> None:
        """Set the per-node gauges from ``sample``; an unknown value removes its series."""
        node = sample.node
        for source in PowerSource:
            if source is not sample.source:
                _remove(self.power, node, source.value)
        if sample.power_w is not None and sample.source is not None:
            self.power.labels(node, sample.source.value).set(sample.power_w)
        _set_or_remove(self.headroom, node, sample.headroom)
        _set_or_remove(self.utilisation, node, sample.utilisation)
        self.samples.labels(node, sample.source.value if sample.source else "none").inc()
        if node not in self._latest_ns:
            self.sample_age.labels(node).set_function(lambda: self._age_s(node))
        self._latest_ns[node] = sample.measured_at_ns

    def _age_s(self, node: str) -> float:
        return (time.time_ns() - self._latest_ns[node]) / 1e9

    def serve(self, host: str, port: int) -> int:
        """Start the ``/metrics`` HTTP server in a thread; returns the bound port.

        Raises
        ------
        AgentError
            The address cannot be bound (in use, not local), naming ``host:port``.
        """
        try:
            self._server, _ = start_http_server(port, addr=host, registry=self.registry)
        except OSError as exc:
            raise AgentError(f"metrics: cannot listen on {host}:{port}: {exc.strerror}") from exc
        return int(self._server.server_port)

    def close(self) -> None:
        """Stop the HTTP server (idempotent)."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


def _remove(gauge: Gauge, *labels: str) -> None:
    with contextlib.suppress(KeyError):  # that series was never set
        gauge.remove(*labels)


def _set_or_remove(gauge: Gauge, node: str, value: float | None) -> None:
    if value is None:
        _remove(gauge, node)
    else:
        gauge.labels(node).set(value)
