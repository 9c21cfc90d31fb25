"""A power-aware score on the predicted power increase, in the style of the PEAKS plug-in.

Source: the PEAKS proposal (Power Efficiency Aware Kubernetes Scheduler), kubernetes-sigs/
scheduler-plugins KEP (PR #763) and plug-in ``pkg/peaks`` (PR #841): each node has a power model
P(u); a pod is scored by the jump in node power its cpu request would cause,
ΔP = P(u + c/C) − P(u), and the node with the smallest jump scores highest. PEAKS fits
P = K0 + K1·e^(K2·u); here every node's model is the straight line fitted to its measured
curve — the same information the MILP and EAMS get. Like PEAKS it prices power, not energy:
neither run time nor waking an empty node enters the score (ΔP is the dynamic term of the
study's §5.1 model, :meth:`eams.calibrate.energy.EnergyModel.dynamic_power_w`).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from eams.calibrate.energy import EnergyModel
from eams.scheduler.policies.base import Cluster, NodeState, Params, ScoringPolicy, WorkloadPod

NAME = "peaks"


class PredictedPowerIncrease(ScoringPolicy):
    """Score = 100·(max ΔP − ΔP)/(max ΔP − min ΔP) over the candidates (100 when all equal)."""

    name = NAME

    def score(
        self, pod: WorkloadPod, candidates: NDArray[np.int64], state: NodeState
    ) -> NDArray[np.float64]:
        """Scores 0–100 per candidate (see :meth:`ScoringPolicy.score`)."""
        c = state.cluster
        model = EnergyModel(
            c.p_idle_w[candidates], c.p_max_w[candidates], c.cores[candidates], c.speed[candidates]
        )
        jump_w = model.dynamic_power_w(pod.cpu)
        spread = jump_w.max() - jump_w.min()
        if spread <= 0:
            return np.full(len(candidates), 100.0)
        return 100.0 * (jump_w.max() - jump_w) / spread


def make(cluster: Cluster, params: Params, seed: int) -> PredictedPowerIncrease:
    """The PEAKS-style scorer."""
    return PredictedPowerIncrease()
