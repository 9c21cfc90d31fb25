"""The exact path (``method="auto"``): sparse shortest augmenting paths with a dual
certificate for single-slot pods, the rounded relaxation with swap repair for bundles."""

import numpy as np
import pytest

from eams.scheduler.auction import AuctionParams, bids, dual_bound, solve
from eams.scheduler.auction.exact import transport
from eams.scheduler.bench.auction_batches import random_batch
from eams.scheduler.errors import AuctionInputError
from tests.auction.checks import assert_eps_cs, assert_feasible
from tests.auction.reference import lsa_optimum, milp_optimum


@pytest.mark.parametrize(
    ("n_pods", "mask", "warm", "method"),
    [
        (150, 0.0, True, "matching"),  # 150² × 180 slots > DENSE_WORK: candidate-list passes
        (150, 0.3, True, "matching"),
        (150, 0.3, False, "matching"),
        (150, 0.9, True, "matching"),
        (40, 0.3, True, "matching"),  # small and warm: one list pass is cheapest
        (40, 0.3, False, "linear_sum_assignment"),  # small and cold: the dense solver
    ],
)
def test_masked_study_bids_are_cleared_exactly(
    n_pods: int, mask: float, warm: bool, method: str
) -> None:
    pods, nodes = random_batch(n_pods, 60, 3, seed=4)
    values = bids.bid_values(pods, nodes, AuctionParams())
    feasible = np.random.default_rng(5).random(values.shape) >= mask
    c = solve(values, pods.slots, nodes.slots, AuctionParams(warm_start=warm), feasible)
    masked = np.where(feasible, values, -np.inf)
    assert c.method == method and c.converged and c.rounds == 0
    assert_feasible(masked, pods.slots, nodes.slots, c)
    exact = AuctionParams(epsilon_rel=1e-12, epsilon_start_rel=1e-12)  # prices are 0-CS duals
    assert_eps_cs(masked, nodes.slots, solve(values, pods.slots, nodes.slots, exact, feasible))
    optimum = lsa_optimum(masked, nodes.slots)
    assert c.value == pytest.approx(optimum, rel=1e-12)
    assert dual_bound(masked, pods.slots, nodes.slots, c.prices) == pytest.approx(c.value)


def test_transport_gives_up_within_its_pass_cap() -> None:
    # identical pods on identical nodes listed two at a time (from zero prices): one pass
    # cannot find the optimum
    values = np.full((40, 30), 2.0)
    capacity = np.full(30, 1)
    zero = np.zeros(30)
    assert transport(values, capacity, 2.0, zero, list_len=2, max_passes=1) is None
    solved = transport(values, capacity, 2.0, zero, list_len=2, max_passes=40)
    assert solved is not None and (solved[0] >= 0).sum() == 30
    # cold (no starting prices), the provably sufficient lists find it in one pass
    cold = transport(values, capacity, 2.0, max_passes=1)
    assert cold is not None and (cold[0] >= 0).sum() == 30 and cold[2] == 1


def test_bundle_knapsack_trap_is_repaired() -> None:
    """One node of 3 slots: per-slot prices let the 1-slot pod (1.45) keep the 3-slot pod
    (2.97) out; the swap repair must evict it."""
    values = np.array([[1.45], [2.97]])
    c = solve(values, np.array([1, 3]), np.array([3]))
    assert c.assignment.tolist() == [-1, 0] and c.value == pytest.approx(2.97)
    assert c.gap_bound is not None and c.gap_bound >= 0


@pytest.mark.parametrize("seed", range(8))
def test_bundles_relaxation_against_milp_and_auction(seed: int) -> None:
    pods, nodes = random_batch(14, 6, 6, seed=seed, max_pod_slots=3)
    values = bids.bid_values(pods, nodes, AuctionParams())
    c = solve(values, pods.slots, nodes.slots)
    assert c.method == "relaxation"
    assert_feasible(values, pods.slots, nodes.slots, c)
    best = milp_optimum(values, pods.slots, nodes.slots)
    assert c.value <= best * (1 + 1e-9)
    assert c.gap_bound is not None and best - c.value <= c.gap_bound * (1 + 1e-9) + 1e-12


def test_method_is_checked() -> None:
    with pytest.raises(AuctionInputError, match=r"params\.method"):
        AuctionParams(method="hungarian")


