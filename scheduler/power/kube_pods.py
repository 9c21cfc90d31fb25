"""Pods and nodes as the power policy counts them, read from the published ``v1.Pod`` and
``v1.Node`` JSON.

* A pod's **requests** are kube-scheduler's: the larger of the sum over its containers and the
  largest init container, plus ``spec.overhead`` (kubernetes.io/docs: resource management of
  pods, init containers, pod overhead). Quantities parse with the kubernetes client's
  ``parse_quantity`` (``250m``, ``16318240Ki``).
* A pod **keeps its node awake** when it is bound there, not finished, not a DaemonSet's and not
  a static pod's mirror (:attr:`eams.calibrate.powerstates.kube.PodRef.is_workload`: one rule
  for the safety check and for the manager).
* A pod is **pending** when it has no ``spec.nodeName`` and its phase is Pending; it pends since
  its ``PodScheduled=False`` condition's ``lastTransitionTime``, else its creation.
* The **static predicates** that say which nodes a pending pod could use once awake:
  ``spec.nodeSelector`` against the node's labels, and the node's ``NoSchedule`` /
  ``NoExecute`` taints against the pod's tolerations (taint-and-toleration matching), leaving
  out the taints a sleep itself puts on a node: ``eams.io/asleep``, the cordon's
  ``node.kubernetes.io/unschedulable`` and the node-lifecycle controller's ``unreachable`` /
  ``not-ready``, which go when the node is back. A cordon that is not the manager's (a node
  cordoned by a person: ``spec.unschedulable`` without the ``eams.io/asleep`` taint, or with
  the ``eams.io/was-cordoned`` mark of a cordon that was there before the sleep) stays when
  the node is back, so it admits only a pod that tolerates
  ``node.kubernetes.io/unschedulable:NoSchedule`` (kube-scheduler's NodeUnschedulable filter).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kubernetes.utils.quantity import parse_quantity

from eams.calibrate.powerstates.kube import MIRROR_ANNOTATION, SCHEDULING_EFFECTS, PodRef
from eams.scheduler.power.kube_marker import WAS_CORDONED
from eams.scheduler.power.ports import ASLEEP_TAINT_KEY

SLEEP_TAINTS = frozenset(
    {
        ASLEEP_TAINT_KEY,
        "node.kubernetes.io/unschedulable",
        "node.kubernetes.io/unreachable",
        "node.kubernetes.io/not-ready",
    }
)
"""Taints a sleeping node carries because it sleeps (ignored when asking where a pod fits)."""
MIB = 2**20
CORDON_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
"""The taint a cordon stands for (kube-scheduler's NodeUnschedulable plugin)."""


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


def quantity(value: Any) -> float:
    """A Kubernetes quantity (``250m``, ``16318240Ki``) as a float; 0 when absent."""
    return float(parse_quantity(value)) if value is not None else 0.0


def requests(pod: dict[str, Any]) -> tuple[float, float]:
    """(cores, MiB) the pod requests (module docstring)."""
    spec = pod.get("spec") or {}

    def of(container: dict[str, Any]) -> tuple[float, float]:
        req = (container.get("resources") or {}).get("requests") or {}
        return quantity(req.get("cpu")), quantity(req.get("memory")) / MIB

    main = [of(c) for c in spec.get("containers") or []]
    init = [of(c) for c in spec.get("initContainers") or []]
    overhead = spec.get("overhead") or {}
    cores = max(sum(c for c, _ in main), max((c for c, _ in init), default=0.0))
    mem = max(sum(m for _, m in main), max((m for _, m in init), default=0.0))
    return (
        cores + quantity(overhead.get("cpu")),
        mem + quantity(overhead.get("memory")) / MIB,
    )


def epoch_s(stamp: str | None) -> float | None:
    """An RFC 3339 API timestamp (``2025-01-02T03:04:05Z``) as epoch seconds."""
    if not stamp:
        return None
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def pod_info(pod: dict[str, Any]) -> PodInfo:
    """Read one ``v1.Pod`` (module docstring)."""
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    owners = meta.get("ownerReferences") or []
    controller = next((o for o in owners if o.get("controller")), owners[0] if owners else {})
    ref = PodRef(
        namespace=meta.get("namespace") or "default",
        name=meta.get("name") or "?",
        owner_kind=controller.get("kind"),
        phase=status.get("phase"),
        mirror=MIRROR_ANNOTATION in (meta.get("annotations") or {}),
    )
    node = spec.get("nodeName") or None
    pending = node is None and status.get("phase") in (None, "Pending")
    since = None
    if pending:
        for condition in status.get("conditions") or []:
            if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
                since = epoch_s(condition.get("lastTransitionTime"))
        since = since if since is not None else epoch_s(meta.get("creationTimestamp"))
    cores, mem_mib = requests(pod)
    return PodInfo(
        str(ref), node, cores, mem_mib, ref.is_workload, pending, since, pod
    )  # fmt: skip


def _tolerates(tolerations: list[dict[str, Any]], taint: dict[str, Any]) -> bool:
    for tol in tolerations:
        if tol.get("effect") and tol.get("effect") != taint.get("effect"):
            continue
        if tol.get("operator") == "Exists":
            if not tol.get("key") or tol.get("key") == taint.get("key"):
                return True
        elif tol.get("key") == taint.get("key") and (tol.get("value") or "") == (
            taint.get("value") or ""
        ):
            return True
    return False


def cordoned_by_a_person(node: dict[str, Any]) -> bool:
    """True when ``node`` is cordoned and the cordon stays once the manager releases it
    (module docstring)."""
    meta, node_spec = node.get("metadata") or {}, node.get("spec") or {}
    if not node_spec.get("unschedulable"):
        return False
    ours = any(t.get("key") == ASLEEP_TAINT_KEY for t in node_spec.get("taints") or [])
    return not ours or (meta.get("annotations") or {}).get(WAS_CORDONED) == "true"


def admits(node: dict[str, Any], pod: dict[str, Any]) -> bool:
    """True when ``pod``'s node selector and tolerations admit ``node`` once awake."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    spec = pod.get("spec") or {}
    selector = spec.get("nodeSelector") or {}
    if any(labels.get(k) != v for k, v in selector.items()):
        return False
    tolerations = spec.get("tolerations") or []
    if cordoned_by_a_person(node) and not _tolerates(tolerations, CORDON_TAINT):
        return False
    for taint in (node.get("spec") or {}).get("taints") or []:
        if taint.get("key") in SLEEP_TAINTS or taint.get("effect") not in SCHEDULING_EFFECTS:
            continue
        if not _tolerates(tolerations, taint):
            return False
    return True
