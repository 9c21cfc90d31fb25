"""Exact single-slot clearing: a min-cost flow on candidate lists, priced and certified by the
LP dual.

Single-slot pods on nodes with capacities form a transportation problem, which is totally
unimodular. Here it is solved *exactly* by column generation around a min-cost flow
(:mod:`.flow`: OR-tools' ``SimpleMinCostFlow``, which takes the node capacities as they are,
no slot columns):

1. Each pod lists nodes. With starting prices p (the warm start), its ``list_len`` nodes of
   highest net value v_jn − p_n. Cold, the lists that provably hold an optimum: its best nodes
   by value until their free slots reach the batch's demand (:func:`_sufficient`).
2. The restricted problem is solved exactly; its minimal competitive prices are longest paths
   (:func:`.flow.min_prices`).
3. Certificate: if no pod gains more than its profit on *any* node at those prices, the prices
   are LP-dual feasible, free slots cost 0, and the dual objective equals the value — the
   assignment is optimal (0-complementary slackness, Bertsekas 1998 §7.1). Otherwise the pods
   that would gain get more of their best nodes at the new prices (``list_len`` · 2^(pass−1))
   and the restricted problem is solved again.

The passes and the listed pairs are capped; the caller falls back to the ε-auction then, when
floats break the certificate, or when the budget is spent (``None``). :func:`dense` is the
small cold-batch variant: scipy's ``linear_sum_assignment`` on the slot-expanded values,
priced the same way. :func:`few` is the batch of a few pods (the extender's usual one): each
pod's J best nodes, which provably hold an optimum, solved densely and certified on every
node; when no node is over-asked, simply each pod's best node (:func:`best_nodes`).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment

from eams.scheduler.auction.budget import NO_DEADLINE, Deadline
from eams.scheduler.auction.dual import net_values
from eams.scheduler.auction.flow import Flow, min_cost_flow, min_prices

LIST_LEN = 6
MAX_PASSES = 16
GROWTH = 2  # pods that would gain add list_len · GROWTH^(pass − 1) nodes
ARGMAX_TOP = 12  # lists up to this long are found by repeated row maxima
MAX_EDGES = 4_000_000  # listed (pod, node) edges beyond which the flow is not built (memory)
TOL_REL = 1e-9  # gains this close (relative to the largest value) count as ties


def _top(net: np.ndarray, rows: np.ndarray, length: int, tol: float) -> np.ndarray:
    """Per row, the columns of the ``length`` largest entries (unordered), (J, length).

    When a few sample rows show exactly tied columns (identical nodes), ties (within ``tol``)
    are broken by a fixed low-discrepancy jitter of (row, column), so identical pods list
    different identical nodes instead of all the lowest indices. ``net`` may be overwritten.
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
    if length > ARGMAX_TOP:
        return np.argpartition(net, n_cols - length, axis=1)[:, n_cols - length :]
    return ranked(net, length)  # a few row maxima are cheaper than a partition of every row


def ranked(net: np.ndarray, length: int) -> np.ndarray:
    """Per row, the columns of the ``length`` largest entries of ``net`` in descending order,
    by repeated row maxima (``net`` is overwritten), (J, min(length, N))."""
    length = min(length, net.shape[1])
    top = np.empty((net.shape[0], length), dtype=np.int64)
    every = np.arange(net.shape[0])
    for i in range(length):
        top[:, i] = net.argmax(axis=1)
        net[every, top[:, i]] = -np.inf
    return top


