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
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment
from scipy.sparse.csgraph import min_weight_full_bipartite_matching

LIST_LEN = 6
MAX_PASSES = 16
# listed (row, node) pairs per row beyond which the passes cost more than the auction they
# would save: warm starts stay at 6–8 per row; a cold 500 × 1,000 × 8 batch needs 62 (0.7 s,
# still cheaper than the auction); cold bundles reach 90+ and seconds before certifying
MAX_PAIRS_PER_ROW = 64
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


def _match(
    n_rows: int, capacity: np.ndarray, row: np.ndarray, node: np.ndarray, val: np.ndarray
) -> np.ndarray:
    """Optimal assignment restricted to the edges (row, node) of value ``val``: node per row,
    −1 = out."""
    copies = np.minimum(capacity, np.bincount(node, minlength=capacity.size))
    offset = np.concatenate([[0], np.cumsum(copies)])
    rep = copies[node]
    rows = np.repeat(row, rep)
    slot = np.arange(rows.size) - np.repeat(np.cumsum(rep) - rep, rep)
    cols = np.repeat(offset[node], rep) + slot
    # costs must be > 0 (an explicit 0 is no edge): cost = top − value, staying out = top
    top = 2.0 * float(val.max(initial=1.0)) + 1.0
    outside = int(offset[-1])
    graph = sp.csr_matrix(
        (
            np.concatenate([top - np.repeat(val, rep), np.full(n_rows, top)]),
            (
                np.concatenate([rows, np.arange(n_rows)]),
                np.concatenate([cols, outside + np.arange(n_rows)]),
            ),
        ),
        shape=(n_rows, outside + n_rows),
    )
    matched_rows, matched_cols = min_weight_full_bipartite_matching(graph)
    assign = np.full(n_rows, -1, dtype=np.int64)
    on = matched_cols < outside
    assign[matched_rows[on]] = np.searchsorted(offset, matched_cols[on], side="right") - 1
    return assign


def _prices(
    assign: np.ndarray,
    own: np.ndarray,
    row: np.ndarray,
    node: np.ndarray,
    val: np.ndarray,
    n_nodes: int,
    tol: float,
) -> np.ndarray | None:
    """Minimal competitive prices of a restricted optimum (longest paths, Bellman–Ford):
    p_node ≥ p_home + val − own over the edges (p_home = 0 for a row left out, own = 0).

    ``None`` if they do not settle within n_nodes + 1 sweeps (a positive cycle from rounding).
    """
    order = np.argsort(node, kind="stable")
    row, node = row[order], node[order]
    edge_v = val[order] - own[row]
    on = assign[row] >= 0
    home = np.maximum(assign[row], 0)
    starts = np.flatnonzero(np.r_[True, node[1:] != node[:-1]])
    heads = node[starts]
    prices = np.zeros(n_nodes)
    for _ in range(n_nodes + 1):
        reach = edge_v + np.where(on, prices[home], 0.0)
        new = np.maximum(prices[heads], np.maximum.reduceat(reach, starts))
        if not (new > prices[heads] + tol).any():
            return prices
        prices[heads] = new
    return None


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
        Prices that pick the first candidate lists (the warm start); default 0.
    units : (J,) int ≥ 1, optional
        Units per pod (default 1): pod j stands for ``units[j]`` identical rows, which may go
        to different nodes (the per-slot relaxation of bundles, :mod:`.bundles`). Lists and
        the certificate are computed per pod, the matching per row.
    list_len : int
        Nodes per pod in the first lists (and added per pass for pods that would gain).
    max_passes : int
        Restricted solves before giving up.

    Returns
    -------
    (assignment, prices, passes) or None
        assignment (Σ units,) node per row (rows of pod j are consecutive), −1 = out; prices
        (N,) ≥ 0 per unit, 0 on nodes with a free unit, certifying optimality (0-CS); passes
        run. ``None`` when the pass cap or ``MAX_PAIRS_PER_ROW`` is hit or rounding breaks the
        certificate: the caller must use another method.
    """
    n_pods, n_nodes = values.shape
    units = np.ones(n_pods, dtype=np.int64) if units is None else units
    owner = np.repeat(np.arange(n_pods), units)
    first_row = np.cumsum(units) - units
    tol = TOL_REL * v_max
    slots_per_node = float(capacity[capacity > 0].mean()) if (capacity > 0).any() else 1.0
    if start_prices is None and owner.size > max_passes * list_len * slots_per_node:
        # cold: all pods list the same nodes and each pass opens ~list_len more per pod, so
        # the passes needed grow like rows / (list_len · slots per node): do not start
        return None
    prices: np.ndarray | None  # None when _prices finds no equilibrium
    prices = np.zeros(n_nodes) if start_prices is None else start_prices
    pod, node = _edges(values, _top(values - prices[None, :], np.arange(n_pods), list_len, tol))
    for passes in range(1, max_passes + 1):
        rep = units[pod]
        row = (
            np.repeat(first_row[pod], rep)
            + np.arange(rep.sum())
            - np.repeat(np.cumsum(rep) - rep, rep)
        )
        row_node = np.repeat(node, rep)
        val = np.repeat(values[pod, node], rep)
        if row.size > MAX_PAIRS_PER_ROW * owner.size:
            return None
        assign = _match(owner.size, capacity, row, row_node, val)
        on = np.flatnonzero(assign >= 0)
        own = np.zeros(owner.size)
        own[on] = values[owner[on], assign[on]]
        prices = _prices(assign, own, row, row_node, val, n_nodes, tol)
        if prices is None:
            return None
        used = np.bincount(assign[on], minlength=n_nodes)
        if (prices[used < capacity] > tol).any():
            return None
        net = values - prices[None, :]
        profit = own.copy()
        profit[on] -= prices[assign[on]]
        gaining = np.flatnonzero(net.max(axis=1) > np.minimum.reduceat(profit, first_row) + tol)
        if gaining.size == 0:
            return assign, prices, passes
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
    on = np.flatnonzero(assign >= 0)
    own = np.zeros(n_pods)
    own[on] = values[on, assign[on]]
    prices = _prices(assign, own, pod, node, values[pod, node], n_nodes, TOL_REL * v_max)
    if prices is None:
        return None
    used = np.bincount(assign[on], minlength=n_nodes)
    if (prices[used < capacity] > TOL_REL * v_max).any():
        return None
    return assign, prices
