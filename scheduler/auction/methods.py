"""The clearing methods: one ordered table, :data:`METHODS` (name, what it needs of the batch,
when ``"auto"`` takes it, the function that runs it), and the walk through it.

``AuctionParams.method = "auto"`` walks the table in order and runs the first method whose
``auto`` rule holds and whose ``needs`` are met; a method that gives up at run time (its
function returns ``None``: the pass cap, rounding broke the certificate, the quick try did not
end, the wall-clock budget is spent) hands the batch on to the next one that applies. The last
row, the ε-auction, applies to every batch and never gives up (its round cap and the budget
end in the greedy fallback).

A method named in ``AuctionParams.method`` (as ``scipy.optimize.linprog(method=...)``) runs if
its ``needs`` are met, else :class:`~eams.scheduler.errors.AuctionInputError` says why; if it
gives up, the ε-auction clears the batch, and ``Clearing.method`` says ``"auction"``.

The ``auto`` rules are cost rules measured here (``scheduler/auction/README.md``, Figures):
each method is exact or certified wherever its ``needs`` are met, so ``auto`` only picks the
cheapest, and the ε-auction where nothing cheaper clears.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np

from eams.scheduler.auction import epsilon
from eams.scheduler.auction.budget import NO_DEADLINE, Deadline
from eams.scheduler.auction.bundles import SMALL_BATCH_PAIRS, relax_round_repair
from eams.scheduler.auction.dual import certified_gap
from eams.scheduler.auction.epsauction import epsilon_auction
from eams.scheduler.auction.exact import dense, few, transport
from eams.scheduler.auction.inputs import allowed
from eams.scheduler.auction.model import AuctionParams, Clearing, Method
from eams.scheduler.auction.warmstart import rank_one_prices
from eams.scheduler.errors import AuctionInputError

# J²·ΣK below which linear_sum_assignment on the slot-expanded values beats the cold flow
# (measured here: at 100 × 100 × 4 = 4·10⁶ both ~6–7 ms; 40 × 60 × 3: 1.0 vs 1.4 ms; 200 × 200 × 4:
# 48 vs 27 ms)
DENSE_WORK = 4_000_000
# pods up to which each pod's J best nodes + one tiny assignment beat every other single-slot
# method (measured here at 1,000 nodes × 4 slots, 5 % filtered: 16 pods 0.53 vs matching
# 1.06 ms, 32 pods 1.29 vs 1.39 ms, 64 pods 8.5 vs 8.1 ms; scheduler/auction/README.md)
FEW_PODS = 32
QUICK_ROUNDS = 20  # auction rounds tried on exactly rank-one bids before the matching
# auction rounds after the bundle relaxation, on small batches (bundles.SMALL_BATCH_PAIRS) and
# large ones: on 500 × 1,000 batches one round, then the greedy completion, was as good as ten
# or better on every benchmark kind and seed 0–3 (trace, filtered: +0.92 % vs +0.82 % over the
# relaxation; seed 3 +0.73 % vs +0.26 %) at a tenth of the cost (~1 ms a round); on the tiny
# bundle-MILP batches ten rounds win (mean gap 0.27 % vs 0.44 %)
POLISH_ROUNDS = 10
POLISH_ROUNDS_LARGE = 1
# certified gap (share of the value) above which the polish runs: below 2 % it never won on
# the benchmark batches (scheduler/auction/README.md), above it it gained up to 0.3 %
POLISH_GAP = 0.02


@dataclass(frozen=True)
class Batch:
    """One checked batch, as every method sees it.

    Attributes
    ----------
    raw : (J, N) float
        The values as given (checked, :func:`.inputs.check_matrix`).
    values : (J, N) float
        The allowed values (:func:`.inputs.allowed`): −inf where the pod may not go.
    demand : (J,) int ≥ 1
    capacity : (N,) int ≥ 0
    params : AuctionParams
    eligible : (J, N) bool or None
        The filter mask.
    placeable : (J,) bool
        Pods with at least one allowed node (at least one is True).
    best : (J,) float
        ``values.max(axis=1)``.
    v_max : float > 0
        The largest allowed value.
    deadline : Deadline
        The wall-clock budget (:mod:`.budget`); every method checks it before it starts.
    """

    raw: np.ndarray
    values: np.ndarray
    demand: np.ndarray
    capacity: np.ndarray
    params: AuctionParams
    eligible: np.ndarray | None
    placeable: np.ndarray
    best: np.ndarray
    v_max: float
    deadline: Deadline = NO_DEADLINE

    @cached_property
    def single_slot(self) -> bool:
        """Every pod needs one slot (a transportation problem; else a generalised one)."""
        return bool((self.demand == 1).all())

    @cached_property
    def rank_one(self) -> tuple[np.ndarray, float]:
        """The warm start: per-slot prices and misfit of the rank-one fit
        (:func:`.warmstart.rank_one_prices`)."""
        return rank_one_prices(self.values, self.demand, self.capacity, self.best)

    @property
    def warm(self) -> tuple[np.ndarray | None, float]:
        """The ε-auction's starting prices (None: cold) and first ε (:func:`.epsilon.first`)."""
        if not self.params.warm_start:
            return None, epsilon.first(self.params, self.v_max, None)
        start, misfit = self.rank_one
        return start, epsilon.first(self.params, self.v_max, misfit)

    @cached_property
    def unfiltered(self) -> np.ndarray:
        """The allowed values without the filter mask: a filter only removes options, so these
        are the better guess for the warm start of the candidate lists."""
        if self.eligible is None:
            return self.values
        return allowed(self.raw, self.demand, self.capacity, None)


