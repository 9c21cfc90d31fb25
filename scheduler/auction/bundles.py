"""Mixed pod sizes: per-slot prices of the LP relaxation, a priced greedy assignment, swap
repair.

Pods of several slots, each on one node, make a generalised assignment problem (NP-hard). Its
LP relaxation lets a pod of d slots split over nodes; any per-slot node prices p ≥ 0 bound
every integer assignment (:func:`.dual.dual_bound`), and at the relaxation's optimal duals the
bound is the LP optimum. Here:

1. Prices. The rank-one ladder of :mod:`.warmstart` (pods by value density a_j/d_j fill nodes
   by q_n; the study's bids are rank one per pod size on the nodes that run pods, so the
   ladder is close to the relaxation's duals: measured within 0.01 % of the LP optimum on
   random 1–4-slot batches, 1.2 % on trace-shaped ones, ``scheduler/auction/README.md``).
2. Priced greedy. Pods in order of their best net value max_n (v_jn − d_j·p_n) take their best
   node by net value that still has room (vectorised rounds: every waiting pod asks its best
   node with room, each node takes its askers by profit while they fit). Prices near the
   duals make this the relaxation's integral part, and decide the split pods by their net
   value rather than by their share of slots (after Shmoys & Tardos, *An approximation
   algorithm for the generalized assignment problem*, Math. Programming 62, 1993).
3. Swap repair (Martello & Toth, *Knapsack Problems*, 1990, §7.3, improvement by exchanges):
   a pod left out may take a node by evicting held pods (lowest value per slot first) when its
   value exceeds theirs: the per-slot knapsack trap, where a small pod of high density keeps a
   more valuable wide pod out, is undone here.
4. Greedy completion places whatever still fits (evicted pods included).

``dual_bound(p) − value`` is the certified gap.
"""

from __future__ import annotations

import numpy as np

from eams.scheduler.auction.budget import NO_DEADLINE, Deadline
from eams.scheduler.auction.dual import allowed_bound, net_values
from eams.scheduler.auction.exact import ranked as ranked_nodes
from eams.scheduler.auction.greedy import greedy_complete
from eams.scheduler.auction.warmstart import rank_one_prices

SWAP_PODS = 16  # left-out pods tried by the swap repair, highest value first
SWAP_NODES = 8  # nodes tried per pod, its best first
RANKED = 12  # nodes per pod ranked by net value: the greedy's first choices, the refinement's
REFINE_STEPS = 40  # subgradient steps on the ranked nodes (≈ 0.1 ms each at 500 pods)
REFINE_DAMPING = 0.5  # of Polyak's step
# Batches of at most this many pod–node pairs are small: there the value-only greedy (zero
# prices) is tried beside the priced one, and the polish (methods._relaxation) runs its long
# form. Both won on some tiny batches (the bundle-MILP set, 2–13 pods) and never on a
# 500 × 1,000 benchmark batch (5 kinds × seeds 0–3: the value-only greedy 1–18 % below the
# priced one), where each costs a third of the relaxation's time (scheduler/auction/README.md).
SMALL_BATCH_PAIRS = 50_000


def priced_greedy(
    values: np.ndarray, demand: np.ndarray, capacity: np.ndarray, prices: np.ndarray
) -> tuple[np.ndarray, np.ndarray, float]:
    """Pods by best net value, each to its best node by net value with room (step 2).

    Parameters
    ----------
    values : (J, N) float, −inf where the pod may not go
    demand : (J,) int ≥ 1
    capacity : (N,) int ≥ 0
    prices : (N,) float ≥ 0, per slot

    Returns
    -------
    (assignment, ranked, bound)
        assignment (J,) node per pod, −1 = out, within every node's capacity; ranked (J, L)
        each pod's ``RANKED`` best nodes by net value, best first (for the bound refinement);
        bound, :func:`.dual.dual_bound` at ``prices`` (the same pass).
    """
    net = net_values(values, demand, prices)
    profit = net.max(axis=1)
    bound = float(np.maximum(profit, 0.0).sum() + (capacity * prices).sum())  # dual_bound
    ranked = ranked_nodes(net.copy(), RANKED)  # a copy: ``net`` may be ``values`` itself
    assign = np.full(values.shape[0], -1, dtype=np.int64)
    room = capacity.copy()
    rooms = capacity.tolist()  # the same, as Python ints for the scan of the ranked lists
    size = demand.tolist()
    lists = ranked.tolist()
    for j in np.argsort(-profit, kind="stable").tolist():
        if profit[j] == -np.inf:
            break  # sorted: the rest may go nowhere either
        for n in lists[j]:  # its best nodes first: usually one of them has room
            if rooms[n] >= size[j]:
                break
        else:
            row = np.where(room >= size[j], net[j], -np.inf)
            n = int(row.argmax())
        if net[j, n] > -np.inf and rooms[n] >= size[j]:
            assign[j] = n
            rooms[n] -= size[j]
            room[n] -= size[j]
    return assign, ranked, bound


