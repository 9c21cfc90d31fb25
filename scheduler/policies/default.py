"""kube-scheduler's default scoring: NodeResourcesFit with the ``LeastAllocated`` strategy.

Source: kubernetes/kubernetes ``pkg/scheduler/framework/plugins/noderesources/least_allocated.go``
(the default profile's strategy). It spreads pods onto the emptiest node — the study's incumbent.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from eams.scheduler.policies._kube import least_allocated
from eams.scheduler.policies.base import Cluster, NodeState, Params, ScoringPolicy, WorkloadPod

NAME = "default"


class LeastAllocated(ScoringPolicy):
    """Score = LeastAllocated over cpu and memory."""

    name = NAME

    def score(
        self, pod: WorkloadPod, candidates: NDArray[np.int64], state: NodeState
    ) -> NDArray[np.float64]:
        """Scores 0–100 per candidate (see :meth:`ScoringPolicy.score`)."""
        return least_allocated(pod, candidates, state)


def make(cluster: Cluster, params: Params, seed: int) -> LeastAllocated:
    """The default scheduler's scoring."""
    return LeastAllocated()
