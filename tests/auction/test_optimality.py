"""Total value against exact optima: ``linear_sum_assignment`` for single-slot pods (within
J·ε), a HiGHS MILP for bundles (within J·ε, or inside the certified gap the clearing reports)."""

import numpy as np
import pytest

from eams.scheduler.auction import AuctionParams, bids, dual_bound, solve
from eams.scheduler.bench.auction_batches import random_batch
from tests.auction.checks import assert_eps_cs, assert_feasible
from tests.auction.reference import lsa_optimum, milp_optimum


@pytest.mark.parametrize(
    ("n_pods", "n_nodes", "slots", "seed", "warm"),
    [
        (30, 20, 2, 1, True),
        (30, 20, 2, 1, False),  # cold start: four ε-scaling phases, then reverse rounds
        (60, 40, 4, 2, True),
        (60, 40, 4, 2, False),
        (120, 40, 2, 3, True),  # more pods than slots: 40 are priced out
    ],
)
def test_study_bids_single_slot_within_j_eps(
    n_pods: int, n_nodes: int, slots: int, seed: int, warm: bool
) -> None:
    pods, nodes = random_batch(n_pods, n_nodes, slots, seed=seed)
    values = bids.bid_values(pods, nodes, AuctionParams())
    c = solve(values, pods.slots, nodes.slots, AuctionParams(warm_start=warm))
    assert c.converged
    assert_feasible(values, pods.slots, nodes.slots, c)
    assert_eps_cs(values, nodes.slots, c)
    assert c.value >= lsa_optimum(values, nodes.slots) - n_pods * c.epsilon
    assert dual_bound(values, pods.slots, nodes.slots, c.prices) - c.value <= n_pods * c.epsilon * (
        1 + 1e-9
    )


@pytest.mark.parametrize("seed", range(6))
def test_random_values_with_filter_mask_within_j_eps(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_pods, n_nodes = rng.integers(5, 40), rng.integers(3, 25)
    values = rng.uniform(0.1, 10.0, (n_pods, n_nodes))
    capacity = rng.integers(0, 4, n_nodes)
    feasible = rng.random(values.shape) > 0.3
    c = solve(values, np.ones(n_pods, int), capacity, eligible=feasible)
    masked = np.where(feasible, values, -np.inf)
    assert_feasible(masked, np.ones(n_pods, int), capacity, c)
    assert_eps_cs(masked, capacity, c)
    assert c.value >= lsa_optimum(masked, capacity) - n_pods * c.epsilon


@pytest.mark.parametrize("seed", range(8))
def test_bundles_against_milp(seed: int) -> None:
    """Bundles make this a generalised assignment problem: the clearing is feasible, never
    above the MILP optimum, and within J·ε of it or within its reported certified gap."""
    pods, nodes = random_batch(14, 6, 6, seed=seed, max_pod_slots=3)
    values = bids.bid_values(pods, nodes, AuctionParams())
    c = solve(values, pods.slots, nodes.slots)
    assert_feasible(values, pods.slots, nodes.slots, c)
    best = milp_optimum(values, pods.slots, nodes.slots)
    assert c.value <= best * (1 + 1e-9)
    assert c.gap_bound is not None
    assert best - c.value <= max(len(pods) * c.epsilon, c.gap_bound) * (1 + 1e-9)
