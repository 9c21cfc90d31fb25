"""The ε-auction with ε-scaling (study §5.3): ``solve`` on a value matrix, ``clear`` on pods and
nodes.

Algorithm (Bertsekas, *Network Optimization: Continuous and Discrete Models*, 1998, §7.1–7.2;
Bertsekas & Castañón 1989 and 1992, see :mod:`.book`):

1. ε-scaling. ε runs from ``epsilon_start_rel`` to ``epsilon_rel`` of the largest value,
   divided by ``epsilon_factor`` per phase. Each phase starts with every pod unassigned and
   the previous phase's prices, and runs forward Jacobi rounds until every pod holds a node
   or prefers staying out.
2. The asymmetric trap. With fewer pods than slots, a forward-only auction with ε-scaling can
   end with free slots still priced from an earlier phase, and is then not ε-optimal. The last
   phase therefore ends with reverse rounds (forward–reverse auction, Bertsekas & Castañón
   1992) until no free slot costs more than λ = 0. Then every assigned pod is within ε of its
   best node (ε-CS), every free slot is free of charge, and the LP duality gap is at most J·ε.
3. The cap. Rounds are counted over all phases; at ``max_rounds`` the greedy fallback
   completes the (always feasible) partial assignment and the clearing says so.

Multi-slot pods make the problem a generalised assignment problem: the same prices then bound
the optimum through the LP relaxation (:func:`dual_bound`), and the gap is reported rather than
guaranteed.

With ``AuctionParams.method = "auto"`` (default) ``solve`` first tries cheaper exact paths and
says which one cleared in ``Clearing.method``: a 20-round warm auction for unfiltered rank-one
single-slot bids; :func:`.exact.dense` for small cold single-slot batches;
:func:`.exact.transport` for other single-slot batches; :func:`.bundles.relax_round_repair`
plus a short auction polish from its duals for mixed sizes. The ε-auction above runs when
those decline.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from eams.scheduler.auction.bids import bid_values
from eams.scheduler.auction.bundles import relax_round_repair
from eams.scheduler.auction.exact import dense, transport
from eams.scheduler.auction.greedy import greedy_complete
from eams.scheduler.auction.book import OrderBook
from eams.scheduler.auction.model import AuctionParams, Clearing, Nodes, Pods
from eams.scheduler.auction.reverse import floor, reverse_round
from eams.scheduler.auction.warmstart import rank_one_prices
from eams.scheduler.errors import AuctionInputError

DEFAULT_PARAMS = AuctionParams()
# J²·ΣK below which linear_sum_assignment on the slot-expanded values beats cold list passes
# (measured here at 100 × 100 × 4 = 4·10⁶: 3 ms, cold passes 10 ms, warm passes 2 ms)
DENSE_WORK = 4_000_000
QUICK_ROUNDS = 20  # auction rounds tried on exactly rank-one bids before the matching
POLISH_ROUNDS = 20  # auction rounds after the bundle relaxation (≈ 0.3 ms CPU each, 500 × 1,000)


def _check_matrix(
    values: object, demand: object, capacity: object
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    v = np.asarray(values, dtype=float)
    d = np.asarray(demand)
    c = np.asarray(capacity)
    if v.ndim != 2:
        raise AuctionInputError(f"values: must be 2-D (pods × nodes), got shape {v.shape}")
    if d.shape != (v.shape[0],) or c.shape != (v.shape[1],):
        raise AuctionInputError(
            f"demand {d.shape} / capacity {c.shape} do not match values {v.shape}"
        )
    if d.size and (d.dtype.kind not in "iu" or d.min() < 1):
        i = int(np.flatnonzero(d < 1)[0]) if d.dtype.kind in "iu" else 0
        raise AuctionInputError(f"demand[{i}]: must be an integer ≥ 1")
    if c.size and (c.dtype.kind not in "iu" or c.min() < 0):
        i = int(np.flatnonzero(c < 0)[0]) if c.dtype.kind in "iu" else 0
        raise AuctionInputError(f"capacity[{i}]: must be an integer ≥ 0")
    total = v.sum()  # one pass: NaN or +inf anywhere makes the sum NaN or +inf
    if np.isnan(total) or total == np.inf:
        j, n = np.argwhere(np.isnan(v) | (v == np.inf))[0]
        raise AuctionInputError(
            f"values[{j}, {n}] = {v[j, n].item()!r}: must be finite or −inf (not allowed)"
        )
    return v, d.astype(np.int64), c.astype(np.int64)


def _allowed(
    v: np.ndarray, d: np.ndarray, cap: np.ndarray, eligible: np.ndarray | None
) -> np.ndarray:
    """``v`` with −inf wherever the pod may not go: v ≤ 0, not eligible, or wider than the node.

    Returns ``v`` itself (not a copy) when nothing has to change.
    """
    if eligible is not None:
        mask = np.asarray(eligible)
        if mask.shape != v.shape or mask.dtype != bool:
            raise AuctionInputError(
                f"feasible: must be a bool array of shape {v.shape}, got {mask.dtype} {mask.shape}"
            )
    if v.size == 0:
        return v
    narrow = np.flatnonzero(cap < d.max())  # only these nodes can be too small for a pod
    if eligible is None and narrow.size == 0 and v.min() > 0:
        return v
    v = np.where(v > 0, v, -np.inf)
    if eligible is not None:
        v[~mask] = -np.inf
    if narrow.size:
        v[:, narrow] = np.where(d[:, None] <= cap[narrow][None, :], v[:, narrow], -np.inf)
    return v


def _epsilons(first: float, final: float, factor: float) -> list[float]:
    """ε-scaling schedule: ``first``, ``first/factor``, … down to ``final`` (included)."""
    schedule = []
    eps = first
    while eps > final * (1 + 1e-9):
        schedule.append(eps)
        eps /= factor
    return [*schedule, final]


def solve(
    values: np.ndarray,
    demand: np.ndarray,
    capacity: np.ndarray,
    params: AuctionParams = DEFAULT_PARAMS,
    eligible: np.ndarray | None = None,
) -> Clearing:
    """Maximise Σ v_{j,n(j)} placing each pod on at most one node within its free slots.

    Parameters
    ----------
    values : (J, N) float
        v_jn in any unit; −inf, ≤ 0, or ``eligible`` False means pod j may not go to node n.
    demand : (J,) int ≥ 1
        Slots per pod (a bundle on one node).
    capacity : (N,) int ≥ 0
        Free slots per node.
    params : AuctionParams
        ε schedule, short-list length, round cap.
    eligible : (J, N) bool, optional
        The filter predicates' verdicts.

    Returns
    -------
    Clearing
        ``converged`` False and ``fell_back`` True when the round cap was hit.

    Raises
    ------
    AuctionInputError
        Shapes disagree, NaN or +inf values, demand < 1 or capacity < 0 (names the index).
    """
    raw, d, cap = _check_matrix(values, demand, capacity)
    v = _allowed(raw, d, cap, eligible)
    best = v.max(axis=1) if v.size else np.full(v.shape[0], -np.inf)
    placeable = best > -np.inf
    if not placeable.any():
        return _result(
            OrderBook(v, d, cap, params.candidates), d, 0, 0.0, True, False, placeable, 0
        )
    v_max = float(best.max())
    if params.method == "auto":
        quick = eligible is None and (d == 1).all() and params.warm_start
        start, first = _warm(v, d, cap, params, best, v_max) if quick else (None, 0.0)
        if quick and first <= params.epsilon_rel * v_max:
            # Exactly rank-one bids (the study's, unfiltered) clear in a round or two from the
            # warm start: cheaper than the matching, which runs if this quick try does not end.
            # (A filter mask keeps the fit exact on the allowed pairs, yet needs ~10³ rounds.)
            short = replace(params, max_rounds=QUICK_ROUNDS)
            tried = _auction(v, d, cap, short, placeable, start, first, v_max, certify=False)
            if tried.converged:
                return tried
        # a filter only removes options: the unfiltered bids are the better warm-start guess
        guess = v if eligible is None else _allowed(raw, d, cap, None)
        exact = _matching(v, guess, d, cap, params, placeable, v_max)
        if exact is not None:
            return exact
    start, first = _warm(v, d, cap, params, best, v_max)
    return _auction(v, d, cap, params, placeable, start, first, v_max)


def _warm(
    v: np.ndarray,
    d: np.ndarray,
    cap: np.ndarray,
    params: AuctionParams,
    best: np.ndarray,
    v_max: float,
) -> tuple[np.ndarray | None, float]:
    """The auction's starting prices and first ε (the rank-one misfit when warm)."""
    first = params.epsilon_start_rel * v_max
    if not params.warm_start:
        return None, first
    start, residual = rank_one_prices(v, d, cap, best)
    return start, min(first, residual)  # coarse phases would only blur good starting prices


