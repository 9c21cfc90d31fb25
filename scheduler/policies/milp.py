"""MILP per batch: minimum total marginal energy, solved by HiGHS through ``scipy.optimize.milp``.

Source: the study's central-planner baseline (§7 allocation trade study, §9: "MILP with a 1 s
budget per batch"; the study names CP-SAT, this project uses HiGHS, DESIGN.md §5). For a batch
of J pending pods and, per pod, its ``milp_candidates_per_pod`` feasible nodes of lowest marginal
energy (to bound the model size), with binaries x_jn::

    minimise   Σ (ΔE_jn − M)·x_jn          ΔE_jn: study §5.1 with the fitted linear model
    subject to Σ_n x_jn ≤ 1                      each pod at most once
               Σ_j c_j x_jn ≤ free cpu_n,  Σ_j m_j x_jn ≤ free memory_n,  Σ_j x_jn ≤ free slots_n

M exceeds every ΔE, so placing more pods always comes first. When every pod's own lowest-ΔE
node can take it at once, that assignment is optimal (the objective is separable and at its
lower bound) and the solver is not called. The wake-up term of ΔE is charged
per pod (a linearisation: two pods waking the same node both pay it). HiGHS stops at
``milp_time_limit_s``; its best feasible solution is used, and if it has none the batch falls
back to greedy lowest-ΔE placement (counted in ``stats['fallbacks']``)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import coo_array

from eams.calibrate.energy import EnergyModel
from eams.scheduler.policies.base import BatchPolicy, Cluster, NodeState, Params, WorkloadPod

NAME = "milp"


class EnergyMilp(BatchPolicy):
    """The batch MILP (see the module docstring)."""

    name = NAME

    def __init__(self, time_limit_s: float, candidates_per_pod: int) -> None:
        self.time_limit_s = time_limit_s
        self.candidates_per_pod = candidates_per_pod
        self.stats = {"solves": 0, "fallbacks": 0, "time_limit_hits": 0}

    def assign(
        self, pods: list[WorkloadPod], feasible: NDArray[np.bool_], state: NodeState
    ) -> NDArray[np.int64]:
        """Assign the batch (see :meth:`BatchPolicy.assign`)."""
        cols_pod: list[int] = []
        cols_node: list[int] = []
        cost: list[float] = []
        for j, pod in enumerate(pods):
            nodes = np.flatnonzero(feasible[j])
            if nodes.size == 0:
                continue
            delta = marginal_energy_j(pod, nodes, state)
            keep = np.argsort(delta, kind="stable")[: self.candidates_per_pod]
            cols_pod.extend([j] * keep.size)
            cols_node.extend(nodes[keep])
            cost.extend(delta[keep])
        result = np.full(len(pods), -1, dtype=np.int64)
        if not cost:
            return result
        pod_of = np.asarray(cols_pod)
        node_of = np.asarray(cols_node, dtype=np.int64)
        delta_e = np.asarray(cost)
        best = _own_minimum(len(pods), pod_of, node_of, delta_e)
        if _fits_jointly(pods, best, pod_of, node_of, state):
            result[pod_of[best]] = node_of[best]  # separable objective at its lower bound
            return result
        chosen = self._solve(pods, pod_of, node_of, delta_e, state)
        if chosen is None:
            self.stats["fallbacks"] += 1
            return _greedy(pods, pod_of, node_of, delta_e, state)
        result[pod_of[chosen]] = node_of[chosen]
        return result

    def _solve(self, pods, pod_of, node_of, delta_e, state) -> NDArray[np.int64] | None:
        k = delta_e.size
        nodes, node_row = np.unique(node_of, return_inverse=True)
        cpu = np.array([p.cpu for p in pods])[pod_of]
        mem = np.array([p.mem_mib for p in pods])[pod_of]
        cols = np.arange(k)
        once = coo_array((np.ones(k), (pod_of, cols)), shape=(len(pods), k))
        cap_cpu = coo_array((cpu, (node_row, cols)), shape=(nodes.size, k))
        cap_mem = coo_array((mem, (node_row, cols)), shape=(nodes.size, k))
        cap_slot = coo_array((np.ones(k), (node_row, cols)), shape=(nodes.size, k))
        constraints = [
            LinearConstraint(once, -np.inf, 1),
            LinearConstraint(cap_cpu, -np.inf, state.free_cpu[nodes] + 1e-9),
            LinearConstraint(cap_mem, -np.inf, state.free_mem_mib[nodes] + 1e-9),
            LinearConstraint(cap_slot, -np.inf, state.free_slots[nodes]),
        ]
        big_m = 10.0 * float(delta_e.max()) + 1.0
        self.stats["solves"] += 1
        res = milp(
            (delta_e - big_m) / big_m,  # scaled to O(1) for the solver's tolerances
            constraints=constraints,
            integrality=np.ones(k),
            bounds=Bounds(0, 1),
            options={"time_limit": self.time_limit_s},
        )
        if res.status == 1:
            self.stats["time_limit_hits"] += 1
        if res.x is None:
            return None
        return np.flatnonzero(res.x > 0.5)


def marginal_energy_j(
    pod: WorkloadPod, nodes: NDArray[np.int64], state: NodeState
) -> NDArray[np.float64]:
    """ΔE of ``pod`` on each of ``nodes`` with the fitted lines (study §5.1,
    :meth:`eams.calibrate.energy.EnergyModel.marginal_energy_j`): the pod's ``duration_s`` is its
    runtime at speed 1, a node without running pods is empty (pays its wake power).

    Returns
    -------
    (len(nodes),) float, joules
    """
    c = state.cluster
    wake_w = None if c.p_wake_w is None else c.p_wake_w[nodes]
    model = EnergyModel(c.p_idle_w[nodes], c.p_max_w[nodes], c.cores[nodes], c.speed[nodes], wake_w)
    return model.marginal_energy_j(pod.cpu, pod.duration_s, state.pods_on[nodes] == 0)


def _own_minimum(j: int, pod_of, node_of, delta_e) -> NDArray[np.int64]:
    """Column of each pod's lowest-ΔE candidate, for pods that have one."""
    order = np.lexsort((delta_e, pod_of))
    first = np.ones(order.size, dtype=bool)
    first[1:] = pod_of[order][1:] != pod_of[order][:-1]
    return order[first]


