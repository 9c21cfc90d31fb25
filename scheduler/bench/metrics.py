"""Per-run metrics: energy per unit of work, completion times, fairness, violations, latency.

* ``energy_per_work_j_per_core_s`` — simulated energy (J, on the measured curves) over the work
  done (reference core-seconds, c·t of every placed pod), over the whole replay [0, last
  completion]. J per core-second equals Wh per core-hour.
* ``energy_per_work_window_j_per_core_s`` — the same over the *arrival window* [0, T] (T the
  last arrival): the energy drawn in it over the work done in it. ρ is the offered load of this
  window; after it the replay drains (the last long pods run on an emptying cluster, at a load
  that tends to 0 whatever ρ was), and with empty nodes idling instead of off that drain can
  outweigh the window (ci-small at ρ = 1.3: a 930 s window, a 12,700 s replay). The acceptance
  figures (:mod:`.summary`) use this one.
* ``p95_completion_s`` — 95th percentile of completion time = finish − arrival (wait + run);
  ``mean_wait_s``, ``p95_wait_s`` — mean and 95th percentile of the wait, arrival to start.
* ``jain`` — Jain's index (study §6.2) J(x) = (Σx)² / (m·Σx²) over the m tenants with a quota,
  x_i = tenant i's share of the work done during the arrival window [0, T] divided by its quota
  share. Every pod eventually runs in a drain-to-empty replay, so shares over the whole run are
  trivially equal to demand; the arrival window is where a scheduler can starve a tenant.
* ``violations`` — from :func:`.violations.check_placements`.
* power management — ``sleeps``, ``wakes`` (``market_wakes`` of them for the market's wake
  requests), ``failed_wakes``, ``failed_suspends``,
  ``transitions_per_node_hour`` ((sleeps + wakes) / (N · makespan in hours)),
  ``transition_energy_j`` (drawn while suspending and waking, part of ``energy_j``),
  ``asleep_fraction`` (node-time asleep), ``wake_waited_pods`` (pods bound on a node right
  after it woke, having arrived before it was Ready) and ``p95_wake_wait_s`` (their arrival-to-
  start, p95); all 0 (``None`` for the p95) without a power manager. ``market_held_pods``:
  pods the scheduler held for an asleep node it asked to wake (issue 34's market wakes).
* scheduling latency — wall-clock per decision, reported apart from the deterministic figures.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from eams.scheduler.bench.simulator import Replay
from eams.scheduler.bench.violations import check_placements
from eams.scheduler.policies.base import Cluster, Workload


def jain_index(x: NDArray[np.float64]) -> float | None:
    """Jain's fairness index of ``x`` (m,) ≥ 0: 1 = equal, 1/m = one gets all; ``None`` if empty
    or all zero (study §6.2)."""
    x = np.asarray(x, dtype=float)
    if x.size == 0 or not np.any(x > 0):
        return None
    return float(x.sum() ** 2 / (x.size * np.square(x).sum()))


def window_work(cluster: Cluster, workload: Workload, replay: Replay) -> NDArray[np.float64]:
    """Work each pod did during the arrival window [0, T] (reference core-seconds: cores × the
    node's speed × time run inside the window), shape (J,)."""
    window_end = float(workload.arrival_s[-1])
    placed = replay.node >= 0
    start = np.where(placed, replay.start_s, 0.0)
    finish = np.where(placed, replay.finish_s, 0.0)
    overlap = np.clip(np.minimum(finish, window_end) - start, 0.0, None)
    speed = np.where(placed, cluster.speed[np.maximum(replay.node, 0)], 0.0)
    return workload.cpu * speed * overlap


def tenant_shares(cluster: Cluster, workload: Workload, replay: Replay) -> NDArray[np.float64]:
    """Quota-normalised share x_i of work done by each tenant with a quota during [0, T].

    Returns
    -------
    (m,) float, one entry per tenant whose quota is > 0.
    """
    done = window_work(cluster, workload, replay)
    n_tenants = workload.quotas.size
    per = np.bincount(workload.tenant, weights=done, minlength=n_tenants)
    quota = np.nan_to_num(workload.quotas, nan=0.0)
    has = quota > 0
    total = per[has].sum()
    if total <= 0:
        return np.zeros(int(has.sum()))
    return (per[has] / total) / quota[has]


NO_MANAGER = {
    "sleeps": 0,
    "wakes": 0,
    "market_wakes": 0,
    "failed_wakes": 0,
    "failed_suspends": 0,
    "transitions_per_node_hour": 0.0,
    "transition_energy_j": 0.0,
    "asleep_fraction": 0.0,
}


def summarise(cluster: Cluster, workload: Workload, replay: Replay) -> dict[str, object]:
    """The deterministic figures of one run (no wall-clock values).

    Returns
    -------
    dict with keys ``pods``, ``placed``, ``unschedulable``, ``work_core_s``, ``energy_j``,
    ``energy_per_work_j_per_core_s``, ``work_window_core_s``, ``energy_window_j``,
    ``energy_per_work_window_j_per_core_s``, ``p95_completion_s``, ``mean_wait_s``, ``makespan_s``,
    ``jain``, ``violations``, ``unschedulable_examples`` and the power-management figures
    (module docstring); a value that cannot be computed (no pod placed) is ``None``.
    """
    placed = replay.node >= 0
    work = float(workload.work_core_s[placed].sum())
    work_window = float(window_work(cluster, workload, replay).sum())
    completion = (replay.finish_s - workload.arrival_s)[placed]
    wait = (replay.start_s - workload.arrival_s)[placed]
    violations = check_placements(cluster, workload, replay.log)
    examples = {workload.names[j]: why for j, why in list(replay.unschedulable.items())[:5]}
    return {
        "pods": workload.size,
        "placed": int(placed.sum()),
        "unschedulable": len(replay.unschedulable),
        "work_core_s": work,
        "energy_j": replay.energy_j,
        "energy_per_work_j_per_core_s": replay.energy_j / work if work > 0 else None,
        "work_window_core_s": work_window,
        "energy_window_j": replay.energy_window_j,
        "energy_per_work_window_j_per_core_s": (
            replay.energy_window_j / work_window if work_window > 0 else None
        ),
        "p95_completion_s": float(np.percentile(completion, 95)) if completion.size else None,
        "mean_wait_s": float(wait.mean()) if wait.size else None,
        "p95_wait_s": float(np.percentile(wait, 95)) if wait.size else None,
        "makespan_s": replay.makespan_s,
        "jain": jain_index(tenant_shares(cluster, workload, replay)),
        "violations": len(violations),
        "violation_examples": violations[:5],
        "unschedulable_examples": examples,
        **(replay.power or NO_MANAGER),
        "wake_waited_pods": len(replay.wake_wait_s),
        "p95_wake_wait_s": (
            float(np.percentile(list(replay.wake_wait_s.values()), 95))
            if replay.wake_wait_s
            else None
        ),
        "market_held_pods": replay.market_held_pods,
    }


def latency_summary(replay: Replay) -> dict[str, float | int | None]:
    """Wall-clock scheduling-decision latency (ms): count, p50, p95, p99, max."""
    wall = np.asarray(replay.decision_wall_s) * 1e3
    if wall.size == 0:
        return {"decisions": 0, "p50_ms": None, "p95_ms": None, "p99_ms": None, "max_ms": None}
    p50, p95, p99 = np.percentile(wall, [50, 95, 99])
    return {
        "decisions": int(wall.size),
        "p50_ms": float(p50),
        "p95_ms": float(p95),
        "p99_ms": float(p99),
        "max_ms": float(wall.max()),
    }
