"""``clear`` and ``solve`` at the edges: empty batches, pods no node can take, bad arrays."""

import numpy as np
import pytest

from eams.scheduler.auction import AuctionParams, Nodes, Pods, clear, solve
from eams.scheduler.bench.auction_batches import random_batch
from eams.scheduler.errors import AuctionInputError


def test_zero_pods_and_zero_nodes_clear_empty() -> None:
    pods, nodes = random_batch(0, 5, 4, seed=1)
    c = clear(pods, nodes)
    assert c.assignment.shape == (0,) and c.prices.shape == (5,) and c.converged and c.value == 0
    pods, nodes = random_batch(7, 0, 4, seed=1)
    c = clear(pods, nodes)
    assert c.assignment.tolist() == [-1] * 7 and c.unplaceable.all() and c.prices.shape == (0,)


def test_pod_larger_than_every_node_is_unassigned_and_reported() -> None:
    pods, nodes = random_batch(6, 5, 4, seed=2)
    wide = Pods(
        slots=[*pods.slots[:5], 5],
        work_core_s=pods.work_core_s,
        priority=pods.priority,
        tenant=pods.tenant,
    )
    c = clear(wide, nodes)
    assert c.assignment[5] == -1 and c.unplaceable.tolist() == [False] * 5 + [True]
    assert (c.assignment[:5] >= 0).all()


def test_feasible_mask_is_obeyed_and_checked() -> None:
    pods, nodes = random_batch(8, 6, 2, seed=3)
    feasible = np.zeros((8, 6), dtype=bool)
    feasible[:, 4] = True  # one node allowed, two slots
    c = clear(pods, nodes, feasible=feasible)
    assert set(c.assignment[c.assignment >= 0].tolist()) == {4}
    assert (c.assignment >= 0).sum() == 2
    with pytest.raises(AuctionInputError, match="feasible"):
        clear(pods, nodes, feasible=np.ones((8, 5), dtype=bool))
    with pytest.raises(AuctionInputError, match="feasible"):
        clear(pods, nodes, feasible=np.ones((8, 6)))


def test_all_nodes_over_cap_places_nothing() -> None:
    pods, _ = random_batch(4, 3, 2, seed=4)
    nodes = Nodes(
        slots=[4, 4, 4],
        cores=[8.0] * 3,
        p_idle_w=[50.0] * 3,
        p_max_w=[150.0] * 3,
        speed=[1.0] * 3,
        headroom=[0.0, -0.1, -1.0],
        age_s=[0.0] * 3,
        empty=[False] * 3,
    )
    c = clear(pods, nodes)
    assert (c.assignment == -1).all() and c.unplaceable.all() and c.converged


@pytest.mark.parametrize(
    ("values", "demand", "capacity", "pattern"),
    [
        ([[1.0, np.nan]], [1], [1, 1], r"values\[0, 1\] = nan"),
        ([[1.0, np.inf]], [1], [1, 1], r"values\[0, 1\] = inf"),
        ([[1.0, 2.0]], [0], [1, 1], r"demand\[0\]"),
        ([[1.0, 2.0]], [1], [1, -1], r"capacity\[1\]"),
        ([[1.0, 2.0]], [1, 1], [1, 1], "do not match"),
        ([1.0, 2.0], [1], [1, 1], "2-D"),
    ],
)
def test_solve_rejects_bad_arrays(values: list, demand: list, capacity: list, pattern: str) -> None:
    with pytest.raises(AuctionInputError, match=pattern):
        solve(np.array(values), np.array(demand), np.array(capacity))


def test_params_are_checked() -> None:
    with pytest.raises(AuctionInputError, match=r"params\.kappa"):
        AuctionParams(kappa=-1.0)
    with pytest.raises(AuctionInputError, match="epsilon_factor"):
        AuctionParams(epsilon_factor=1.0)


def test_round_cap_reports_fallback() -> None:
    pods, nodes = random_batch(40, 10, 2, seed=5)
    c = clear(pods, nodes, AuctionParams(max_rounds=1, warm_start=False, method="auction"))
    assert c.fell_back and not c.converged and c.rounds == 1 and c.gap_bound is not None
    assert c.method == "auction" and c.fell_back  # the greedy completion is `fell_back`
    assert (c.assignment >= 0).sum() == 20  # the greedy completion fills all 20 slots
