"""Instances hypothesis found (tests/auction/test_properties.py), kept as explicit cases.

Each one once ended at the round cap (``converged`` False); the assertions are the property
test's: ε-CS from the returned prices and a value within J·ε of the optimum.
"""

import numpy as np
import pytest

from eams.scheduler.auction import AuctionParams, solve
from eams.scheduler.auction.classes import node_classes
from eams.scheduler.auction.inputs import allowed
from tests.auction.checks import assert_eps_cs, assert_feasible
from tests.auction.reference import lsa_optimum

INF = np.inf
# Nodes 3 and 4 have identical columns but were put in different classes (their BLAS-summed
# float digests differed by 1 ulp): an ε price war between them that outlasted 3000 rounds.
TIED_FIVE_NODES = (
    np.array([[1.0, 3.0, 1.0, 3.0, 3.0]] + [[3.0] * 5] * 6),
    np.array([3, 0, 3, 3, 3]),
)
# A reverse-round price war: node 5's free slot and nodes 2/4 trade pods 0.0004 at a time.
REVERSE_WAR = (
    np.array(
        [
            [-INF, 2.0, 8.0, 1.0, 3.0, 8.0],
            [5.0, 5.0, 1.0, -INF, 3.0, 3.0],
            [3.0, 5.0, 8.0, 8.0, 1.0, 5.0],
            [-INF, 5.0, -INF, 8.0, 5.0, 2.0],
            [2.0, 8.0, 5.0, 3.0, 8.0, -INF],
            [2.0, 8.0, 8.0, 5.0, -INF, 2.0],
            [-INF, 2.0, 3.0, -INF, 1.0, 3.0],
            [1.0, 8.0, -INF, 2.0, 1.0, 1.0],
            [-INF, 2.0, 3.0, 5.0, 2.0, 3.0],
        ]
    ),
    np.array([2, 1, 4, 0, 1, 3]),
)


def _clears(values: np.ndarray, capacity: np.ndarray, warm: bool) -> None:
    demand = np.ones(values.shape[0], dtype=np.int64)
    c = solve(values, demand, capacity, AuctionParams(warm_start=warm, method="auction"))
    assert c.converged and not c.fell_back
    assert_feasible(values, demand, capacity, c)
    assert_eps_cs(values, capacity, c)
    assert c.value >= lsa_optimum(values, capacity) - values.shape[0] * c.epsilon - 1e-9


@pytest.mark.parametrize("warm", [True, False])
def test_identical_nodes_past_a_simd_block_clear(warm: bool) -> None:
    _clears(*TIED_FIVE_NODES, warm)


def test_reverse_round_price_war_clears() -> None:
    _clears(*REVERSE_WAR, True)


def test_identical_columns_of_the_tied_instance_share_a_class() -> None:
    values, capacity = TIED_FIVE_NODES
    cls = node_classes(allowed(values, np.ones(values.shape[0], np.int64), capacity, None))
    assert cls.tolist() == [0, 1, 0, 3, 3]  # node 1 (no free slot) is all −inf: its own class


@pytest.mark.parametrize("n_nodes", [5, 7, 1000])
def test_identical_columns_share_a_class_wherever_they_sit(n_nodes: int) -> None:
    rng = np.random.default_rng(n_nodes)
    distinct = rng.uniform(1.0, 2.0, (40, max(2, n_nodes // 5)))
    values = distinct[:, rng.integers(0, distinct.shape[1], n_nodes)]
    cls = node_classes(values)
    for n in range(n_nodes):  # a class is exactly the set of nodes with the same column
        same = (values == values[:, [n]]).all(axis=0)
        assert (same == (cls == cls[n])).all(), n
        assert cls[n] == np.flatnonzero(same)[0]
