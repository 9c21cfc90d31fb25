"""The fallback when the auction hits its round cap (study §5.3: "falls back to the greedy
assignment if the cap is hit").

It keeps the auction's partial assignment (always capacity-feasible) and places every
remaining pod, highest best value first, on its best node that still has room.
"""

from __future__ import annotations

import numpy as np


def greedy_complete(
    values: np.ndarray, demand: np.ndarray, capacity: np.ndarray, assignment: np.ndarray
) -> np.ndarray:
    """Complete a feasible partial assignment greedily.

    Parameters
    ----------
    values : (J, N) float
        −inf where the pod may not go.
    demand : (J,) int
        Slots per pod.
    capacity : (N,) int
        Free slots per node.
    assignment : (J,) int
        Feasible partial assignment, −1 = unassigned.

    Returns
    -------
    (J,) int
        A new assignment, still within every node's capacity; pods with no node left stay −1.
    """
    result = assignment.copy()
    placed = result >= 0
    room = capacity - np.bincount(
        result[placed], weights=demand[placed], minlength=capacity.size
    ).astype(np.int64)
    waiting = np.flatnonzero(~placed & np.isfinite(values).any(axis=1))
    order = waiting[np.argsort(-values[waiting].max(axis=1), kind="stable")]
    for j in order:  # one pass over leftover pods only; runs when the auction did not converge
        row = np.where(room >= demand[j], values[j], -np.inf)
        n = int(row.argmax())
        if np.isfinite(row[n]):
            result[j] = n
            room[n] -= demand[j]
    return result
