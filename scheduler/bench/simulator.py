"""The discrete-event simulated cluster and the scheduling-cycle emulator.

Events are pod arrivals and completions. After the events of one instant, the emulator runs a
scheduling pass over the pending pods in arrival order (kube-scheduler's active queue):

1. **Filter** — the same predicates for every scheduler (:mod:`.predicates`): resources,
   taints/tolerations, nodeSelector; then the policy's own ``filter`` (the extender's ``/filter``).
   Per-pod schedulers, like kube-scheduler, stop the search once ``numFeasibleNodesToFind``
   feasible nodes are found, starting where the previous search stopped (:func:`feasible_to_find`).
2. **Score** — :class:`~.policy.ScoringPolicy`: best score wins, seeded random tie-break; one
   feasible node is taken without scoring (kube-scheduler skips prioritize then).
   :class:`~.policy.BatchPolicy`: the pass runs ``batch_window_s`` after the triggering event
   and hands batches of pods to the policy.
3. **Bind** — the node's allocation and power change; the completion is scheduled at
   ``start + duration / speed``.

A pod that fits no node even on the empty cluster is *unschedulable*: it is recorded with a
kube-style reason and never dropped silently. A pod that fits but finds no room waits (its wait
counts in its completion time). Energy is integrated exactly: between events every node's draw
is constant, so E = Σ P_n·Δt; an awake node draws its measured curve at its utilisation (an
empty one its measured active idle).

Under a power manager (:class:`~.power_manager.SimPowerManager`) the policy is asked after every
instant's events and at the instants it names; a node that is asleep, waking or suspending
draws its state's power and is filtered out (tainted ``eams.io/asleep``), so pods that need a
wake wait for it; the run ends at the last pod's completion, as without a manager. A scoring
policy is told each node's power state as it changes (:meth:`~.policy.ScoringPolicy.power_changed`)
and its wake requests (:meth:`~.policy.ScoringPolicy.wake_requests`) go to the manager each time
it is asked (issue 34: the market's wakes); a pod its filter holds (no node) stays pending and
is asked again at the next pass, e.g. the one after its node became Ready.
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from eams.scheduler.bench.power_manager import SimPowerManager
from eams.scheduler.bench.predicates import resource_fit, static_masks
from eams.scheduler.policies.base import (
    BatchPolicy,
    Cluster,
    NodeState,
    ScoringPolicy,
    Workload,
    WorkloadPod,
)

_COMPLETE, _ARRIVE, _PASS, _POWER, _CHECK = 0, 1, 2, 3, 4
MIN_FEASIBLE_NODES = 100
STALL_S = 2 * 86_400.0
"""With a power manager, a run whose last pods can never be placed stops this long (simulated)
after its last pod event; those pods are reported unschedulable."""


def feasible_to_find(n_nodes: int, percentage: int) -> int:
    """kube-scheduler's ``numFeasibleNodesToFind`` (``schedule_one.go``): every node below 100
    nodes or at 100 %; else ``percentage`` (0 = adaptive max(5, 50 − N/125)) of N, at least 100.
    """
    if n_nodes < MIN_FEASIBLE_NODES or percentage >= 100:
        return n_nodes
    pct = percentage or max(5, 50 - n_nodes // 125)
    return max(n_nodes * pct // 100, MIN_FEASIBLE_NODES)


@dataclass
class Replay:
    """What one simulated run produced (inputs for :mod:`.metrics`).

    Attributes
    ----------
    node : (J,) int, node of each pod, −1 when never placed
    start_s, finish_s : (J,) float, NaN when never placed
    unschedulable : dict pod index → reason
    energy_j : float, joules over [0, last completion]
    energy_window_j : float, joules over the arrival window [0, last arrival]
    makespan_s : float
    log : list of (time_s, +1 bind / −1 completion, pod, node), chronological
    decision_wall_s : list of float, wall-clock time of each scheduling decision (s)
    extender_filtered : int, pods the policy's own filter left with no node, summed over passes
    power : dict, the power manager's figures (:meth:`SimPowerManager.summary`); empty without
    wake_wait_s : dict pod index → s, pods that waited for a node to wake: arrival to bind on
        the node, bound in the pass right after it became Ready
    market_held_pods : int, pods the policy asked the power manager to wake a node for (its
        :meth:`~ScoringPolicy.wake_requests`: the market held them for an asleep node)
    """

    node: NDArray[np.int64]
    start_s: NDArray[np.float64]
    finish_s: NDArray[np.float64]
    unschedulable: dict[int, str]
    energy_j: float = 0.0
    energy_window_j: float = 0.0
    makespan_s: float = 0.0
    log: list[tuple[float, int, int, int]] = field(default_factory=list)
    decision_wall_s: list[float] = field(default_factory=list)
    extender_filtered: int = 0
    power: dict[str, float | int | None] = field(default_factory=dict)
    wake_wait_s: dict[int, float] = field(default_factory=dict)
    market_held_pods: int = 0


class _Sim:
    def __init__(
        self,
        cluster: Cluster,
        workload: Workload,
        policy,
        seed: int,
        window_s: float,
        sample_pct: int = 100,
        power: SimPowerManager | None = None,
    ):
        self.c, self.w, self.policy = cluster, workload, policy
        self.rng = np.random.default_rng([seed, 4])
        self.batched = isinstance(policy, BatchPolicy) or getattr(policy, "batched", False)
        self.window_s = window_s if self.batched else 0.0
        self.state = NodeState.empty(cluster)
        self.pm = power
        if power is not None:
            self.state.awake = power.awake  # the manager's array: it changes the states
        self.masks = static_masks(workload.profiles, cluster.meta)
        j = workload.size
        self.out = Replay(
            np.full(j, -1, dtype=np.int64), np.full(j, np.nan), np.full(j, np.nan), {}
        )
        self.power_w = self.state.power_w
        self.total_w = float(self.power_w.sum())
        self.remaining = workload.size
        self.pod_events = 0
        self.last_pod_event_s = 0.0
        self.check_at = np.inf
        self.window_end_s = float(workload.arrival_s.max(initial=0.0))
        self.managed_at = -np.inf
        self.now = 0.0
        self.pending: list[int] = []
        self.events: list[tuple[float, int, int, int]] = []
        self.seq = 0
        self.pass_at: float | None = None
        self.to_find = feasible_to_find(cluster.size, sample_pct)
        self.next_start = 0
        self.told: dict[int, str | None] = {}  # node → the power state the policy was told
        self.held: set[int] = set()  # pods the policy asked a wake for

    def push(self, t: float, kind: int, pod: int) -> None:
        heapq.heappush(self.events, (t, kind, self.seq, pod))
        self.seq += 1

    def advance(self, t: float) -> None:
        if self.now < self.window_end_s <= t:
            self.out.energy_window_j = self.out.energy_j + self.total_w * (
                self.window_end_s - self.now
            )
        self.out.energy_j += self.total_w * (t - self.now)
        self.now = t
        self.state.now_s = t

    def set_node(self, n: int, pod: int, sign: int) -> None:
        s = self.state
        s.alloc_cpu[n] += sign * self.w.cpu[pod]
        s.alloc_mem_mib[n] += sign * self.w.mem_mib[pod]
        s.pods_on[n] += sign
        if s.pods_on[n] == 0:
            s.alloc_cpu[n] = s.alloc_mem_mib[n] = 0.0  # no float residue on an empty node
        self.set_power(n)
        self.out.log.append((self.now, sign, pod, n))

    def set_power(self, n: int) -> None:
        """Node ``n``'s draw after a change: its curve when awake, else its state's power."""
        draw = self.pm.draw_w(n) if self.pm is not None else None
        u = self.state.alloc_cpu[n] / self.c.cores[n]
        new = self.c.curves.power_w(n, u) if draw is None else draw
        self.total_w += new - self.power_w[n]
        self.power_w[n] = new

    def bind(self, pod: int, n: int) -> None:
        self.set_node(n, pod, +1)
        self.out.node[pod] = n
        self.out.start_s[pod] = self.now
        if self.pm is not None:
            self.pm.pod_bound(n, pod)
            ready = self.pm.ready_at_s[n]
            if self.w.arrival_s[pod] < ready and self.now - ready <= self.window_s + 1e-9:
                self.out.wake_wait_s[pod] = self.now - float(self.w.arrival_s[pod])
        finish = self.now + self.w.duration_s[pod] / self.c.speed[n]
        self.out.finish_s[pod] = finish
        self.push(finish, _COMPLETE, pod)

    def never_fits(self, pod: int) -> str | None:
        w, c = self.w, self.c
        static = self.masks[w.profile[pod]]
        cpu_ok = c.cores + 1e-9 >= w.cpu[pod]
        mem_ok = c.mem_mib + 1e-9 >= w.mem_mib[pod]
        if np.any(static & cpu_ok & mem_ok):
            return None
        return (
            f"0/{c.size} nodes are available: {int((~cpu_ok).sum())} Insufficient cpu, "
            f"{int((~mem_ok).sum())} Insufficient memory, "
            f"{int((~static).sum())} untolerated taint or node selector mismatch"
        )

    def feasible(self, pod: int) -> NDArray[np.bool_]:
        s = self.state
        fit = resource_fit(
            self.w.cpu[pod], self.w.mem_mib[pod], s.free_cpu, s.free_mem_mib, s.free_slots
        )
        ok = self.masks[self.w.profile[pod]] & fit
        return ok & self.pm.awake if self.pm is not None else ok

    def candidates(self) -> NDArray[np.int64]:
        if not self.pending:
            return np.zeros(0, dtype=np.int64)
        s = self.state
        pend = np.asarray(self.pending, dtype=np.int64)
        ok = (self.w.cpu[pend] <= s.free_cpu.max() + 1e-9) & (
            self.w.mem_mib[pend] <= s.free_mem_mib.max() + 1e-9
        )
        return pend[ok]

    def prune(self, cand: NDArray[np.int64], i: int) -> NDArray[np.int64]:
        """Pod cand[i] fits nowhere: drop later pods at least as large with its constraints."""
        j, rest = cand[i], cand[i + 1 :]
        w = self.w
        dominated = ((w.cpu[rest] >= w.cpu[j]) & (w.mem_mib[rest] >= w.mem_mib[j])) & (
            w.profile[rest] == w.profile[j]
        )
        return np.concatenate([cand[: i + 1], rest[~dominated]])

    def search(self, feasible: NDArray[np.bool_]) -> NDArray[np.int64]:
        """Feasible nodes in search order from ``next_start``, at most ``to_find`` of them."""
        n = feasible.size
        if self.to_find >= n:
            return np.flatnonzero(feasible)
        order = np.roll(np.arange(n), -self.next_start)
        hits = np.flatnonzero(feasible[order])
        if hits.size > self.to_find:
            hits = hits[: self.to_find]
            self.next_start = int((self.next_start + hits[-1] + 1) % n)
        return np.sort(order[hits])

    def scoring_pass(self) -> None:
        policy: ScoringPolicy = self.policy
        policy.observe(self.state)
        cand = self.candidates()
        placed = False
        i = 0
        while i < cand.size:
            j = int(cand[i])
            tick = time.perf_counter()
            nodes = self.search(self.feasible(j))
            if nodes.size == 0:
                cand = self.prune(cand, i)
                i += 1
                continue
            pod = WorkloadPod.of(self.w, j)
            nodes = policy.filter(pod, nodes, self.state)
            if nodes.size == 0:
                self.out.extender_filtered += 1
                i += 1
                continue
            if nodes.size == 1:
                choice = int(nodes[0])
            else:
                scores = np.floor(policy.score(pod, nodes, self.state))
                best = np.flatnonzero(scores == scores.max())
                pick = best[self.rng.integers(best.size)] if best.size > 1 else best[0]
                choice = int(nodes[pick])
            self.out.decision_wall_s.append(time.perf_counter() - tick)
            self.bind(j, choice)
            policy.bound(pod, choice)
            placed = True
            i += 1
        if placed:
            self.pending = [p for p in self.pending if self.out.node[p] < 0]

    def batch_pass(self, batch_size: int) -> None:
        policy: BatchPolicy = self.policy
        policy.observe(self.state)
        cand = self.candidates()
        placed = False
        for lo in range(0, cand.size, batch_size):
            chunk = [int(j) for j in cand[lo : lo + batch_size]]
            tick = time.perf_counter()
            feasible = np.stack([self.feasible(j) for j in chunk])
            if not feasible.any():
                continue
            pods = [WorkloadPod.of(self.w, j) for j in chunk]
            choice = policy.assign(pods, feasible, self.state)
            wall = (time.perf_counter() - tick) / len(chunk)
            for j, n in zip(chunk, choice, strict=True):
                if n >= 0 and self.feasible(j)[n]:
                    self.out.decision_wall_s.append(wall)
                    self.bind(j, int(n))
                    placed = True
        if placed:
            self.pending = [p for p in self.pending if self.out.node[p] < 0]

    def manage(self) -> None:
        """Ask the power manager (if any) and apply its decisions now — or, within a tick of
        the last time it was asked, at the tick's end."""
        if self.pm is None:
            return
        due = self.managed_at + self.pm.tick_s
        if self.now < due - 1e-9:
            if due < self.check_at:
                self.check_at = due
                self.push(due, _CHECK, -1)
            return
        self.managed_at = self.now
        wakes = None
        if isinstance(self.policy, ScoringPolicy):
            wakes = self.policy.wake_requests()
            self.held.update(wakes)
        touched, ends, next_check_s = self.pm.step(self.state, self.pending, wakes)
        for n in touched:
            self.set_power(n)
            self.tell_power(n)
        for at_s, n in ends:
            self.push(at_s, _POWER, n)
        if next_check_s is not None and next_check_s < self.check_at:
            self.check_at = next_check_s
            self.push(next_check_s, _CHECK, -1)

    def tell_power(self, n: int) -> None:
        """Tell a scoring policy node ``n``'s power state when it changed (a node watch)."""
        label = self.pm.annotation(n)  # type: ignore[union-attr]
        if label != self.told.get(n) and isinstance(self.policy, ScoringPolicy):
            self.policy.power_changed(n, label)
        self.told[n] = label

    def pod_event(self, done: bool) -> None:
        self.pod_events -= 1
        self.remaining -= done
        self.last_pod_event_s = self.now

    def run(self, batch_size: int) -> Replay:
        if isinstance(self.policy, ScoringPolicy):
            self.policy.start(self.w)
        for j in range(self.w.size):
            self.push(float(self.w.arrival_s[j]), _ARRIVE, j)
        self.pod_events = self.w.size * 2
        while self.events and self.remaining > 0:
            t, kind, _, item = heapq.heappop(self.events)
            self.advance(t)
            if kind == _COMPLETE:
                node = int(self.out.node[item])
                self.set_node(node, item, -1)
                if self.pm is not None:
                    self.pm.pod_left(node, item, t)
                self.pod_event(True)
                if isinstance(self.policy, ScoringPolicy):
                    self.policy.completed(WorkloadPod.of(self.w, item), node, t)
            elif kind == _ARRIVE:
                reason = self.never_fits(item)
                if reason is None:
                    self.pending.append(item)
                    if isinstance(self.policy, ScoringPolicy):
                        self.policy.arrived(WorkloadPod.of(self.w, item), t)
                else:
                    self.out.unschedulable[item] = reason
                    self.pod_events -= 1  # it never completes
                self.pod_event(reason is not None)
            elif kind == _PASS:
                self.pass_at = None
                if isinstance(self.policy, BatchPolicy):
                    self.batch_pass(batch_size)
                else:
                    self.scoring_pass()
                self.manage()
                continue
            elif kind == _POWER:
                self.pm.transition_ends(item, t)  # type: ignore[union-attr]
                self.set_power(item)
                self.tell_power(item)
            elif t >= self.check_at:
                self.check_at = np.inf
            if self.events and self.events[0][0] == t and self.events[0][1] != _PASS:
                continue  # finish this instant's events first
            if not self.batched:
                self.scoring_pass()
            elif self.pass_at is None and self.pending:
                self.pass_at = t + self.window_s
                self.push(self.pass_at, _PASS, -1)
            self.manage()
            if self.pod_events == 0 and t - self.last_pod_event_s > STALL_S:
                break
        for pod in self.pending:
            self.out.unschedulable[pod] = "never placed: the scheduler's filter left no node"
        self.out.makespan_s = self.now
        if self.pm is not None:
            self.out.power = self.pm.summary(self.now, self.c.size)
        self.out.market_held_pods = len(self.held)
        return self.out


def simulate(
    cluster: Cluster,
    workload: Workload,
    policy: ScoringPolicy | BatchPolicy,
    *,
    seed: int,
    batch_window_s: float = 0.2,
    batch_size: int = 64,
    percentage_of_nodes_to_score: int = 100,
    power: SimPowerManager | None = None,
) -> Replay:
    """Replay ``workload`` on ``cluster`` with ``policy``; deterministic for a given ``seed``
    (wall-clock time only enters :attr:`Replay.decision_wall_s`).

    Parameters
    ----------
    cluster, workload : the simulated nodes and pods
    policy : a scheduler plug-in instance
    seed : int, seeds the tie-breaking generator
    batch_window_s : float, s, how long a :class:`BatchPolicy` collects pods before a pass
    batch_size : int, pods per batch handed to a :class:`BatchPolicy`
    percentage_of_nodes_to_score : int, kube-scheduler's setting (0 = adaptive) for per-pod
        policies; 100 (the default here) searches every node
    power : SimPowerManager, optional, the power manager; ``None``: every node stays awake
    """
    sim = _Sim(cluster, workload, policy, seed, batch_window_s, percentage_of_nodes_to_score, power)
    return sim.run(batch_size)
