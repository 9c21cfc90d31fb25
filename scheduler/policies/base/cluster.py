"""The simulated cluster as every scheduler plug-in sees it: N nodes as arrays, with their
measured power curves, fitted lines and placement attributes (labels, taints).

The bench builds one from SPECpower results (:func:`eams.scheduler.bench.cluster.build_cluster`);
a node's taints are the Kubernetes layer's :class:`eams.kube.taints.Taint`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from eams.calibrate.powerstates.record import PowerStates
from eams.kube.taints import Taint
from eams.scheduler.policies.base.power import PowerCurves


@dataclass(frozen=True)
class NodeMeta:
    """The static placement attributes of one node."""

    labels: dict[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()


@dataclass
class Cluster:
    """Static description of the simulated nodes (arrays of length N).

    Attributes
    ----------
    names : list of str
    cores : (N,) float, cores
    mem_mib : (N,) float, MiB
    max_pods : (N,) int
    speed : (N,) float, relative per-core speed (reference = 1)
    curves : PowerCurves, measured
    p_idle_w, p_max_w : (N,) float, watts — the straight line fitted to each measured curve
    power_cap_w : (N,) float, watts
    meta : list of NodeMeta (labels, taints)
    server : list of str, the SPECpower system of each node
    p_wake_w : (N,) float, watts, or None — the wake term's power, as a calibration's
        ``wake_power_w`` gives it (the measured active idle); ``None``: ``p_idle_w``
    power_states : list of PowerStates, or None — each node's sleep state as its calibration
        file's schema-2 ``power_states`` record carries it, given when the bench's power manager
        runs (a policy that reads calibrations learns from it what sleeping and waking cost);
        ``None``: no sleep state (every node stays awake)
    """

    names: list[str]
    cores: NDArray[np.float64]
    mem_mib: NDArray[np.float64]
    max_pods: NDArray[np.int64]
    speed: NDArray[np.float64]
    curves: PowerCurves
    p_idle_w: NDArray[np.float64]
    p_max_w: NDArray[np.float64]
    power_cap_w: NDArray[np.float64]
    meta: list[NodeMeta]
    server: list[str]
    p_wake_w: NDArray[np.float64] | None = None
    power_states: list[PowerStates] | None = None

    @property
    def size(self) -> int:
        """Number of nodes N."""
        return len(self.names)

    @property
    def total_cores(self) -> float:
        """ΣC_n (cores), the denominator of ρ."""
        return float(self.cores.sum())
