"""Kubernetes wire objects for the simulated cluster: what kube-scheduler would send an extender.

``v1.Node`` (name, labels, taints, ``status.allocatable``; a sleeping node's power-state taint
and annotation) and ``v1.Pod`` (namespace = tenant,
``spec.schedulerName``, one container with cpu and memory requests, tolerations, nodeSelector,
and the ``eams.io/work-core-s`` annotation carrying the pod's work in reference core-seconds),
plus the agents' telemetry samples (:class:`eams.telemetry.TelemetrySample`). Field names as
upstream (lowerCamelCase inside the objects; reference ``extender-protocol.md`` §1.1).
"""

from __future__ import annotations

import math
from typing import Any

from eams.kube.names import (
    ASLEEP_TAINT,
    NO_SCHEDULE,
    POWER_STATE_ANNOTATION,
    WORK_ANNOTATION,
)
from eams.scheduler.policies.base import Cluster, NodeState, Workload, WorkloadPod
from eams.telemetry import PowerSource, TelemetrySample, headroom_from_power

EPOCH_S = 1_767_225_600.0
"""Simulated t = 0 as epoch seconds (2026-01-01T00:00:00Z): a fixed origin keeps replays equal."""

SCHEDULER_NAME = "eams-scheduler"


def node_object(cluster: Cluster, n: int, power_state: str | None = None) -> dict[str, Any]:
    """The ``v1.Node`` of node ``n``; with ``power_state`` (``suspending``, ``asleep``,
    ``waking``, ``asleep-suspect``) as the power manager marks a node it put to sleep: the taint
    ``eams.io/asleep:NoSchedule`` and the annotation ``eams.io/power-state`` (both gone once
    it is awake)."""
    meta = cluster.meta[n]
    allocatable = {
        "cpu": f"{math.floor(cluster.cores[n] * 1000)}m",
        "memory": f"{math.floor(cluster.mem_mib[n])}Mi",
        "pods": str(int(cluster.max_pods[n])),
    }
    taints = [{"key": t.key, "value": t.value, "effect": t.effect} for t in meta.taints]
    metadata: dict[str, Any] = {"name": cluster.names[n], "labels": dict(meta.labels)}
    if power_state is not None:
        taints.append({"key": ASLEEP_TAINT, "effect": NO_SCHEDULE})
        metadata["annotations"] = {POWER_STATE_ANNOTATION: power_state}
    return {
        "metadata": metadata,
        "spec": {"taints": taints},
        "status": {"allocatable": allocatable, "capacity": dict(allocatable)},
    }


def node_list(cluster: Cluster) -> dict[str, Any]:
    """A ``v1.NodeList`` of every node."""
    return {"metadata": {}, "items": [node_object(cluster, n) for n in range(cluster.size)]}


def namespace(tenant: int) -> str:
    """The namespace of tenant ``tenant``'s pods."""
    return f"tenant-{tenant}"


def pod_key(pod: WorkloadPod) -> str:
    """``namespace/name`` of ``pod`` (how the extender and its wake requests name a pod)."""
    return f"{namespace(pod.tenant)}/{pod.name}"


def pod_object(workload: Workload, pod: WorkloadPod, node: str | None = None) -> dict[str, Any]:
    """The ``v1.Pod`` of a pending pod (``spec.nodeName`` set once bound)."""
    constraints = workload.profiles[int(workload.profile[pod.index])]
    requests = {"cpu": f"{math.ceil(pod.cpu * 1000)}m"}
    if pod.mem_mib > 0:
        requests["memory"] = f"{math.ceil(pod.mem_mib)}Mi"
    spec: dict[str, Any] = {
        "schedulerName": SCHEDULER_NAME,
        "priority": 0,
        "containers": [{"name": "main", "resources": {"requests": requests}}],
        "tolerations": [
            {"key": t.key, "operator": t.operator, "value": t.value, "effect": t.effect}
            for t in constraints.tolerations
        ],
        "nodeSelector": dict(constraints.node_selector),
    }
    if node is not None:
        spec["nodeName"] = node
    return {
        "metadata": {
            "name": pod.name,
            "namespace": namespace(pod.tenant),
            "uid": f"uid-{pod.index}",
            "annotations": {WORK_ANNOTATION: repr(pod.cpu * pod.duration_s)},
        },
        "spec": spec,
        "status": {"phase": "Running" if node else "Pending"},
    }


def telemetry(
    state: NodeState, nodes: list[int], measured_at_s: float | None = None
) -> list[dict[str, Any]]:
    """What each node's agent would report now, as :meth:`TelemetrySample.to_json` dicts.

    Power as the emulator draws it (:attr:`NodeState.power_w`), ``modelled``; utilisation the
    allocated share of the cores, held in [0, 1] against float residue of adding and removing
    requests; headroom :func:`~eams.telemetry.headroom_from_power`; measured at
    ``measured_at_s`` (epoch s; default the simulated instant, :data:`EPOCH_S` +
    ``state.now_s``).
    """
    c = state.cluster
    at_s = EPOCH_S + state.now_s if measured_at_s is None else measured_at_s
    at_ns = round(at_s * 1e9)
    out = []
    for n in nodes:
        u = min(1.0, max(0.0, float(state.alloc_cpu[n] / c.cores[n])))
        power = float(state.power_w[n])
        cap = float(c.power_cap_w[n])
        sample = TelemetrySample(
            node=c.names[n],
            measured_at_ns=at_ns,
            power_cap_w=cap,
            utilisation=u,
            power_w=power,
            source=PowerSource.MODELLED,
            headroom=headroom_from_power(power, cap),
        )
        out.append(sample.to_json())
    return out
