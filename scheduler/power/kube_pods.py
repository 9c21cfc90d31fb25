"""Pods and nodes as the power policy counts them, read from the published ``v1.Pod`` and
``v1.Node`` JSON through the Kubernetes layer (:mod:`eams.kube`).

* A pod's **requests** are kube-scheduler's (:func:`eams.kube.requests.pod_request`: sidecars,
  init containers, pod-level resources, overhead).
* A pod **keeps its node awake** when it is bound there and is a workload pod
  (:attr:`eams.kube.pods.PodRef.is_workload`: not finished, not a DaemonSet's, not a static
  pod's mirror — one rule for the safety check and for the manager).
* A pod is **pending** when it has no ``spec.nodeName``, its phase is Pending and no scheduling
  gate but the market's holds it (:func:`eams.kube.gates.held_by_another_gate`: Kueue's
  admission, say — no node is woken for a pod its controller has not let in yet: it is
  **held**); it pends since its ``PodScheduled=False`` condition's ``lastTransitionTime``, else
  its creation (the observer moves that to when it saw a held pod let go: the condition keeps
  its time across the gate's removal).
* The **static predicates** that say which nodes a pending pod could use once awake:
  :func:`eams.kube.admission.admits_once_awake` (node selector, tolerations, the sleep's own
  taints left out; the extender's market wakes read the same rule).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from eams.kube.admission import admits_once_awake
from eams.kube.gates import gate_names, held_by_another_gate
from eams.kube.pods import parse_pod, pod_ref
from eams.kube.requests import pod_request
from eams.kube.taints import (
    pod_tolerations,
)
from eams.kube.timestamps import epoch_s


@dataclass(frozen=True)
class PodInfo:
    """One pod as the manager counts it: ``namespace/name``, its node (``None``: unbound),
    cores and MiB requested, whether it keeps its node awake, whether it pends and since when
    (epoch s), and the pod JSON for the predicates; ``held``: unbound and Pending, but another
    controller's scheduling gate holds it (module docstring)."""

    key: str
    node: str | None
    cores: float
    mem_mib: float
    workload: bool
    pending: bool
    pending_since_s: float | None
    doc: dict[str, Any]
    held: bool = False


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
    unbound = node is None and status.get("phase") in (None, "Pending")
    held = unbound and held_by_another_gate(gate_names(spec))
    pending = unbound and not held
    since = None
    if pending:
        for condition in status.get("conditions") or []:
            if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
                since = epoch_s(condition.get("lastTransitionTime"))
        since = since if since is not None else epoch_s(meta.get("creationTimestamp"))
    request = pod_request(parse_pod(pod, str(ref)), str(ref))
    return PodInfo(
        str(ref), node, request.cores, request.memory_mib, ref.is_workload, pending, since, pod,
        held,
    )  # fmt: skip


def admits(node: dict[str, Any], pod: dict[str, Any]) -> bool:
    """True when ``pod``'s node selector and tolerations admit ``node`` once awake."""
    spec = pod.get("spec") or {}
    return admits_once_awake(node, spec.get("nodeSelector") or {}, pod_tolerations(pod))
