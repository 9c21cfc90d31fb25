"""Every Kubernetes name EAMS reads or writes: Kubernetes' own well-known ones and ours
(``eams.io/*``), so a label, taint or annotation is spelled once.

Kubernetes' names are from k8s.io/api ``core/v1`` (``well_known_taints.go``,
``annotation_key_constants.go``, ``types.go``) and apimachinery ``types/patch.go``.
"""

from __future__ import annotations

from typing import Final

# ---- Kubernetes ------------------------------------------------------------------------------

NO_SCHEDULE: Final = "NoSchedule"
NO_EXECUTE: Final = "NoExecute"
FILTERING_EFFECTS: Final = (NO_SCHEDULE, NO_EXECUTE)
"""Taint effects that keep new pods off a node: kube-scheduler's TaintToleration filter reads
these two only (the third, ``PreferNoSchedule``, only lowers a score)."""

# Taints the node-lifecycle controller sets and removes itself (kube-controller-manager
# ``nodelifecycle`` ``doNoScheduleTaintingPass`` / ``doNoExecuteTaintingPass``), from the node's
# conditions (these two, and memory-, disk-, pid-pressure, network-unavailable) and from
# ``spec.unschedulable``.
UNSCHEDULABLE_TAINT: Final = "node.kubernetes.io/unschedulable"
"""``NoSchedule``, mirrored from ``spec.unschedulable`` (the cordon)."""
NOT_READY_TAINT: Final = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT: Final = "node.kubernetes.io/unreachable"

NODE_LEASE_NAMESPACE: Final = "kube-node-lease"
"""Where each kubelet keeps its node's heartbeat Lease (``coordination.k8s.io/v1``, named after
the node), renewed every ~10 s (Kubernetes docs: Nodes, heartbeats)."""

MIRROR_ANNOTATION: Final = "kubernetes.io/config.mirror"
"""A static pod's mirror on the API server carries this annotation; the kubelet, not the API,
runs it (``kubectl drain`` skips it)."""
FINISHED_PHASES: Final = ("Succeeded", "Failed")
"""Pod phases that hold no running container: the pod no longer uses its node."""
NOT_FINISHED_SELECTOR: Final = ",".join(f"status.phase!={phase}" for phase in FINISHED_PHASES)
"""Field selector of the pods not in :data:`FINISHED_PHASES`."""
DAEMONSET_KIND: Final = "DaemonSet"
HOSTNAME_LABEL: Final = "kubernetes.io/hostname"

MERGE_PATCH: Final = "application/merge-patch+json"
"""RFC 7386 JSON merge patch (apimachinery ``MergePatchType``, ``kubectl patch --type merge``):
a list is replaced whole, ``null`` removes a key."""
STRATEGIC_MERGE_PATCH: Final = "application/strategic-merge-patch+json"
"""Kubernetes' strategic merge patch (apimachinery ``StrategicMergePatchType``): a list with a
patch merge key (``spec.schedulingGates`` by ``name``) is merged item by item, and an item
``{"$patch": "delete", KEY: VALUE}`` removes just that one."""
CONFLICT: Final = 409
"""HTTP status of a write whose ``metadata.resourceVersion`` is no longer the object's."""
NOT_FOUND: Final = 404
"""HTTP status of a read or write of an object that does not exist (any more)."""
UNPROCESSABLE: Final = 422
"""HTTP status of a write kube-apiserver refuses as invalid (an immutable field changed, a
``metadata.uid`` precondition that names another object)."""

# ---- EAMS (eams.io/*) ------------------------------------------------------------------------

PREFIX: Final = "eams.io/"

WORK_ANNOTATION: Final = PREFIX + "work-core-s"
"""Pod annotation: the pod's work in reference core-seconds (the auction's runtime estimate)."""

MARKET_GATE: Final = PREFIX + "market"
"""Pod scheduling gate (``spec.schedulingGates[].name``): the pod waits for the market to clear
it; the extender removes the gate and pins the pod to its cleared node (``eams.kube.gates``)."""
MARKET_LEASE: Final = "kube-system/eams-market"
"""``NAMESPACE/NAME`` of the Lease the extender renews while it can release gated pods, and whose
lapse lets ``eams extender fallback`` release them unpinned (``eams.kube.lease``, AR-5)."""

HEADROOM_TAINT: Final = PREFIX + "power-headroom-low"
"""``NoSchedule`` taint the extender puts on a node under the power-headroom floor."""

ASLEEP_TAINT: Final = PREFIX + "asleep"
"""``NoSchedule`` taint the power manager puts on a node before it sleeps."""
POWER_STATE_ANNOTATION: Final = PREFIX + "power-state"
"""Node annotation: ``awake``, ``suspending``, ``asleep``, ``waking``, ``asleep-suspect``."""
WAKE_REQUEST_ANNOTATION: Final = PREFIX + "wake-request"
"""Node annotation the extender sets on an asleep node the market cleared pods onto: JSON
``{"pods": ["<namespace>/<name>", ...], "at_s": <epoch s of the first request>}``. The power
manager wakes that node for those pods (reason ``market-bid``) and removes the annotation when
it releases the node (awake) or finds it suspect."""
POWER_REASON_ANNOTATION: Final = PREFIX + "power-reason"
"""Node annotation: the power decision's reason and its figures."""
WAS_CORDONED_ANNOTATION: Final = PREFIX + "was-cordoned"
"""Node annotation: ``"true"`` when the node was cordoned before the power manager marked it."""

# The decision record's annotations on a decided pod (eams.scheduler.record.annotations).
CLEARED_NODE: Final = PREFIX + "cleared-node"
CLEARING_PRICE: Final = PREFIX + "clearing-price"
BID: Final = PREFIX + "bid"
MODE: Final = PREFIX + "mode"
CLEARING_ID: Final = PREFIX + "clearing-id"
METHOD: Final = PREFIX + "method"
CERTIFICATE: Final = PREFIX + "certificate"
DECIDED_AT: Final = PREFIX + "decided-at"
