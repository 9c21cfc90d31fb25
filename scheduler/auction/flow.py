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
    n_pods = supply.size
    listed, node_row = np.unique(node, return_inverse=True)  # only listed nodes enter
    n_nodes = listed.size
    source, sink = n_pods + n_nodes, n_pods + n_nodes + 1
    total = int(supply.sum())
    graph = SimpleMinCostFlow()
    graph.add_arcs_with_capacity_and_unit_cost(
        np.concatenate(
            [pod, np.full(n_pods, source), n_pods + np.arange(n_nodes), [source]]
        ).astype(np.int32),
        np.concatenate(
            [n_pods + node_row, np.arange(n_pods), np.full(n_nodes, sink), [sink]]
        ).astype(np.int32),
        np.concatenate([supply[pod], supply, capacity[listed], [total]]).astype(np.int64),
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

    The paths run over nodes and pods: a pod's profit π_j is at most w_jh − p_h at each of its
    homes h (and 0 when units are left out), every listed node m costs at least w_jm − π_j, and
    p ≥ 0. Each sweep updates the pods from their homes, then the nodes from the pods listing
    them, so a sweep moves a price one pod along its path; at the fixed point the homes of a
    split pod agree on π_j.

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
        flow is not optimal for the float gains, which rounding can cause) or a placed pod's
        profit is negative.
    """
    pod, node, gain = flow.pod, flow.node, flow.gain
    home = np.flatnonzero(flow.units > 0)
    home = home[np.argsort(pod[home], kind="stable")]
    home_pod, home_node, home_gain = pod[home], node[home], gain[home]
    pod_starts = np.flatnonzero(np.r_[True, home_pod[1:] != home_pod[:-1]]) if home.size else home
    homed = home_pod[pod_starts]
    order = np.argsort(node, kind="stable")
    edge_pod, edge_gain = pod[order], gain[order]
    node_starts = np.flatnonzero(np.r_[True, node[order][1:] != node[order][:-1]])
    listed = node[order][node_starts]
    base = np.where(flow.out > 0, 0.0, -np.inf)  # −π: 0 for a pod with units left out
    prices = np.zeros(n_nodes)
    for _ in range(n_nodes + 1):
        minus_profit = base.copy()
        if home.size:
            reach = np.maximum.reduceat(prices[home_node] - home_gain, pod_starts)
            minus_profit[homed] = np.maximum(minus_profit[homed], reach)
        new = np.maximum(
            prices[listed], np.maximum.reduceat(minus_profit[edge_pod] + edge_gain, node_starts)
        )
        if not (new > prices[listed] + tol).any():
            if (minus_profit[homed] > tol).any():
                return None  # a placed pod would rather stay out
            return prices
        prices[listed] = new
    return None
