"""Hypothesis properties: no over-allocation, ε-CS at termination, a feasible fallback.

Small integer values make ties, identical nodes and identical pods common: the instances the
price-war trap needs."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from eams.scheduler.auction import AuctionParams, dual_bound, solve
from tests.auction.checks import assert_eps_cs, assert_feasible
from tests.auction.reference import lsa_optimum


@st.composite
def instances(draw: st.DrawFn, max_demand: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n_pods = draw(st.integers(0, 9))
    n_nodes = draw(st.integers(0, 6))
    values = draw(
        arrays(
            float, (n_pods, n_nodes), elements=st.sampled_from([1.0, 2.0, 3.0, 5.0, 8.0, -np.inf])
        )
    )
    demand = draw(arrays(np.int64, n_pods, elements=st.integers(1, max_demand)))
    capacity = draw(arrays(np.int64, n_nodes, elements=st.integers(0, 4)))
    return values, demand, capacity


@settings(max_examples=150, deadline=None)
@given(instances(), st.booleans(), st.sampled_from(["auto", "auction"]))
def test_single_slot_eps_cs_and_within_j_eps(inst: tuple, warm: bool, method: str) -> None:
    values, demand, capacity = inst
    c = solve(values, demand, capacity, AuctionParams(warm_start=warm, method=method))
    assert c.converged and not c.fell_back
    assert_feasible(values, demand, capacity, c)
    assert_eps_cs(values, capacity, c)
    assert c.value >= lsa_optimum(values, capacity) - values.shape[0] * c.epsilon - 1e-9


@settings(max_examples=120, deadline=None)
@given(instances(max_demand=3), st.sampled_from(["auto", "auction"]))
def test_bundles_never_over_allocate(inst: tuple, method: str) -> None:
    values, demand, capacity = inst
    c = solve(values, demand, capacity, AuctionParams(method=method))
    assert_feasible(values, demand, capacity, c)
    if (demand > 1).any():
        assert c.gap_bound is not None and c.gap_bound >= 0


@settings(max_examples=80, deadline=None)
@given(instances(max_demand=3), st.integers(1, 3))
def test_fallback_assignment_is_feasible(inst: tuple, cap_rounds: int) -> None:
    values, demand, capacity = inst
    c = solve(
        values,
        demand,
        capacity,
        AuctionParams(max_rounds=cap_rounds, warm_start=False, method="auction"),
    )
    assert_feasible(values, demand, capacity, c)
    if c.fell_back:
        assert not c.converged and c.rounds == cap_rounds and c.gap_bound is not None
        # the fallback leaves no pod out that still fits somewhere
        on = c.assignment >= 0
        room = capacity - np.bincount(c.assignment[on], weights=demand[on], minlength=capacity.size)
        ok = np.isfinite(values) & (values > 0)
        for j in np.flatnonzero(~on):
            assert not (ok[j] & (room >= demand[j])).any()


@st.composite
def small_batches(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """1–8 single-slot pods on up to 40 nodes: the extender's batch, with ties and full or
    over-asked nodes common."""
    n_pods = draw(st.integers(1, 8))
    n_nodes = draw(st.integers(1, 40))
    values = draw(
        arrays(float, (n_pods, n_nodes), elements=st.sampled_from([1.0, 2.0, 3.0, 5.0, -np.inf]))
    )
    if draw(st.booleans()):  # replicas: every pod values every node alike
        values[:] = values[0]
    capacity = draw(arrays(np.int64, n_nodes, elements=st.integers(0, 3)))
    return values, np.ones(n_pods, dtype=np.int64), capacity


@settings(max_examples=200, deadline=None)
@given(small_batches())
def test_small_batch_path_equals_the_general_path(inst: tuple) -> None:
    """``short_lists`` (each pod's best node when no node is over-asked, replicas in value
    order, else the short lists)
    reaches the value of the dense exact method, its prices certify it (0-CS duals: the dual
    bound equals the value), and clearing the same batch twice gives the same answer
    (AR-8)."""
    values, demand, capacity = inst
    general = solve(
        values, demand, capacity, AuctionParams(warm_start=False, method="linear_sum_assignment")
    )
    small = solve(values, demand, capacity, AuctionParams(method="short_lists"))
    if not np.isfinite(np.where(capacity[None, :] > 0, values, -np.inf)).any():
        return  # nothing to clear: solve answers at once whatever the method
    assert small.method == "short_lists" and small.converged and small.gap_bound is None
    assert_feasible(values, demand, capacity, small)
    assert small.value == general.value == lsa_optimum(values, capacity)
    v = np.where(capacity[None, :] > 0, values, -np.inf)
    assert dual_bound(v, demand, capacity, small.prices) == small.value
    again = solve(values, demand, capacity, AuctionParams(method="short_lists"))
    assert np.array_equal(again.assignment, small.assignment)
    assert np.array_equal(again.prices, small.prices)
