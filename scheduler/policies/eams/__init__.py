"""EAMS, driven only through its kube-scheduler extender's HTTP protocol.

Source: this project's extender (``eams.scheduler.extender.app.create_app``; study §4–5,
DESIGN.md §5). The emulator plays kube-scheduler with the shipped secondary profile: the
default in-tree plug-ins (here LeastAllocated, as for ``default``) plus the extender with
``nodeCacheCapable: true``, ``ignorable: true`` and ``weight`` = ``params.extender_weight``.
Per pod: in-tree filters → ``POST /filter`` → (more than one node left) in-tree score +
``POST /prioritize`` score × weight × 10 (reference ``extender-protocol.md`` §2.2, §2.4).

What the extender would learn in a cluster it learns here over HTTP too: ``POST /nodes`` once
(the node objects), ``POST /telemetry`` before a pass (each node's agent: power on the
*measured* curve, utilisation, headroom against ``power_cap_w``; a node is re-reported when its
load changed or its last sample is ``telemetry_period_s`` old; an asleep node's agent is
silent), and ``POST /pending`` with the
pods bound and finished since the previous pass (the watch's HTTP twin). The calibration each
node gets is the robust line fit (``eams.calibrate.fit``) of its measured SPECpower curve,
written as calibration files (``eams.calibrate.calfile``) for ``calibrations_dir``.

Under the bench's power manager (issue 34) the extender learns the sleep state too: each node's
calibration carries its ``power_states`` (``Cluster.power_states``), and a node whose power state
changes is posted again on ``POST /nodes`` with the manager's taint ``eams.io/asleep:NoSchedule``
and annotation ``eams.io/power-state`` (the node watch's view), so the market prices the asleep
nodes (``market_wakes``). A pod it clears onto an asleep node is held (``/filter`` answers no
node: the emulator retries it at its next pass) and its wake request (the extender's
``on_wake_request``) reaches the power manager through :meth:`ExtenderPolicy.wake_requests`.
``eams-no-wakes`` (``eams_no_wakes.py``) is the same extender with ``market_wakes`` off: the power
manager decides every wake alone, as before issue 34.

``/pending`` has no deletion yet, so a finished pod is re-reported bound to the placeholder node
:data:`FINISHED_NODE` (unknown to the extender, so never valued) with ``status.phase:
Succeeded``; that releases its capacity in the extender's node cache.

Two plug-ins share this code (issue 33): ``eams``, the extender without a window (every pod gets
its single-pod bid score), and ``eams-batch`` (``eams_batch.py``), the extender with the study's
window W (``params.extender_window_ms``, 200 ms): each pod is announced on ``/pending`` at its
arrival, as the pod watch would, and the extender's own batcher clears the pods pending together —
when kube-scheduler asks about one of them, or W after the first arrived. The extender runs on a
:class:`~eams.scheduler.extender.clock.ManualClock` that this plug-in moves to each simulated
instant (the pod updates of the instant before posted first), so every window closes at its
simulated instant and two replays clear the same batches; the clearing has no wall-clock budget
(``clearing_budget_ms: None``), only the engine's deterministic round cap.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from eams.calibrate.calfile import Calibration, FitSummary, save_calibration
from eams.calibrate.fit import fit_linear
from eams.scheduler.extender.clock import ManualClock
from eams.scheduler.policies._kube import least_allocated
from eams.scheduler.policies.base import (
    LEVELS,
    Cluster,
    NodeState,
    Params,
    ScoringPolicy,
    Workload,
    WorkloadPod,
)
from eams.scheduler.policies.eams.extender_client import ExtenderClient
from eams.scheduler.policies.eams.kube_objects import (
    EPOCH_S,
    node_list,
    node_object,
    pod_key,
    pod_object,
    telemetry,
)

NAME = "eams"
FINISHED_NODE = "eams-bench-finished"
MAX_NODE_SCORE_PER_EXTENDER_POINT = 10  # MaxNodeScore / MaxExtenderPriority (100 / 10)
HERD_SETTLE_S = 0.0
"""The extender's ``herd_settle_s`` here, s: how long after a clearing a node's sample shows the
pod (``herding.py``). A cluster's pod starts seconds after its binding (10 s, the default); the
emulated agent reports the simulator's power, which counts a pod from its binding, and a pod
binds in the pass that clears it. With 10 s, a bound pod's reservation outlived its binding by
10-24 s (the next sample 10 s after the clearing; one every ``telemetry_period_s``), counting
its power twice: in a 100-node cut of issue 33's band (rho 0.85, seed 2), 174 of the 178 pods
eams-batch+pm held for a wake had an awake candidate kept under the floor only by them."""


def write_calibrations(cluster: Cluster, folder: Path) -> None:
    """One calibration file per node: the calibration fit of its measured curve, speed, and its
    sleep state when the cluster has one (``Cluster.power_states``: schema 2's
    ``power_states``)."""
    made: dict[tuple[float, ...], FitSummary] = {}
    created = datetime.fromtimestamp(EPOCH_S, UTC)
    for n, name in enumerate(cluster.names):
        points = tuple(float(p) for p in cluster.curves.points_w[n])
        if points not in made:
            made[points] = FitSummary.from_result(fit_linear(LEVELS, np.asarray(points)))
        calibration = Calibration(
            node=name,
            created_at=created,
            meter="snmp://127.0.0.1:161",  # simulated outlet (no real meter)
            outlet=1,
            fit=made[points],
            p_active_idle_w=points[0],
            speed=float(cluster.speed[n]),
        )
        if cluster.power_states is not None:
            calibration = calibration.with_power_states(cluster.power_states[n])
        save_calibration(calibration, folder / f"{name}.json")


def create_extender(
    cluster: Cluster,
    clock: ManualClock,
    folder: Path,
    window_ms: float = 0.0,
    market_wakes: bool = True,
):
    """The extender app (active mode, no wall-clock clearing budget, the emulated agent's
    :data:`HERD_SETTLE_S`) for ``cluster``, its calibrations written to ``folder``, on
    ``clock``, with batch window ``window_ms`` (0: none) and its setting ``market_wakes``
    (issue 34: it prices asleep nodes and holds a pod for the one it cleared the pod onto; it
    can only with the nodes' sleep state in their calibrations).
    """
    from eams.scheduler.extender.app import create_app
    from eams.scheduler.extender.settings import Settings

    write_calibrations(cluster, folder)
    settings = Settings(
        mode="active",
        window_ms=window_ms,
        calibrations_dir=folder,
        clearing_budget_ms=None,
        market_wakes=market_wakes,
        herd_settle_s=HERD_SETTLE_S,
    )
    return create_app(settings, clock)


class ExtenderPolicy(ScoringPolicy):
    """kube-scheduler with the EAMS extender (see the module docstring).

    Parameters
    ----------
    cluster : Cluster
    client : ExtenderClient
    weight : int
        Extender ``weight``.
    telemetry_period_s : float
    clock : ManualClock, optional
        The in-process extender's clock (epoch s), moved to each simulated instant; ``None``
        for an extender in its own process (telemetry is then stamped with wall time).
    announce : bool
        Post each pod on ``/pending`` when it arrives (the pod watch's view: a batching
        extender clears the pods pending together); needs ``clock``.
    """

    name = NAME
    batched = True

    def __init__(
        self,
        cluster: Cluster,
        client: ExtenderClient,
        weight: int,
        telemetry_period_s: float,
        clock: ManualClock | None = None,
        announce: bool = False,
    ) -> None:
        self.cluster = cluster
        self.client = client
        self.weight = weight
        self.period_s = telemetry_period_s
        self.index = {name: n for n, name in enumerate(cluster.names)}
        self.workload: Workload | None = None
        self.reported_at = np.full(cluster.size, -np.inf)
        self.reported_cpu = np.full(cluster.size, np.nan)
        self.pod_updates: list[dict] = []
        self.arrivals = False  # an arrival is among pod_updates
        self.clock = clock
        self.announce = announce and clock is not None
        self.client.post("/nodes", node_list(cluster))
        self.cleanup: tempfile.TemporaryDirectory | None = None
        self.pod_index: dict[str, int] = {}  # namespace/name → pod index
        self.wakes: dict[int, int] = {}  # pending pod → the asleep node the extender asked for
        self.node_updates: dict[int, str | None] = {}  # node → power state, not posted yet

    @property
    def stats(self) -> dict[str, float]:
        """The client's failed calls by verb (``filter``, ``prioritize``, ``other``) and, for an
        in-process extender, its clearings from its own metrics: ``clearings`` (every clearing
        the auction ran: batch windows and re-clearings of pods still pending; none with window
        0, the single-pod bid score), ``pods_cleared`` (pods over all of them, a pod cleared
        again counted again; their ratio is the mean batch) and ``single_pod_clearings``
        (clearings of one pod)."""
        stats: dict[str, float] = dict(self.client.failures)
        if self.client.app is not None:
            registry = self.client.app.state.extender.metrics.registry
            for key, sample, labels in (
                ("clearings", "eams_extender_clearings_total", None),
                ("pods_cleared", "eams_extender_batch_pods_sum", None),
                ("single_pod_clearings", "eams_extender_batch_pods_bucket", {"le": "1.0"}),
            ):
                stats[key] = registry.get_sample_value(sample, labels) or 0.0
        return stats

    def start(self, workload: Workload) -> None:
        """Remember the workload whose pods the emulator will show."""
        self.workload = workload
        self.pod_index = {pod_key(WorkloadPod.of(workload, j)): j for j in range(workload.size)}

    def wake_requested(self, request: Any) -> None:
        """The extender's ``on_wake_request`` (a ``WakeRequest``: ``node``, ``pods`` as
        ``namespace/name``, ``at_s``): each pod, while pending, asks for that node's wake
        (:meth:`wake_requests`; a later request for the pod replaces it); a pod the node's
        request no longer lists (bound, withdrawn, cleared again) asks for it no more."""
        node = self.index.get(request.node)
        if node is None:
            return
        listed = {self.pod_index[key] for key in request.pods if key in self.pod_index}
        for pod in [p for p, n in self.wakes.items() if n == node and p not in listed]:
            del self.wakes[pod]
        self.wakes.update(dict.fromkeys(listed, node))

    def wake_requests(self) -> Mapping[int, int]:
        """Pending pod → the asleep node the extender cleared it onto and asked woken."""
        return self.wakes

    def power_changed(self, node: int, state: str | None) -> None:
        """Queue the node's object with its power-state taint and annotation for ``POST
        /nodes`` before the next pass (the node watch's view)."""
        self.node_updates[node] = state

    def _flush(self) -> None:
        """Post the pod updates queued so far (``/pending``)."""
        if self.pod_updates:
            self.client.post("/pending", {"metadata": {}, "items": self.pod_updates})
            self.pod_updates = []
            self.arrivals = False

    def _at(self, now_s: float) -> None:
        """Move the extender's clock to the simulated instant ``now_s`` (s), closing every batch
        window due on the way at its own instant; announcing, the updates of the earlier
        instant are posted first, at that instant."""
        if self.clock is None:
            return
        at_s = EPOCH_S + now_s
        if self.announce and at_s > self.clock.now_s:
            due_s = self.clock.next_due_s()
            # an arrival starts a window only when none is open; a window that closes on the
            # way must see every update before it: otherwise the updates can wait (fewer posts)
            if (self.arrivals and due_s is None) or (due_s is not None and due_s <= at_s):
                self._flush()
        self.clock.advance_to(at_s)

    def arrived(self, pod: WorkloadPod, now_s: float) -> None:
        """Announcing: queue the pending pod for ``/pending`` at its arrival instant."""
        if self.announce:
            self._at(now_s)
            self.pod_updates.append(self._pod(pod))
            self.arrivals = True

    def observe(self, state: NodeState) -> None:
        """Post the nodes whose power state changed, flush pod updates and the telemetry that
        is due from the awake nodes' agents."""
        self._at(state.now_s)
        if self.node_updates:
            items = [node_object(self.cluster, n, s) for n, s in sorted(self.node_updates.items())]
            self.client.post("/nodes", {"metadata": {}, "items": items})
            self.node_updates = {}
        self._flush()
        due = (state.now_s - self.reported_at >= self.period_s) | (
            self.reported_cpu != state.alloc_cpu
        )
        nodes = np.flatnonzero(due & state.awake)  # an asleep node's agent does not report
        if nodes.size:
            # a real extender process ages samples on its own wall clock
            stamp = self.clock() if self.clock is not None else time.time()
            self.client.post("/telemetry", {"samples": telemetry(state, list(nodes), stamp)})
            self.reported_at[nodes] = state.now_s
            self.reported_cpu[nodes] = state.alloc_cpu[nodes]

    def _pod(self, pod: WorkloadPod, node: str | None = None) -> dict:
        assert self.workload is not None, "start() sets the workload before any pod"
        return pod_object(self.workload, pod, node)

    def filter(
        self, pod: WorkloadPod, candidates: NDArray[np.int64], state: NodeState
    ) -> NDArray[np.int64]:
        """The candidates the extender's ``/filter`` lets through."""
        names = [self.cluster.names[n] for n in candidates]
        passed = self.client.filter(self._pod(pod), names)
        return np.asarray([self.index[n] for n in passed], dtype=np.int64)

    def score(
        self, pod: WorkloadPod, candidates: NDArray[np.int64], state: NodeState
    ) -> NDArray[np.float64]:
        """In-tree LeastAllocated + extender score × weight × 10 (kube-scheduler's sum)."""
        names = [self.cluster.names[n] for n in candidates]
        extender = self.client.prioritize(self._pod(pod), names)
        bonus = np.array([extender.get(n, 0) for n in names], dtype=float)
        return least_allocated(pod, candidates, state) + bonus * self.weight * (
            MAX_NODE_SCORE_PER_EXTENDER_POINT
        )

    def bound(self, pod: WorkloadPod, node: int) -> None:
        """Queue the bind for the next ``/pending`` post; the pod's wake request is done."""
        self.pod_updates.append(self._pod(pod, self.cluster.names[node]))
        self.wakes.pop(pod.index, None)

    def completed(self, pod: WorkloadPod, node: int, now_s: float) -> None:
        """Queue the completion (see the module docstring) at ``now_s``."""
        self._at(now_s)
        finished = self._pod(pod, FINISHED_NODE)
        finished["status"]["phase"] = "Succeeded"
        self.pod_updates.append(finished)

    def close(self) -> None:
        """Close the client and remove the calibration folder."""
        self.client.close()
        if self.cleanup is not None:
            self.cleanup.cleanup()


def make(
    cluster: Cluster,
    params: Params,
    seed: int,
    window_ms: float = 0.0,
    market_wakes: bool = True,
) -> ExtenderPolicy:
    """EAMS through an in-process extender (direct ASGI calls) on the simulated clock, with
    batch window ``window_ms`` (0: the single-pod bid score; ``eams_batch.py`` passes
    ``params.extender_window_ms``) and ``market_wakes`` (``eams_no_wakes.py`` turns it off): its
    wake requests go to the policy's :meth:`~ExtenderPolicy.wake_requested`."""
    folder = tempfile.TemporaryDirectory(prefix="eams-bench-cal-")
    clock = ManualClock(EPOCH_S)
    app = create_extender(cluster, clock, Path(folder.name), window_ms, market_wakes)
    client = ExtenderClient("http://extender", app=app, timeout_s=params.extender_timeout_s)
    policy = ExtenderPolicy(
        cluster,
        client,
        params.extender_weight,
        params.telemetry_period_s,
        clock,
        announce=window_ms > 0,
    )
    policy.cleanup = folder
    app.state.extender.on_wake_request = policy.wake_requested
    return policy
