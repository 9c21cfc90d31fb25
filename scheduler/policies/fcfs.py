"""FCFS: pods in arrival order, each on the first feasible node (lowest node index).

Source: the study's FCFS baseline (§9, after the lunar paper's first-come-first-served
dispatcher): no scoring at all, just the first node that passes the filters.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from eams.scheduler.policies.base import Cluster, NodeState, Params, ScoringPolicy, WorkloadPod

NAME = "fcfs"


class FirstFeasible(ScoringPolicy):
    """Score 100 for the first candidate (lowest index), 0 for the rest."""

    name = NAME

    def score(
        self, pod: WorkloadPod, candidates: NDArray[np.int64], state: NodeState
    ) -> NDArray[np.float64]:
        """Scores 0–100 per candidate (see :meth:`ScoringPolicy.score`)."""
        scores = np.zeros(len(candidates))
        scores[np.argmin(candidates)] = 100.0
        return scores


def make(cluster: Cluster, params: Params, seed: int) -> FirstFeasible:
    """The first-feasible placer."""
    return FirstFeasible()
