"""Which nodes a pending pod could use, now or once they are awake: the static predicates the
power manager wakes by, the extender's market wakes price by and its gate release pins by (one
rule for all three).

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
from typing import Any

from eams.kube.names import (
    ASLEEP_TAINT,
    NOT_READY_TAINT,
    UNREACHABLE_TAINT,
    UNSCHEDULABLE_TAINT,
    WAS_CORDONED_ANNOTATION,
)
from eams.kube.taints import Taint, Toleration, has_taint, node_taints, untolerated

SLEEP_TAINTS = frozenset({ASLEEP_TAINT, UNSCHEDULABLE_TAINT, UNREACHABLE_TAINT, NOT_READY_TAINT})
"""Taints a sleeping node carries because it sleeps (ignored when asking where a pod fits): ours,
the cordon's and the node-lifecycle controller's for a node that stopped reporting."""
CORDON = Taint(UNSCHEDULABLE_TAINT)
"""The taint a cordon stands for (kube-scheduler's NodeUnschedulable filter)."""


def cordoned_by_a_person(node: dict[str, Any]) -> bool:
    """True when ``node`` is cordoned and the cordon stays once the manager releases it
    (module docstring)."""
    if not (node.get("spec") or {}).get("unschedulable"):
        return False
    annotations = (node.get("metadata") or {}).get("annotations") or {}
    return not has_taint(node, ASLEEP_TAINT) or annotations.get(WAS_CORDONED_ANNOTATION) == "true"


def admits_once_awake(
    node: dict[str, Any], selector: Mapping[str, str], tolerations: Iterable[Toleration]
) -> bool:
    """True when a pod with ``spec.nodeSelector`` ``selector`` and ``tolerations`` may use
    ``node`` (a ``v1.Node`` as JSON) once it is awake (module docstring)."""
    tolerations = tuple(tolerations)
    if not _selected(node, selector):
        return False
    if cordoned_by_a_person(node) and untolerated(tolerations, [CORDON]) is not None:
        return False
    taints = (Taint.from_json(t) for t in node_taints(node))
    return untolerated(tolerations, taints, ignore=SLEEP_TAINTS) is None


def admits_now(
    node: dict[str, Any], selector: Mapping[str, str], tolerations: Iterable[Toleration]
) -> bool:
    """True when kube-scheduler's NodeUnschedulable, NodeAffinity (``spec.nodeSelector``) and
    TaintToleration filters pass a pod with ``selector`` and ``tolerations`` on ``node`` as it
    is now: every ``NoSchedule``/``NoExecute`` taint counts, a sleep's and the node-lifecycle
    controller's too, and any cordon."""
    tolerations = tuple(tolerations)
    if not _selected(node, selector):
        return False
    cordoned = bool((node.get("spec") or {}).get("unschedulable"))
    if cordoned and untolerated(tolerations, [CORDON]) is not None:
        return False
    taints = (Taint.from_json(t) for t in node_taints(node))
    return untolerated(tolerations, taints) is None


def _selected(node: dict[str, Any], selector: Mapping[str, str]) -> bool:
    labels = (node.get("metadata") or {}).get("labels") or {}
    return all(labels.get(k) == v for k, v in selector.items())
