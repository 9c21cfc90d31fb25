"""Independent checks of a clearing: feasibility and ε-complementary slackness, computed here
from the values and the returned prices (not through the engine's own code)."""

from __future__ import annotations

import numpy as np

from eams.scheduler.auction import Clearing


def allowed(values: np.ndarray, demand: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    return np.isfinite(values) & (values > 0) & (demand[:, None] <= capacity[None, :])


def assert_feasible(
    values: np.ndarray, demand: np.ndarray, capacity: np.ndarray, c: Clearing
) -> None:
    """Every assigned pod sits on an allowed node; no node holds more slots than it has."""
    ok = allowed(values, demand, capacity)
    on = np.flatnonzero(c.assignment >= 0)
    assert c.assignment.shape == demand.shape
    assert np.all(c.assignment < capacity.size)
    assert ok[on, c.assignment[on]].all()
    load = np.bincount(c.assignment[on], weights=demand[on], minlength=capacity.size)
    assert np.all(load <= capacity)
    assert c.value == np.float64(values[on, c.assignment[on]].sum()) or np.isclose(
        c.value, values[on, c.assignment[on]].sum()
    )
    assert np.all(c.unplaceable == ~ok.any(axis=1))


def assert_eps_cs(values: np.ndarray, capacity: np.ndarray, c: Clearing) -> None:
    """ε-CS for single-slot pods: each assigned pod is within ε of its best node at the final
    prices (and of staying out), each unassigned pod gains at most ε anywhere, and every node
    with a free slot is priced 0 (the asymmetric condition)."""
    demand = np.ones(values.shape[0], dtype=int)
    ok = allowed(values, demand, capacity)
    p = c.prices
    assert np.all(p >= 0)
    tol = 1e-9 * max(1.0, float(np.abs(np.where(ok, values, 0)).max(initial=0)))
    net = np.where(ok, values - p[None, :], -np.inf)
    best = np.maximum(net.max(axis=1, initial=-np.inf), 0.0)
    for j, n in enumerate(c.assignment):
        if n >= 0:
            assert values[j, n] - p[n] >= best[j] - c.epsilon - tol, f"pod {j} on node {n}"
        else:
            assert best[j] <= c.epsilon + tol, f"unassigned pod {j} could gain {best[j]}"
    load = np.bincount(c.assignment[c.assignment >= 0], minlength=capacity.size)
    free = load < capacity
    assert np.all(p[free] <= tol), "a node with a free slot has a positive price"