# -- what a method needs of the batch: the reason it cannot clear it, or None -------------------


def _single_slot(b: Batch) -> str | None:
    if b.single_slot:
        return None
    j = int(np.flatnonzero(b.demand > 1)[0])
    return f"it clears single-slot pods only, and pod {j} needs {int(b.demand[j])} slots"


def _single_slot_or_alone(b: Batch) -> str | None:
    """A pod alone in its batch may take any number of slots: its best allowed node (where
    its slots fit) is the optimum whatever its size."""
    return None if b.values.shape[0] == 1 else _single_slot(b)


def _rank_one_bids(b: Batch) -> str | None:
    reason = _single_slot(b)
    if reason is None and not b.params.warm_start:
        reason = "it starts from the warm start, and params.warm_start is False"
    if reason is None and b.warm[1] > epsilon.final(b.params, b.v_max):
        reason = (
            f"the bids are not rank one: the warm start's misfit {b.rank_one[1]:.3g} exceeds "
            f"the final ε {epsilon.final(b.params, b.v_max):.3g}"
        )
    return reason


# -- when "auto" takes a method (cost rules) ------------------------------------------------------


def _unfiltered(b: Batch) -> bool:
    # with a filter mask the rank-one fit stays exact on the allowed pairs, yet the auction
    # needs ~10³ rounds: the matching is cheaper
    return b.eligible is None


def _few(b: Batch) -> bool:
    return b.values.shape[0] <= FEW_PODS


def _many_and_unfiltered(b: Batch) -> bool:
    return not _few(b) and _unfiltered(b)


def _small_and_cold(b: Batch) -> bool:
    small = b.values.shape[0] ** 2 * int(b.capacity.sum()) <= DENSE_WORK
    return small and not b.params.warm_start


def _not_small_and_cold(b: Batch) -> bool:
    return not _small_and_cold(b)


def _mixed_sizes(b: Batch) -> bool:
    return not b.single_slot


# -- the methods: a Clearing, or None when the method gave up -------------------------------------


