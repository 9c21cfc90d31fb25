"""The restricted transportation problem on candidate edges, solved exactly as a min-cost flow,
and its minimal competitive prices.

Pods supply units (one for a single-slot pod, d_j for the per-slot relaxation of a pod of d_j
slots, :mod:`.bundles`), nodes take up to their free slots, and each listed (pod, node) edge is
worth ``gain`` per unit. The network is source → pod (capacity = its units) → node (its listed
edges) → sink (capacity = free slots), plus a source → sink arc for units that stay out. It is
solved by OR-tools' ``SimpleMinCostFlow`` (cost scaling, Goldberg 1997; Google OR-tools,
``ortools.graph.python.min_cost_flow``) on integer costs ``−round(gain · scale)``.

OR-tools does not return node potentials, so the prices are computed here: the *minimal*
competitive per-unit prices of the optimal flow are longest paths (Bellman–Ford, vectorised):
``p_m ≥ p_h + gain_jm − gain_jh`` for every home h of pod j (an edge carrying its flow) and
every listed m, ``p_m ≥ gain_jm`` for a pod with units left out (its profit is 0), ``p ≥ 0``.
With them every listed edge satisfies complementary slackness; :mod:`.exact` checks the edges
that were not listed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from ortools.graph.python.min_cost_flow import SimpleMinCostFlow

# integer costs: the largest gain becomes 2⁴⁰ (≈ 1.1·10¹²), so rounding moves a unit's value by
# at most 2⁻⁴¹ of the largest gain, far below the tie tolerance; OR-tools' cost scaling
# multiplies costs by the node count, which stays below int64's 9.2·10¹⁸ up to ~10⁶ nodes
COST_SCALE = float(2**40)


@dataclass(frozen=True)
class Flow:
    """An optimal flow on the listed edges.

    Attributes
    ----------
    pod, node : (E,) int
        The listed edges (pod j, node n).
    gain : (E,) float
        Value per unit of each edge.
    units : (E,) int ≥ 0
        Units each edge carries.
    out : (J,) int ≥ 0
        Units of each pod left out.
    """

    pod: np.ndarray
    node: np.ndarray
    gain: np.ndarray
    units: np.ndarray
    out: np.ndarray


def min_cost_flow(
    supply: np.ndarray,
    capacity: np.ndarray,
    pod: np.ndarray,
    node: np.ndarray,
    gain: np.ndarray,
    g_max: float,
) -> Flow | None:
    """Maximise Σ gain · units over the listed edges (OR-tools ``SimpleMinCostFlow``).

    Parameters
    ----------
    supply : (J,) int ≥ 1
        Units per pod.
    capacity : (N,) int ≥ 0
        Units per node.
    pod, node : (E,) int
        The listed edges; each appears once.
    gain : (E,) float, > 0
        Value per unit.
    g_max : float > 0
        The largest gain of the batch (the cost scale).

    Returns
    -------
    Flow or None
        ``None`` if OR-tools does not report an optimum (it cannot for a well-formed network;
        the caller then uses another method).
    """
    n_pods, n_nodes = supply.size, capacity.size
    source, sink = n_pods + n_nodes, n_pods + n_nodes + 1
    total = int(supply.sum())
    pods = np.arange(n_pods)
    nodes = np.arange(n_nodes)
    graph = SimpleMinCostFlow()
    graph.add_arcs_with_capacity_and_unit_cost(
        np.concatenate([pod, np.full(n_pods, source), n_pods + nodes, [source]]).astype(np.int32),
        np.concatenate([n_pods + node, pods, np.full(n_nodes, sink), [sink]]).astype(np.int32),
        np.concatenate([supply[pod], supply, capacity, [total]]).astype(np.int64),
        np.concatenate(
            [
                -np.rint(gain * (COST_SCALE / g_max)).astype(np.int64),
                np.zeros(n_pods + n_nodes + 1, dtype=np.int64),
            ]
        ),
    )
    graph.set_nodes_supplies(np.array([source, sink], dtype=np.int32), np.array([total, -total]))
    if graph.solve() != graph.OPTIMAL:
        return None
    units = graph.flows(np.arange(pod.size + n_pods)).astype(np.int64)
    return Flow(pod, node, gain, units[: pod.size], supply - units[pod.size :])


def min_prices(flow: Flow, n_nodes: int, tol: float) -> np.ndarray | None:
    """Minimal competitive per-unit prices of an optimal ``flow`` (longest paths, see the
    module docstring).

    Parameters
    ----------
    flow : Flow
    n_nodes : int
    tol : float > 0
        Increases below this count as settled.

    Returns
    -------
    (N,) float ≥ 0 or None
        ``None`` if they do not settle within ``n_nodes + 1`` sweeps (a positive cycle: the
        flow is not optimal for the float gains, which rounding can cause).
    """
    pod, node, gain = flow.pod, flow.node, flow.gain
    home = np.flatnonzero(flow.units > 0)
    # pods with one home (nearly all) reach their listed nodes from it; a pod split over k
    # homes needs the paths from each (its profit is one number), so its edges repeat k times
    homes_of = np.bincount(pod[home], minlength=flow.out.size)
    first = np.full(flow.out.size, -1, dtype=np.int64)
    first[pod[home[::-1]]] = home[::-1]  # the first home edge of each pod
    tails = [np.where(homes_of[pod] > 0, node[np.maximum(first[pod], 0)], -1)]
    lengths = [gain - np.where(homes_of[pod] > 0, gain[np.maximum(first[pod], 0)], 0.0)]
    heads = [node]
    split = np.flatnonzero(homes_of > 1)
    if split.size:
        extra = home[np.isin(pod[home], split) & (home != first[pod[home]])]
        for h in extra:  # few: a basic optimal flow splits at most one pod per full node
            mine = np.flatnonzero(pod == pod[h])
            tails.append(np.full(mine.size, node[h]))
            lengths.append(gain[mine] - gain[h])
            heads.append(node[mine])
    left_out = np.flatnonzero((flow.out[pod] > 0) & (homes_of[pod] > 0))  # profit 0 as well
    tails.append(np.full(left_out.size, -1))
    lengths.append(gain[left_out])
    heads.append(node[left_out])
    tail = np.concatenate(tails)
    length = np.concatenate(lengths)
    head = np.concatenate(heads)
    order = np.argsort(head, kind="stable")
    tail, length, head = tail[order], length[order], head[order]
    from_source = tail < 0
    base = np.zeros(n_nodes)
    np.maximum.at(base, head[from_source], length[from_source])
    tail, length, head = tail[~from_source], length[~from_source], head[~from_source]
    prices = base
    if head.size == 0:
        return prices
    starts = np.flatnonzero(np.r_[True, head[1:] != head[:-1]])
    targets = head[starts]
    for _ in range(n_nodes + 1):
        reach = np.maximum.reduceat(prices[tail] + length, starts)
        new = np.maximum(prices[targets], reach)
        if not (new > prices[targets] + tol).any():
            return prices
        prices = prices.copy()
        prices[targets] = new
    return None