def _fits_jointly(pods, columns, pod_of, node_of, state) -> bool:
    """Whether every pod can take its own best node at once (then that is the optimum)."""
    nodes = node_of[columns]
    size = state.cluster.size
    cpu = np.bincount(nodes, weights=[pods[j].cpu for j in pod_of[columns]], minlength=size)
    mem = np.bincount(nodes, weights=[pods[j].mem_mib for j in pod_of[columns]], minlength=size)
    slots = np.bincount(nodes, minlength=size)
    return bool(
        np.all(cpu[nodes] <= state.free_cpu[nodes] + 1e-9)
        and np.all(mem[nodes] <= state.free_mem_mib[nodes] + 1e-9)
        and np.all(slots[nodes] <= state.free_slots[nodes])
    )


def _greedy(pods, pod_of, node_of, delta_e, state) -> NDArray[np.int64]:
    """Lowest-ΔE first, respecting capacity as pods are added."""
    free_cpu = state.free_cpu.copy()
    free_mem = state.free_mem_mib.copy()
    free_slots = state.free_slots.copy()
    result = np.full(len(pods), -1, dtype=np.int64)
    for col in np.argsort(delta_e, kind="stable"):
        j, n = pod_of[col], node_of[col]
        pod = pods[j]
        fits = free_cpu[n] + 1e-9 >= pod.cpu and free_mem[n] + 1e-9 >= pod.mem_mib
        if result[j] < 0 and fits and free_slots[n] >= 1:
            result[j] = n
            free_cpu[n] -= pod.cpu
            free_mem[n] -= pod.mem_mib
            free_slots[n] -= 1
    return result


def make(cluster: Cluster, params: Params, seed: int) -> EnergyMilp:
    """The batch MILP with the manifest's time limit and candidate cap."""
    return EnergyMilp(params.milp_time_limit_s, params.milp_candidates_per_pod)