def _rank_one(b: Batch) -> Clearing | None:
    """Exactly rank-one bids clear in a round or two from the warm start (its prices are the
    equilibrium, :mod:`.warmstart`): at most ``QUICK_ROUNDS`` rounds, else give up."""
    start, first = b.warm
    short = replace(b.params, max_rounds=QUICK_ROUNDS)
    tried = epsilon_auction(
        b.values,
        b.demand,
        b.capacity,
        short,
        b.placeable,
        start,
        first,
        b.v_max,
        certify=False,
        deadline=b.deadline,
    )
    return tried if tried.converged else None


def _short_lists(b: Batch) -> Clearing | None:
    """:func:`.exact.few`; gives up if rounding breaks its certificate or the budget is
    spent."""
    return _one_pass(b, few)


def _dense(b: Batch) -> Clearing | None:
    """:func:`.exact.dense`; gives up if rounding breaks its certificate or the budget is
    spent."""
    return _one_pass(b, dense)


def _one_pass(
    b: Batch,
    solver: Callable[[np.ndarray, np.ndarray, float], tuple[np.ndarray, np.ndarray] | None],
) -> Clearing | None:
    """An exact one-pass solver's clearing, or ``None`` when it gives up or the budget is
    spent."""
    solved = None if b.deadline.expired() else solver(b.values, b.capacity, b.v_max)
    if solved is None:
        return None
    assignment, prices = solved
    return _exact(b, assignment, prices, passes=1)


def _matching(b: Batch) -> Clearing | None:
    """:func:`.exact.transport`, its first lists from the warm start of the unfiltered bids
    (cold: the provably sufficient lists); gives up at its pass cap, when rounding breaks the
    certificate, or when the budget is spent."""
    warm = b.params.warm_start
    start = rank_one_prices(b.unfiltered, b.demand, b.capacity)[0] if warm else None
    solved = transport(b.values, b.capacity, b.v_max, start, deadline=b.deadline)
    if solved is None:
        return None
    assignment, prices, passes = solved
    return _exact(b, assignment, prices, passes)


def _relaxation(b: Batch) -> Clearing | None:
    """:func:`.bundles.relax_round_repair`; when its certified gap exceeds ``POLISH_GAP`` of
    the value, a ``POLISH_ROUNDS`` (large batches: ``POLISH_ROUNDS_LARGE``) auction from its
    prices, the better assignment kept. Gives up only when the budget is spent before it
    starts."""
    if b.deadline.expired():
        return None
    assignment, prices, bound = relax_round_repair(
        b.values, b.unfiltered, b.demand, b.capacity, b.deadline
    )
    on = np.flatnonzero(assignment >= 0)
    value = float(b.values[on, assignment[on]].sum())
    if bound - value <= POLISH_GAP * value or b.deadline.expired():
        return _exact(b, assignment, prices, 1, bound=bound, timed_out=b.deadline.expired())
    # The auction started at the relaxation's prices (near equilibrium: one phase at the
    # final ε) sometimes finds a better integer assignment in a few rounds; keep the better.
    small = b.values.size <= SMALL_BATCH_PAIRS
    polish = epsilon_auction(
        b.values,
        b.demand,
        b.capacity,
        replace(b.params, max_rounds=POLISH_ROUNDS if small else POLISH_ROUNDS_LARGE),
        b.placeable,
        prices,
        epsilon.final(b.params, b.v_max),
        b.v_max,
        certify=False,
        deadline=b.deadline,
    )
    if polish.value > value:
        return _exact(b, polish.assignment, prices, 1, polish.rounds, polish.rounds, bound)
    return _exact(b, assignment, prices, 1, polish.rounds, bound=bound)


def _auction(b: Batch) -> Clearing:
    """:func:`.epsauction.epsilon_auction` with the batch's parameters; never gives up (the
    round cap and the budget end in its greedy completion)."""
    start, first = b.warm
    return epsilon_auction(
        b.values,
        b.demand,
        b.capacity,
        b.params,
        b.placeable,
        start,
        first,
        b.v_max,
        deadline=b.deadline,
    )


