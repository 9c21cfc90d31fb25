"""Market wakes (issue 34): the market prices the asleep nodes, and its choice wakes them.

The power manager keeps as few nodes awake as the load needs; kube-scheduler only ever offers
the awake ones (an asleep node carries ``eams.io/asleep:NoSchedule``). So at ``/filter`` the
extender also bids the pod on the asleep nodes it knows (:attr:`.nodes.NodeCache.sleeping`:
state ``asleep`` or ``waking``, never ``asleep-suspect`` or ``suspending``) whose calibration
measured a sleep state, that have room for it and whose labels and taints its node selector and
tolerations admit once awake. Both sides are priced by one model, each node's §5.1 line above
its measured sleep floor (the engine's ``Nodes.p_sleep_w``, as the power manager counts it):

* awake candidate n: ``π·w/ΔE_n · σ(k(ĥ_n − h0))`` — the market's own bid (``bids.bid_values``),
  headroom gate included, an empty node charged the power it draws over sleeping;
* asleep node m: ``π·w/ΔE_m · t/(t + wait_m)`` with ΔE_m carrying E_wake too
  (:meth:`.market.Market.wake_model`) and the wait the node still needs to be Ready
  (``bids.wake_values``).

For one pod the clearing is the highest bid. When the best asleep bid beats the best awake one
by ``wake_price_margin`` (1.0: strictly), the pod is **held**: ``/filter`` answers no node
(:data:`HOLD_REASON`), a :class:`~eams.kube.wakerequest.WakeRequest` goes to
:attr:`WakeMarket.on_request` (``watch.py`` writes it on the node as the
``eams.io/wake-request`` annotation; the power manager executes it, its safety rules first),
and one ``wake`` record line holds both the placement and the wake. kube-scheduler requeues
the pod on the next cluster event (reference P6), the node's release among them.

At each later ``/filter`` of a held pod:

* its node is among the candidates (kube-scheduler sees it released, even before the watch
  does): only that node passes, so the pod binds where the market put it (released, but not
  yet among them — kube-scheduler's cache lags the watch — it is priced as waking with no wait
  left);
* it is still asleep or waking, within :data:`WAKE_TIMEOUT_FACTOR` × its wake time: priced
  again with the wait left; held while that is still the better price, else withdrawn and
  placed among the awake ones at once;
* it turned ``asleep-suspect``, or went back to ``suspending``, or the wait passed the timeout:
  the wake failed; the node is barred for this pod and the pod is cleared again — another
  asleep node if that is the better price, else the best awake one.

A pod is never held when an awake candidate is at least as good a price, never for a node
whose wake is not measured, and never for an asleep node the pods already held for it fill: a
node is promised to the pods held for it (their CPU, memory and pod count counted as used when
the next pod is priced there), so one waking node does not take a contended window's every
held pod (issue 33: ~1,000 holds for one node before).

With a batch window, the pod's batch may have cleared it onto an awake candidate before its
``/filter`` and left a herding reservation there (``herding.py``): the pod's awake bid leaves
its own reservation and those of the pods its clearing put on the same node out (as its clearing
valued the node, and the single-pod path, which clears nothing first, prices it), and a
held pod's reservation ends (``service.Extender._wake_answer``): it lands on no awake node
while it waits, and the reservation would keep that node under the floor for every other pod.
For the same reason a held pod leaves the batch until its hold ends (the next window would clear
it back onto the awake node just refused to it); then it is cleared again at that ``/filter``,
over its woken node alone when released (``service.Extender._hold_ended``), so it binds with a
clearing on record and a reservation where it lands. The window clears over the awake nodes
only (``service.Extender._clear_batch``): the asleep ones are priced here alone, with their
wake.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from eams.kube.admission import admits_once_awake
from eams.kube.wakerequest import WakeRequest
from eams.scheduler.auction import AuctionParams, bids
from eams.scheduler.extender.market import Market
from eams.scheduler.extender.metrics import ExtenderMetrics
from eams.scheduler.extender.nodes import NodeCache
from eams.scheduler.extender.pending import PendingPod
from eams.scheduler.record import PodRef, Wake

log = logging.getLogger(__name__)

HOLD_REASON = "eams: waiting for a market wake"
"""``FailedNodes`` reason of every candidate of a held pod (one stable string, pitfall P11)."""
PRICED_STATES = frozenset({"asleep", "waking"})
"""Power states (``eams.io/power-state``) the market may clear a pod onto."""
WAKE_TIMEOUT_FACTOR = 2.0
"""A wait longer than this × the node's measured wake time is a failed wake (the power policy's
``wake_margin`` default: its own wake timeout)."""


@dataclass(frozen=True)
class WakeAnswer:
    """What ``/filter`` does with a pod: ``hold`` it (no node passes) for ``node``, or pass only
    ``node`` (the node woken for it, now a candidate)."""

    node: str
    hold: bool


@dataclass
class _Standing:
    node: str
    since_s: float
    cpu_milli: float
    memory_bytes: float


class WakeMarket:
    """The pods held for a wake and the wake requests (module docstring).

    Parameters
    ----------
    nodes : NodeCache, node objects and their power states
    market : Market, the columns and the pricing model
    params : AuctionParams
    margin : float, ≥ 1, ``Settings.wake_price_margin``
    metrics : ExtenderMetrics
    mode : {"shadow", "active"}, written on the records

    Attributes
    ----------
    on_request : callable or None
        Called with the node's whole :class:`WakeRequest` each time a pod is held for it or
        leaves it (bound, withdrawn, failed; no pods left: the request is over), on the event
        loop: it must not block.
    on_record : callable or None
        Receives each :class:`~eams.scheduler.record.Wake` record line.
    """

    def __init__(
        self,
        nodes: NodeCache,
        market: Market,
        params: AuctionParams,
        margin: float,
        metrics: ExtenderMetrics,
        mode: str,
    ) -> None:
        self.nodes = nodes
        self.market = market
        self.params = params
        self.margin = margin
        self.metrics = metrics
        self.mode = mode
        self.on_request: Callable[[WakeRequest], None] | None = None
        self.on_record: Callable[[Wake], object] | None = None
        self._pods: dict[str, PendingPod] = {}
        self._standing: dict[str, _Standing] = {}
        self._barred: dict[str, set[str]] = {}  # pod → nodes whose wake failed for it
        self._requests: dict[str, WakeRequest] = {}
        self._promised: dict[str, np.ndarray] = {}  # node → (CPU m, memory B, pods) held for it

    def remember(self, pod: PendingPod) -> None:
        """A pending pod of this scheduler (from the watch or a request): the fields it is
        priced by."""
        self._pods[pod.key] = pod

    def forget(self, key: str) -> None:
        """The pod is bound, deleted or finished: it waits for nothing."""
        self._pods.pop(key, None)
        self._barred.pop(key, None)
        standing = self._unstand(key)
        if standing is not None:
            self._unrequest(key, standing.node)

    def requests(self) -> dict[str, WakeRequest]:
        """Node → its standing wake request."""
        return dict(self._requests)

    def pod(self, key: str) -> PendingPod | None:
        """Pending pod ``key`` as last remembered, or ``None``."""
        return self._pods.get(key)

    def holds(self, key: str, uid: str | None = None) -> bool:
        """Whether pod ``key`` is held for a wake; with ``uid``, not when the pod held under
        ``key`` is another one of the same name (deleted and created again)."""
        if key not in self._standing:
            return False
        pod = self._pods.get(key)
        return uid is None or pod is None or pod.uid is None or pod.uid == uid

    def held(self) -> dict[str, str]:
        """Pod key → the node it waits for."""
        return {key: s.node for key, s in self._standing.items()}

    def decide(self, key: str, candidates: list[str], now_s: float) -> WakeAnswer | None:
        """The market wake's say on pod ``key`` offered ``candidates`` (awake nodes that passed
        kube-scheduler's filters) at ``now_s`` (epoch s): hold it, pass only its woken node, or
        ``None`` (no say: the market places it among the candidates as always)."""
        standing = self._standing.get(key)
        if standing is None and not self.nodes.sleeping:
            return None  # the usual case: nothing asleep, nothing to price
        pod = self._pods.get(key)
        if pod is None:
            return None
        if standing is not None:
            answer = self._again(pod, standing, candidates, now_s)
            if answer is not None or standing.node not in self._barred.get(key, ()):
                return answer  # passed, held, or withdrawn (an awake node is the better price)
        return self._clear(pod, candidates, now_s)  # first asked, or its wake failed

    def _again(
        self, pod: PendingPod, standing: _Standing, candidates: list[str], now_s: float
    ) -> WakeAnswer | None:
        """A held pod asked about again (module docstring): its node passes, it stays held, or
        the request ends (withdrawn or failed; ``None``)."""
        node, waited_s = standing.node, now_s - standing.since_s
        if node in candidates:  # kube-scheduler sees it released, whatever the watch says yet
            self.metrics.market_wakes.labels("released").inc()
            self._end(pod.key, node)
            return WakeAnswer(node, hold=False)
        state = self.nodes.sleeping.get(node)
        wake_s = self._column(node, "wake_time_s")
        in_time = waited_s <= WAKE_TIMEOUT_FACTOR * wake_s
        if state is None:  # awake
            if not in_time:  # awake, but not for this pod (filled, filtered): cleared again
                self._end(pod.key, node)
                return None
            # released, but kube-scheduler's cache has not seen it yet: still worth the wait?
            state = "waking"
        if state not in PRICED_STATES or not in_time:
            self._barred.setdefault(pod.key, set()).add(node)
            self._event(pod, node, "failed", now_s, wait_s=waited_s)
            self._end(pod.key, node)
            log.info("market wake of %s for %s failed (%s, %.0f s)", node, pod.key, state, waited_s)
            return None
        priced = self._price(pod, [node], np.array([max(wake_s - waited_s, 0.0)]), now_s)
        awake_bid = self._awake_bid(pod, candidates, now_s)
        if priced is not None and priced[1] > self.margin * awake_bid:
            return WakeAnswer(node, hold=True)
        self._event(pod, node, "withdrawn", now_s, awake_bid=awake_bid)
        self._end(pod.key, node)
        return None

    def _clear(self, pod: PendingPod, candidates: list[str], now_s: float) -> WakeAnswer | None:
        """Price the pod on the asleep nodes; hold it for the best if it beats every awake
        candidate."""
        barred = self._barred.get(pod.key, set())
        asleep = [n for n, s in self.nodes.sleeping.items() if s in PRICED_STATES]
        asleep = [n for n in asleep if n not in barred and self._admits(pod, n)]
        if not asleep:
            return None
        wait_s = np.array([self._column(n, "wake_time_s") for n in asleep])
        priced = self._price(pod, asleep, wait_s, now_s)
        if priced is None:
            return None
        node, wake_bid = priced
        awake_bid = self._awake_bid(pod, candidates, now_s)
        if not wake_bid > self.margin * awake_bid:
            return None
        standing = _Standing(node, now_s, pod.request.cpu_milli, pod.request.memory_bytes)
        self._standing[pod.key] = standing
        self._promise(node, standing, +1.0)
        before = self._requests.get(node)
        pods = (pod.key,) if before is None else (*before.pods, pod.key)
        request = WakeRequest(node, pods, now_s if before is None else before.at_s)
        self._requests[node] = request
        wait = float(wait_s[asleep.index(node)])
        self._event(pod, node, "asked", now_s, wake_bid, awake_bid, wait)
        if self.on_request is not None:
            self.on_request(request)
        return WakeAnswer(node, hold=True)

    def _price(
        self, pod: PendingPod, names: list[str], wait_s: np.ndarray, now_s: float
    ) -> tuple[str, float] | None:
        """The best of ``names`` (asleep) for the pod and its wake bid; ``None`` when none has
        room, a calibration and a measured wake."""
        view = self.market.view(names, now_s)
        self._count_promised(view, names, pod.key)
        measured = np.isfinite(view["wake_time_s"]) & np.isfinite(view["wake_energy_j"])
        ok = view["valued"] & measured & np.isfinite(view["p_sleep_w"])
        ok &= self.market.fits(pod, view, None)
        if not ok.any():
            return None
        keep = np.flatnonzero(ok)
        model = self.market.wake_model(view, keep)
        pods = self.market.pod_arrays([pod])
        values = bids.wake_values(pods, model, wait_s[keep], self.params)[0]
        best = int(np.argmax(values))
        return names[int(keep[best])], float(values[best])

    def _count_promised(self, view: dict[str, np.ndarray], names: list[str], own: str) -> None:
        """Count in ``view``'s used CPU, memory and pods (of ``names``) the requests of the pods
        already held for each node, but pod ``own``'s: a node being woken for pods has that
        much less room for the next (without it, one waking node took ~1,000 holds in a
        contended window, issue 33)."""
        standing = self._standing.get(own)
        extra = np.zeros((3, len(names)))
        for i, node in enumerate(names):
            promised = self._promised.get(node)
            if promised is not None:
                extra[:, i] = promised
                if standing is not None and standing.node == node:
                    extra[:, i] -= [standing.cpu_milli, standing.memory_bytes, 1.0]
        if extra.any():  # new arrays: the view's may be the table's own, read-only
            for row, column in enumerate(("used_cpu_milli", "used_memory_bytes", "used_pods")):
                view[column] = view[column] + extra[row]

    def _awake_bid(self, pod: PendingPod, candidates: list[str], now_s: float) -> float:
        """The pod's best bid on an awake candidate with room (0 when none): the market's own
        (its clearing values them so, headroom gate included), its own herding reservation and
        its clearing's others on the same node left out (a pod its batch cleared onto a
        candidate bids against neither itself nor the pods cleared there beside it: the
        clearing valued the node before them, and the single-pod path, which clears nothing
        first, prices it without them)."""
        if not candidates:
            return 0.0
        usable = Market.usable(self.market.snapshot([pod], candidates, now_s, own=pod.key))
        return float(usable.max(initial=0.0))

    def _admits(self, pod: PendingPod, node: str) -> bool:
        obj = self.nodes.node(node)
        return obj is not None and admits_once_awake(obj, dict(pod.node_selector), pod.tolerations)

    def _column(self, node: str, column: str) -> float:
        row = self.market.table.index.get(node)
        return float("nan") if row is None else float(self.market.table.cols[column][row])

    def _end(self, key: str, node: str) -> None:
        self._unstand(key)
        self._unrequest(key, node)

    def _unstand(self, key: str) -> _Standing | None:
        """Pod ``key`` waits for its node no more: its request leaves the node's promised room."""
        standing = self._standing.pop(key, None)
        if standing is not None:
            self._promise(standing.node, standing, -1.0)
        return standing

    def _promise(self, node: str, standing: _Standing, sign: float) -> None:
        """Add (``sign`` +1) or take off (−1) one held pod's requests on ``node``."""
        promised = self._promised.setdefault(node, np.zeros(3))
        promised += sign * np.array([standing.cpu_milli, standing.memory_bytes, 1.0])
        if promised[2] <= 0:
            del self._promised[node]

    def _unrequest(self, key: str, node: str) -> None:
        """Take pod ``key`` off ``node``'s request and say so (the request shrinks, or ends with
        no pods: the manager must not wake a node for pods that no longer wait for it)."""
        request = self._requests.get(node)
        if request is None or key not in request.pods:
            return
        shrunk = WakeRequest(node, tuple(p for p in request.pods if p != key), request.at_s)
        if shrunk.pods:
            self._requests[node] = shrunk
        else:
            del self._requests[node]
        if self.on_request is not None:
            self.on_request(shrunk)

    def _event(
        self,
        pod: PendingPod,
        node: str,
        event: str,
        now_s: float,
        wake_bid: float | None = None,
        awake_bid: float | None = None,
        wait_s: float | None = None,
    ) -> None:
        self.metrics.market_wakes.labels(event).inc()
        if self.on_record is None:
            return
        namespace, _, name = pod.key.partition("/")
        energy = self._column(node, "wake_energy_j")
        self.on_record(
            Wake(
                at_s=now_s,
                mode="active" if self.mode == "active" else "shadow",
                pod=PodRef(namespace=namespace, name=name, uid=pod.uid),
                node=node,
                event=event,
                wake_bid=wake_bid,
                awake_bid=awake_bid,
                wait_s=wait_s,
                wake_energy_j=None if np.isnan(energy) else energy,
            )
        )
