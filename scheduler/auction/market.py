"""The order book of the ε-auction: slot prices per node, forward and reverse bidding rounds.

Every node offers its free slots as one capacity. The book keeps, per node, one entry per slot
with its price and holder (``prices``, ``holders``: (N, K_max), each row sorted by price
ascending, +inf beyond the node's capacity, holder −1 = free). A pod of d slots bids for a
*bundle* of d slots on one node; its ask there is the node's d-th cheapest entry, and its
net value ``g_jn = v_jn − d_j · ask_jn``. Its second-best option is always another node (or
staying out, value 0), never another slot of the same node, so a node's identical slots
cannot start a price war among themselves (the "similar objects" of Bertsekas & Castañón,
*The auction algorithm for transportation problems*, Annals of OR 20, 1989).

Forward rounds are Jacobi rounds: every unassigned pod bids at once, each node keeps its
highest entries up to capacity (incumbent first on equal price) and evicts the rest.
Reverse rounds (Bertsekas & Castañón, *A forward/reverse auction algorithm for asymmetric
assignment problems*, Comput. Optim. Appl. 1, 1992) let a node with free slots priced above
λ = 0 (the value of staying out) lower its price and pull in the pod that gains most; they
end when every free slot costs 0, which with ε-CS makes the assignment ε-optimal although
there are fewer pods than slots.
"""

from __future__ import annotations

import numpy as np

_GOLD = np.uint64(0x9E3779B97F4A7C15)
_MIX = np.uint64(0xBF58476D1CE4E5B9)
TIE_REL = 1e-12  # nodes whose net values agree this closely count as tied


