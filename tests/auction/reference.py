"""Reference optima for the auction tests: scipy's Hungarian-type solver and a HiGHS MILP."""

from __future__ import annotations

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, linear_sum_assignment, milp
from scipy.sparse import coo_array


def lsa_optimum(values: np.ndarray, capacity: np.ndarray) -> float:
    """Optimum of the single-slot problem by ``linear_sum_assignment`` on slot-expanded values
    (disallowed pairs, −inf or ≤ 0, count 0: leaving a pod out is worth 0)."""
    allowed = np.where(np.isfinite(values) & (values > 0), values, 0.0)
    expanded = np.repeat(allowed, capacity, axis=1)
    if expanded.size == 0:
        return 0.0
    rows, cols = linear_sum_assignment(expanded, maximize=True)
    return float(expanded[rows, cols].sum())


def milp_optimum(values: np.ndarray, demand: np.ndarray, capacity: np.ndarray) -> float:
    """Optimum of the multi-slot problem (pods as bundles on one node) by HiGHS."""
    n_pods, n_nodes = values.shape
    ok = np.isfinite(values) & (values > 0) & (demand[:, None] <= capacity[None, :])
    j, n = np.nonzero(ok)
    if j.size == 0:
        return 0.0
    k = np.arange(j.size)
    one_node = coo_array((np.ones(j.size), (j, k)), shape=(n_pods, j.size))
    room = coo_array((demand[j].astype(float), (n, k)), shape=(n_nodes, j.size))
    result = milp(
        c=-values[j, n],
        constraints=[LinearConstraint(one_node, 0, 1), LinearConstraint(room, 0, capacity)],
        integrality=np.ones(j.size),
        bounds=Bounds(0, 1),
    )
    assert result.success, result.message
    return float(-result.fun)
