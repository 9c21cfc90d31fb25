"""Exact transportation clearing: sparse shortest augmenting paths on short candidate lists,
priced and certified by the LP dual.

Single-slot pods on nodes with capacities form a transportation problem, which is totally
unimodular. Here it is solved *exactly* by column generation around scipy's sparse
Jonker–Volgenant solver (``scipy.sparse.csgraph.min_weight_full_bipartite_matching``, LAPJVsp;
Crouse, *On implementing 2D rectangular assignment algorithms*, IEEE TAES 52(4), 2016):

1. Each pod lists the ``list_len`` nodes of highest net value v_jn − p_n under the current
   prices p (first the warm start, then the duals of the last pass). A node is expanded into
   as many slot columns as it has free slots, at most as many as pods list it; each pod has a
   private "stay out" column of value 0, so a full matching always exists.
2. The restricted problem is solved exactly; its minimal competitive prices are the longest
   paths p_m = max(0, v_jm for pods left out, p_n + v_jm − v_jn for pod j on n) over the listed
   edges (Bellman–Ford; the restricted optimum has no positive cycle).
3. Certificate: if no pod gains more than its profit on *any* node at those prices, the prices
   are LP-dual feasible, free slots cost 0, and the dual objective equals the value — the
   assignment is optimal (0-complementary slackness, Bertsekas 1998 §7.1). Otherwise the pods
   that would gain get their best nodes at the new prices added, and the restricted problem is
   solved again.

Pods may stand for several identical unit rows (``units``: the per-slot relaxation of
bundles); lists and certificate are then per pod, the matching per row. The passes and the
listed pairs are capped and hopeless cold starts declined; the caller falls back to the
ε-auction then, or when floats break the certificate (``None``). :func:`dense` is the small
cold-batch variant: scipy's ``linear_sum_assignment`` on the slot-expanded values, priced the
same way.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment

from eams.scheduler.auction.flow import Flow, min_cost_flow, min_prices

LIST_LEN = 6
MAX_PASSES = 16
MAX_EDGES = 4_000_000  # listed (pod, node) edges beyond which the flow is not built (memory)
TOL_REL = 1e-9  # gains this close (relative to the largest value) count as ties


def _top(net: np.ndarray, rows: np.ndarray, length: int, tol: float) -> np.ndarray:
    """Per row, the columns of the ``length`` largest entries (unordered), (J, length).

    When a few sample rows show exactly tied columns (identical nodes), ties (within ``tol``)
    are broken by a fixed low-discrepancy jitter of (row, column), so identical pods list
    different identical nodes instead of all the lowest indices.
    """
    n_cols = net.shape[1]
    if length >= n_cols:
        return np.broadcast_to(np.arange(n_cols), net.shape)
    sample = net[:: max(1, net.shape[0] // 4)][:4]
    sample = np.sort(np.where(np.isfinite(sample), sample, np.nan), axis=1)
    if (np.diff(sample, axis=1) == 0).any():
        # additive recurrence with the plastic number's reciprocals (spread in two dimensions)
        spread = np.modf(rows[:, None] * 0.7548776662 + np.arange(n_cols)[None, :] * 0.5698402910)
        net = net + tol * spread[0]
    return np.argpartition(net, n_cols - length, axis=1)[:, n_cols - length :]


def _edges(values: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Allowed (pod, node) pairs among ``cols`` (J, L), as flat arrays."""
    rows = np.broadcast_to(np.arange(values.shape[0])[:, None], cols.shape)
    ok = np.isfinite(values[rows, cols])
    return rows[ok], cols[ok]


def _sufficient(values: np.ndarray, capacity: np.ndarray, units: np.ndarray) -> np.ndarray:
    """Per pod, its best nodes by value until their free units reach the batch's demand, (J, k).

    These lists provably hold an optimum (at zero prices): take an optimal flow with the most
    units on listed edges; a unit of pod j on an unlisted node would mean every node on j's
    list is full (else the unit moves there, no worse, onto a listed edge), i.e. at least D
    units plus that one in a batch of D units. k is the same for every pod: the fewest nodes
    whose *smallest* capacities reach D (pods with fewer allowed nodes list them all).
    """
    n_pods, n_nodes = values.shape
    placeable = np.isfinite(values).any(axis=1)
    demand = int(units[placeable].sum())
    open_caps = np.sort(capacity[capacity > 0])
    k = int(np.searchsorted(np.cumsum(open_caps), demand)) + 1
    if k >= n_nodes:
        return np.broadcast_to(np.arange(n_nodes), values.shape)
    return np.argpartition(values, n_nodes - k, axis=1)[:, n_nodes - k :]


def _profits(flow: Flow, prices: np.ndarray, n_pods: int) -> np.ndarray:
    """Profit per unit of each pod at ``prices``: 0 for a pod with units left out or none
    placed, else the least over its homes (all equal at an optimum)."""
    home = np.flatnonzero(flow.units > 0)
    profit = np.full(n_pods, np.inf)
    np.minimum.at(profit, flow.pod[home], flow.gain[home] - prices[flow.node[home]])
    profit[np.isinf(profit) | (flow.out > 0)] = 0.0
    return profit


