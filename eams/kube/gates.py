"""Pods held for the market by a scheduling gate, and the patch that releases each onto its node.

Kubernetes keeps a pod whose ``spec.schedulingGates`` is not empty out of kube-scheduler's queue
(KEP-3521, Pod Scheduling Readiness, GA in 1.30): kube-scheduler spends nothing on it until its
last gate is removed. While a pod is gated its node affinity may be narrowed — a required
``nodeSelectorTerms`` added where there was none (KEP-3838, mutable pod scheduling directives,
GA in 1.30) — and kube-scheduler's NodeAffinity PreFilter turns a term ``metadata.name In
[NODE]`` (a ``matchFields`` term) into the one node it filters and, one node feasible, binds
without scoring and without calling an extender (``pkg/scheduler/schedule_one.go``:
``schedulePod`` returns the only feasible node).

So a pod created with the gate :data:`~eams.kube.names.MARKET_GATE` is cleared by the market in
its batch (window W, every pod of the window together) and released by one strategic merge
patch (:func:`release_patch`) that removes that gate — only that one: another controller's gate
stays — and, where the market chose a node, pins the pod to it. Checked on kube-apiserver 1.36
(``tests/k8s/test_gate_release.py``): both in one patch, the pod's other gates kept.

A pod is pinned only when the market judges every constraint it has: its requests, its
``nodeSelector`` and its tolerations against the node's taints and cordon. A pod with
``spec.affinity`` or ``spec.topologySpreadConstraints`` (inter-pod rules the market does not
read) is released unpinned, as is a pod the market cleared nowhere: kube-scheduler places it
by its own plugins (:func:`can_pin`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from eams.kube.names import MARKET_GATE

NODE_NAME_FIELD = "metadata.name"
"""The one field a ``matchFields`` node selector requirement may name (``v1.NodeSelectorTerm``)."""


def carries_market_gate(gate_names: Iterable[str]) -> bool:
    """True when :data:`~eams.kube.names.MARKET_GATE` is among a pod's
    ``spec.schedulingGates[].name``."""
    return MARKET_GATE in gate_names


def can_pin(has_affinity: bool, has_spread_constraints: bool) -> bool:
    """True when the market judges every placement constraint of a pod (module docstring):
    it has neither ``spec.affinity`` nor ``spec.topologySpreadConstraints``."""
    return not (has_affinity or has_spread_constraints)


def release_patch(node: str | None) -> dict[str, Any]:
    """The strategic merge patch (``application/strategic-merge-patch+json``) that removes
    :data:`~eams.kube.names.MARKET_GATE` from a pod and, with ``node``, adds the required node
    affinity term ``metadata.name In [node]``.

    Parameters
    ----------
    node : str or None
        The node the market cleared the pod onto; ``None`` releases the pod unpinned.

    Returns
    -------
    dict
        ``{"spec": {"schedulingGates": [{"$patch": "delete", "name": ...}], "affinity": ...}}``
        (the JSON body). Only for a pod without ``spec.affinity``: the term replaces the
        required terms whole, and kube-apiserver refuses a change to existing ones (422).
    """
    spec: dict[str, Any] = {"schedulingGates": [{"$patch": "delete", "name": MARKET_GATE}]}
    if node is not None:
        term = {"matchFields": [{"key": NODE_NAME_FIELD, "operator": "In", "values": [node]}]}
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
            }
        }
    return {"spec": spec}
