"""Mixed pod sizes: the per-slot LP relaxation solved exactly, rounded, then repaired.

Pods of several slots, each on one node, make a generalised assignment problem (NP-hard). Its
LP relaxation lets a pod of d slots split over nodes: with u_jn = d_j·x_jn slots of pod j on
node n worth v_jn/d_j each, it is a transportation problem, which :func:`.exact.transport`
solves exactly with per-slot dual prices p. Then (after Shmoys & Tardos, *An approximation
algorithm for the generalized assignment problem*, Math. Programming 62, 1993, rounding of
the relaxation, and Martello & Toth, *Knapsack Problems*, 1990, §7.3, improvement by
exchanges):

1. Rounding. A pod whose slots the relaxation put all on one node keeps it (the relaxation
   is then within capacity). A split pod takes the node holding most of its slots if it still
   fits there, highest value first.
2. Swap repair. A pod left out may take a node by evicting held pods (lowest value per slot
   first) when its value exceeds theirs: the per-slot knapsack trap, where a small pod of high
   density keeps a more valuable wide pod out, is undone here.
3. Greedy completion places whatever still fits (evicted pods included).

The prices p bound every integer assignment (:func:`.dual.dual_bound` of the relaxation),
so ``dual_bound − value`` is a certified gap.
"""

from __future__ import annotations

import numpy as np

from eams.scheduler.auction.exact import transport
from eams.scheduler.auction.greedy import greedy_complete
from eams.scheduler.auction.warmstart import rank_one_prices

SWAP_PODS = 16  # left-out pods tried by the swap repair, highest value first
SWAP_NODES = 8  # nodes tried per pod, its best first


def _round(
    unit_assign: np.ndarray,
    owner: np.ndarray,
    values: np.ndarray,
    demand: np.ndarray,
    room: np.ndarray,
) -> np.ndarray:
    """Each pod to the node with most of its relaxed slots; split pods only where they fit."""
    n_pods, n_nodes = values.shape
    on = unit_assign >= 0
    key, count = np.unique(owner[on] * n_nodes + unit_assign[on], return_counts=True)
    pod, node = key // n_nodes, key % n_nodes
    order = np.lexsort((-count, pod))  # per pod, the node with most slots first
    pod, node, count = pod[order], node[order], count[order]
    first = np.r_[True, pod[1:] != pod[:-1]]
    pod, node, count = pod[first], node[first], count[first]
    assign = np.full(n_pods, -1, dtype=np.int64)
    whole = count == demand[pod]  # within capacity as the relaxation placed it
    assign[pod[whole]] = node[whole]
    room -= np.bincount(node[whole], weights=demand[pod[whole]], minlength=n_nodes).astype(np.int64)
    split = np.flatnonzero(~whole)
    for i in split[np.argsort(-values[pod[split], node[split]], kind="stable")]:
        j, n = pod[i], node[i]
        if room[n] >= demand[j]:
            assign[j] = n
            room[n] -= demand[j]
    return assign


def _swap(values: np.ndarray, demand: np.ndarray, assign: np.ndarray, room: np.ndarray) -> None:
    """Left-out pods evict cheaper held pods (lowest value per slot first) when they gain."""
    out = np.flatnonzero((assign < 0) & np.isfinite(values).any(axis=1))
    out = out[np.argsort(-values[out].max(axis=1), kind="stable")][:SWAP_PODS]
    for j in out:
        row = values[j]
        tried = np.argsort(-row)[:SWAP_NODES]
        best_gain, best = 0.0, None
        for n in tried[np.isfinite(row[tried])]:
            held = np.flatnonzero(assign == n)
            held = held[np.argsort(values[held, n] / demand[held], kind="stable")]
            freed = room[n] + np.cumsum(demand[held])
            need = int(np.searchsorted(freed, demand[j])) + 1 if room[n] < demand[j] else 0
            if need > held.size:
                continue  # even evicting every pod leaves it too small
            evict = held[:need]
            gain = row[n] - float(values[evict, n].sum())
            if gain > best_gain:
                best_gain, best = gain, (n, evict)
        if best is not None:
            n, evict = best
            assign[evict] = -1
            room[n] += int(demand[evict].sum()) - int(demand[j])
            assign[j] = n


def relax_round_repair(
    values: np.ndarray,
    guess: np.ndarray | None,
    demand: np.ndarray,
    capacity: np.ndarray,
    v_max: float,
) -> tuple[np.ndarray, np.ndarray] | None:
    """Clear pods of several sizes: exact LP relaxation, rounding, swap repair, greedy fill.

    Parameters
    ----------
    values : (J, N) float
        v_jn > 0 where allowed, −inf where pod j may not go (ineligible or wider than the node).
    guess : (J, N) float or None
        Values for the warm start (:mod:`.warmstart`) of the relaxation's candidate lists:
        ``values`` without the filter mask (a filter only removes options); None: cold.
    demand : (J,) int ≥ 1
        Slots per pod.
    capacity : (N,) int ≥ 0
        Free slots per node.
    v_max : float > 0
        The largest value (scales the tie tolerance).

    Returns
    -------
    (assignment, slot_prices) or None
        assignment (J,) node per pod, −1 = out, within every node's capacity; slot_prices
        (N,) ≥ 0, the relaxation's per-slot duals (for the certified gap). ``None`` if the
        exact solve gave up (the caller then runs the auction).
    """
    owner = np.repeat(np.arange(demand.size), demand)
    start = None if guess is None else rank_one_prices(guess, demand, capacity)[0]
    solved = transport(values / demand[:, None], capacity, v_max, start, units=demand)
    if solved is None:
        return None
    unit_assign, prices, _ = solved
    room = capacity.copy()
    assign = _round(unit_assign, owner, values, demand, room)
    _swap(values, demand, assign, room)
    return greedy_complete(values, demand, capacity, assign), prices