def _edges(values: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Allowed (pod, node) pairs among ``cols`` (J, L), as flat arrays."""
    rows = np.broadcast_to(np.arange(values.shape[0])[:, None], cols.shape)
    ok = np.isfinite(values[rows, cols])
    return rows[ok], cols[ok]


def _sufficient(values: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Per pod, (at least) its best nodes by value until their free slots reach the number of
    pods that can be placed, as a (J, N) bool mask.

    These lists provably hold an optimum: take an optimal assignment with the most pods on
    listed pairs; a pod on an unlisted node would mean every node on its list is full (else
    it moves there, no worse, onto a listed pair), i.e. at least J other pods, in a batch of
    J. The list length k is the same for every pod: the fewest nodes whose *smallest*
    capacities reach J (pods with fewer allowed nodes list them all); any superset is as
    good, and a row threshold from a column sample finds one faster than a partition.
    """
    n_nodes = values.shape[1]
    demand = int(np.isfinite(values).any(axis=1).sum())
    open_caps = np.sort(capacity[capacity > 0])
    k = int(np.searchsorted(np.cumsum(open_caps), demand)) + 1
    if 4 * k >= n_nodes:
        return np.ones(values.shape, dtype=bool)
    # a row threshold from every 4th column (its k/4 + 2 largest), lowered where it keeps
    # fewer than k nodes
    sample = values[:, ::4]
    cut = sample.shape[1] - (k // 4 + 2)
    threshold = np.partition(sample, cut, axis=1)[:, cut]
    keep = values >= threshold[:, None]
    short = np.flatnonzero(keep.sum(axis=1) < k)
    if short.size:
        exact = np.partition(values[short], n_nodes - k, axis=1)[:, n_nodes - k]
        keep[short] = values[short] >= exact[:, None]
    return keep


def transport(
    values: np.ndarray,
    capacity: np.ndarray,
    v_max: float,
    start_prices: np.ndarray | None = None,
    list_len: int = LIST_LEN,
    max_passes: int = MAX_PASSES,
    deadline: Deadline = NO_DEADLINE,
) -> tuple[np.ndarray, np.ndarray, int] | None:
    """Optimal assignment of single-slot pods to nodes with capacities, and its dual prices.

    Parameters
    ----------
    values : (J, N) float
        Value of pod j on node n, > 0 where allowed, −inf where not.
    capacity : (N,) int ≥ 0
        Free slots per node.
    v_max : float > 0
        The largest value: gains within ``TOL_REL · v_max`` count as ties.
    start_prices : (N,) float ≥ 0, optional
        Prices that pick the first candidate lists: each pod's ``list_len`` best nodes by net
        value (the warm start). ``None``: the lists that provably hold an optimum
        (:func:`_sufficient`).
    list_len : int
        Nodes per pod in the first lists (with ``start_prices``), and the first growth step.
    max_passes : int
        Restricted solves before giving up.
    deadline : Deadline
        The wall-clock budget (:mod:`.budget`), checked before every pass.

    Returns
    -------
    (assignment, prices, passes) or None
        assignment (J,) node per pod, −1 = out; prices (N,) ≥ 0, 0 on nodes with a free slot,
        certifying optimality (0-CS); passes run. ``None`` when the pass cap or ``MAX_EDGES``
        is hit, rounding breaks the certificate, or the budget is spent: the caller must use
        another method.
    """
    n_pods, n_nodes = values.shape
    ones = np.ones(n_pods, dtype=np.int64)
    tol = TOL_REL * v_max
    if start_prices is None:
        pod, node = np.nonzero(_sufficient(values, capacity) & np.isfinite(values))
    else:
        pod, node = _edges(
            values, _top(values - start_prices[None, :], np.arange(n_pods), list_len, tol)
        )
    for passes in range(1, max_passes + 1):
        if pod.size > MAX_EDGES or deadline.expired():
            return None
        flow = min_cost_flow(ones, capacity, pod, node, values[pod, node], v_max)
        if flow is None:
            return None
        prices = min_prices(flow, n_nodes, tol)
        if prices is None:
            return None
        on = flow.units > 0
        assign = np.full(n_pods, -1, dtype=np.int64)
        assign[pod[on]] = node[on]
        if _free_slot_priced(assign, prices, capacity, tol):
            return None
        profit = np.zeros(n_pods)
        profit[pod[on]] = flow.gain[on] - prices[node[on]]
        net = values - prices[None, :]
        gaining = np.flatnonzero(net.max(axis=1) > profit + tol)
        if gaining.size == 0:
            return assign, prices, passes
        more = _top(net[gaining], gaining, list_len * GROWTH ** (passes - 1), tol)
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
    (dense Jonker–Volgenant, O(J²·ΣK): cheaper than building a flow below ~10⁶), priced by
    the same longest paths over all allowed pairs (:func:`.flow.min_prices`).

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
    n_nodes = values.shape[1]
    assign = _slot_assignment(values, capacity)
    pod, node = np.nonzero(np.isfinite(values))
    placed = (assign[pod] == node).astype(np.int64)
    flow = Flow(pod, node, values[pod, node], placed, (assign < 0).astype(np.int64))
    tol = TOL_REL * v_max
    prices = min_prices(flow, n_nodes, tol)
    if prices is None or _free_slot_priced(assign, prices, capacity, tol):
        return None
    return assign, prices


def _slot_assignment(values: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """(J,) node of each pod, −1 out: scipy's ``linear_sum_assignment`` on the values
    expanded to one column per free slot (a pair worth 0 or not finite is staying out)."""
    expanded = np.repeat(np.where(np.isfinite(values), values, 0.0), capacity, axis=1)
    rows, cols = linear_sum_assignment(expanded, maximize=True)
    assign = np.full(values.shape[0], -1, dtype=np.int64)
    taken = expanded[rows, cols] > 0
    assign[rows[taken]] = np.repeat(np.arange(values.shape[1]), capacity)[cols[taken]]
    return assign


def _free_slot_priced(
    assign: np.ndarray, prices: np.ndarray, capacity: np.ndarray, tol: float
) -> bool:
    """Whether a node with a free slot has a price above ``tol`` (the prices then certify
    nothing: complementary slackness needs such a node at 0)."""
    used = np.bincount(assign[assign >= 0], minlength=capacity.size)
    return bool((prices[used < capacity] > tol).any())


def best_nodes(values: np.ndarray, capacity: np.ndarray) -> np.ndarray | None:
    """Each pod on its best allowed node, when no node is asked for more slots than it has
    free: then that assignment is optimal and every price 0 certifies it (each pod earns its
    largest value, the dual objective Σ_j max_n v_jn equals the value, no free slot is
    priced: 0-CS, Bertsekas 1998 §7.1); ``None`` when some node is over-asked.

    The extender's usual batch (a few pods, 1,000 nodes of several free slots each) is this
    case: one row maximum and one count, where the short lists pay a dense assignment and
    the longest-path prices. Ties go to the lowest node index (``argmax``: deterministic,
    AR-8).

    Parameters
    ----------
    values : (J, N) float, > 0 where allowed, −inf where not (nor where the pod's slots do
        not fit: :func:`.inputs.allowed`); with J = 1 the pod may take several slots
    capacity : (N,) int ≥ 0
        Free slots (J > 1: single-slot pods).

    Returns
    -------
    (J,) int or None
        The node of each pod (−1: it has no allowed node), or ``None``.
    """
    best = values.argmax(axis=1)
    placed = np.isfinite(values[np.arange(values.shape[0]), best])
    assign = np.where(placed, best, -1)
    if values.shape[0] > 1:
        asked = np.bincount(best[placed], minlength=capacity.size)
        if (asked > capacity).any():
            return None
    return assign


def identical_pods(
    values: np.ndarray, capacity: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """Single-slot pods that all value every node alike (a Deployment's replicas): they fill
    the allowed nodes in descending value (ties by index: deterministic, AR-8), which is
    optimal, priced so that every pod earns π, the best value still on offer (0 when a pod
    stays out): a full node costs v_n − π, every other 0. No pod then gains more elsewhere
    (a node with a free slot is worth at most π) and no free slot is priced: 0-CS, the dual
    objective equals the value (Bertsekas 1998 §7.1). ``None`` when the rows differ.

    Parameters
    ----------
    values : (J, N) float, > 0 where allowed, −inf where not
    capacity : (N,) int ≥ 0

    Returns
    -------
    (assignment, prices) or None
        As :func:`dense`.
    """
    row = values[0]
    if not (values == row).all():
        return None
    n_pods, n_nodes = values.shape
    allowed = np.flatnonzero(np.isfinite(row) & (capacity > 0))
    order = allowed[np.argsort(-row[allowed], kind="stable")]
    if not order.size:  # nowhere to go: everyone out, nothing priced
        return np.full(n_pods, -1, dtype=np.int64), np.zeros(n_nodes)
    slot = np.searchsorted(np.cumsum(capacity[order]), np.arange(n_pods), side="right")
    assign = np.where(slot < order.size, order[np.minimum(slot, order.size - 1)], -1)
    used = np.bincount(assign[assign >= 0], minlength=n_nodes)
    open_ = np.isfinite(row) & (used < capacity)
    profit = 0.0 if (assign < 0).any() or not open_.any() else float(row[open_].max())
    full = (used >= capacity) & (used > 0)
    prices = np.zeros(n_nodes)
    prices[full] = row[full] - profit
    return assign, prices


def few(
    values: np.ndarray, capacity: np.ndarray, v_max: float
) -> tuple[np.ndarray, np.ndarray] | None:
    """A few single-slot pods: the optimum on each pod's J best nodes, certified on all N.

    First :func:`best_nodes`: when no node is asked for more slots than it has free, each pod
    on its best node is the optimum, priced 0 (the minimal competitive prices); then
    :func:`identical_pods`: pods that value every node alike fill them in value order.
    Otherwise:
    With J pods that can be placed, each lists its J best allowed nodes by value. These lists
    provably hold an optimum (the argument of :func:`_sufficient`: every allowed node has a free
    slot, so a pod on an unlisted node would mean J other pods fill its J listed nodes, in a
    batch of J), so the problem on their union U (at most J² nodes, each offering at most J
    slots: no node can take more) has the full problem's optimum. It is solved by scipy's
    ``linear_sum_assignment`` on the slot-expanded values of U, priced by the minimal
    competitive prices (:func:`.flow.min_prices`; 0 off U) and certified on every node as
    :func:`transport` does: no pod gains more than its profit anywhere and every node with a
    free slot costs 0. (Minimal prices of the restricted problem give each pod its greatest
    profit among its optimal duals, and some full optimal dual prices the empty nodes off U at
    0, so the certificate holds up to rounding.) At 2–32 pods × 1,000 nodes this costs a few
    row maxima and one tiny assignment, where the matching pays its warm start and a flow.

    Parameters
    ----------
    values : (J, N) float, > 0 where allowed, −inf where not (nor where the pod's slots do
        not fit: :func:`.inputs.allowed`); with J = 1 the pod may take several slots, since
        its best allowed node is then the optimum
    capacity, v_max
        As :func:`dense`.

    Returns
    -------
    (assignment, prices) or None
        As :func:`dense`.
    """
    n_pods, n_nodes = values.shape
    uncontested = best_nodes(values, capacity)
    if uncontested is not None:
        return uncontested, np.zeros(n_nodes)
    replicas = identical_pods(values, capacity)
    if replicas is not None:
        return replicas
    tol = TOL_REL * v_max
    placeable = int(np.isfinite(values).any(axis=1).sum())
    pod, node = _edges(values, ranked(values.copy(), max(1, placeable)))
    listed, column = np.unique(node, return_inverse=True)
    offered = np.minimum(capacity[listed], placeable)
    restricted = np.zeros((n_pods, listed.size))  # a pair not listed (worth 0) stays out
    restricted[pod, column] = values[pod, node]
    on_list = _slot_assignment(restricted, offered)
    placed = (on_list[pod] == column).astype(np.int64)
    flow = Flow(pod, column, values[pod, node], placed, (on_list < 0).astype(np.int64))
    listed_prices = min_prices(flow, listed.size, tol)
    if listed_prices is None:
        return None
    prices = np.zeros(n_nodes)
    prices[listed] = listed_prices
    assign = np.where(on_list >= 0, listed[np.maximum(on_list, 0)], -1)
    if _free_slot_priced(assign, prices, capacity, tol):
        return None
    on = np.flatnonzero(assign >= 0)
    profit = np.zeros(n_pods)
    profit[on] = values[on, assign[on]] - prices[assign[on]]
    gain = net_values(values, np.ones(n_pods, dtype=np.int64), prices).max(axis=1, initial=0.0)
    if (gain > profit + tol).any():
        return None
    return assign, prices
