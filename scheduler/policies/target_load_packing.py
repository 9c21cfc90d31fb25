"""Load-aware target packing in the style of Trimaran's ``TargetLoadPacking`` plug-in.

Source: kubernetes-sigs/scheduler-plugins ``pkg/trimaran/targetloadpacking`` (KEP 61, "Trimaran:
Real Load Aware Scheduling"). With the node's predicted cpu utilisation U (%) after adding the pod
and the target utilisation T (default 40 %, ``targetUtilization``)::

    U > 100      → 0
    U ≤ T        → (100 − T)·U/T + T     (pack: busier is better, up to the target)
    T < U ≤ 100  → T·(100 − U)/(100 − T)  (spread among the hot nodes)

Trimaran reads the measured utilisation from load-watcher; in the simulator pods use exactly
their cpu request, so the measured utilisation equals the allocated fraction.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from eams.scheduler.policies.base import Cluster, NodeState, Params, ScoringPolicy, WorkloadPod

NAME = "target-load-packing"


class TargetLoadPacking(ScoringPolicy):
    """Trimaran-style target packing at ``target_pct`` percent cpu utilisation."""

    name = NAME

    def __init__(self, target_pct: float) -> None:
        self.target_pct = target_pct

    def score(
        self, pod: WorkloadPod, candidates: NDArray[np.int64], state: NodeState
    ) -> NDArray[np.float64]:
        """Scores 0–100 per candidate (see :meth:`ScoringPolicy.score`)."""
        c = state.cluster
        used = (state.alloc_cpu[candidates] + pod.cpu) / c.cores[candidates] * 100.0
        t = self.target_pct
        below = (100 - t) * used / t + t
        above = t * (100 - used) / (100 - t)
        return np.where(used > 100, 0.0, np.where(used <= t, below, above))


def make(cluster: Cluster, params: Params, seed: int) -> TargetLoadPacking:
    """Target packing at ``params.target_utilisation_pct``."""
    return TargetLoadPacking(params.target_utilisation_pct)
