"""The extender's behaviour behind the HTTP routes: filter, prioritize, telemetry, pod feed.

``app.py`` and ``verbs.py`` only move bytes; everything kube-scheduler or an agent can observe
is decided here.

Floor (reference §2.2, §2.3; issues 6 and 15): the built-in predicates already ran (AR-4), so
the only nodes kept off are those whose fresh, discounted, herding-adjusted headroom is below
the hard floor (``floor.py``). With ``--watch`` that is a ``NoSchedule`` taint which
kube-scheduler enforces itself (counting the reservations of bound pods only, so a batch does
not taint its own node before its pods' cycles); ``/filter``, for configurations that call it,
removes those nodes (counting every reservation but those the asking pod's clearing left on
its cleared node), each listed in ``FailedNodes`` with one stable reason (short, no per-node
detail, so kube-scheduler's "0/N nodes are available" message aggregates them — pitfall P11).
A node without fresh telemetry is never kept off: scores rank it down instead. The filter answer
fills exactly the fields the request filled (``NodeNames`` and/or ``Nodes`` with the received
objects unchanged), so a ``null`` never rejects every node (pitfall P2).

Stepping aside (issue 15): in active mode an extender that does not know the nodes — its
watch is down or has not listed them yet, no node was ever learnt, or none of a request's
candidates is known — raises :class:`StepAside`; the routes answer it with an error status, so
kube-scheduler's ignorable fallback places the pod, and count it. Answering "every node 0"
instead would look like an opinion. ``/readyz`` reports the same reason.
"""

from __future__ import annotations

import functools
import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from eams.calibrate.calfile import Calibration
from eams.kube.admission import admits_now
from eams.kube.gates import held_by_another_gate
from eams.kube.pods import PodObject
from eams.kube.requests import PodRequest, pod_request
from eams.kube.wakerequest import WakeRequest
from eams.scheduler.auction import AuctionParams
from eams.scheduler.extender.batching import Batcher
from eams.scheduler.extender.candidates import CandidateLists, StaticCandidates
from eams.scheduler.extender.clock import Clock, as_clock
from eams.scheduler.extender.decisions import Decisions
from eams.scheduler.extender.errors import StepAside, bad_request
from eams.scheduler.extender.floor import HeadroomFloor
from eams.scheduler.extender.gates import GateReleaser
from eams.scheduler.extender.herding import HerdGuard
from eams.scheduler.extender.market import Market
from eams.scheduler.extender.metrics import ExtenderMetrics
from eams.scheduler.extender.nodes import NodeCache
from eams.scheduler.extender.pending import PendingPod, pending_pod
from eams.scheduler.extender.rows import Cleared
from eams.scheduler.extender.schemas import (
    ExtenderArgs,
    ExtenderFilterResult,
    NodeList,
)
from eams.scheduler.extender.settings import Settings
from eams.scheduler.extender.table import NodeTable
from eams.scheduler.extender.telemetry import TelemetryStore
from eams.scheduler.extender.wakes import HOLD_REASON, WakeMarket
from eams.telemetry import TelemetrySample

log = logging.getLogger(__name__)

FILTER_REASON = "eams: node power headroom below floor"