def test_a_large_cold_start_is_cleared_exactly() -> None:
    """300 cold rows on 40 nodes of 2 slots (more pods than slots): the old list passes
    declined it and the capped ε-auction cleared it; the provably sufficient lists (every node
    here) make it one exact pass, certified by its duals."""
    pods, nodes = random_batch(300, 40, 2, seed=7)
    values = bids.bid_values(pods, nodes, AuctionParams())
    solved = transport(values, nodes.slots, float(values.max()))
    assert solved is not None and solved[2] == 1
    c = solve(values, pods.slots, nodes.slots, AuctionParams(warm_start=False, max_rounds=50))
    assert c.method == "matching" and c.converged and not c.fell_back
    assert_feasible(values, pods.slots, nodes.slots, c)
    assert (c.assignment >= 0).sum() == 80  # every slot taken: more pods than slots
    assert c.value == pytest.approx(lsa_optimum(values, nodes.slots), rel=1e-12)
    assert dual_bound(values, pods.slots, nodes.slots, c.prices) == pytest.approx(c.value)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("n_pods", [1, 2, 3, 8, 32])
def test_a_few_pods_clear_on_their_short_lists_at_the_optimum(seed: int, n_pods: int) -> None:
    """``short_lists`` (each pod's J best nodes, one dense assignment, certified on all N) hits
    the optimum of the full problem and its prices are 0-CS duals on every node, with a
    filter mask, full nodes and identical nodes (ties) in the batch."""
    pods, nodes = random_batch(n_pods, 200, 2, seed=seed)
    values = bids.bid_values(pods, nodes, AuctionParams())
    values[:, 50:60] = values[:, 50:51]  # ten identical nodes
    capacity = nodes.slots.copy()
    capacity[::7] = 0
    feasible = np.random.default_rng(seed).random(values.shape) >= 0.5
    c = solve(values, pods.slots, capacity, AuctionParams(), feasible)
    masked = np.where(feasible, values, -np.inf)
    assert c.method == "short_lists" and c.converged and c.rounds == 0
    assert_feasible(masked, pods.slots, capacity, c)
    assert c.value == pytest.approx(lsa_optimum(masked, capacity), rel=1e-12)
    v = np.where(capacity[None, :] > 0, masked, -np.inf)
    assert dual_bound(v, pods.slots, capacity, c.prices) == pytest.approx(c.value, rel=1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_the_extenders_batch_clears_on_each_pods_best_node_priced_zero(seed: int) -> None:
    """The extender's usual batch (2–5 pods, 1,000 nodes of several free slots, distinct
    nodes): no node is asked for more than it has, so each pod takes its best node, every
    price is 0, and that is the optimum; with the best node full for all but one pod the
    short lists clear it instead, still at the optimum."""
    pods, nodes = random_batch(2 + seed, 1_000, 7, seed=seed)
    values = bids.bid_values(pods, nodes, AuctionParams())
    c = solve(values, pods.slots, nodes.slots)
    assert c.method == "short_lists" and c.gap_bound is None
    assert np.array_equal(c.assignment, values.argmax(axis=1))
    assert not c.prices.any()
    assert c.value == pytest.approx(lsa_optimum(values, nodes.slots), rel=1e-12)
    contested = values.copy()
    contested[:, 0] = values.max() * 1.01  # every pod's best node, one free slot
    capacity = nodes.slots.copy()
    capacity[0] = 1
    c = solve(contested, pods.slots, capacity)
    assert c.method == "short_lists" and c.prices[0] > 0
    assert c.value == pytest.approx(lsa_optimum(contested, capacity), rel=1e-12)
    assert dual_bound(contested, pods.slots, capacity, c.prices) == pytest.approx(c.value)


@pytest.mark.parametrize("n_pods", [8, 15, 32])
def test_replicas_fill_the_best_nodes_in_order_at_the_optimum(n_pods: int) -> None:
    """Identical pods (a Deployment's replicas) that over-ask their best node fill the nodes
    in descending value, priced so each earns the best value still on offer: the optimum,
    0-CS (dual bound = value), no node over its free slots."""
    pods, nodes = random_batch(1, 1_000, 7, seed=3)
    row = bids.bid_values(pods, nodes, AuctionParams())
    values = np.repeat(row, n_pods, axis=0)
    demand = np.ones(n_pods, dtype=np.int64)
    c = solve(values, demand, nodes.slots)
    assert c.method == "short_lists" and c.converged
    assert_feasible(values, demand, nodes.slots, c)
    assert c.value == pytest.approx(lsa_optimum(values, nodes.slots), rel=1e-12)
    assert dual_bound(values, demand, nodes.slots, c.prices) == pytest.approx(c.value, rel=1e-12)
    best = np.argsort(-row[0], kind="stable")
    assert set(c.assignment) == set(best[: -(-n_pods // 7)].tolist())