def node_classes(values: np.ndarray, probe_rows: int = 16) -> np.ndarray:
    """Class id per node; nodes of one class have identical value columns (similar objects).

    Columns are grouped by a hash of a few probe rows, then every multi-member group is
    confirmed column by column, so a hash collision never merges two different nodes.

    Returns
    -------
    (N,) int
        The lowest node index of the node's class.
    """
    n_pods, n_nodes = values.shape
    result = np.arange(n_nodes)
    if n_pods == 0 or n_nodes == 0:
        return result
    probe = values[:: max(1, n_pods // probe_rows)]
    probe = np.where(np.isfinite(probe), probe, -1.0)
    weights = np.random.default_rng(0).uniform(1.0, 2.0, probe.shape[0])
    _, cls, counts = np.unique(weights @ probe, return_inverse=True, return_counts=True)
    for c in np.flatnonzero(counts > 1):  # groups of look-alike nodes only
        members = np.flatnonzero(cls == c)
        same = (values[:, members] == values[:, [members[0]]]).all(axis=0)
        result[members[same]] = members[0]
    return result


class Market:
    """Mutable auction state over a fixed value matrix.

    Parameters
    ----------
    values : (J, N) float
        Bid values; −inf where pod j may not go to node n (ineligible, or wider than the node).
    demand : (J,) int ≥ 1
        Slots per pod.
    capacity : (N,) int ≥ 0
        Free slots per node.
    candidates : int
        Length of each pod's short list of best nodes (see :meth:`forward_round`).
    start_prices : (N,) float ≥ 0, optional
        Per-slot starting price of each node (default 0).
    """

    def __init__(
        self,
        values: np.ndarray,
        demand: np.ndarray,
        capacity: np.ndarray,
        candidates: int,
        start_prices: np.ndarray | None = None,
    ):
        self.v = values
        self.d = demand
        self.df = demand.astype(float)
        self.dcol = demand - 1
        self.cap = capacity
        n_pods, n_nodes = values.shape
        k_max = max(1, int(capacity.max(initial=0)))
        start = np.zeros(n_nodes) if start_prices is None else start_prices
        self.prices = np.where(
            np.arange(k_max)[None, :] < capacity[:, None], start[:, None], np.inf
        )
        self.holders = np.full((n_nodes, k_max), -1, dtype=np.int64)
        self.assign = np.full(n_pods, -1, dtype=np.int64)
        self.bid = np.zeros(n_pods)
        self.t = min(candidates, n_nodes)
        self.cand = np.zeros((n_pods, self.t), dtype=np.int64)
        # Upper bound on g of every node off the short list; +inf = list must be rebuilt.
        self.thr = np.full(n_pods, np.inf)
        self.seen = np.zeros(n_pods, dtype=bool)  # made a bid before (then it gets a list)
        self.cls = node_classes(values)
        self.classes_matter = bool(np.unique(self.cls).size < n_nodes)

    # -- net values ------------------------------------------------------------------------

    def _net_full(self, pods: np.ndarray) -> np.ndarray:
        demand = self.d[pods]
        sizes = np.unique(demand)
        rows = self.v if pods.size == self.v.shape[0] else self.v[pods]
        if sizes.size == 1:
            return rows - float(sizes[0]) * self.prices[:, sizes[0] - 1]
        g = np.empty(rows.shape)
        for size in sizes:  # a handful of distinct pod sizes
            sel = demand == size
            g[sel] = rows[sel] - float(size) * self.prices[:, size - 1]
        return g

    def _net_cand(self, pods: np.ndarray) -> np.ndarray:
        nodes = self.cand[pods]
        ask = self.prices[nodes, self.dcol[pods, None]]
        return self.v[pods[:, None], nodes] - self.df[pods, None] * ask

    def _refresh(self, pods: np.ndarray) -> None:
        """Rebuild the short lists of ``pods`` from a full scan (one (|pods|, N) pass)."""
        if pods.size == 0:
            return
        g = self._net_full(pods)
        n_nodes = g.shape[1]
        if self.t < n_nodes:
            k = n_nodes - self.t - 1
            part = np.argpartition(g, k, axis=1)
            self.cand[pods] = part[:, k + 1 :]
            self.thr[pods] = g[np.arange(pods.size), part[:, k]]
        else:
            self.cand[pods] = np.arange(n_nodes)
            self.thr[pods] = -np.inf

    def invalidate(self) -> None:
        """Forget the short lists (after prices went down: their bounds no longer hold)."""
        self.thr[:] = np.inf
        self.seen[:] = False

    # -- forward ---------------------------------------------------------------------------

    def forward_round(self, active: np.ndarray, eps: float, round_no: int) -> None:
        """One Jacobi round of forward bids by every pod in ``active`` (updated in place).

        Each pod finds its best net value β and second best. A pod's first bid scans every
        node; later bids use its short list of best nodes, exact while the second best on it
        is at least ``thr`` (prices only rise within a phase, so ``thr`` bounds the nodes
        off the list), else the list is rebuilt. A pod with β < 0 prefers staying out and
        leaves ``active``. The bid raises the node's price so the pod's profit there becomes
        ω − ε, ω = max(second best, 0): an increase of β − ω + ε ≥ ε. Among nodes tied at
        β a pod picks one by a hash of (pod, node, round): deliberate tie-breaking that
        spreads pods over identical nodes instead of piling them onto the lowest index.
        """
        pods = np.flatnonzero(active)
        first = ~self.seen[pods]
        self.seen[pods] = True
        parts = [
            self._bids_full(pods[first], active, round_no),
            self._bids_listed(pods[~first], active, round_no),
        ]
        pods, target, gain, omega = (np.concatenate(x) for x in zip(*parts, strict=True))
        if pods.size:
            ask = self.prices[target, self.dcol[pods]]
            self._merge(pods, target, ask + (gain - omega + eps) / self.df[pods], active)

    def _top2(self, g: np.ndarray, node_ids: np.ndarray | None) -> tuple[np.ndarray, ...]:
        """Best column, β, the second best over all nodes (for ties) and over nodes of
        *another class* than the best (for ω)."""
        r = np.arange(g.shape[0])
        c1 = g.argmax(axis=1)
        beta = g[r, c1]
        g[r, c1] = -np.inf
        runner_up = g.max(axis=1) if g.shape[1] > 1 else np.full(r.size, -np.inf)
        g[r, c1] = beta
        if not self.classes_matter:
            return c1, beta, runner_up, runner_up
        ids = np.arange(g.shape[1])[None, :] if node_ids is None else node_ids
        best_cls = self.cls[c1 if node_ids is None else node_ids[r, c1]]
        other = np.where(self.cls[ids] == best_cls[:, None], -np.inf, g).max(axis=1)
        return c1, beta, runner_up, other

    def _choose(
        self,
        pods: np.ndarray,
        g: np.ndarray,
        c1: np.ndarray,
        beta: np.ndarray,
        runner_up: np.ndarray,
        second: np.ndarray,
        node_ids: np.ndarray | None,
        round_no: int,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Column to bid on per row (a hashed pick among exact ties) and ω excluding it."""
        col = c1
        omega = np.maximum(second, 0.0)
        tied = np.flatnonzero(runner_up >= beta - TIE_REL * np.abs(beta))
        if tied.size:
            near = g[tied] >= (beta[tied] - TIE_REL * np.abs(beta[tied]))[:, None]
            ids = np.arange(g.shape[1])[None, :] if node_ids is None else node_ids[tied]
            salt = (pods[tied].astype(np.uint64) + np.uint64(1)) * _MIX + np.uint64(round_no)
            key = ((ids.astype(np.uint64) + np.uint64(1)) * _GOLD + salt[:, None]) >> np.uint64(11)
            col = c1.copy()
            col[tied] = np.where(near, key.astype(np.int64), -1).argmax(axis=1)
            omega = omega.copy()
            chosen = col[tied] if node_ids is None else node_ids[tied, col[tied]]
            first = c1[tied] if node_ids is None else node_ids[tied, c1[tied]]
            # a tie across classes leaves the other node as second best: ω = β
            omega[tied] = np.where(
                self.cls[chosen] == self.cls[first], omega[tied], np.maximum(beta[tied], 0.0)
            )
        return col, omega

    def _drop(self, pods: np.ndarray, beta: np.ndarray, active: np.ndarray) -> slice | np.ndarray:
        out = ~(beta >= 0)  # staying out is worth 0; at a tie the pod still bids
        if not out.any():
            return slice(None)  # a view, not a copy of the (pods × nodes) block
        active[pods[out]] = False
        return ~out

    def _bids_full(
        self, pods: np.ndarray, active: np.ndarray, round_no: int
    ) -> tuple[np.ndarray, ...]:
        g = self._net_full(pods)
        c1, beta, runner_up, second = self._top2(g, None)
        keep = self._drop(pods, beta, active)
        pods, g, c1, beta = pods[keep], g[keep], c1[keep], beta[keep]
        runner_up, second = runner_up[keep], second[keep]
        col, omega = self._choose(pods, g, c1, beta, runner_up, second, None, round_no)
        return pods, col, g[np.arange(pods.size), col], omega

    def _bids_listed(
        self, pods: np.ndarray, active: np.ndarray, round_no: int
    ) -> tuple[np.ndarray, ...]:
        self._refresh(pods[self.thr[pods] == np.inf])
        g = self._net_cand(pods)
        c1, beta, runner_up, second = self._top2(g, self.cand[pods])
        # Rebuild a list when a node off it may beat the second best (second < thr): then
        # β or ω could come from off the list (a bid from the bound would be too timid).
        stale = second < self.thr[pods]
        if stale.any():
            self._refresh(pods[stale])
            g[stale] = self._net_cand(pods[stale])
            c1, beta, runner_up, second = self._top2(g, self.cand[pods])
        keep = self._drop(pods, beta, active)
        pods, g, c1, beta = pods[keep], g[keep], c1[keep], beta[keep]
        runner_up, second = runner_up[keep], second[keep]
        col, omega = self._choose(pods, g, c1, beta, runner_up, second, self.cand[pods], round_no)
        omega = np.maximum(omega, self.thr[pods])  # nodes off the list are worth ≤ thr
        return pods, self.cand[pods, col], g[np.arange(pods.size), col], omega

    def _merge(
        self, pods: np.ndarray, target: np.ndarray, bid: np.ndarray, active: np.ndarray
    ) -> None:
        """Nodes keep their highest entries up to capacity; losers (whole pods) go back."""
        n_pods = self.assign.size
        nodes = np.unique(target)
        rows_p, rows_h = self.prices[nodes], self.holders[nodes]
        exist = np.isfinite(rows_p)
        reps = self.d[pods]
        node = np.concatenate(
            [np.broadcast_to(nodes[:, None], rows_p.shape)[exist], np.repeat(target, reps)]
        )
        price = np.concatenate([rows_p[exist], np.repeat(bid, reps)])
        holder = np.concatenate([rows_h[exist], np.repeat(pods, reps)])
        new = np.concatenate([np.zeros(int(exist.sum()), bool), np.ones(int(reps.sum()), bool)])
        order = np.lexsort((new, -price, node))
        node, price, holder = node[order], price[order], holder[order]
        rank = np.arange(node.size) - np.searchsorted(node, node)
        cap = self.cap[node]
        keep = rank < cap
        lost = np.zeros(n_pods + 1, dtype=bool)  # index −1 (free entry) lands on the spare
        lost[holder[~keep]] = True
        lost[-1] = False
        kept_holder = holder[keep]
        kept_holder = np.where(lost[kept_holder], -1, kept_holder)
        col = cap[keep] - 1 - rank[keep]
        self.prices[node[keep], col] = price[keep]
        self.holders[node[keep], col] = kept_holder
        evicted = np.flatnonzero(lost[:n_pods] & (self.assign >= 0))
        self.assign[evicted] = -1
        active[evicted] = True
        won = ~lost[pods]
        self.assign[pods[won]] = target[won]
        self.bid[pods[won]] = bid[won]
        active[pods[won]] = False

    # -- reverse ---------------------------------------------------------------------------

    def profits(self) -> np.ndarray:
        """π_j = v_{j,a_j} − d_j·bid_j for assigned pods, 0 (staying out) for the others."""
        on = np.flatnonzero(self.assign >= 0)
        profit = np.zeros(self.assign.size)
        profit[on] = self.v[on, self.assign[on]] - self.df[on] * self.bid[on]
        return profit

    def floor(self, eps: float) -> float:
        """λ for the reverse rounds (Bertsekas & Castañón 1992): the lowest price any held slot
        pays, lowered so that no unassigned pod would gain more than ε once every price is
        shifted down by λ; never below 0. Prices only need to fall to λ, not to 0: shifting
        all of them by −λ changes no pod's choice among nodes."""
        held = self.holders >= 0
        lam = float(self.prices[held].min()) if held.any() else 0.0
        out = np.flatnonzero((self.assign < 0) & np.isfinite(self.v).any(axis=1))
        if out.size and lam > 0:
            best = self._net_full(out).max(axis=1)
            lam = min(lam, float(((eps - best) / self.df[out]).min()))
        return max(0.0, lam)

    def reverse_round(self, eps: float, lam: float) -> bool:
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
        free = (self.holders < 0) & np.isfinite(self.prices)
        dirty = np.flatnonzero((free & (self.prices > lam)).any(axis=1))
        if dirty.size == 0:
            return False
        n_free = free[dirty].sum(axis=1)
        profit = np.where(self.assign >= 0, self.profits(), -lam * self.df)
        gain = (self.v[:, dirty] - profit[:, None]) / self.df[:, None]
        # pods already in the node's class stay: moving among identical nodes gains nothing
        home = np.where(self.assign >= 0, self.cls[np.maximum(self.assign, 0)], -1)
        gain[
            (self.d[:, None] > n_free[None, :]) | (home[:, None] == self.cls[dirty][None, :])
        ] = -np.inf
        c = np.arange(dirty.size)
        best = gain.argmax(axis=0)
        h1 = gain[best, c]
        gain[best, c] = -np.inf
        h2 = gain.max(axis=0) if gain.shape[0] > 1 else np.full(dirty.size, -np.inf)
        close = ~((h1 - lam) * self.df[best] > eps)
        if close.any():
            rows = dirty[close]
            sub_p = np.where(free[rows], np.minimum(self.prices[rows], lam), self.prices[rows])
            order = np.argsort(sub_p, axis=1, kind="stable")
            self.prices[rows] = np.take_along_axis(sub_p, order, axis=1)
            self.holders[rows] = np.take_along_axis(self.holders[rows], order, axis=1)
        take = ~close
        if not take.any():
            return True
        nodes, pods = dirty[take], best[take]
        price = np.maximum(lam, h2[take] - eps / self.df[pods])
        payoff = self.v[pods, nodes] - self.df[pods] * price
        order = np.lexsort((-payoff, pods))
        first = np.ones(order.size, dtype=bool)
        first[1:] = pods[order][1:] != pods[order][:-1]
        sel = order[first]
        self._move(pods[sel], nodes[sel], price[sel], free)
        return True

    def _move(
        self, pods: np.ndarray, nodes: np.ndarray, price: np.ndarray, free: np.ndarray
    ) -> None:
        """Pods move onto ``nodes`` at per-slot ``price``; the entries they leave turn free."""
        n_pods = self.assign.size
        old = self.assign[pods]
        moved = np.zeros(n_pods + 1, dtype=bool)
        moved[pods] = True
        rows = np.unique(old[old >= 0])
        if rows.size:
            sub = self.holders[rows]
            sub[moved[sub]] = -1
            self.holders[rows] = sub
        sub_free = free[nodes] & (self.holders[nodes] < 0)
        # take the d most expensive free entries (those that made the node act)
        from_right = np.cumsum(sub_free[:, ::-1], axis=1)[:, ::-1]
        takes = sub_free & (from_right <= self.d[pods][:, None])
        sub_p, sub_h = self.prices[nodes], self.holders[nodes]
        sub_p = np.where(takes, price[:, None], sub_p)
        sub_h = np.where(takes, pods[:, None], sub_h)
        order = np.argsort(sub_p, axis=1, kind="stable")
        self.prices[nodes] = np.take_along_axis(sub_p, order, axis=1)
        self.holders[nodes] = np.take_along_axis(sub_h, order, axis=1)
        self.assign[pods] = nodes
        self.bid[pods] = price

    # -- results ---------------------------------------------------------------------------

    def restart(self, eps_done: float) -> None:
        """Start an ε phase: drop every assignment; each node restarts at one price per slot.

        That price is the node's cheapest slot (0 if it had a free one: λ, so no stale price
        is left for the reverse rounds) less ``eps_done``, the ε of the phase just finished,
        floored at 0. ε-CS let that phase leave pods at a profit as low as −ε, so without the
        shift every pod could prefer staying out and the phase would learn nothing. With
        nobody assigned, any prices satisfy ε-CS.
        """
        exist = np.isfinite(self.prices)
        self.prices[(self.holders < 0) & exist] = 0.0
        # A node's slots are identical: one price per node (its cheapest slot) lets up to
        # capacity bidders in per round instead of one per distinct entry price.
        level = np.maximum(self.prices.min(axis=1) - eps_done, 0.0)
        self.prices = np.where(exist, level[:, None], np.inf)
        self.holders[:] = -1
        self.assign[:] = -1
        self.invalidate()

    def node_prices(self, lam: float = 0.0) -> np.ndarray:
        """p_n, the price of each node's cheapest slot less λ (≥ 0), the cheapest over its class
        of identical nodes (0 for a node without free slots)."""
        first = np.where(
            np.isfinite(self.prices[:, 0]), np.maximum(self.prices[:, 0] - lam, 0.0), 0.0
        )
        if not self.classes_matter:
            return first
        cheapest = np.full(first.size, np.inf)
        np.minimum.at(cheapest, self.cls, first)
        return cheapest[self.cls]  # identical nodes are one market: the class price
