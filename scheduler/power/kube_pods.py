"""Pods and nodes as the power policy counts them, read from the published ``v1.Pod`` and
``v1.Node`` JSON through the Kubernetes layer (:mod:`eams.kube`).

* A pod's **requests** are kube-scheduler's (:func:`eams.kube.requests.pod_request`: sidecars,
  init containers, pod-level resources, overhead).
* A pod **keeps its node awake** when it is bound there and is a workload pod
  (:attr:`eams.kube.pods.PodRef.is_workload`: not finished, not a DaemonSet's, not a static
  pod's mirror — one rule for the safety check and for the manager).
* A pod is **pending** when it has no ``spec.nodeName`` and its phase is Pending; it pends since
  its ``PodScheduled=False`` condition's ``lastTransitionTime``, else its creation.
* The **static predicates** that say which nodes a pending pod could use once awake:
  ``spec.nodeSelector`` against the node's labels, and kube-scheduler's TaintToleration filter
  (:func:`eams.kube.taints.untolerated`), leaving out the taints a sleep itself puts on a node
  (:data:`SLEEP_TAINTS`), which go when the node is back. A cordon that is not the manager's (a
  node cordoned by a person: ``spec.unschedulable`` without the ``eams.io/asleep`` taint, or with
  the ``eams.io/was-cordoned`` mark of a cordon that was there before the sleep) stays when the
  node is back, so it admits only a pod that tolerates
  ``node.kubernetes.io/unschedulable:NoSchedule`` (kube-scheduler's NodeUnschedulable filter).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from eams.kube.names import (
    ASLEEP_TAINT,
    NOT_READY_TAINT,
    UNREACHABLE_TAINT,
    UNSCHEDULABLE_TAINT,
    WAS_CORDONED_ANNOTATION,
)
from eams.kube.pods import parse_pod, pod_ref
from eams.kube.requests import pod_request
from eams.kube.taints import (
    Taint,
    Toleration,
    has_taint,
    node_taints,
    pod_tolerations,
    untolerated,
)
from eams.kube.timestamps import epoch_s

SLEEP_TAINTS = frozenset({ASLEEP_TAINT, UNSCHEDULABLE_TAINT, UNREACHABLE_TAINT, NOT_READY_TAINT})
"""Taints a sleeping node carries because it sleeps (ignored when asking where a pod fits): ours,
the cordon's and the node-lifecycle controller's for a node that stopped reporting."""


@dataclass(frozen=True)
class PodInfo:
    """One pod as the manager counts it: ``namespace/name``, its node (``None``: unbound),
    cores and MiB requested, whether it keeps its node awake, whether it pends and since when
    (epoch s), and the pod JSON for the predicates."""

    key: str
    node: str | None
    cores: float
    mem_mib: float
    workload: bool
    pending: bool
    pending_since_s: float | None
    doc: dict[str, Any]


def pod_info(pod: dict[str, Any]) -> PodInfo:
    """Read one ``v1.Pod`` (module docstring).

    Raises
    ------
    eams.kube.errors.BadObject
        A field or quantity of the pod is malformed (the API server never publishes one).
    """
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    ref = pod_ref(pod)
    node = spec.get("nodeName") or None
    pending = node is None and status.get("phase") in (None, "Pending")
    since = None
    if pending:
        for condition in status.get("conditions") or []:
            if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
                since = epoch_s(condition.get("lastTransitionTime"))
        since = since if since is not None else epoch_s(meta.get("creationTimestamp"))
    request = pod_request(parse_pod(pod, str(ref)), str(ref))
    return PodInfo(
        str(ref), node, request.cores, request.memory_mib, ref.is_workload, pending, since, pod
    )  # fmt: skip


CORDON = Taint(UNSCHEDULABLE_TAINT)
"""The taint a cordon stands for (kube-scheduler's NodeUnschedulable filter)."""


def cordoned_by_a_person(node: dict[str, Any]) -> bool:
    """True when ``node`` is cordoned and the cordon stays once the manager releases it
    (module docstring)."""
    if not (node.get("spec") or {}).get("unschedulable"):
        return False
    annotations = (node.get("metadata") or {}).get("annotations") or {}
    return not has_taint(node, ASLEEP_TAINT) or annotations.get(WAS_CORDONED_ANNOTATION) == "true"


def admits(node: dict[str, Any], pod: dict[str, Any]) -> bool:
    """True when ``pod``'s node selector and tolerations admit ``node`` once awake."""
    spec = pod.get("spec") or {}
    return admits_once_awake(node, spec.get("nodeSelector") or {}, pod_tolerations(pod))


def admits_once_awake(
    node: dict[str, Any], selector: Mapping[str, str], tolerations: Iterable[Toleration]
) -> bool:
    """True when a pod with ``spec.nodeSelector`` ``selector`` and ``tolerations`` may use
    ``node`` once it is awake (module docstring: the sleep's own taints left out)."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    if any(labels.get(k) != v for k, v in selector.items()):
        return False
    tolerations = tuple(tolerations)
    if cordoned_by_a_person(node) and untolerated(tolerations, [CORDON]) is not None:
        return False
    taints = (Taint.from_json(t) for t in node_taints(node))
    return untolerated(tolerations, taints, ignore=SLEEP_TAINTS) is None