def _auction(
    v: np.ndarray,
    d: np.ndarray,
    cap: np.ndarray,
    params: AuctionParams,
    placeable: np.ndarray,
    start: np.ndarray | None,
    first: float,
    v_max: float,
    certify: bool = True,
) -> Clearing:
    """The ε-auction from per-slot ``start`` prices, ε-scaling from ``first`` (steps 1–3);
    ``certify`` False skips the dual bound (a polish whose gap the caller certifies)."""
    book = OrderBook(v, d, cap, params.candidates, start)
    schedule = _epsilons(first, params.epsilon_rel * v_max, params.epsilon_factor)
    rounds = 0
    lam = 0.0
    for phase, eps in enumerate(schedule, start=1):
        if phase > 1:
            book.restart(schedule[phase - 2])
        active = placeable.copy()
        while active.any() and rounds < params.max_rounds:
            rounds += 1
            book.forward_round(active, eps, rounds)
        if phase == len(schedule):
            book.invalidate()
            lam = floor(book, eps)
            while rounds < params.max_rounds and reverse_round(book, eps, lam):
                rounds += 1
        if rounds >= params.max_rounds:
            book.assign = greedy_complete(v, d, cap, book.assign)
            return _result(book, d, rounds, eps, False, True, placeable, phase, 0.0, certify)
    if (d > 1).any():
        # Bundles can leave free slots that no bid could claim (the ask of a d-slot pod counts
        # held slots too): place what still fits. Single-slot clearings never change here.
        book.assign = greedy_complete(v, d, cap, book.assign)
    return _result(
        book, d, rounds, schedule[-1], True, False, placeable, len(schedule), lam, certify
    )


