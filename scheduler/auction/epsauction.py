"""The ε-auction with ε-scaling (study §5.3): ``Method.AUCTION``, the last resort of every
clearing, and the short runs behind ``Method.RANK_ONE`` and the relaxation's polish.

Algorithm (Bertsekas, *Network Optimization: Continuous and Discrete Models*, 1998, §7.1–7.2;
Bertsekas & Castañón 1989 and 1992, see :mod:`.book` and :mod:`.reverse`):

1. ε-scaling (:mod:`.epsilon`). Each phase starts with every pod unassigned and the previous
   phase's prices, and runs forward Jacobi rounds until every pod holds a node or prefers
   staying out.
2. The asymmetric trap. With fewer pods than slots, a forward-only auction with ε-scaling can
   end with free slots still priced from an earlier phase, and is then not ε-optimal. With
   single-slot pods every phase therefore ends with reverse rounds (forward–reverse auction,
   Bertsekas & Castañón 1992) at its own ε until no free slot costs more than λ; with bundles
   only the last phase does (in every phase they took more rounds on 4 batches of 200–500
   pods measured: +21 % on one, past the 3000-round cap on the three others, where the last
   phase alone converged). After the last phase every
   assigned pod is within ε of its best node (ε-CS), every free slot is free of charge after
   the shift by λ, and the LP duality gap is at most J·ε. The coarse phases' reverse rounds
   are the scaling of the reverse direction: a free slot priced far above λ (by the warm
   start, or a node whose slots were all held in the phase before) falls in steps of that
   phase's ε, not of the final one. Reverse rounds only at the final ε once took
   (price − λ)/ε rounds of two nodes trading pods one ε apart, past the round cap
   (``tests/auction/test_regressions.py``).
3. The cap. Rounds are counted over all phases; at ``max_rounds`` the greedy fallback
   completes the (always feasible) partial assignment and the clearing says so
   (``fell_back``).

Multi-slot pods make the problem a generalised assignment problem: the same prices then bound
the optimum through the LP relaxation (:func:`.dual.dual_bound`), and the gap is reported
rather than guaranteed.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from eams.scheduler.auction import epsilon
from eams.scheduler.auction.book import OrderBook
from eams.scheduler.auction.budget import NO_DEADLINE, Deadline
from eams.scheduler.auction.dual import certified_gap
from eams.scheduler.auction.greedy import greedy_complete
from eams.scheduler.auction.model import AuctionParams, Clearing
from eams.scheduler.auction.reverse import floor, reverse_round


def epsilon_auction(
    v: np.ndarray,
    d: np.ndarray,
    cap: np.ndarray,
    params: AuctionParams,
    placeable: np.ndarray,
    start: np.ndarray | None,
    first: float,
    v_max: float,
    certify: bool = True,
    deadline: Deadline = NO_DEADLINE,
) -> Clearing:
    """The ε-auction from per-slot ``start`` prices, ε-scaling from ``first`` (steps 1–3).

    Parameters
    ----------
    v : (J, N) float
        Allowed values (:func:`.inputs.allowed`), −inf where the pod may not go.
    d : (J,) int ≥ 1
        Slots per pod.
    cap : (N,) int ≥ 0
        Free slots per node.
    params : AuctionParams
        ε schedule, short-list length, round cap.
    placeable : (J,) bool
        Pods with at least one allowed node.
    start : (N,) float ≥ 0 or None
        Starting price per slot (None: 0).
    first : float > 0
        ε of the first phase (:func:`.epsilon.first`).
    v_max : float > 0
        The largest allowed value.
    certify : bool
        False skips the dual bound (a polish whose gap the caller certifies).
    deadline : Deadline
        The wall-clock budget (:mod:`.budget`), checked before every round; when it is spent
        the auction stops as at the round cap.

    Returns
    -------
    Clearing
        ``method`` ``AUCTION``; ``converged`` False and ``fell_back`` True at the round cap or
        when the budget ends (then also ``timed_out``).
    """
    book = OrderBook(v, d, cap, params.candidates, start)
    phases = epsilon.schedule(first, epsilon.final(params, v_max), params.epsilon_factor)
    rounds = 0
    lam = 0.0
    late = False
    bundles = bool((d > 1).any())
    for phase, eps in enumerate(phases, start=1):
        if phase > 1:
            book.restart(phases[phase - 2])
        active = placeable.copy()
        while active.any() and rounds < params.max_rounds and not (late := deadline.expired()):
            rounds += 1
            book.forward_round(active, eps, rounds)
        if (phase == len(phases) or not bundles) and rounds < params.max_rounds and not late:
            book.invalidate()
            lam = floor(book, eps)
            while (
                rounds < params.max_rounds
                and not (late := deadline.expired())
                and reverse_round(book, eps, lam)
            ):
                rounds += 1
        if rounds >= params.max_rounds or late:
            book.assign = greedy_complete(v, d, cap, book.assign)
            clearing = _result(book, d, rounds, eps, False, True, placeable, phase, 0.0, certify)
            return replace(clearing, timed_out=late)
    if bundles:
        # Bundles can leave free slots that no bid could claim (the ask of a d-slot pod counts
        # held slots too): place what still fits. Single-slot clearings never change here.
        book.assign = greedy_complete(v, d, cap, book.assign)
    return _result(book, d, rounds, phases[-1], True, False, placeable, len(phases), lam, certify)


def nothing_to_clear(
    v: np.ndarray, d: np.ndarray, cap: np.ndarray, params: AuctionParams, placeable: np.ndarray
) -> Clearing:
    """The clearing of a batch where no pod can go anywhere: nobody assigned, every price 0,
    converged after 0 rounds (what every method would return; ``method`` ``AUCTION``)."""
    book = OrderBook(v, d, cap, params.candidates)
    return _result(book, d, 0, 0.0, True, False, placeable, 0)


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
        gap = certified_gap(book.v, demand, book.cap, prices, value)
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
    )