def _rows(flow: Flow, units: np.ndarray) -> np.ndarray:
    """The flow as a node per unit row (rows of pod j consecutive, placed units first), −1 =
    out."""
    home = np.flatnonzero(flow.units > 0)
    home = home[np.argsort(flow.pod[home], kind="stable")]
    pod = np.repeat(flow.pod[home], flow.units[home])
    placed = np.bincount(pod, minlength=units.size)
    within = np.arange(pod.size) - (np.cumsum(placed) - placed)[pod]
    rows = np.full(int(units.sum()), -1, dtype=np.int64)
    rows[(np.cumsum(units) - units)[pod] + within] = np.repeat(flow.node[home], flow.units[home])
    return rows


def transport(
    values: np.ndarray,
    capacity: np.ndarray,
    v_max: float,
    start_prices: np.ndarray | None = None,
    units: np.ndarray | None = None,
    list_len: int = LIST_LEN,
    max_passes: int = MAX_PASSES,
) -> tuple[np.ndarray, np.ndarray, int] | None:
    """Optimal assignment of unit demands to nodes with capacities, and its dual prices.

    Parameters
    ----------
    values : (J, N) float
        Value of one unit of pod j on node n, > 0 where allowed, −inf where not.
    capacity : (N,) int ≥ 0
        Units per node.
    v_max : float > 0
        The largest value: gains within ``TOL_REL · v_max`` count as ties.
    start_prices : (N,) float ≥ 0, optional
        Prices that pick the first candidate lists: each pod's ``list_len`` best nodes by net
        value (the warm start). ``None``: the lists that provably hold an optimum
        (:func:`_sufficient`), so a cold start needs no passes to find it.
    units : (J,) int ≥ 1, optional
        Units per pod (default 1): pod j supplies ``units[j]`` units, which may go to
        different nodes (the per-slot relaxation of bundles, :mod:`.bundles`).
    list_len : int
        Nodes added per pass for pods that would gain (and the first lists' length when
        ``start_prices`` is given).
    max_passes : int
        Restricted solves before giving up.

    Returns
    -------
    (assignment, prices, passes) or None
        assignment (Σ units,) node per unit row (rows of pod j are consecutive), −1 = out;
        prices (N,) ≥ 0 per unit, 0 on nodes with a free unit, certifying optimality (0-CS);
        passes run. ``None`` when the pass cap or ``MAX_EDGES`` is hit or rounding breaks the
        certificate: the caller must use another method.
    """
    n_pods, n_nodes = values.shape
    units = np.ones(n_pods, dtype=np.int64) if units is None else units
    tol = TOL_REL * v_max
    if start_prices is None:
        cols = _sufficient(values, capacity, units)
    else:
        cols = _top(values - start_prices[None, :], np.arange(n_pods), list_len, tol)
    pod, node = _edges(values, cols)
    for passes in range(1, max_passes + 1):
        if pod.size > MAX_EDGES:
            return None
        flow = min_cost_flow(units, capacity, pod, node, values[pod, node], v_max)
        if flow is None:
            return None
        prices = min_prices(flow, n_nodes, tol)
        if prices is None:
            return None
        used = np.bincount(node, weights=flow.units, minlength=n_nodes)
        if (prices[used < capacity] > tol).any():
            return None
        profit = _profits(flow, prices, n_pods)
        net = values - prices[None, :]
        gaining = np.flatnonzero(net.max(axis=1) > profit + tol)
        if gaining.size == 0:
            return _rows(flow, units), prices, passes
        more = _top(net[gaining], gaining, list_len, tol)
        more_pod, more_node = _edges(values[gaining], more)
        pairs = np.unique(
            np.concatenate([pod * n_nodes + node, gaining[more_pod] * n_nodes + more_node])
        )
        pod, node = pairs // n_nodes, pairs % n_nodes
    return None


def dense(
    values: np.ndarray, capacity: np.ndarray, v_max: float
) -> tuple[np.ndarray, np.ndarray] | None:
    """Small single-slot batches: scipy's ``linear_sum_assignment`` on the slot-expanded values
    (dense Jonker–Volgenant, O(J²·ΣK): cheaper than list passes below ~10⁶), priced by the
    same longest paths over all allowed pairs.

    Parameters
    ----------
    values : (J, N) float, > 0 where allowed, −inf where not
    capacity : (N,) int ≥ 0
    v_max : float > 0

    Returns
    -------
    (assignment, prices) or None
        As :func:`transport` (0-CS prices); ``None`` if rounding breaks the certificate.
    """
    n_pods, n_nodes = values.shape
    expanded = np.repeat(np.where(np.isfinite(values), values, 0.0), capacity, axis=1)
    rows, cols = linear_sum_assignment(expanded, maximize=True)
    slot_node = np.repeat(np.arange(n_nodes), capacity)
    assign = np.full(n_pods, -1, dtype=np.int64)
    taken = expanded[rows, cols] > 0  # a disallowed pair (worth 0) is staying out
    assign[rows[taken]] = slot_node[cols[taken]]
    pod, node = np.nonzero(np.isfinite(values))
    placed = (assign[pod] == node).astype(np.int64)
    flow = Flow(pod, node, values[pod, node], placed, (assign < 0).astype(np.int64))
    tol = TOL_REL * v_max
    prices = min_prices(flow, n_nodes, tol)
    if prices is None:
        return None
    used = np.bincount(assign[assign >= 0], minlength=n_nodes)
    if (prices[used < capacity] > tol).any():
        return None
    return assign, prices
