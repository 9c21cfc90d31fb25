"""Bin packing: NodeResourcesFit with the ``MostAllocated`` strategy.

Source: kubernetes/kubernetes ``pkg/scheduler/framework/plugins/noderesources/most_allocated.go``.
The study (§9) calls it the strongest energy baseline: it fills busy nodes so empty ones can
stay off.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from eams.scheduler.policies._kube import most_allocated
from eams.scheduler.policies.base import Cluster, NodeState, Params, ScoringPolicy, WorkloadPod

NAME = "most-allocated"


class MostAllocated(ScoringPolicy):
    """Score = MostAllocated over cpu and memory."""

    name = NAME

    def score(
        self, pod: WorkloadPod, candidates: NDArray[np.int64], state: NodeState
    ) -> NDArray[np.float64]:
        """Scores 0–100 per candidate (see :meth:`ScoringPolicy.score`)."""
        return most_allocated(pod, candidates, state)


def make(cluster: Cluster, params: Params, seed: int) -> MostAllocated:
    """The bin-packing scorer."""
    return MostAllocated()
