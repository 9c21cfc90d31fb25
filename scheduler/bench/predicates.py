"""The filter predicates every scheduler in the harness must respect (kube-scheduler Filter).

* resources (NodeResourcesFit): ``cpu ≤ free cpu``, ``memory ≤ free memory``, pods on node + 1 ≤
  allocatable pods;
* taints and tolerations (TaintToleration): the Kubernetes layer's rule,
  :func:`eams.kube.taints.untolerated` (only ``NoSchedule``/``NoExecute`` taints filter);
* ``nodeSelector`` (NodeAffinity): every key present on the node with exactly that value.

Rules as summarised in ``../shared/reference/extender-protocol.md`` §5.2–5.4 (kubernetes/kubernetes
``noderesources/fit.go``, ``tainttoleration/taint_toleration.go``, ``core/v1/toleration.go``).
The static part (taints, selector) is evaluated once per distinct pod constraint profile as a
boolean mask over nodes; the resource part is evaluated on the live free-capacity arrays.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from eams.kube.taints import untolerated
from eams.scheduler.policies.base import NodeMeta, PodConstraints


def static_fit(constraints: PodConstraints, node: NodeMeta) -> bool:
    """Whether a pod with ``constraints`` passes TaintToleration and nodeSelector on ``node``."""
    if untolerated(constraints.tolerations, node.taints) is not None:
        return False
    return all(node.labels.get(k) == v for k, v in constraints.node_selector)


def static_masks(profiles: list[PodConstraints], nodes: list[NodeMeta]) -> NDArray[np.bool_]:
    """Static feasibility of every constraint profile on every node.

    Returns
    -------
    (P, N) bool
        ``mask[p, n]`` is True when profile ``p`` passes the taint and selector rules on node ``n``.
    """
    mask = np.zeros((len(profiles), len(nodes)), dtype=bool)
    for p, prof in enumerate(profiles):
        mask[p] = [static_fit(prof, node) for node in nodes]
    return mask


def resource_fit(
    cpu: float,
    mem_mib: float,
    free_cpu: NDArray[np.float64],
    free_mem_mib: NDArray[np.float64],
    free_slots: NDArray[np.int64],
) -> NDArray[np.bool_]:
    """NodeResourcesFit on all nodes for one pod (``cpu`` cores, ``mem_mib``): (N,) bool."""
    eps = 1e-9  # requests are sums of floats; a pod exactly filling a node must fit
    return (free_cpu + eps >= cpu) & (free_mem_mib + eps >= mem_mib) & (free_slots >= 1)
