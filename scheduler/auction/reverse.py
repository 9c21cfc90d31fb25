"""Reverse rounds of the forward–reverse auction (Bertsekas & Castañón, *A forward/reverse
auction algorithm for asymmetric assignment problems*, Comput. Optim. Appl. 1, 1992).

With fewer pods than slots, forward ε-scaling phases can leave free slots priced from an
earlier phase. Here nodes whose free slots cost more than λ bid for pods (lowering their
price) until every free slot costs at most λ; with ε-CS that makes the clearing ε-optimal.
"""

from __future__ import annotations

import numpy as np

from eams.scheduler.auction.market import Market


def floor(m: Market, eps: float) -> float:
    """λ for the reverse rounds (Bertsekas & Castañón 1992): the lowest price any held slot
    pays, lowered so that no unassigned pod would gain more than ε once every price is
    shifted down by λ; never below 0. Prices only need to fall to λ, not to 0: shifting
    all of them by −λ changes no pod's choice among nodes."""
    held = m.holders >= 0
    lam = float(m.prices[held].min()) if held.any() else 0.0
    out = np.flatnonzero((m.assign < 0) & np.isfinite(m.v).any(axis=1))
    if out.size and lam > 0:
        best = m.net_values(out).max(axis=1)
        lam = min(lam, float(((eps - best) / m.df[out]).min()))
    return max(0.0, lam)


def reverse_round(m: Market, eps: float, lam: float) -> bool:
    """One Jacobi round of reverse bids by nodes whose free slots cost more than λ.

    For each such node n the best pod j* maximises the per-slot gain
    ``(v_jn − π_j) / d_j`` over pods that fit its free slots and are not already in its
    class of identical nodes (π_j = −d_j·λ for a pod left out); if
    ``d_j*·(gain − λ) ≤ ε`` the free slots drop to λ; else the node takes j* at
    ``max(λ, second gain − ε/d_j*)`` per slot, and the slots j* leaves keep their price
    (they may make their node bid next round). A pod wanted by several nodes goes where
    its profit is highest.

    Returns
    -------
    bool
        Whether any node still had to act (``False`` = no free slot costs more than λ).
    """
    free = (m.holders < 0) & np.isfinite(m.prices)
    dirty = np.flatnonzero((free & (m.prices > lam)).any(axis=1))
    if dirty.size == 0:
        return False
    n_free = free[dirty].sum(axis=1)
    profit = np.where(m.assign >= 0, m.profits(), -lam * m.df)
    gain = (m.v[:, dirty] - profit[:, None]) / m.df[:, None]
    # pods already in the node's class stay: moving among identical nodes gains nothing
    home = np.where(m.assign >= 0, m.cls[np.maximum(m.assign, 0)], -1)
    gain[(m.d[:, None] > n_free[None, :]) | (home[:, None] == m.cls[dirty][None, :])] = -np.inf
    c = np.arange(dirty.size)
    best = gain.argmax(axis=0)
    h1 = gain[best, c]
    gain[best, c] = -np.inf
    h2 = gain.max(axis=0) if gain.shape[0] > 1 else np.full(dirty.size, -np.inf)
    close = ~((h1 - lam) * m.df[best] > eps)
    if close.any():
        rows = dirty[close]
        sub_p = np.where(free[rows], np.minimum(m.prices[rows], lam), m.prices[rows])
        order = np.argsort(sub_p, axis=1, kind="stable")
        m.prices[rows] = np.take_along_axis(sub_p, order, axis=1)
        m.holders[rows] = np.take_along_axis(m.holders[rows], order, axis=1)
    take = ~close
    if not take.any():
        return True
    nodes, pods = dirty[take], best[take]
    price = np.maximum(lam, h2[take] - eps / m.df[pods])
    payoff = m.v[pods, nodes] - m.df[pods] * price
    order = np.lexsort((-payoff, pods))
    first = np.ones(order.size, dtype=bool)
    first[1:] = pods[order][1:] != pods[order][:-1]
    sel = order[first]
    _move(m, pods[sel], nodes[sel], price[sel], free)
    return True


def _move(
    m: Market, pods: np.ndarray, nodes: np.ndarray, price: np.ndarray, free: np.ndarray
) -> None:
    """Pods move onto ``nodes`` at per-slot ``price``; the entries they leave turn free."""
    n_pods = m.assign.size
    old = m.assign[pods]
    moved = np.zeros(n_pods + 1, dtype=bool)
    moved[pods] = True
    rows = np.unique(old[old >= 0])
    if rows.size:
        sub = m.holders[rows]
        sub[moved[sub]] = -1
        m.holders[rows] = sub
    sub_free = free[nodes] & (m.holders[nodes] < 0)
    # take the d most expensive free entries (those that made the node act)
    from_right = np.cumsum(sub_free[:, ::-1], axis=1)[:, ::-1]
    takes = sub_free & (from_right <= m.d[pods][:, None])
    sub_p, sub_h = m.prices[nodes], m.holders[nodes]
    sub_p = np.where(takes, price[:, None], sub_p)
    sub_h = np.where(takes, pods[:, None], sub_h)
    order = np.argsort(sub_p, axis=1, kind="stable")
    m.prices[nodes] = np.take_along_axis(sub_p, order, axis=1)
    m.holders[nodes] = np.take_along_axis(sub_h, order, axis=1)
    m.assign[pods] = nodes
    m.bid[pods] = price


# -- results ---------------------------------------------------------------------------
