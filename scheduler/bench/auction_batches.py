"""Seeded random auction batches for ``eams bench auction`` and the engine's tests (no I/O).

Nodes are drawn like a mixed fleet: 16–64 cores, P_idle 40–160 W, dynamic range 60–300 W,
speed 0.7–1.6, headroom 0–0.8 with 5 % unknown, telemetry 0–30 s old with 5 % unknown, and
30 % empty. Pods have 1–``max_pod_slots`` slots, 10 min–4 h of reference work per core and a
π from :func:`eams.scheduler.auction.bids.priority_weight` over random PriorityClass values
and quota shares.
"""

from __future__ import annotations

import numpy as np

from eams.scheduler.auction import Nodes, Pods, priority_weight


def random_batch(
    n_pods: int, n_nodes: int, slots: int, seed: int = 0, max_pod_slots: int = 1
) -> tuple[Pods, Nodes]:
    """A batch of ``n_pods`` pods and ``n_nodes`` nodes with ``slots`` free slots each.

    Parameters
    ----------
    n_pods, n_nodes : int ≥ 0
    slots : int ≥ 0
        Free slots per node.
    seed : int
    max_pod_slots : int ≥ 1
        Pods need 1..max_pod_slots slots (uniform).

    Returns
    -------
    (Pods, Nodes)
    """
    rng = np.random.default_rng(seed)
    headroom = rng.uniform(0.0, 0.8, n_nodes)
    headroom[rng.random(n_nodes) < 0.05] = np.nan
    age_s = rng.uniform(0.0, 30.0, n_nodes)
    age_s[rng.random(n_nodes) < 0.05] = np.nan
    p_idle = rng.uniform(40.0, 160.0, n_nodes)
    nodes = Nodes(
        slots=np.full(n_nodes, slots, dtype=np.int64),
        cores=rng.choice([16.0, 32.0, 64.0], n_nodes),
        p_idle_w=p_idle,
        p_max_w=p_idle + rng.uniform(60.0, 300.0, n_nodes),
        speed=rng.uniform(0.7, 1.6, n_nodes),
        headroom=headroom,
        age_s=age_s,
        empty=rng.random(n_nodes) < 0.3,
    )
    pod_slots = rng.integers(1, max_pod_slots + 1, n_pods)
    priority = priority_weight(
        rng.choice([0, 1000, 100_000, 1_000_000], n_pods), rng.uniform(0, 1, n_pods)
    )
    pods = Pods(
        slots=pod_slots,
        work_core_s=pod_slots * rng.uniform(600.0, 14_400.0, n_pods),
        priority=priority,
        tenant=rng.integers(0, 8, n_pods),
    )
    return pods, nodes
