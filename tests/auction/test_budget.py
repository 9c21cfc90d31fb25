"""The wall-clock budget (``time_budget_s``): a clearing whose budget ends is still feasible,
carries a certificate that holds against the true optimum, and says it timed out; without a
budget nothing changes (the deterministic round cap, AR-8)."""

import numpy as np
import pytest

from eams.scheduler.auction import AuctionParams, bids, clear, solve
from eams.scheduler.auction.budget import Deadline
from eams.scheduler.bench.auction_batches import random_batch
from eams.scheduler.errors import AuctionInputError
from tests.auction.checks import assert_feasible
from tests.auction.reference import lsa_optimum, milp_optimum


@pytest.mark.parametrize(
    ("pod_slots", "mask", "warm"),
    [(1, 0.0, True), (1, 0.3, True), (1, 0.0, False), (3, 0.0, True), (3, 0.3, True)],
)
def test_a_spent_budget_returns_a_feasible_certified_clearing(
    pod_slots: int, mask: float, warm: bool
) -> None:
    """Budget 0: every method finds it spent at its first check, so the ε-auction completes
    its empty assignment greedily; the result is feasible, ``timed_out``, and its
    ``gap_bound`` (from the prices it has) bounds the distance to the true optimum."""
    pods, nodes = random_batch(14, 6, 4, seed=3, max_pod_slots=pod_slots)
    values = bids.bid_values(pods, nodes, AuctionParams())
    feasible = np.random.default_rng(2).random(values.shape) >= mask if mask else None
    masked = values if feasible is None else np.where(feasible, values, -np.inf)
    params = AuctionParams(warm_start=warm)
    c = solve(values, pods.slots, nodes.slots, params, feasible, time_budget_s=0.0)
    assert c.timed_out and c.fell_back and not c.converged and c.method == "auction"
    assert_feasible(masked, pods.slots, nodes.slots, c)
    assert (c.assignment >= 0).any()
    if pod_slots == 1:
        best = lsa_optimum(masked, nodes.slots)
    else:
        best = milp_optimum(masked, pods.slots, nodes.slots)
    assert c.gap_bound is not None and best - c.value <= c.gap_bound * (1 + 1e-9) + 1e-12
    assert not solve(values, pods.slots, nodes.slots, params, feasible).timed_out


def test_a_budget_that_ends_during_the_auction_stops_it_there() -> None:
    """A clock that runs out after a few rounds of the ε-auction (each check advances it one
    tick): the auction stops early, completes greedily, and the gap holds."""
    pods, nodes = random_batch(40, 12, 3, seed=5, max_pod_slots=2)
    values = bids.bid_values(pods, nodes, AuctionParams())
    ticks = iter(range(10_000))
    deadline = Deadline(at_s=6.0, clock=lambda: float(next(ticks)))
    from eams.scheduler.auction.epsauction import epsilon_auction
    from eams.scheduler.auction.inputs import allowed

    v = allowed(values, pods.slots, nodes.slots, None)
    c = epsilon_auction(
        v,
        pods.slots,
        nodes.slots,
        AuctionParams(),
        np.isfinite(v).any(axis=1),
        None,
        0.05 * float(v.max()),
        float(v.max()),
        deadline=deadline,
    )
    assert c.timed_out and c.fell_back and 0 < c.rounds < 10
    assert_feasible(v, pods.slots, nodes.slots, c)
    best = milp_optimum(values, pods.slots, nodes.slots)
    assert c.gap_bound is not None and best - c.value <= c.gap_bound * (1 + 1e-9) + 1e-12


def test_a_generous_budget_changes_nothing() -> None:
    pods, nodes = random_batch(60, 30, 4, seed=1, max_pod_slots=3)
    a = clear(pods, nodes)
    b = clear(pods, nodes, time_budget_s=60.0)
    np.testing.assert_array_equal(a.assignment, b.assignment)
    assert (a.value, a.gap_bound, a.method, b.timed_out) == (b.value, b.gap_bound, b.method, False)


@pytest.mark.parametrize("budget", [-1.0, float("nan"), float("inf")])
def test_a_bad_budget_is_refused(budget: float) -> None:
    pods, nodes = random_batch(4, 3, 2, seed=0)
    with pytest.raises(AuctionInputError, match=r"time_budget_s"):
        clear(pods, nodes, time_budget_s=budget)


def test_a_budget_that_ends_inside_the_relaxation_keeps_its_greedy_assignment() -> None:
    """The budget ends after the relaxation's first check (each check advances the clock one
    tick): its priced greedy assignment is returned without refinement or polish, feasible,
    ``timed_out``, with a gap that holds against the MILP optimum."""
    from eams.scheduler.auction.inputs import allowed
    from eams.scheduler.auction.methods import Batch, dispatch

    pods, nodes = random_batch(14, 6, 6, seed=2, max_pod_slots=3)
    values = bids.bid_values(pods, nodes, AuctionParams())
    v = allowed(values, pods.slots, nodes.slots, None)
    best_row = v.max(axis=1)
    ticks = iter(range(10_000))
    deadline = Deadline(at_s=1.0, clock=lambda: float(next(ticks)))
    b = Batch(
        values,
        v,
        pods.slots,
        nodes.slots,
        AuctionParams(),
        None,
        best_row > -np.inf,
        best_row,
        float(best_row.max()),
        deadline,
    )
    c = dispatch(b)
    assert c.method == "relaxation" and c.timed_out and c.polish_rounds == 0
    assert_feasible(values, pods.slots, nodes.slots, c)
    best = milp_optimum(values, pods.slots, nodes.slots)
    assert c.gap_bound is not None and best - c.value <= c.gap_bound * (1 + 1e-9) + 1e-12
