"""The two traps of issue 5, on instances built to trigger them.

1. Fewer pods than slots: after forward ε-scaling phases some free slots keep a price from an
   earlier phase; a forward-only auction would stop there, not ε-optimal. The reverse rounds
   must bring every free slot to price 0.
2. Many identical nodes and slots: bidding ε at a time among look-alike slots or nodes is a
   price war; one capacity per node, one class per set of identical nodes and hashed
   tie-breaking must end it in a few rounds.
"""

import numpy as np
import pytest

from eams.scheduler.auction import AuctionParams, solve
from eams.scheduler.auction.book import OrderBook
from eams.scheduler.auction.epsilon import schedule as epsilon_schedule
from eams.scheduler.auction.inputs import allowed
from tests.auction.checks import assert_eps_cs, assert_feasible
from tests.auction.reference import lsa_optimum

COLD = AuctionParams(warm_start=False, method="auction")
WARM = AuctionParams(method="auction")
# the exact path (method "auto") must clear the same instances: it is what clear() runs first
AUTO, AUTO_COLD = AuctionParams(), AuctionParams(warm_start=False)


def forward_phases_only(values: np.ndarray, capacity: np.ndarray) -> OrderBook:
    """Run the forward part of the ε-scaling schedule, as a forward-only auction would."""
    demand = np.ones(values.shape[0], dtype=np.int64)
    v = allowed(values, demand, capacity, None)
    book = OrderBook(v, demand, capacity, COLD.candidates)
    v_max = float(v.max())
    rounds = 0
    schedule = epsilon_schedule(
        COLD.epsilon_start_rel * v_max, COLD.epsilon_rel * v_max, COLD.epsilon_factor
    )
    for phase, eps in enumerate(schedule):
        if phase:
            book.restart(schedule[phase - 1])
        active = np.isfinite(v).any(axis=1)
        while active.any():
            rounds += 1
            book.forward_round(active, eps, rounds)
    return book


def test_fewer_pods_than_slots_trap_is_real_and_avoided() -> None:
    triggered = 0
    for seed in range(12):
        rng = np.random.default_rng(seed)
        values = rng.uniform(1.0, 2.0, (12, 10))
        capacity = np.full(10, 3)  # 12 pods, 30 slots
        book = forward_phases_only(values, capacity)
        free = (book.holders < 0) & np.isfinite(book.prices)
        if (book.prices[free] > 0).any():
            triggered += 1
        c = solve(values, np.ones(12, int), capacity, COLD)
        assert c.phases > 1 and c.converged
        assert_eps_cs(values, capacity, c)  # includes: every node with a free slot costs 0
        assert c.value >= lsa_optimum(values, capacity) - 12 * c.epsilon
    assert triggered > 0, "no instance left a priced free slot: the trap was not exercised"


@pytest.mark.parametrize("params", [WARM, COLD, AUTO, AUTO_COLD])
def test_many_identical_nodes_and_slots_clear_at_once(params: AuctionParams) -> None:
    values = np.full((200, 300), 3.0)
    capacity = np.full(300, 4)
    c = solve(values, np.ones(200, int), capacity, params)
    assert c.converged and c.rounds <= 10
    assert (c.assignment >= 0).all()
    assert_eps_cs(values, capacity, c)
    assert np.bincount(c.assignment, minlength=300).max() <= 4
    auctioned = c.method in ("auction", "rank_one")  # ε-auction rounds cleared it
    if auctioned:  # ties broken across nodes, not piled onto the lowest
        assert np.unique(c.assignment).size > 100
    else:  # exact (a cold start skips the auction): any optimum, in a few restricted solves
        assert c.method == "matching" and c.phases <= 6
    assert auctioned == (params.method == "auction" or params.warm_start)


@pytest.mark.parametrize("params", [WARM, COLD, AUTO, AUTO_COLD])
def test_identical_pods_outnumbering_identical_slots_end_the_price_war(
    params: AuctionParams,
) -> None:
    values = np.full((50, 10), 3.0)
    capacity = np.full(10, 4)
    c = solve(values, np.ones(50, int), capacity, params)
    assert c.converged and not c.fell_back and c.rounds <= 100
    assert (c.assignment >= 0).sum() == 40
    assert_eps_cs(values, capacity, c)
    assert np.allclose(c.prices, c.prices[0])  # one market: one price


@pytest.mark.parametrize("params", [WARM, COLD, AUTO, AUTO_COLD])
def test_classes_of_identical_nodes_with_ranked_pods(params: AuctionParams) -> None:
    rng = np.random.default_rng(0)
    node_q = np.repeat(rng.uniform(0.2, 1.0, 5), 20)  # 5 kinds of node, 20 of each
    values = np.outer(rng.uniform(0.5, 2.0, 60), node_q)
    capacity = np.full(100, 2)
    c = solve(values, np.ones(60, int), capacity, params)
    assert c.converged and not c.fell_back
    assert_feasible(values, np.ones(60, int), capacity, c)
    assert_eps_cs(values, capacity, c)
    assert c.value >= lsa_optimum(values, capacity) - 60 * c.epsilon