def _matching(
    v: np.ndarray,
    guess: np.ndarray,
    d: np.ndarray,
    cap: np.ndarray,
    params: AuctionParams,
    placeable: np.ndarray,
    v_max: float,
) -> Clearing | None:
    """The exact path (:mod:`.exact`, :mod:`.bundles`); ``None`` when it gave up.

    ``guess``: the values without the filter mask, for the warm start's candidate lists.
    """
    small = v.shape[0] ** 2 * int(cap.sum()) <= DENSE_WORK
    if (d == 1).all() and small and not params.warm_start:
        solved = dense(v, cap, v_max)
        if solved is None:
            return None
        (assignment, prices), passes = solved, 1
        method, gap, rounds = "linear_sum_assignment", None, 0
    elif (d == 1).all():
        start = rank_one_prices(guess, d, cap)[0] if params.warm_start else None
        solved = transport(v, cap, v_max, start)
        if solved is None:
            return None
        assignment, prices, passes = solved
        method, gap, rounds = "matching", None, 0
    else:
        sized = relax_round_repair(v, guess if params.warm_start else None, d, cap, v_max)
        if sized is None:
            return None
        (assignment, prices), passes = sized, 1
        method, gap = "matching relaxation, rounded and repaired", None
        # The auction started at the relaxation's duals (near equilibrium: one phase at the
        # final ε) often finds a better integer assignment in a few rounds; keep the better.
        polish = _auction(
            v,
            d,
            cap,
            replace(params, max_rounds=POLISH_ROUNDS),
            placeable,
            prices,
            params.epsilon_rel * v_max,
            v_max,
            certify=False,
        )
        on, rounds = np.flatnonzero(assignment >= 0), polish.rounds
        if polish.value > float(v[on, assignment[on]].sum()):
            assignment = polish.assignment
            method = f"matching relaxation, then {polish.rounds} auction rounds from its duals"
    on = np.flatnonzero(assignment >= 0)
    value = float(v[on, assignment[on]].sum())
    if gap is None and (d > 1).any():  # the relaxation's duals bound every integer assignment
        gap = max(0.0, dual_bound(v, d, cap, prices) - value)
    return Clearing(
        assignment=assignment,
        prices=prices,
        value=value,
        rounds=rounds,
        epsilon=params.epsilon_rel * v_max,
        converged=True,
        fell_back=False,
        unplaceable=~placeable,
        phases=passes,
        gap_bound=gap,
        method=method,
    )


