"""Reverse rounds of the forward–reverse auction (Bertsekas & Castañón, *A forward/reverse
auction algorithm for asymmetric assignment problems*, Comput. Optim. Appl. 1, 1992).

With fewer pods than slots, forward ε-scaling phases can leave free slots priced from an
earlier phase. Here nodes whose free slots cost more than λ bid for pods (lowering their
price) until every free slot costs at most λ; with ε-CS that makes the clearing ε-optimal.
"""

from __future__ import annotations

import numpy as np

from eams.scheduler.auction.book import OrderBook


def floor(m: OrderBook, eps: float) -> float:
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


def reverse_round(m: OrderBook, eps: float, lam: float) -> bool:
    """One Jacobi round of reverse bids by nodes whose free slots cost more than λ.

    Each such node n ranks the pods that are not already in its class of identical nodes by
    the per-slot gain ``(v_jn − π_j) / d_j`` (π_j = −d_j·λ for a pod left out) and takes the
    best ones while they fit its free slots and gain more than ε over λ, all at one price:
    ``max(λ, next gain − ε/d)``, just below what the best pod it did not take would pay. A
    node that takes nobody drops its free slots to λ. Slots a pod leaves keep their price
    (they may make their node bid next round); a pod wanted by several nodes goes where its
    profit is highest.

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
    n_pods = gain.shape[0]
    depth = min(n_pods, int(n_free.max()) + 1)
    if depth < n_pods:
        top = np.argpartition(-gain, depth - 1, axis=0)[:depth]
    else:
        top = np.broadcast_to(np.arange(n_pods)[:, None], gain.shape)
    top_gain = np.take_along_axis(gain, top, axis=0)
    order = np.argsort(-top_gain, axis=0, kind="stable")
    top = np.take_along_axis(top, order, axis=0)
    top_gain = np.take_along_axis(top_gain, order, axis=0)
    size = m.df[top]
    ok = (np.cumsum(size, axis=0) <= n_free[None, :]) & ((top_gain - lam) * size > eps)
    ok = np.logical_and.accumulate(ok, axis=0)
    taken = ok.sum(axis=0)
    close = taken == 0
    if close.any():
        rows = dirty[close]
        sub_p = np.where(free[rows], np.minimum(m.prices[rows], lam), m.prices[rows])
        order = np.argsort(sub_p, axis=1, kind="stable")
        m.prices[rows] = np.take_along_axis(sub_p, order, axis=1)
        m.holders[rows] = np.take_along_axis(m.holders[rows], order, axis=1)
    if close.all():
        return True
    cols = np.arange(dirty.size)
    nxt = np.minimum(taken, depth - 1)
    next_gain = np.where(taken < depth, top_gain[nxt, cols], -np.inf)
    next_size = m.df[top[nxt, cols]]
    node_price = np.maximum(lam, next_gain - eps / next_size)
    r, c = np.nonzero(ok)
    pods, nodes, price = top[r, c], dirty[c], node_price[c]
    payoff = m.v[pods, nodes] - m.df[pods] * price
    order = np.lexsort((-payoff, pods))
    first = np.ones(order.size, dtype=bool)
    first[1:] = pods[order][1:] != pods[order][:-1]
    sel = order[first]
    _move(m, pods[sel], nodes[sel], price[sel], free)
    return True


def _move(
    m: OrderBook, pods: np.ndarray, nodes: np.ndarray, price: np.ndarray, free: np.ndarray
) -> None:
    """Pods move onto ``nodes`` at per-slot ``price``; the entries they leave turn free.

    Each node fills its most expensive free slots (those that made it bid) with its pods."""
    old = m.assign[pods]
    moved = np.zeros(m.assign.size + 1, dtype=bool)
    moved[pods] = True
    rows = np.unique(old[old >= 0])
    if rows.size:
        sub = m.holders[rows]
        sub[moved[sub]] = -1
        m.holders[rows] = sub
    for n in np.unique(nodes):  # the nodes that took pods this round
        mine = nodes == n
        holders = np.repeat(pods[mine], m.d[pods[mine]])
        slots = np.flatnonzero(free[n])[::-1][: holders.size]
        m.prices[n, slots] = price[mine][0]
        m.holders[n, slots] = holders
        order = np.argsort(m.prices[n], kind="stable")
        m.prices[n] = m.prices[n, order]
        m.holders[n] = m.holders[n, order]
    m.assign[pods] = nodes
    m.bid[pods] = price


# -- results ---------------------------------------------------------------------------