def _exact(
    b: Batch,
    assignment: np.ndarray,
    prices: np.ndarray,
    passes: int,
    rounds: int = 0,
    polish_rounds: int = 0,
    bound: float | None = None,
    timed_out: bool = False,
) -> Clearing:
    """The clearing of an exact or relaxation method: converged at the final ε; the gap is
    certified from the prices when pods have several slots (no J·ε guarantee then), from
    ``bound`` (their dual bound) when the method has it."""
    on = np.flatnonzero(assignment >= 0)
    value = float(b.values[on, assignment[on]].sum())
    gap = None
    if not b.single_slot:  # the relaxation's prices bound every integer assignment
        if bound is None:
            gap = certified_gap(b.values, b.demand, b.capacity, prices, value)
        else:
            gap = max(0.0, bound - value)
    return Clearing(
        assignment=assignment,
        prices=prices,
        value=value,
        rounds=rounds,
        epsilon=epsilon.final(b.params, b.v_max),
        converged=True,
        fell_back=False,
        unplaceable=~b.placeable,
        phases=passes,
        gap_bound=gap,
        polish_rounds=polish_rounds,
        timed_out=timed_out,
    )


@dataclass(frozen=True)
class Row:
    """One method of the table.

    Attributes
    ----------
    name : Method
    needs : callable (Batch) -> str or None, or None
        What the method requires of the batch: the reason it cannot clear it, or None; the
        attribute None = it clears every batch.
    auto : callable (Batch) -> bool, or None
        When ``"auto"`` takes it (checked before ``needs``, which may cost a warm start);
        None = the last resort, run when every row above gave up or did not apply.
    run : callable (Batch) -> Clearing or None
        The method; None = it gave up on this batch.
    """

    name: Method
    needs: Callable[[Batch], str | None] | None
    auto: Callable[[Batch], bool] | None
    run: Callable[[Batch], Clearing | None]


# The dispatch table, in the order "auto" tries it (scheduler/auction/README.md draws it).
# fmt: off
METHODS: tuple[Row, ...] = (
    #   name                          needs                  "auto" takes it when   function
    Row(Method.SHORT_LISTS,           _single_slot_or_alone, _few,                  _short_lists),
    Row(Method.RANK_ONE,              _rank_one_bids,        _many_and_unfiltered,  _rank_one),
    Row(Method.LINEAR_SUM_ASSIGNMENT, _single_slot,          _small_and_cold,       _dense),
    Row(Method.MATCHING,              _single_slot,          _not_small_and_cold,   _matching),
    Row(Method.RELAXATION,            None,                  _mixed_sizes,          _relaxation),
    Row(Method.AUCTION,               None,                  None,                  _auction),
)
# fmt: on
_BY_NAME = {row.name: row for row in METHODS}


def _tried(b: Batch) -> Iterator[Row]:
    """The rows to try before the last resort, lazily: a row's rules are evaluated only when
    the walk reaches it.

    Raises
    ------
    AuctionInputError
        A method named in ``params.method`` cannot clear this batch (says why).
    """
    if b.params.method == "auto":
        return (
            row
            for row in METHODS
            if row.auto is not None and row.auto(b) and (row.needs is None or row.needs(b) is None)
        )
    row = _BY_NAME[Method(b.params.method)]
    reason = None if row.needs is None else row.needs(b)
    if reason is not None:
        raise AuctionInputError(
            f"params.method = {str(b.params.method)!r} cannot clear this batch: {reason}"
        )
    return iter(() if row.auto is None else (row,))


def dispatch(b: Batch) -> Clearing:
    """Clear ``b`` by the first method of :data:`METHODS` that applies and does not give up
    (``"auto"``), or by the method named in ``params.method``; the ε-auction last.

    Returns
    -------
    Clearing
        ``method`` is the name of the row that cleared it.

    Raises
    ------
    AuctionInputError
        A named method cannot clear this batch (:func:`_tried`).
    """
    for row in _tried(b):
        cleared = row.run(b)
        if cleared is not None:
            return replace(cleared, method=row.name)
    return _auction(b)  # the last resort (the table's last row) clears every batch
