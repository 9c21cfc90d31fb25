"""Starting prices for the auction from a rank-one reading of the bid matrix.

For single-slot pods the study's bids are rank one: with c_j fixed,
``v_jn = π_j · s_n·σ_n / ((P_max − P_idle)/C_n + 1[empty]·P_idle/c_j)`` = a_j · q_n (§5.1–5.2).
Such a market clears by sorting (the best pods on the best nodes), and its competitive
prices follow from the order. An auction started from zero prices instead has every pod bid
for the same best node, one node filled per round; started from these prices, each pod's
first bid already goes to its own tier.

Any starting prices are legal in a forward auction (ε-CS holds for an empty assignment), so
this is only a speed-up: filter masks, multi-slot pods and empty nodes make the bids deviate
from rank one, and the auction corrects the prices wherever the guess is off.
"""

from __future__ import annotations

import numpy as np

SAMPLE_PODS = 64


def rank_one_prices(
    values: np.ndarray,
    demand: np.ndarray,
    capacity: np.ndarray,
    row_max: np.ndarray | None = None,
    row_argmax: np.ndarray | None = None,
) -> tuple[np.ndarray, float]:
    """Per-slot node prices that clear the rank-one approximation of ``values``.

    q_n from a sample of pods by alternating means of log v = log a + log q over the allowed
    entries; a_j = v_jn* / q_n* at the pod's best node n*. Pods sorted by value
    density a_j / d_j fill the nodes sorted by q in order; between neighbouring tiers the
    price step is (q_i − q_{i+1}) times the mean density of the two pods at the boundary, so
    each pod strictly prefers its own tier; the last node used costs 0, or, with more demand
    than slots, enough to keep the best pod left out out; nodes below it cost 0.

    Parameters
    ----------
    values : (J, N) float, −inf where not allowed
    demand : (J,) int ≥ 1
    capacity : (N,) int ≥ 0
    row_max, row_argmax : (J,) float and int, optional
        ``values.max(axis=1)`` and ``values.argmax(axis=1)`` when the caller has them.

    Returns
    -------
    prices : (N,) float ≥ 0, per slot
    residual : float ≥ 0
        max |v_jn − a_j·q_n| over the sampled pods, in value units: how far the bids are from
        rank one (0 for single-slot pods without filter masks), hence roughly how wrong the
        prices can be; the auction starts its ε schedule there.
    """
    n_nodes = values.shape[1]
    best = values.max(axis=1) if row_max is None else row_max
    pods = np.flatnonzero(best > -np.inf)
    prices = np.zeros(n_nodes)
    if pods.size == 0:
        return prices, 0.0
    sample = values[pods[:: max(1, pods.size // SAMPLE_PODS)]]
    allowed = np.isfinite(sample)
    log_v = np.log(sample, where=allowed, out=np.zeros(sample.shape))
    seen = allowed.sum(axis=0)
    nodes = np.flatnonzero((seen > 0) & (capacity > 0))
    if nodes.size < 2:
        return prices, 0.0
    # log v = log a + log q on the allowed entries: alternating means (filter masks leave
    # holes, so a row's maximum alone would mis-scale a pod whose best node is masked)
    if allowed.all():  # no holes: the means are exact in one step
        log_a = log_v.mean(axis=1)
        log_q = (log_v - log_a[:, None]).mean(axis=0)
    else:
        log_a = np.log(sample.max(axis=1))
        for _ in range(3):
            log_q = np.where(allowed, log_v - log_a[:, None], 0.0).sum(axis=0) / np.maximum(seen, 1)
            log_a = np.where(allowed, log_v - log_q[None, :], 0.0).sum(axis=1) / allowed.sum(axis=1)
    q = np.where(seen > 0, np.exp(log_q), 0.0)
    misfit = np.abs(sample - np.exp(log_a)[:, None] * q[None, :])
    residual = float(np.where(allowed, misfit, 0.0).max())
    # every pod's a from its best node (exact when the bids are rank one)
    top = (values.argmax(axis=1) if row_argmax is None else row_argmax)[pods]
    q_top = q[top]
    a = best[pods] / np.where(q_top > 0, q_top, q.max())
    nodes = nodes[np.argsort(-q[nodes], kind="stable")]
    density = a / demand[pods]
    order = np.argsort(-density, kind="stable")
    density = density[order]
    # tier of each pod: the node where its first slot lands when filling in order
    start = np.concatenate([[0], np.cumsum(demand[pods][order])[:-1]])
    tier = np.searchsorted(np.cumsum(capacity[nodes]), start, side="right")
    inside = tier < nodes.size
    # with more demand than slots the last tier is priced to keep the best pod left out out
    left_out = float(density[~inside].max(initial=0.0))
    tier, density = tier[inside], density[inside]
    if tier.size == 0:
        return prices, residual
    used = int(tier[-1])  # last tier with a pod (density sorted descending)
    lowest = np.full(nodes.size + 1, np.inf)
    highest = np.zeros(nodes.size + 1)
    np.minimum.at(lowest, tier, density)
    np.maximum.at(highest, tier, density)
    lowest[np.isinf(lowest)] = 0.0
    q_sorted = np.append(q[nodes], 0.0)
    step = (
        0.5 * (lowest[:used] + highest[1 : used + 1]) * (q_sorted[:used] - q_sorted[1 : used + 1])
    )
    base = 0.5 * (lowest[used] + left_out) * q_sorted[used] if left_out > 0 else 0.0
    ladder = np.concatenate([np.cumsum(step[::-1])[::-1], [0.0]]) + base
    prices[nodes[: used + 1]] = np.maximum(ladder, 0.0)
    return prices, residual
