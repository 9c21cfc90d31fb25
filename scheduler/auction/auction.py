"""The engine's entry points: ``solve`` on a value matrix, ``clear`` on pods and nodes (study
§5.3).

``solve`` checks its inputs (:mod:`.inputs`), masks what may not be placed, and hands the batch
to the method table (:mod:`.methods`): with ``AuctionParams.method = "auto"`` (default) the
cheapest method that is exact (or, for bundles, certified), the ε-auction (:mod:`.epsauction`)
where none is; ``Clearing.method`` names the one that cleared.
"""

from __future__ import annotations

import time

import numpy as np

from eams.scheduler.auction.bids import bid_values
from eams.scheduler.auction.budget import Deadline
from eams.scheduler.auction.epsauction import nothing_to_clear
from eams.scheduler.auction.inputs import allowed, check_matrix
from eams.scheduler.auction.methods import Batch, dispatch
from eams.scheduler.auction.model import AuctionParams, Clearing, Nodes, Pods

DEFAULT_PARAMS = AuctionParams()


def solve(
    values: np.ndarray,
    demand: np.ndarray,
    capacity: np.ndarray,
    params: AuctionParams = DEFAULT_PARAMS,
    eligible: np.ndarray | None = None,
    *,
    time_budget_s: float | None = None,
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
        ε schedule, short-list length, round cap, ``method`` (``"auto"`` or a
        :class:`~.model.Method` name: :data:`.methods.METHODS`).
    eligible : (J, N) bool, optional
        The filter predicates' verdicts.
    time_budget_s : float ≥ 0, optional, seconds
        Wall-clock budget (:mod:`.budget`, from the call): a method that finds it spent gives
        up, and the ε-auction, last, completes greedily and certifies the gap
        (``Clearing.timed_out``). None (default): no budget, only the deterministic round cap
        (AR-8), which is what the bench harness uses.

    Returns
    -------
    Clearing
        ``converged`` False and ``fell_back`` True when the round cap was hit or the budget
        ended; ``method`` names the method that cleared. A batch where no pod can go anywhere
        clears at once (nobody assigned, ``method`` ``"auction"``, 0 rounds) whatever method
        is asked.

    Raises
    ------
    AuctionInputError
        Shapes disagree, NaN or +inf values, demand < 1 or capacity < 0 (names the index);
        the method named in ``params.method`` cannot clear this batch (says why);
        ``time_budget_s`` is negative or not finite.
    """
    deadline = Deadline.after(time_budget_s)
    raw, d, cap = check_matrix(values, demand, capacity)
    v = allowed(raw, d, cap, eligible)
    best = v.max(axis=1) if v.size else np.full(v.shape[0], -np.inf)
    placeable = best > -np.inf
    if not placeable.any():
        return nothing_to_clear(v, d, cap, params, placeable)
    return dispatch(
        Batch(raw, v, d, cap, params, eligible, placeable, best, float(best.max()), deadline)
    )


def clear(
    pods: Pods,
    nodes: Nodes,
    params: AuctionParams = DEFAULT_PARAMS,
    feasible: np.ndarray | None = None,
    *,
    time_budget_s: float | None = None,
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
    time_budget_s : float ≥ 0, optional, seconds
        Wall-clock budget of the clearing, counted from this call (bids included); see
        :func:`solve`. The extender passes what is left of its batch window.

    Returns
    -------
    Clearing

    Raises
    ------
    AuctionInputError
        ``feasible`` has the wrong shape or dtype; the method named in ``params.method``
        cannot clear this batch; ``time_budget_s`` is negative or not finite.
    """
    start_s = time.monotonic()
    values = (
        bid_values(pods, nodes, params)
        if len(pods) and len(nodes)
        else np.zeros((len(pods), len(nodes)))
    )
    left_s = time_budget_s
    if time_budget_s is not None and time_budget_s >= 0:  # a bad budget is refused by solve
        left_s = max(0.0, time_budget_s - (time.monotonic() - start_s))
    return solve(values, pods.slots, nodes.slots, params, feasible, time_budget_s=left_s)
