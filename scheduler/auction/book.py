"""The ε-auction's order book (``OrderBook``): slot prices per node and the forward bidding
rounds.

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
Reverse rounds live in :mod:`.reverse` (forward–reverse auction for asymmetric problems).
"""

from __future__ import annotations

import numpy as np

from eams.scheduler.auction.classes import node_classes

_GOLD = np.uint64(0x9E3779B97F4A7C15)
_MIX = np.uint64(0xBF58476D1CE4E5B9)
TIE_REL = 1e-12  # nodes whose net values agree this closely count as tied


class OrderBook:
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

    def net_values(self, pods: np.ndarray) -> np.ndarray:
        """g_jn = v_jn − d_j · (node n's d_j-th cheapest slot price), (|pods|, N)."""
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
        g = self.net_values(pods)
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
        g = self.net_values(pods)
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
        level = self.prices.min(axis=1)
        if self.classes_matter:  # identical nodes are one market: one price, the cheapest
            cheapest = np.full(level.size, np.inf)
            np.minimum.at(cheapest, self.cls, level)
            level = cheapest[self.cls]
        level = np.maximum(level - eps_done, 0.0)
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
