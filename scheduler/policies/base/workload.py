"""The replayed pods as every scheduler plug-in sees them: arrival, requests, duration, tenant
and placement constraints (tolerations, nodeSelector).

The bench builds one from a trace or synthetically and rescales it to an offered load
(:mod:`eams.scheduler.bench.workload`). Tolerations are the Kubernetes layer's
(:class:`eams.kube.taints.Toleration`, kube-scheduler's matching rule).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from eams.kube.taints import Toleration


@dataclass(frozen=True)
class PodConstraints:
    """The static placement constraints of a class of pods."""

    tolerations: tuple[Toleration, ...] = ()
    node_selector: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Workload:
    """J pods as arrays (sorted by arrival).

    Attributes
    ----------
    names : list of str
    arrival_s : (J,) float, seconds from the start of the replay
    cpu : (J,) float, cores requested
    mem_mib : (J,) float, MiB requested (0 when the trace gives none)
    duration_s : (J,) float, run time on reference cores (speed 1), seconds
    tenant : (J,) int, in [0, n_tenants)
    profile : (J,) int, index into ``profiles``
    profiles : list of PodConstraints (index 0 = no constraints)
    quotas : (n_tenants,) float, quota shares summing to 1
    capped : int, durations cut to ``max_duration_s``
    """

    names: list[str]
    arrival_s: NDArray[np.float64]
    cpu: NDArray[np.float64]
    mem_mib: NDArray[np.float64]
    duration_s: NDArray[np.float64]
    tenant: NDArray[np.int64]
    profile: NDArray[np.int64]
    profiles: list[PodConstraints]
    quotas: NDArray[np.float64]
    capped: int = 0

    @property
    def size(self) -> int:
        """Number of pods J."""
        return len(self.names)

    @property
    def work_core_s(self) -> NDArray[np.float64]:
        """Work of each pod, c·t in reference core-seconds, shape (J,)."""
        return self.cpu * self.duration_s
