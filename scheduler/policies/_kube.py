"""Shared arithmetic of kube-scheduler's NodeResourcesFit scoring strategies.

kubernetes/kubernetes ``pkg/scheduler/framework/plugins/noderesources/least_allocated.go`` and
``most_allocated.go``: per resource, ``(capacity − requested)·100/capacity`` (least) or
``requested·100/capacity`` (most), with ``requested`` including the pod; the node score is the
weight-averaged score over cpu and memory (weights 1 and 1, the default ``resources``). A pod
without requests is scored as 100 m cpu and 200 MiB (``pkg/scheduler/util/pod_resources.go``).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from eams.scheduler.policies.base import NodeState, WorkloadPod

DEFAULT_CPU = 0.1
DEFAULT_MEM_MIB = 200.0


def requested_fraction(
    pod: WorkloadPod, nodes: NDArray[np.int64], state: NodeState
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Requested cpu and memory fraction of each node after adding ``pod``, shapes (M,)."""
    c = state.cluster
    cpu = pod.cpu or DEFAULT_CPU
    mem = pod.mem_mib or DEFAULT_MEM_MIB
    cpu_frac = (state.alloc_cpu[nodes] + cpu) / c.cores[nodes]
    mem_frac = (state.alloc_mem_mib[nodes] + mem) / c.mem_mib[nodes]
    return np.minimum(cpu_frac, 1.0), np.minimum(mem_frac, 1.0)


def least_allocated(
    pod: WorkloadPod, nodes: NDArray[np.int64], state: NodeState
) -> NDArray[np.float64]:
    """LeastAllocated score 0–100 per node (integer arithmetic as upstream)."""
    cpu, mem = requested_fraction(pod, nodes, state)
    return (np.floor((1 - cpu) * 100) + np.floor((1 - mem) * 100)) // 2


def most_allocated(
    pod: WorkloadPod, nodes: NDArray[np.int64], state: NodeState
) -> NDArray[np.float64]:
    """MostAllocated score 0–100 per node (integer arithmetic as upstream)."""
    cpu, mem = requested_fraction(pod, nodes, state)
    return (np.floor(cpu * 100) + np.floor(mem * 100)) // 2
