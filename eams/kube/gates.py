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
patch (:func:`release_patch`) that removes that gate — only that one — and, where the market
chose a node, pins the pod to it; the pod's ``metadata.uid`` in the patch makes kube-apiserver
refuse it (422, the uid is immutable) for another pod of the same name. Checked on
kube-apiserver 1.36 (``tests/k8s/test_extender_e2e.py``). A pod another controller's gate still
holds (:func:`held_by_another_gate`: Kueue's admission, a quota) is not the market's yet: the
extender and the power manager leave it out until that gate is lifted, so the market clears it
once its controller is done with it (and has narrowed its placement, if it does).

A pod is pinned only when the market judges every filter that could refuse it there: its CPU and
memory requests (NodeResourcesFit), its ``nodeSelector``, its tolerations against the node's taints
and the cordon (``eams.kube.admission.admits_now``). :func:`can_pin` refuses the rest —
``spec.affinity``, ``spec.topologySpreadConstraints``, a volume claim (VolumeBinding, VolumeZone,
NodeVolumeLimits), ``spec.resourceClaims`` (DynamicResources), a ``hostPort`` (NodePorts), a request
of any resource but CPU and memory, and another controller's gate (a pod that reaches the market
never has one) — and such a pod is released unpinned, for kube-scheduler to place by its own
filters. Not judged either way: the required anti-affinity of pods already running against this one
(InterPodAffinity).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from eams.kube.names import MARKET_GATE

JUDGED_RESOURCES = frozenset({"cpu", "memory"})
"""The resources whose requests the market fits (NodeResourcesFit's CPU and memory)."""
NODE_NAME_FIELD = "metadata.name"
"""The one field a ``matchFields`` node selector requirement may name (``v1.NodeSelectorTerm``)."""


def carries_market_gate(names: Iterable[str]) -> bool:
    """True when :data:`~eams.kube.names.MARKET_GATE` is among a pod's
    ``spec.schedulingGates[].name`` (:func:`gate_names`)."""
    return MARKET_GATE in names


def gate_names(spec: Mapping[str, Any]) -> list[str]:
    """``spec.schedulingGates[].name`` of a pod's ``spec`` as JSON, in order (``""`` for a gate
    without a name)."""
    return [gate.get("name") or "" for gate in spec.get("schedulingGates") or ()]


def held_by_another_gate(names: Iterable[str]) -> bool:
    """True when a pod's ``spec.schedulingGates[].name`` hold a gate other than
    :data:`~eams.kube.names.MARKET_GATE` (Kueue's admission, a quota controller's …): only that
    gate's controller lets the pod into kube-scheduler's queue, so neither the market nor the
    power manager counts it as pending until the gate is gone (gates are only ever removed after
    a pod's creation, KEP-3521)."""
    return any(name != MARKET_GATE for name in names)


def can_pin(spec: Mapping[str, Any]) -> bool:
    """True when the market judges every filter that could refuse a gated pod on its cleared
    node (module docstring), from the pod's ``spec`` as JSON."""
    if held_by_another_gate(gate_names(spec)):
        return False
    if spec.get("affinity") or spec.get("topologySpreadConstraints") or spec.get("resourceClaims"):
        return False
    if any(v.get("persistentVolumeClaim") or v.get("ephemeral") for v in spec.get("volumes") or ()):
        return False
    containers = [*(spec.get("containers") or ()), *(spec.get("initContainers") or ())]
    if any(p.get("hostPort") for c in containers for p in c.get("ports") or ()):
        return False
    resources = [c.get("resources") or {} for c in containers] + [spec.get("resources") or {}]
    named = {k for r in resources for part in ("requests", "limits") for k in r.get(part) or {}}
    named |= set(spec.get("overhead") or {})
    return named <= JUDGED_RESOURCES


def release_patch(
    node: str | None, uid: str | None = None, resource_version: str | None = None
) -> dict[str, Any]:
    """The strategic merge patch (``application/strategic-merge-patch+json``) that removes
    :data:`~eams.kube.names.MARKET_GATE` from a pod and, with ``node``, adds the required node
    affinity term ``metadata.name In [node]``.

    Parameters
    ----------
    node : str or None
        The node the market cleared the pod onto; ``None`` releases the pod unpinned.
    uid : str or None
        The pod's ``metadata.uid``, a precondition: another pod of the same name refuses the
        patch (422).
    resource_version : str or None
        The pod's ``metadata.resourceVersion`` as read, a precondition: a pod changed since
        refuses the patch (409; the extender's fallback releases only what it listed).

    Returns
    -------
    dict
        ``{"metadata": {"uid": ...}, "spec": {"schedulingGates": [{"$patch": "delete", "name":
        ...}], "affinity": ...}}`` (the JSON body). Pinned only for a pod without
        ``spec.affinity`` (:func:`can_pin`): the term replaces the required terms whole, and
        kube-apiserver refuses a change to existing ones (422).
    """
    spec: dict[str, Any] = {"schedulingGates": [{"$patch": "delete", "name": MARKET_GATE}]}
    if node is not None:
        term = {"matchFields": [{"key": NODE_NAME_FIELD, "operator": "In", "values": [node]}]}
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
            }
        }
    body: dict[str, Any] = {"spec": spec}
    meta = {k: v for k, v in (("uid", uid), ("resourceVersion", resource_version)) if v}
    if meta:
        body["metadata"] = meta
    return body
