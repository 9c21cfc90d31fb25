"""The LP dual bound that certifies a clearing (Bertsekas 1998, §7.1; for bundles the LP
relaxation of the generalised assignment problem, Shmoys & Tardos 1993).

For any per-slot node prices p ≥ 0, ``Σ_j max(0, max_n (v_jn − d_j·p_n)) + Σ_n K_n·p_n`` is
the objective of a feasible dual solution of the LP relaxation, hence an upper bound on every
integer assignment. With ε-CS and free slots at price 0 it exceeds the clearing's value by at
most J·ε; the exact methods' prices make it equal to the value (0-CS).
"""

from __future__ import annotations

import numpy as np


def dual_bound(
    values: np.ndarray, demand: np.ndarray, capacity: np.ndarray, prices: np.ndarray
) -> float:
    """An upper bound on the optimum from node prices (LP duality).

    Parameters
    ----------
    values : (J, N) float, −inf where not allowed
    demand : (J,) int
    capacity : (N,) int
    prices : (N,) float ≥ 0, per slot

    Returns
    -------
    float
        ``Σ_j max(0, max_n (v_jn − d_j·p_n)) + Σ_n K_n·p_n`` over the allowed pairs (finite,
        v > 0, the pod fits the node).
    """
    if values.size == 0:
        return 0.0
    ok = np.isfinite(values) & (values > 0) & (demand[:, None] <= capacity[None, :])
    net = np.where(ok, values - demand[:, None] * prices[None, :], -np.inf)
    return float(np.maximum(net.max(axis=1), 0.0).sum() + (capacity * prices).sum())


def allowed_bound(
    values: np.ndarray, demand: np.ndarray, capacity: np.ndarray, prices: np.ndarray
) -> float:
    """:func:`dual_bound` of a matrix of allowed values (:func:`.inputs.allowed`: −inf wherever
    the pod may not go, > 0 elsewhere), which needs no mask of its own: one pass.

    Parameters
    ----------
    values : (J, N) float, allowed values
    demand, capacity, prices
        As :func:`dual_bound`.

    Returns
    -------
    float
    """
    if values.size == 0:
        return 0.0
    best = net_values(values, demand, prices).max(axis=1)
    return float(np.maximum(best, 0.0).sum() + (capacity * prices).sum())


def net_values(values: np.ndarray, demand: np.ndarray, prices: np.ndarray) -> np.ndarray:
    """v_jn − d_j·p_n, (J, N), in one temporary (``values`` itself when every price is 0).

    Parameters
    ----------
    values : (J, N) float
    demand : (J,) int
    prices : (N,) float, per slot
    """
    if not prices.any():
        return values
    net = np.multiply.outer(demand.astype(float), prices)
    return np.subtract(values, net, out=net)


def certified_gap(
    values: np.ndarray,
    demand: np.ndarray,
    capacity: np.ndarray,
    prices: np.ndarray,
    value: float,
) -> float:
    """``max(0, dual_bound − value)``: how far ``value`` can be from the optimum, at most.

    Parameters
    ----------
    values, demand, capacity, prices
        As :func:`dual_bound`.
    value : float
        The clearing's total value.

    Returns
    -------
    float ≥ 0, value units
        With ``values`` already allowed (every method's matrix) one pass suffices.
    """
    return max(0.0, allowed_bound(values, demand, capacity, prices) - value)
