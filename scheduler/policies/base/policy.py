"""What a scheduler plug-in (``eams.scheduler.policies.<name>``) gives the bench's cycle emulator
(:mod:`eams.scheduler.bench.simulator`), and what it is given.

Two kinds, matching the two ways the baselines decide:

* :class:`ScoringPolicy` — kube-scheduler style, one pod per cycle. The emulator filters the
  nodes (:mod:`eams.scheduler.bench.predicates`), asks :meth:`ScoringPolicy.score` for a score
  per feasible node (0–100, the framework's ``MaxNodeScore``; floored to integers like the
  framework's int64 scores) and binds the best, breaking ties at random with the run's seeded
  generator, as kube-scheduler's ``selectHost`` does. :meth:`ScoringPolicy.filter` lets a
  policy narrow the feasible set further (the extender's ``/filter``).
* :class:`BatchPolicy` — decides a batch of pending pods jointly (MILP); the emulator collects
  pods over ``batch_window_s`` and passes the batch's feasibility matrix.

Every policy sees the same :class:`NodeState` and each pending pod as a :class:`WorkloadPod`;
none may place a pod on an infeasible node (the emulator checks each decision again, and an
independent checker replays every placement).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from eams.scheduler.policies.base.cluster import Cluster
from eams.scheduler.policies.base.workload import Workload


@dataclass
class NodeState:
    """The live state of the simulated nodes (arrays of length N), updated by the emulator.

    Attributes
    ----------
    cluster : Cluster
    alloc_cpu : (N,) float, cores allocated to running pods
    alloc_mem_mib : (N,) float, MiB allocated
    pods_on : (N,) int, running pods per node
    power_w : (N,) float, W, what each node draws now (its measured curve when awake; its
        sleep or transition draw under a power manager): what its agent would meter
    awake : (N,) bool, the node is awake and takes pods (under a power manager an asleep,
        waking or suspending node is tainted ``eams.io/asleep`` and the emulator's filter
        leaves it out)
    now_s : float, simulated time (s)
    """

    cluster: Cluster
    alloc_cpu: NDArray[np.float64]
    alloc_mem_mib: NDArray[np.float64]
    pods_on: NDArray[np.int64]
    power_w: NDArray[np.float64]
    awake: NDArray[np.bool_]
    now_s: float = 0.0

    @classmethod
    def empty(cls, cluster: Cluster) -> NodeState:
        """All nodes awake and empty at t = 0, drawing their measured active idle."""
        n = cluster.size
        idle_w = cluster.curves.power_all_w(np.zeros(n))
        zeros = np.zeros(n, dtype=np.int64)
        return cls(cluster, np.zeros(n), np.zeros(n), zeros, idle_w, np.ones(n, dtype=bool))

    @property
    def free_cpu(self) -> NDArray[np.float64]:
        """Free cores per node, shape (N,)."""
        return self.cluster.cores - self.alloc_cpu

    @property
    def free_mem_mib(self) -> NDArray[np.float64]:
        """Free memory per node (MiB), shape (N,)."""
        return self.cluster.mem_mib - self.alloc_mem_mib

    @property
    def free_slots(self) -> NDArray[np.int64]:
        """Free pod slots per node, shape (N,)."""
        return self.cluster.max_pods - self.pods_on

    @property
    def utilisation(self) -> NDArray[np.float64]:
        """Allocated fraction of each node's cores, shape (N,) (pods use their full request)."""
        return self.alloc_cpu / self.cluster.cores


@dataclass(frozen=True)
class WorkloadPod:
    """Pod ``index`` of the replayed :class:`Workload` as a policy sees it: cpu (cores) and
    memory (MiB) requests, ``duration_s`` at speed 1, tenant."""

    index: int
    name: str
    cpu: float
    mem_mib: float
    duration_s: float
    tenant: int

    @classmethod
    def of(cls, workload: Workload, j: int) -> WorkloadPod:
        """Pod ``j`` of ``workload``."""
        return cls(
            j,
            workload.names[j],
            float(workload.cpu[j]),
            float(workload.mem_mib[j]),
            float(workload.duration_s[j]),
            int(workload.tenant[j]),
        )


class ScoringPolicy:
    """Base of per-pod scoring plug-ins (see the module docstring)."""

    name: str = ""

    def filter(
        self, pod: WorkloadPod, candidates: NDArray[np.int64], state: NodeState
    ) -> NDArray[np.int64]:
        """Narrow the feasible ``candidates`` (node indices); the default keeps all."""
        return candidates

    def score(
        self, pod: WorkloadPod, candidates: NDArray[np.int64], state: NodeState
    ) -> NDArray[np.float64]:
        """Score each candidate node, shape (len(candidates),), 0–100 (higher is better)."""
        raise NotImplementedError

    batched: bool = False
    """Hold pods for ``batch_window_s`` before a pass (a batching scheduler such as EAMS)."""

    def start(self, workload: Workload) -> None:
        """Called once before the replay with the workload it will see."""

    def arrived(self, pod: WorkloadPod, now_s: float) -> None:
        """Called when ``pod`` arrives (``now_s``, simulated s) and fits some node, before the
        pass that considers it (a pod watch's view: EAMS's extender batches pods from here)."""

    def observe(self, state: NodeState) -> None:
        """Called before each scheduling pass (telemetry for policies that read it)."""

    def bound(self, pod: WorkloadPod, node: int) -> None:
        """Called when the emulator binds ``pod`` to ``node``."""

    def completed(self, pod: WorkloadPod, node: int, now_s: float) -> None:
        """Called when ``pod`` finishes on ``node`` at ``now_s`` (simulated s)."""

    def power_changed(self, node: int, state: str | None) -> None:
        """Under the bench's power manager: ``node``'s power state changed to ``state``, the
        value of its ``eams.io/power-state`` annotation (``suspending``, ``asleep``,
        ``waking``, ``asleep-suspect``; the node is then tainted ``eams.io/asleep``), ``None``
        once it is awake again (what a node watch would show; before the next pass)."""

    def wake_requests(self) -> Mapping[int, int]:
        """The wakes this policy asks the power manager for: pending pod index → the asleep
        node (index) it cleared the pod onto (the extender's wake requests, issue 34); read
        before every call of the manager. Default: none."""
        return {}

    def close(self) -> None:
        """Release resources (HTTP clients)."""


class BatchPolicy:
    """Base of batch plug-ins (see the module docstring)."""

    name: str = ""
    stats: dict[str, int]

    def assign(
        self,
        pods: list[WorkloadPod],
        feasible: NDArray[np.bool_],
        state: NodeState,
    ) -> NDArray[np.int64]:
        """Assign a batch.

        Parameters
        ----------
        pods : list of WorkloadPod, length J
        feasible : (J, N) bool, the filter predicates on the current state
        state : NodeState

        Returns
        -------
        (J,) int, node index per pod or −1 (left pending). The assignment must respect every
        node's free cpu, memory and pod slots jointly.
        """
        raise NotImplementedError

    def observe(self, state: NodeState) -> None:
        """Called before each scheduling pass."""

    def close(self) -> None:
        """Release resources."""