def refine(
    values: np.ndarray,
    demand: np.ndarray,
    capacity: np.ndarray,
    prices: np.ndarray,
    ranked: np.ndarray,
    value: float,
) -> np.ndarray:
    """Lower the dual bound from ``prices`` by projected subgradient steps (Polyak's step
    towards ``value``, Polyak 1969; Held, Wolfe & Crowder 1974), each pod restricted to its
    ``ranked`` nodes: cheap steps; the caller bounds with the full matrix.

    Returns
    -------
    (N,) float ≥ 0
        The prices of the lowest restricted bound met.
    """
    rows = np.arange(values.shape[0])[:, None]
    v = values[rows, ranked]
    d = demand[:, None].astype(float)
    p = prices.copy()
    best_p, best = p, np.inf
    for _ in range(REFINE_STEPS):
        net = v - d * p[ranked]
        pick = net.argmax(axis=1)
        profit = net[rows[:, 0], pick]
        bound = float(np.maximum(profit, 0.0).sum() + (capacity * p).sum())
        if bound < best:
            best, best_p = bound, p
        inside = profit > 0
        chosen = ranked[rows[:, 0], pick][inside]
        grad = capacity - np.bincount(chosen, weights=demand[inside], minlength=capacity.size)
        norm = float((grad * grad).sum())
        if norm == 0 or bound <= value:
            break
        p = np.maximum(0.0, p - REFINE_DAMPING * (bound - value) / norm * grad)
    return best_p


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


def _repaired(
    values: np.ndarray, demand: np.ndarray, capacity: np.ndarray, assign: np.ndarray
) -> tuple[np.ndarray, float]:
    """Steps 3–4 on a feasible assignment: swap repair, greedy completion; and its value."""
    room = capacity - np.bincount(
        assign[assign >= 0], weights=demand[assign >= 0], minlength=capacity.size
    ).astype(np.int64)
    _swap(values, demand, assign, room)
    assign = greedy_complete(values, demand, capacity, assign)
    on = np.flatnonzero(assign >= 0)
    return assign, float(values[on, assign[on]].sum())


def relax_round_repair(
    values: np.ndarray,
    guess: np.ndarray | None,
    demand: np.ndarray,
    capacity: np.ndarray,
    deadline: Deadline = NO_DEADLINE,
) -> tuple[np.ndarray, np.ndarray, float]:
    """Clear pods of several sizes: relaxation prices, priced greedy, swap repair, greedy fill.

    Parameters
    ----------
    values : (J, N) float
        Allowed values (:func:`.inputs.allowed`): v_jn > 0, −inf where pod j may not go
        (ineligible or wider than the node).
    guess : (J, N) float or None
        The values the prices are fitted on: ``values`` without the filter mask (a filter only
        removes options); None: ``values``.
    demand : (J,) int ≥ 1
        Slots per pod.
    capacity : (N,) int ≥ 0
        Free slots per node.
    deadline : Deadline
        The wall-clock budget: once spent, the bound refinement is skipped.

    Returns
    -------
    (assignment, slot_prices, bound)
        assignment (J,) node per pod, −1 = out, within every node's capacity; slot_prices
        (N,) ≥ 0, per-slot prices of the relaxation; bound, their :func:`.dual.dual_bound`
        (≥ the optimum: ``bound − value`` is the certified gap).
    """
    prices = rank_one_prices(values if guess is None else guess, demand, capacity)[0]
    assign, ranked, bound = priced_greedy(values, demand, capacity, prices)
    assign, value = _repaired(values, demand, capacity, assign)
    if deadline.expired():
        return assign, prices, bound
    if values.size <= SMALL_BATCH_PAIRS:  # the same greedy by value alone: small batches
        plain, plain_value = _repaired(
            values, demand, capacity, priced_greedy(values, demand, capacity, 0.0 * prices)[0]
        )
        if plain_value > value:
            assign, value = plain, plain_value
    refined = refine(values, demand, capacity, prices, ranked, value)
    tighter = allowed_bound(values, demand, capacity, refined)
    if tighter < bound:
        prices, bound = refined, tighter
    return assign, prices, bound