class Extender:
    """State and decisions of one extender instance.

    Parameters
    ----------
    settings : Settings
    calibrations : dict of str to Calibration
        Node name → calibration (see ``calibrations.load_calibrations``).
    metrics : ExtenderMetrics
    clock : Clock or callable
        The extender's one clock (``clock.py``): telemetry ages, table ages and the batch
        window all run on it. A plain callable (epoch seconds, ``time.time`` by default) is
        read for ages, with the window on the event loop (:class:`~.clock.WallClock`).
    params : AuctionParams, optional
        Engine parameters (defaults of ``AuctionParams``).

    Attributes
    ----------
    watch_health : dict of str to (str or None)
        Set by ``watch.py``: per watched resource, why it is down (``None`` when listed and
        watching). Empty without ``--watch``.
    on_floor_change : callable or None
        Called after anything that can move a node across the taint's floor (a sample, a
        binding: a clearing's reservations count toward the taint only once their pods are
        bound, ``floor.py``); ``watch.py`` re-plans the taints there.
    """

    def __init__(
        self,
        settings: Settings,
        calibrations: dict[str, Calibration],
        metrics: ExtenderMetrics,
        clock: Clock | Callable[[], float] = time.time,
        params: AuctionParams | None = None,
    ) -> None:
        self.settings = settings
        self.metrics = metrics
        self.clock = clock = as_clock(clock)
        self.table = NodeTable()
        self.nodes = NodeCache(self.table)
        self.telemetry = TelemetryStore(settings.stale_after_s, clock)
        self.herd = HerdGuard(settings.herd_settle_s, settings.herd_ttl_s, self.table)
        for calibration in calibrations.values():
            self.table.set_calibration(calibration)
        self.calibrated = len(calibrations)
        self.market = Market(
            self.table, self.herd, params or settings.auction_params(), settings.default_runtime_s
        )
        self.floor = HeadroomFloor(
            self.table,
            self.herd,
            settings.headroom_floor,
            settings.recovery_margin,
            settings.stale_after_s,
        )
        self.batcher = (
            Batcher(
                settings.window_ms / 1000.0,
                settings.clearing_ttl_s,
                self._clear,
                clock,
                settings.max_batch_pods,
            )
            if settings.window_ms > 0
            else None
        )
        self.recommendations: deque[dict[str, Any]] = deque(maxlen=settings.recommendations_kept)
        self.watch_health: dict[str, str | None] = {}
        self.on_floor_change: Callable[[], None] | None = None
        self.decisions = (
            Decisions(
                settings.record,
                metrics.registry,
                settings.mode,
                settings.scheduler_name,
                self.market.params,
                settings.headroom_floor,
                clock,
                settings.annotate,
            )
            if settings.record is not None
            else None
        )
        self.candidates = CandidateLists(self.nodes)
        self.static_candidates = StaticCandidates(self.nodes)
        self.releaser: GateReleaser | None = None  # set by watch.py: gated pods are released
        self.gated_waiting: set[str] = set()  # gated pods in the batch, not released yet
        self.wakes = WakeMarket(
            self.nodes,
            self.market,
            self.market.params,
            settings.wake_price_margin,
            metrics,
            settings.mode,
        )
        if self.decisions is not None:
            self.wakes.on_record = self.decisions.recorder.submit
        metrics.record_calibrations(calibrations)

    @property
    def market_wakes(self) -> bool:
        """Whether ``/filter`` holds pods for market wakes (active, ``market_wakes`` on)."""
        return self.active and self.settings.market_wakes

    @property
    def on_wake_request(self) -> Callable[[WakeRequest], None] | None:
        """Called with a node's whole :class:`~eams.kube.wakerequest.WakeRequest` each time the
        market holds a pod for it (on the event loop: must not block); ``watch.py`` writes it
        on the node, the bench and the demo hand it to their power manager."""
        return self.wakes.on_request

    @on_wake_request.setter
    def on_wake_request(self, receiver: Callable[[WakeRequest], None] | None) -> None:
        self.wakes.on_request = receiver

    @property
    def active(self) -> bool:
        """Whether answers carry the auction's opinion (``mode == "active"``)."""
        return self.settings.mode == "active"

    # ---- readiness and stepping aside ------------------------------------------------------

    def blind(self) -> str | None:
        """Why the extender cannot judge nodes now (``None`` when it can): a watch is down or
        has not listed yet, or no node is known at all."""
        down = [f"{what}: {why}" for what, why in self.watch_health.items() if why]
        if down:
            return "watch down (" + "; ".join(down) + ")"
        if not len(self.nodes):
            return "no node known yet (no watch list, no POST /nodes)"
        return None

    def step_aside_if_blind(self, names: list[str]) -> None:
        """In active mode, raise :class:`StepAside` when blind or when none of ``names`` is
        known (an answer would score every node 0).

        Raises
        ------
        StepAside
            Names the reason; the routes answer 503 and count it.
        """
        if not self.active:
            return
        reason = self.blind()
        if reason is None and names and not any(map(self.nodes.knows, names)):
            reason = f"none of the {len(names)} candidate nodes is known"
        if reason is not None:
            raise StepAside(reason)

    def readiness(self) -> list[str]:
        """What is still missing before the extender can serve; empty when ready."""
        missing = []
        if not self.calibrated:
            missing.append("no calibration loaded (eams extender serve --calibrations DIR)")
        if len(self.telemetry) == 0:
            missing.append("no telemetry received yet (agents POST /telemetry)")
        blind = self.blind()
        if blind is not None:
            missing.append(blind)
        self.metrics.ready.set(0 if missing else 1)
        return missing

    # ---- telemetry ---------------------------------------------------------------------------

    def ingest(self, samples: list[TelemetrySample]) -> int:
        """Store samples and end the herding reservations they reflect."""
        stored = self.telemetry.ingest(samples)
        for sample in stored:
            self.table.set_sample(sample)
            self.herd.reflect(sample.node, sample.measured_at_ns / 1e9)
        self.metrics.telemetry_samples.inc(len(samples))
        self.metrics.telemetry_nodes.set(len(self.telemetry))
        if stored:
            self._floor_changed()
        return len(samples)

    def _floor_changed(self) -> None:
        if self.on_floor_change is not None:
            self.on_floor_change()

    # ---- pod and node feed (watch.py and POST /pending, POST /nodes) ------------------------

    def observe_nodes(self, items: list[Any], field: str = "items") -> int:
        """Learn node objects; returns how many."""
        return len(self.nodes.learn(items, field))

    def observe_pod(self, pod: PodObject, field: str = "Pod", deleted: bool = False) -> None:
        """Track one pod: bound pods use capacity, pending ones of this scheduler join a batch
        (not while another controller's scheduling gate holds them:
        :func:`eams.kube.gates.held_by_another_gate`); a deleted or finished (Succeeded/Failed)
        pod is forgotten.

        Raises
        ------
        BadRequest
            A quantity of the pod breaks the grammar (names ``field``).
        """
        key = pod.key()
        if deleted or pod.finished:
            self.observe_gone(key)
        elif pod.spec.nodeName:
            with bad_request():
                request = pod_request(pod, field)
            self.observe_placed(key, pod.spec.nodeName, request)
        elif pod.spec.schedulerName != self.settings.scheduler_name:
            return
        elif held_by_another_gate(pod.spec.gate_names()):
            self.observe_unpending(key)  # not the market's to clear until that gate is lifted
        else:
            self.observe_pending(pending_pod(pod))

    def observe_pending(self, pod: PendingPod) -> None:
        """A pod of this scheduler waits for a node: it joins the pending batch unless the
        market holds it for a wake (:meth:`_wake_answer`), and the market wakes' pods. A gated
        one (``gates.py``), with a releaser, joins it with the nodes that admit it as its
        candidates, or, when the market cannot judge it (or does not batch), is released
        unpinned at once."""
        releaser = self.releaser
        if pod.gated and releaser is not None:
            if not pod.pinnable or self.batcher is None:
                releaser.release(pod, None)
                return
            pod = replace(pod, candidates=self.static_candidates.of(pod))
            self.gated_waiting.add(pod.key)
        if self.batcher is not None and not self.wakes.holds(pod.key):
            self.batcher.submit(pod)  # a held pod waits for its wake, not a clearing
        if self.market_wakes:
            self.wakes.remember(pod)

    def clear_again(self, pod: PendingPod) -> None:
        """A gated pod cleared while the extender was blind (``gates.py``): cleared again, its
        old row dropped, unless it was bound or deleted meanwhile."""
        if self.batcher is not None and pod.key in self.gated_waiting:
            self.batcher.forget(pod.key)
            self.observe_pending(pod)

    def observe_unpending(self, key: str) -> None:
        """A pod no longer waits (bound, or deleted while pending): it leaves the batch."""
        if self.batcher is not None:
            self.batcher.forget(key)
        self._bound(key)

    def observe_placed(self, key: str, node: str, request: PodRequest) -> None:
        """A pod is bound to ``node``: it uses capacity there and leaves the batch; bound
        elsewhere than its clearing said, its herding reservation moves to ``node``
        (:meth:`.herding.HerdGuard.move`)."""
        held = self.herd.held_by(key)
        if held is not None and held[0] != node:  # valued as a clearing would: before placing
            power_w = self.market.expected_power_on_w(node, request.cpu_milli, self.clock())
            self.herd.move(key, node, power_w)
            self.metrics.reservations_moved.inc()
        self.nodes.place(key, node, request)
        if self.batcher is not None:
            self.batcher.forget(key)
        self._bound(key)

    def observe_gone(self, key: str) -> None:
        """A pod was deleted or finished: it frees its node and leaves the batch."""
        self.nodes.unplace(key)
        if self.batcher is not None:
            self.batcher.forget(key)
        self._bound(key)

    def _bound(self, key: str) -> None:
        """The pod's cycle is over: its herding reservation now counts toward the taint, which
        is planned again when that put the reservation's node under the floor."""
        self.wakes.forget(key)
        if self.releaser is not None:
            self.releaser.bound(key)
            self.gated_waiting.discard(key)
        node = self.herd.bind(key)
        if node is not None and self.floor.under([node], self.clock()):
            self._floor_changed()

    # ---- filter ------------------------------------------------------------------------------

    def _candidates(self, args: ExtenderArgs) -> tuple[list[str], list[str]]:
        """``(item_names, candidates)``: names of ``Nodes.items`` in order (learning the
        objects), and every candidate once — ``NodeNames`` then any item not named there.

        Once, because kube-scheduler adds up the scores of a host listed twice in the
        prioritize answer (reference §2.2): a duplicated name would double its weight.
        """
        if args.Nodes is None:  # names only (nodeCacheCapable): the usual request
            return [], self.candidates.unique(args.NodeNames or [])
        item_names = self.nodes.learn(args.Nodes.items or [], "Nodes.items")
        listed = [*(args.NodeNames or ()), *item_names]
        return item_names, list(dict.fromkeys(listed))

    def kept_off(self, names: list[str], pod: str) -> frozenset[str]:
        """Which of ``names`` ``/filter`` removes for this pod: those under the floor in active
        mode (counted); in shadow mode none, the would-be set recorded."""
        below = self.floor.below_for(pod, self.clock())
        low = below.intersection(names) if below else frozenset()
        self.metrics.filtered.labels(self.settings.mode).inc(len(low))
        if low and not self.active:
            self._record(pod, "filter", {"would_filter": sorted(low)})
            return frozenset()
        return low

    def announced(self, key: str, uid: str | None) -> bool:
        """Whether the pod is known without reading it: pending in a batch, cleared, or held
        for a market wake (it was read, and checked, when the watch or an earlier request
        announced it), and, with ``uid``, that pod and not an older one of the same name."""
        b = self.batcher
        if b is None:
            return False
        return b.waiting(key, uid) or b.row(key, uid) is not None or self.wakes.holds(key, uid)

    def filter_names(
        self, key: str, uid: str | None, names: list[str]
    ) -> tuple[list[str], dict[str, str]] | None:
        """The names-only filter (kube-scheduler's ``nodeCacheCapable: true`` call) for an
        announced pod: ``names`` (each once: the verbs de-duplicate them) minus the nodes
        under the floor or held back by a market wake (:meth:`_wake_answer`), and those
        removed with their reasons; ``None`` when the pod was not announced (the caller reads
        it whole).

        Raises
        ------
        StepAside
            Active and blind (see :meth:`step_aside_if_blind`).
        """
        if not self.announced(key, uid):
            return None
        self.step_aside_if_blind(names)
        low = self.kept_off(names, key)
        kept = [n for n in names if n not in low] if low else names
        return self._wake_answer(key, kept, dict.fromkeys(low, FILTER_REASON))

    def _wake_answer(
        self, key: str, kept: list[str], failed: dict[str, str]
    ) -> tuple[list[str], dict[str, str]]:
        """``kept`` and ``failed`` after the market wake's say (``wakes.py``): a held pod keeps
        no node (each :data:`~.wakes.HOLD_REASON`), a pod whose woken node is a candidate keeps
        only that node.

        A held pod's herding reservation ends (``herding.py``): its batch may have cleared it
        onto an awake node, where it will not land while it waits for the wake; left there, the
        reservation would keep that node under the floor and its bids gated for every other
        pod (which, offered no node, would be held in turn). For the same reason it leaves the
        batch (and :meth:`observe_pending` does not add it again while it is held): the next
        window, which knows nothing of the floor, cleared it back onto the node just refused
        to it, with a new reservation. When its hold ends it is cleared again at once
        (:meth:`_hold_ended`).
        """
        if not self.market_wakes:
            return kept, failed
        was_held = self.wakes.holds(key)
        answer = self.wakes.decide(key, kept, self.clock())
        if answer is not None and answer.hold:
            self.herd.release(key)
            if self.batcher is not None:
                self.batcher.forget(key)
            return [], failed | dict.fromkeys(kept, HOLD_REASON)
        if was_held:
            self._hold_ended(key, frozenset(kept if answer is None else [answer.node]))
        if answer is None:
            return kept, failed
        others = [n for n in kept if n != answer.node]
        return [answer.node], failed | dict.fromkeys(others, HOLD_REASON)

    def _hold_ended(self, key: str, candidates: frozenset[str]) -> None:
        """Pod ``key`` waits for its wake no more: released onto its woken node (``candidates``
        that node alone), or withdrawn or failed (``candidates`` the nodes ``/filter`` passes:
        kube-scheduler's less those under the floor, so a clearing does not put it where it
        cannot bind).
        It is cleared now over ``candidates``, not at its ``/prioritize``: with one node left
        kube-scheduler binds without asking, and the pod would bind with no clearing, so with
        no record line and no herding reservation where it lands. A woken node the node cache
        still sees asleep (its watch event not yet read) is not among the clearing's nodes:
        the pod is then cleared onto none, and said so on the record."""
        pod = self.wakes.pod(key)
        if self.batcher is None or pod is None:
            return
        self.batcher.submit(replace(pod, candidates=candidates))
        self._clear_among(key, pod.uid, candidates)

    def filter(self, args: ExtenderArgs) -> ExtenderFilterResult:
        """Answer ``/filter`` for any request shape (see the module docstring).

        Raises
        ------
        BadRequest
            A node object without a name or a bad quantity in the pod or a node.
        StepAside
            Active and blind.
        """
        item_names, names = self._candidates(args)
        assert args.Pod is not None  # parse_args refused a null Pod
        pod = pending_pod(args.Pod, self.candidates.as_set(names))
        self.step_aside_if_blind(names)
        self.observe_pending(pod)
        low = self.kept_off(names, pod.key)
        passing = [n for n in names if n not in low]
        _, failed = self._wake_answer(pod.key, passing, dict.fromkeys(low, FILTER_REASON))
        result = ExtenderFilterResult(
            FailedNodes=dict(sorted(failed.items())), FailedAndUnresolvableNodes={}
        )
        if args.NodeNames is not None:
            unique = names if args.Nodes is None else list(dict.fromkeys(args.NodeNames))
            result.NodeNames = [n for n in unique if n not in failed] if failed else unique
        if args.Nodes is not None:
            items = args.Nodes.items or []
            kept = [item for item, n in zip(items, item_names, strict=True) if n not in failed]
            result.Nodes = NodeList(metadata=args.Nodes.metadata, items=kept)
        return result

    # ---- prioritize --------------------------------------------------------------------------

    def prioritize_names(self, key: str, uid: str | None, names: list[str]) -> np.ndarray | None:
        """(len(names),) int scores of ``names`` (each once) for a pod known by key, without
        reading the pod: from its clearing row (its batch cleared now if still pending);
        ``None`` when the pod was never announced (the caller then reads it whole,
        :meth:`prioritize`).

        Raises
        ------
        StepAside
            Active and blind.
        """
        if self.batcher is None or not self.announced(key, uid):
            return None  # the pod must be read (and checked) whole first
        self.step_aside_if_blind(names)
        offered = self.candidates.as_set(names)
        pending = self.batcher.pending(key)
        if pending is not None and pending.candidates is not offered:  # the final candidates
            self.batcher.submit(replace(pending, candidates=offered))
        row = self._clear_among(key, uid, offered)  # shadow too: its record is the decision
        if self.decisions is not None:
            self.decisions.scored(key)  # the binding is judged against this clearing
        if not self.active:
            return np.zeros(len(names), dtype=np.int8)
        if row is None:
            return None
        self.metrics.recommendations.labels("active").inc()
        return row.scores_for(names)

    def prioritize(self, args: ExtenderArgs) -> tuple[list[str], np.ndarray]:
        """Answer ``/prioritize`` for a pod read whole: every candidate's name and 0–10 score,
        in request order.

        Active: the cleared node gets 10 (the pod's batch is cleared now if it was not yet), or
        without a clearing the single-pod bid scores. Shadow: the batch is cleared now as
        well (its recommendation and record are what active would have done) and every score
        is 0.

        Raises
        ------
        BadRequest
            A node object without a name or a bad quantity in the pod or a node.
        StepAside
            Active and blind.
        """
        _, names = self._candidates(args)
        assert args.Pod is not None  # parse_args refused a null Pod
        offered = self.candidates.as_set(names)
        pod = pending_pod(args.Pod, offered)
        self.step_aside_if_blind(names)
        row = None
        if self.batcher is not None:
            self.batcher.submit(pod)
            row = self._clear_among(pod.key, pod.uid, offered)  # shadow too (see above)
            if self.decisions is not None:
                self.decisions.scored(pod.key)
            if row is None and self.active:
                self.metrics.fallbacks.labels("no_row").inc()
        if not self.active:
            return names, np.zeros(len(names), dtype=np.int8)
        if row is not None:
            scores = row.scores_for(names)  # computed with the clearing
        else:
            scores = self.market.scores(pod, names, self.clock())
        self.metrics.recommendations.labels("active").inc()
        return names, scores

    # ---- clearing ----------------------------------------------------------------------------

    def _clear_among(self, key: str, uid: str | None, offered: frozenset[str]) -> Cleared | None:
        """The pod's row for kube-scheduler's candidates ``offered``: its batch cleared now if
        still pending, and cleared again over ``offered`` when its cleared node is not among
        them (counted): scores from that row would rank what is left, not carry a clearing's
        choice, and the record would judge the binding against a node never offered."""
        assert self.batcher is not None
        row = self.batcher.clear_for(key, uid)
        if row is not None and row.node is not None and row.node not in offered:
            self.metrics.reclearings.inc()
            row = self.batcher.clear_again(row, offered)
        return row

    def _clear(self, batch: list[PendingPod]) -> list[Cleared]:
        try:
            return self._clear_batch(batch)
        except Exception:
            if self.releaser is not None:  # kube-scheduler never asks about a gated pod
                for pod in batch:
                    if pod.gated and pod.key in self.gated_waiting:
                        self.gated_waiting.discard(pod.key)
                        self.releaser.release(pod, None)
            raise

    def _clear_batch(self, batch: list[PendingPod]) -> list[Cleared]:
        """Clear a batch over the nodes kube-scheduler can offer its pods: the awake ones
        (:meth:`.nodes.NodeCache.awake_names`) and any candidate the cache does not know
        (unvalued, it scores 0).

        Never over an asleep node: the auction would price it with the awake model (an empty
        node with unknown headroom, no wake energy, no wait) and could clear a pod onto a node
        kube-scheduler will not offer, its herding reservation left there and the pod cleared
        again at its ``/prioritize``. Asleep nodes have one price, the wake market's at
        ``/filter`` (``wakes.py``)."""
        started = time.perf_counter()
        now_s = self.clock()
        names = self.nodes.awake_names()
        named = self.candidates.unknown(batch)
        if named:
            names = names + sorted(named)
        snapshot = self.market.snapshot(batch, names, now_s)
        # On the loop, not in a worker thread: a batch clears in a few ms, while a thread would
        # trade the GIL with the request handlers every switch interval (5 ms) on each of the
        # engine's many small numpy steps and take 10-50x longer (measured: 5 ms → 220 ms).
        budget_ms = self.settings.clearing_budget_ms
        budget_s = (
            None
            if budget_ms is None
            else max(0.0, budget_ms / 1e3 - (time.perf_counter() - started))
        )
        clearing, scores = self.market.solve(snapshot, budget_s)
        rows = self.market.apply(snapshot, clearing, scores, now_s, reserve=self.active)
        m = self.metrics
        m.clearings.inc()
        m.batch_pods.observe(len(batch))
        m.auction_rounds.observe(clearing.rounds)
        m.clearing_seconds.observe(time.perf_counter() - started)
        if clearing.timed_out:
            m.fallbacks.labels("budget").inc()
        elif clearing.fell_back:
            m.fallbacks.labels("greedy").inc()
        m.prices.update(snapshot.names, clearing.prices)
        if self.decisions is not None:
            self.decisions.cleared(snapshot, clearing, scores, now_s)
        self._after_clearing(rows)
        return rows

    def _after_clearing(self, rows: list[Cleared]) -> None:
        if self.releaser is not None:
            gated = [row for row in rows if row.source is not None and row.source.gated]
            if gated:
                self._release(self.releaser, gated)
        if not self.active:
            for row in rows:
                self._record(row.pod, "clearing", {"node": row.node, "price": row.price})
            self.metrics.recommendations.labels("shadow").inc(len(rows))

    def _release(self, releaser: GateReleaser, rows: list[Cleared]) -> None:
        """Release the gated pods of a clearing (``gates.py``): pinned to the cleared node
        where it still admits the pod (:meth:`_pin_holds`) in active mode, unpinned otherwise
        (shadow: the record says what active would have done), each with its ``eams.io/*``
        annotations when the record writes them; a pod cleared nowhere while the extender is
        blind (its candidates were empty) waits a window and is cleared again."""
        decisions = self.decisions
        annotations = (
            {} if decisions is None else decisions.release_annotations([r.pod for r in rows])
        )
        blind = self.blind() is not None
        for row in rows:
            pod = row.source
            assert pod is not None  # gated rows carry their pod
            if row.node is None and blind and self.batcher is not None:
                releaser.later(self.batcher.window_s, functools.partial(self.clear_again, pod))
                continue
            self.gated_waiting.discard(pod.key)
            node = row.node if self.active and self._pin_holds(pod, row.node) else None
            releaser.release(pod, node, annotations.get(pod.key))
            if node is not None and decisions is not None:
                decisions.scored(pod.key)  # judged against this clearing, as if asked

    def _pin_holds(self, pod: PendingPod, node: str | None) -> bool:
        """Whether ``pod`` may be pinned to ``node`` now: the market judges all it asks
        (``pinnable``), the node as last seen admits it, and it is not under the headroom floor
        counting every reservation but its clearing's there (what ``/filter`` would say)."""
        if node is None or not pod.pinnable:
            return False
        seen = self.nodes.node(node)
        if seen is None or not admits_now(seen, dict(pod.node_selector), pod.tolerations):
            return False
        return node not in self.floor.below_for(pod.key, self.clock())

    def _record(self, pod: str, kind: str, detail: dict[str, Any]) -> None:
        entry = {"pod": pod, "kind": kind, "at_s": self.clock(), **detail}
        self.recommendations.append(entry)
        log.info("shadow recommendation %s", entry)