def _result(
    book: OrderBook,
    demand: np.ndarray,
    rounds: int,
    eps: float,
    converged: bool,
    fell_back: bool,
    placeable: np.ndarray,
    phases: int,
    lam: float = 0.0,
    certify: bool = True,
) -> Clearing:
    assignment = book.assign.copy()
    on = np.flatnonzero(assignment >= 0)
    value = float(book.v[on, assignment[on]].sum())
    prices = book.node_prices(lam)
    gap = None
    if certify and ((demand > 1).any() or not converged):  # no J·ε guarantee: certify the gap
        gap = max(0.0, dual_bound(book.v, demand, book.cap, prices) - value)
    return Clearing(
        assignment=assignment,
        prices=prices,
        value=value,
        rounds=rounds,
        epsilon=eps,
        converged=converged,
        fell_back=fell_back,
        unplaceable=~placeable,
        phases=phases,
        gap_bound=gap,
        method="auction+greedy" if fell_back else "auction",
    )


def dual_bound(
    values: np.ndarray, demand: np.ndarray, capacity: np.ndarray, prices: np.ndarray
) -> float:
    """An upper bound on the optimum from node prices (LP duality).

    ``Σ_j max(0, max_n (v_jn − d_j·p_n)) + Σ_n K_n·p_n`` bounds the LP relaxation, hence every
    integer assignment, for any prices p ≥ 0. With ε-CS and free slots at price 0 it exceeds
    the clearing's value by at most J·ε.

    Parameters
    ----------
    values : (J, N) float, −inf where not allowed
    demand : (J,) int
    capacity : (N,) int
    prices : (N,) float ≥ 0, per slot

    Returns
    -------
    float
    """
    if values.size == 0:
        return 0.0
    ok = np.isfinite(values) & (values > 0) & (demand[:, None] <= capacity[None, :])
    net = np.where(ok, values - demand[:, None] * prices[None, :], -np.inf)
    return float(np.maximum(net.max(axis=1), 0.0).sum() + (capacity * prices).sum())


def clear(
    pods: Pods,
    nodes: Nodes,
    params: AuctionParams = DEFAULT_PARAMS,
    feasible: np.ndarray | None = None,
) -> Clearing:
    """Clear one batch: bids from :func:`.bids.bid_values`, then :func:`solve`.

    Nodes at or over their power cap bid 0 and take nothing; a pod wider than every node's
    free slots (or with no feasible node) stays unassigned and is flagged in
    ``Clearing.unplaceable``. No pods or no nodes give an empty, converged clearing.

    Parameters
    ----------
    pods : Pods, length J
    nodes : Nodes, length N
    params : AuctionParams
    feasible : (J, N) bool, optional
        Filter-predicate mask (study §4: the default filters still decide feasibility).

    Returns
    -------
    Clearing

    Raises
    ------
    AuctionInputError
        ``feasible`` has the wrong shape or dtype.
    """
    values = (
        bid_values(pods, nodes, params)
        if len(pods) and len(nodes)
        else np.zeros((len(pods), len(nodes)))
    )
    return solve(values, pods.slots, nodes.slots, params, feasible)
