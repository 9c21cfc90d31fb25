"""The extender's behaviour behind the HTTP routes: filter, prioritize, telemetry, pod feed.

``app.py`` only moves bytes; everything kube-scheduler or an agent can observe is decided here.

Filter (reference §2.2, §2.3; issue 6): the built-in predicates already ran (AR-4), so the only
nodes removed are those whose fresh, discounted, herding-adjusted headroom is below the hard
floor, each listed in ``FailedNodes`` with one stable reason (short, no per-node detail, so
kube-scheduler's "0/N nodes are available" message aggregates them — pitfall P11). A node
without fresh telemetry is never removed: scores rank it down instead (prefer scoring to
filtering). The answer fills exactly the fields the request filled (``NodeNames`` and/or
``Nodes`` with the received objects unchanged), so a ``null`` never rejects every node
(pitfall P2).

Recovery (kubernetes issue 122019, pitfall P6): a pod rejected by an extender is requeued only
by a cluster event, and telemetry is none. When a node this extender filtered recovers to
floor + margin, :attr:`Extender.on_recovery` is called with its name; in a cluster ``watch.py``
turns that into a node annotation patch, which is a Node update event that requeues the pod.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np
from pydantic import ValidationError
from pydantic_core import from_json

from eams.calibrate.calfile import Calibration
from eams.scheduler.auction import AuctionParams
from eams.scheduler.extender.batching import Batcher
from eams.scheduler.extender.errors import BadRequest
from eams.scheduler.extender.herding import HerdGuard
from eams.scheduler.extender.market import Cleared, Market, PendingPod, pending_pod
from eams.scheduler.extender.metrics import ExtenderMetrics
from eams.scheduler.extender.nodes import NodeCache
from eams.scheduler.extender.requests import pod_request
from eams.scheduler.extender.schemas import (
    ExtenderArgs,
    ExtenderFilterResult,
    NodeList,
    PodObject,
)
from eams.scheduler.extender.settings import Settings
from eams.scheduler.extender.table import NodeTable
from eams.scheduler.extender.telemetry import TelemetryStore
from eams.telemetry import TelemetrySample
from eams.validation import describe_validation_error

log = logging.getLogger(__name__)

FILTER_REASON = "eams: node power headroom below floor"


def parse_args(body: bytes) -> ExtenderArgs:
    """Decode an ``ExtenderArgs`` body strictly where a wrong answer would hurt.

    Raises
    ------
    BadRequest
        Malformed JSON, a wrong type (naming the key path), a missing or null ``Pod``, or both
        ``Nodes`` and ``NodeNames`` null.
    """
    try:
        data = from_json(body)
    except ValueError as exc:
        raise BadRequest(f"body: malformed JSON ({exc})") from None
    if not isinstance(data, dict):
        raise BadRequest(f"body: must be a JSON object (ExtenderArgs), got {type(data).__name__}")
    try:
        args = ExtenderArgs.model_validate(data)
    except ValidationError as exc:
        raise BadRequest(describe_validation_error(exc, top="body")) from None
    if args.Pod is None:
        raise BadRequest("Pod: missing or null; kube-scheduler always sends the pod")
    if args.Nodes is None and args.NodeNames is None:
        raise BadRequest("Nodes, NodeNames: both null; one must list the candidate nodes")
    if args.Nodes is not None and args.Nodes.items is None:
        raise BadRequest("Nodes.items: must be a list of node objects")
    return args


class Extender:
    """State and decisions of one extender instance.

    Parameters
    ----------
    settings : Settings
    calibrations : dict of str to Calibration
        Node name → calibration (see ``calibrations.load_calibrations``).
    metrics : ExtenderMetrics
    clock : callable
        Epoch seconds (``time.time``); telemetry ages and table ages use it.
    params : AuctionParams, optional
        Engine parameters (defaults of ``AuctionParams``).
    """

    def __init__(
        self,
        settings: Settings,
        calibrations: dict[str, Calibration],
        metrics: ExtenderMetrics,
        clock: Callable[[], float] = time.time,
        params: AuctionParams | None = None,
    ) -> None:
        self.settings = settings
        self.metrics = metrics
        self.clock = clock
        self.table = NodeTable()
        self.nodes = NodeCache(self.table)
        self.telemetry = TelemetryStore(settings.stale_after_s, clock)
        self.herd = HerdGuard(settings.herd_settle_s, settings.herd_ttl_s)
        for calibration in calibrations.values():
            self.table.set_calibration(calibration)
        self.calibrated = len(calibrations)
        self.market = Market(
            self.table, self.herd, params or settings.auction_params(), settings.default_runtime_s
        )
        self.batcher = (
            Batcher(settings.window_ms / 1000.0, settings.clearing_ttl_s, self._clear, clock)
            if settings.window_ms > 0
            else None
        )
        self.recommendations: deque[dict[str, Any]] = deque(maxlen=settings.recommendations_kept)
        self.on_recovery: Callable[[str], None] | None = None
        self._filtered: set[str] = set()
        metrics.record_calibrations(calibrations)

    @property
    def active(self) -> bool:
        """Whether answers carry the auction's opinion (``mode == "active"``)."""
        return self.settings.mode == "active"

    # ---- readiness -------------------------------------------------------------------------

    def readiness(self) -> list[str]:
        """What is still missing before the extender can serve; empty when ready."""
        missing = []
        if not self.calibrated:
            missing.append("no calibration loaded (eams extender serve --calibrations DIR)")
        if len(self.telemetry) == 0:
            missing.append("no telemetry received yet (agents POST /telemetry)")
        self.metrics.ready.set(0 if missing else 1)
        return missing

    # ---- telemetry ---------------------------------------------------------------------------

    def ingest(self, samples: list[TelemetrySample]) -> int:
        """Store samples, end the herding reservations they reflect, announce recoveries."""
        stored = self.telemetry.ingest(samples)
        for sample in stored:
            self.table.set_sample(sample)
            self.herd.reflect(sample.node, sample.measured_at_ns / 1e9)
        watched = sorted({s.node for s in stored} & self._filtered)
        if watched:
            self._announce_recovered(watched, self.market.view(watched, self.clock()))
        self.metrics.telemetry_samples.inc(len(samples))
        self.metrics.telemetry_nodes.set(len(self.telemetry))
        return len(samples)

    def _announce_recovered(self, names: list[str], view: dict[str, np.ndarray]) -> None:
        """Announce each of ``names`` (filtered earlier) that ``/filter`` would now pass with
        the recovery margin: fresh headroom ≥ floor + margin, or no fresh telemetry at all (a
        node without a fresh reading is never filtered). ``view`` is ``market.view(names)``."""
        low = view["fresh_headroom"] < self.settings.headroom_floor + self.settings.recovery_margin
        for node, still_low in zip(names, low, strict=True):
            if still_low or node not in self._filtered:
                continue
            self._filtered.discard(node)
            self.metrics.recoveries.inc()
            log.info("node %s recovered its power headroom", node)
            if self.on_recovery is not None:
                self.on_recovery(node)

    # ---- pod and node feed (watch.py and POST /pending, POST /nodes) ------------------------

    def observe_nodes(self, items: list[Any], field: str = "items") -> int:
        """Learn node objects; returns how many."""
        return len(self.nodes.learn(items, field))

    def observe_pod(self, pod: PodObject, field: str = "Pod", deleted: bool = False) -> None:
        """Track one pod: bound pods use capacity, pending ones of this scheduler join a window;
        a deleted or finished (Succeeded/Failed) pod is forgotten.

        Raises
        ------
        BadRequest
            A quantity of the pod breaks the grammar (names ``field``).
        """
        key = pod.key()
        if deleted or pod.finished:
            self.nodes.unplace(key)
            if self.batcher is not None:
                self.batcher.forget(key)
            return
        if pod.spec.nodeName:
            self.nodes.place(key, pod.spec.nodeName, pod_request(pod, field))
            if self.batcher is not None:
                self.batcher.forget(key)
        elif pod.spec.schedulerName == self.settings.scheduler_name and self.batcher is not None:
            self.batcher.submit(pending_pod(pod))

    # ---- filter ------------------------------------------------------------------------------

    def _candidates(self, args: ExtenderArgs) -> tuple[list[str], list[str]]:
        """``(item_names, candidates)``: names of ``Nodes.items`` in order (learning the
        objects), and every candidate once — ``NodeNames`` then any item not named there.

        Once, because kube-scheduler adds up the scores of a host listed twice in the
        prioritize answer (reference §2.2): a duplicated name would double its weight.
        """
        item_names = self.nodes.learn(args.Nodes.items or [], "Nodes.items") if args.Nodes else []
        listed = [*(args.NodeNames or ()), *item_names]
        return item_names, list(dict.fromkeys(listed))

    def filter(self, args: ExtenderArgs) -> ExtenderFilterResult:
        """Answer ``/filter`` (see the module docstring).

        Raises
        ------
        BadRequest
            A node object without a name or a bad quantity in the pod or a node.
        """
        item_names, names = self._candidates(args)
        pod = pending_pod(args.Pod, frozenset(names))
        if self.batcher is not None:
            self.batcher.submit(pod)
        view = self.market.view(names, self.clock())
        below = view["fresh_headroom"] < self.settings.headroom_floor  # NaN (stale) never is
        low = {names[i] for i in np.flatnonzero(below)}
        self.metrics.filtered.labels(self.settings.mode).inc(len(low))
        if self.active:
            if self._filtered:
                # A node can recover without a new sample (its herding reservations expired,
                # its telemetry went stale): announce it once a request shows it passing.
                self._announce_recovered(names, view)
            self._filtered |= low
        else:
            if low:
                self._record(pod.key, "filter", {"would_filter": sorted(low)})
            low = set()
        result = ExtenderFilterResult(
            FailedNodes=dict.fromkeys(sorted(low), FILTER_REASON), FailedAndUnresolvableNodes={}
        )
        if args.NodeNames is not None:
            unique = names if args.Nodes is None else list(dict.fromkeys(args.NodeNames))
            result.NodeNames = [n for n in unique if n not in low] if low else unique
        if args.Nodes is not None:
            items = args.Nodes.items or []
            kept = [item for item, n in zip(items, item_names, strict=True) if n not in low]
            result.Nodes = NodeList(metadata=args.Nodes.metadata, items=kept)
        return result

    # ---- prioritize --------------------------------------------------------------------------

    async def prioritize(self, args: ExtenderArgs) -> tuple[list[str], list[int]]:
        """Answer ``/prioritize``: every candidate's name and 0–10 score, in request order.

        Active: the cleared node gets 10 (waiting up to W + grace for the pod's clearing), or
        without a clearing the single-pod bid scores. Shadow: every score is 0 at once; the
        recommendation is recorded when the pod's batch clears.

        Raises
        ------
        BadRequest
            A node object without a name or a bad quantity in the pod or a node.
        """
        _, names = self._candidates(args)
        pod = pending_pod(args.Pod, frozenset(names))
        row = None
        if self.batcher is not None:
            row = self.batcher.row(pod.key, pod.uid)
            if row is None:
                self.batcher.submit(pod)
                if self.active:
                    timeout_s = (self.settings.window_ms + self.settings.grace_ms) / 1000.0
                    row = await self.batcher.wait(pod.key, timeout_s, pod.uid)
                    if row is None:
                        self.metrics.fallbacks.labels("window_timeout").inc()
        if not self.active:
            return names, [0] * len(names)
        if row is not None:
            scores = row.scores_for(names)  # computed with the clearing
        else:
            scores = self.market.scores(pod, names, self.clock())
        self.metrics.recommendations.labels("active").inc()
        return names, scores

    # ---- clearing ----------------------------------------------------------------------------

    async def _clear(self, batch: list[PendingPod]) -> list[Cleared]:
        started = time.perf_counter()
        now_s = self.clock()
        known = self.nodes.names()
        named = set().union(*(p.candidates for p in batch if p.candidates)).difference(known)
        snapshot = self.market.snapshot(batch, known + sorted(named), now_s)
        # On the loop, not in a worker thread: a batch clears in a few ms, while a thread would
        # trade the GIL with the request handlers every switch interval (5 ms) on each of the
        # engine's many small numpy steps and take 10-50x longer (measured: 5 ms → 220 ms).
        clearing, scores = self.market.solve(snapshot)
        rows = self.market.apply(snapshot, clearing, scores, now_s, reserve=self.active)
        m = self.metrics
        m.clearings.inc()
        m.batch_pods.observe(len(batch))
        m.auction_rounds.observe(clearing.rounds)
        m.clearing_seconds.observe(time.perf_counter() - started)
        if clearing.fell_back:
            m.fallbacks.labels("greedy").inc()
        m.prices.update(snapshot.names, clearing.prices)
        if not self.active:
            for row in rows:
                self._record(row.pod, "clearing", {"node": row.node, "price": row.price})
            m.recommendations.labels("shadow").inc(len(rows))
        return rows

    def _record(self, pod: str, kind: str, detail: dict[str, Any]) -> None:
        entry = {"pod": pod, "kind": kind, "at_s": self.clock(), **detail}
        self.recommendations.append(entry)
        log.info("shadow recommendation %s", entry)
