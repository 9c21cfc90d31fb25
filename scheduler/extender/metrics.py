"""Prometheus metrics of the extender, on a registry of its own (one per app instance).

Every name starts with ``eams_extender_``; the list with meanings is in this folder's
README.md (the dashboards are built from it).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from eams.calibrate.calfile import Calibration

# Seconds; dense below the 250 ms AR-2 budget, the window W = 200 ms sits in the middle.
LATENCY_BUCKETS_S = (
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.15,
    0.2,
    0.25,
    0.3,
    0.5,
    1.0,
    2.5,
)


class PriceCollector(Collector):
    """``eams_extender_node_price{node}``: the last clearing's price per node.

    A clearing prices every node at once (1,000s of them); setting a labelled gauge per node
    per window would cost more than the auction, so the arrays are kept and turned into samples
    only when Prometheus scrapes (client_python's custom-collector pattern).
    """

    def __init__(self) -> None:
        self._names: list[str] = []
        self._prices: Iterable[float] = ()

    def update(self, names: list[str], prices: Iterable[float]) -> None:
        """Replace the prices of ``names`` (the nodes of the last clearing; both are kept as
        given, not copied: the caller hands over a fresh list and array each clearing)."""
        self._names, self._prices = names, prices

    def collect(self) -> Iterator[GaugeMetricFamily]:
        """One gauge family, a sample per node of the last clearing."""
        family = GaugeMetricFamily(
            "eams_extender_node_price",
            "Clearing price of each node's slots after the last clearing (bid units).",
            labels=["node"],
        )
        for name, price in zip(self._names, self._prices, strict=True):
            family.add_metric([name], float(price))
        yield family


class ExtenderMetrics:
    """The extender's collectors, registered on :attr:`registry`."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.request_seconds = Histogram(
            "eams_extender_request_duration_seconds",
            "Time to answer a request, by path and HTTP status code.",
            ["path", "code"],
            buckets=LATENCY_BUCKETS_S,
            registry=r,
        )
        self.errors = Counter(
            "eams_extender_errors_total",
            "Requests answered with an error, by path and kind (bad_request, too_large, internal).",
            ["path", "kind"],
            registry=r,
        )
        self.clearings = Counter(
            "eams_extender_clearings_total", "Batch windows cleared by the auction.", registry=r
        )
        self.auction_rounds = Histogram(
            "eams_extender_auction_rounds",
            "Bidding rounds the ε-auction needed per clearing.",
            buckets=(1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 5000),
            registry=r,
        )
        self.batch_pods = Histogram(
            "eams_extender_batch_pods",
            "Pods per cleared batch.",
            buckets=(1, 2, 5, 10, 20, 50, 100, 200, 500),
            registry=r,
        )
        self.clearing_seconds = Histogram(
            "eams_extender_clearing_duration_seconds",
            "Wall time of one clearing (snapshot + auction), s.",
            buckets=LATENCY_BUCKETS_S,
            registry=r,
        )
        self.fallbacks = Counter(
            "eams_extender_fallbacks_total",
            "Pods or clearings that did not get the normal auction answer, by reason "
            "(no_row, greedy, budget, internal).",
            ["reason"],
            registry=r,
        )
        self.reservations_moved = Counter(
            "eams_extender_reservations_moved_total",
            "Herding reservations moved because kube-scheduler bound the pod to another node "
            "than its clearing's (ended when that node cannot be valued).",
            registry=r,
        )
        self.reclearings = Counter(
            "eams_extender_reclearings_total",
            "Pods cleared again when kube-scheduler asked for their scores: their cleared node "
            "was no longer among its candidates.",
            registry=r,
        )
        self.market_wakes = Counter(
            "eams_extender_market_wakes_total",
            "Market wakes by event: asked (a pod cleared onto an asleep node, held, its wake "
            "requested), failed (the wake did not come; cleared again), withdrawn (an awake "
            "node became the better price), released (its node woke and took it).",
            ["event"],
            registry=r,
        )
        self.wake_request_patches = Counter(
            "eams_extender_wake_request_patches_total",
            "Node patches writing a market wake request (eams.io/wake-request, --watch), by "
            "result: ok, not_found (the node is gone; dropped), error (sent again, 3 times at "
            "most).",
            ["result"],
            registry=r,
        )
        self.prices = PriceCollector()
        r.register(self.prices)
        self.filtered = Counter(
            "eams_extender_filtered_nodes_total",
            "Nodes /filter removed (or, in shadow mode, would have removed) for low headroom.",
            ["mode"],
            registry=r,
        )
        self.recoveries = Counter(
            "eams_extender_headroom_recoveries_total",
            "Tainted nodes whose taint came off: headroom back at floor + margin, or no fresh "
            "reading.",
            registry=r,
        )
        self.taints = Counter(
            "eams_extender_taint_patches_total",
            "Node patches of the headroom taint, by action (add, remove) and outcome (ok, "
            "conflict, error).",
            ["action", "outcome"],
            registry=r,
        )
        self.stepped_aside = Counter(
            "eams_extender_stepped_aside_total",
            "Requests answered 503 because the active extender was blind to the nodes (watch "
            "down, none known): kube-scheduler's fallback placed the pod.",
            ["path"],
            registry=r,
        )
        self.watch_up = Gauge(
            "eams_extender_watch_up",
            "1 while the watch of a resource is listed and streaming, 0 while it is down.",
            ["watch"],
            registry=r,
        )
        self.watch_failures = Counter(
            "eams_extender_watch_failures_total",
            "Failed lists or watches by watch and reason (expired, status code, transport).",
            ["watch", "reason"],
            registry=r,
        )
        self.telemetry_samples = Counter(
            "eams_extender_telemetry_samples_total",
            "Telemetry samples accepted on POST /telemetry.",
            registry=r,
        )
        self.telemetry_nodes = Gauge(
            "eams_extender_telemetry_nodes", "Nodes with at least one telemetry sample.", registry=r
        )
        self.calibrated_nodes = Gauge(
            "eams_extender_calibrated_nodes", "Nodes with a loaded calibration.", registry=r
        )
        self.p_idle = Gauge(
            "eams_extender_node_p_idle_watts",
            "Calibrated P_idle of each node (the fitted line at u = 0), W.",
            ["node"],
            registry=r,
        )
        self.p_max = Gauge(
            "eams_extender_node_p_max_watts",
            "Calibrated P_max of each node (the fitted line at u = 1), W.",
            ["node"],
            registry=r,
        )
        self.speed = Gauge(
            "eams_extender_node_speed_ratio",
            "Calibrated speed s_n of each node, relative to the reference node.",
            ["node"],
            registry=r,
        )
        self.ready = Gauge("eams_extender_ready", "1 when /readyz answers 200.", registry=r)
        self.recommendations = Counter(
            "eams_extender_recommendations_total",
            "Placements recommended, by mode (shadow records them, active serves them).",
            ["mode"],
            registry=r,
        )

    def record_calibrations(self, calibrations: Mapping[str, Calibration]) -> None:
        """Publish the loaded calibrations: their count, and P_idle, P_max (W) and speed per
        node (a node calibrated without a speed has no speed series)."""
        self.calibrated_nodes.set(len(calibrations))
        for node, calibration in calibrations.items():
            self.p_idle.labels(node).set(calibration.p_idle_w)
            self.p_max.labels(node).set(calibration.p_max_w)
            if calibration.speed is not None:
                self.speed.labels(node).set(calibration.speed)
