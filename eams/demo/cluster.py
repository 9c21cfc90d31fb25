"""The demo's emulated cluster: six Node objects and their pods, as an API server would hold them.

No kube-apiserver runs here, so the demo keeps the objects kube-scheduler and the power manager
read and write: per node ``status.allocatable`` (cpu, memory, pods), ``spec.taints``,
``spec.unschedulable`` and ``metadata.annotations``, in the published v1 Node shape (the shape
the extender's ``POST /nodes`` and kube-scheduler's TaintToleration filter read); per bound pod
its requests and when it ends. Binding a pod loads its virtual node (allocated cores over
cores, as the replay did before); the pod ends after its reference duration over the node's
speed, compressed by the demo's speedup.

The in-tree filters of kube-scheduler that matter here are applied as upstream does:
NodeUnschedulable (a cordoned node takes no pod), TaintToleration (the power manager's
``eams.io/asleep:NoSchedule`` and the extender's ``eams.io/power-headroom-low``, through
:func:`eams.scheduler.bench.kube_cycle.taint_toleration`), and NodeResourcesFit (cpu, memory and
pod count against what is bound). Thread-safe: the scheduling loop, the power manager's worker
threads and the safety check of :class:`~eams.actuators.actions.PowerActions` read it
at once.
"""

from __future__ import annotations

import copy
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np

from eams.demo.fleet import MEMORY_MIB, DemoNode
from eams.demo.testbed import Testbed
from eams.kube.names import HOSTNAME_LABEL, WORK_ANNOTATION
from eams.kube.nodeview import NodeView
from eams.kube.pods import PodRef
from eams.scheduler.bench.kube_cycle import taint_toleration

MAX_PODS = 110
"""``status.allocatable.pods`` of every node (the kubelet's default ``maxPods``)."""
NAMESPACE = "demo"


@dataclass
class BoundPod:
    """A pod bound to a node: its requests (cores, MiB), bound and ending at (clock s)."""

    name: str
    cores: float
    mem_mib: float
    bound_at_s: float
    ends_at_s: float


@dataclass
class ClusterNode:
    """One node object's scheduling-relevant fields and the pods bound to it."""

    spec: DemoNode
    outlet: int
    taints: list[dict[str, str]] = field(default_factory=list)
    unschedulable: bool = False
    annotations: dict[str, str] = field(default_factory=dict)
    pods: dict[str, BoundPod] = field(default_factory=dict)
    empty_since_s: float | None = None

    @property
    def used_cores(self) -> float:
        """Cores requested by its pods."""
        return sum(p.cores for p in self.pods.values())

    @property
    def used_mem_mib(self) -> float:
        """MiB requested by its pods."""
        return sum(p.mem_mib for p in self.pods.values())

    def object(self) -> dict[str, Any]:
        """The v1 Node object (the fields kube-scheduler and the extender read)."""
        name = self.spec.name
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "uid": f"uid-{name}",
                "labels": {HOSTNAME_LABEL: name},
                "annotations": dict(self.annotations),
            },
            "spec": {"unschedulable": self.unschedulable, "taints": list(self.taints)},
            "status": {
                "allocatable": {
                    "cpu": str(self.spec.cores),
                    "memory": f"{int(MEMORY_MIB)}Mi",
                    "pods": str(MAX_PODS),
                }
            },
        }


class EmulatedCluster:
    """The nodes of ``testbed`` as Kubernetes objects, and the pods bound to them.

    Parameters
    ----------
    testbed : Testbed
        Binding and ending pods set its virtual nodes' loads.
    speedup : float
        Trace seconds per real second: a pod of ``d`` reference seconds on a node of speed
        ``s`` runs ``d / s / speedup`` real seconds.
    clock : callable
        Seconds (epoch: the power manager's clock, and the pods' bind and end times); the
        pods' run times are real seconds.
    """

    def __init__(self, testbed: Testbed, speedup: float, clock: Any) -> None:
        self.testbed = testbed
        self.speedup = speedup
        self.clock = clock
        self._lock = threading.RLock()
        now = clock()
        self.nodes = {
            n.spec.name: ClusterNode(n.spec, i + 1, empty_since_s=now)
            for i, n in enumerate(testbed.nodes)
        }
        self._taint_filter = taint_toleration(self.objects)

    def start(self) -> None:
        """The run starts now: every node has been empty since now (nothing ran on it in
        this run yet, so no idle time before it counts towards a sleep)."""
        with self._lock:
            now = self.clock()
            for node in self.nodes.values():
                node.empty_since_s = None if node.pods else now

    # ---- what kube-scheduler reads -------------------------------------------------------

    def names(self) -> list[str]:
        """Every node's name, in outlet order (the scheduler's node list)."""
        return list(self.nodes)

    def objects(self) -> dict[str, dict[str, Any]]:
        """Node name → v1 Node object, now."""
        with self._lock:
            return {name: node.object() for name, node in self.nodes.items()}

    def feasible(self, pod: dict[str, Any], names: list[str]) -> list[str]:
        """The in-tree Filter plugins: NodeUnschedulable, TaintToleration, NodeResourcesFit.

        Parameters
        ----------
        pod : dict
            The v1 Pod (requests read from its first container, as the demo writes them).
        names : list of str
        """
        cores, mem_mib = pod_requests(pod)
        with self._lock:
            kept = [n for n in self._taint_filter(pod, names) if not self.nodes[n].unschedulable]
            return [
                n
                for n in kept
                if self.nodes[n].used_cores + cores <= self.nodes[n].spec.cores + 1e-9
                and self.nodes[n].used_mem_mib + mem_mib <= MEMORY_MIB + 1e-9
                and len(self.nodes[n].pods) < MAX_PODS
            ]

    def allocation(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per node (outlet order): requested cores, requested MiB, pod count."""
        with self._lock:
            nodes = list(self.nodes.values())
            return (
                np.array([n.used_cores for n in nodes]),
                np.array([n.used_mem_mib for n in nodes]),
                np.array([len(n.pods) for n in nodes], dtype=np.int64),
            )

    # ---- binding and ending ----------------------------------------------------------------

    def bind(self, pod: dict[str, Any], node: str, duration_ref_s: float) -> BoundPod:
        """Bind ``pod`` to ``node`` (kube-scheduler's assume + bind) and load the node.

        Parameters
        ----------
        duration_ref_s : float
            The pod's run time at speed 1, trace seconds.
        """
        cores, mem_mib = pod_requests(pod)
        name = pod["metadata"]["name"]
        with self._lock:
            target = self.nodes[node]
            now = self.clock()
            runtime_s = duration_ref_s / target.spec.speed / self.speedup
            bound = BoundPod(name, cores, mem_mib, now, now + runtime_s)
            target.pods[name] = bound
            target.empty_since_s = None
            self._load(target)
            return bound

    def end(self, node: str, name: str) -> None:
        """Pod ``name`` on ``node`` finished: free its requests, unload the node."""
        with self._lock:
            target = self.nodes[node]
            target.pods.pop(name, None)
            if not target.pods:
                target.empty_since_s = self.clock()
            self._load(target)

    def _load(self, node: ClusterNode) -> None:
        self.testbed.nodes[node.outlet - 1].set_load(node.used_cores / node.spec.cores)

    # ---- what the power manager changes ------------------------------------------------------

    def taint(self, node: str, taint: dict[str, str], cordon: bool) -> None:
        """Add ``taint`` (once) to ``node``; cordon it too when ``cordon``."""
        with self._lock:
            target = self.nodes[node]
            if taint not in target.taints:
                target.taints.append(dict(taint))
            target.unschedulable = target.unschedulable or cordon

    def untaint(self, node: str, key: str, uncordon: bool) -> None:
        """Remove every taint with ``key`` from ``node``; uncordon it too when ``uncordon``."""
        with self._lock:
            target = self.nodes[node]
            target.taints = [t for t in target.taints if t.get("key") != key]
            if uncordon:
                target.unschedulable = False

    def annotate(self, node: str, annotations: dict[str, str]) -> None:
        """Merge ``annotations`` into the node's."""
        with self._lock:
            self.nodes[node].annotations.update(annotations)

    def unannotate(self, node: str, key: str) -> bool:
        """Remove the annotation ``key`` from ``node``; whether it was there."""
        with self._lock:
            return self.nodes[node].annotations.pop(key, None) is not None

    def annotations(self) -> dict[str, dict[str, str]]:
        """Node name → a copy of its annotations, now."""
        with self._lock:
            return {name: dict(node.annotations) for name, node in self.nodes.items()}

    def view(self, name: str) -> NodeView:
        """The node as the power actions' safety rules read it from an API server."""
        with self._lock:
            node = self.nodes[name]
            return NodeView(
                name=name,
                unschedulable=node.unschedulable,
                taints=tuple(f"{t['key']}={t.get('value', '')}:{t['effect']}" for t in node.taints),
                ready=None,
                pods=tuple(PodRef(NAMESPACE, p, "Job", "Running", False) for p in node.pods),
            )


def pod_requests(pod: dict[str, Any]) -> tuple[float, float]:
    """(cores, MiB) a demo pod requests: its first container's ``resources.requests``, written
    by :func:`pod_object` as plain cores and ``Mi``."""
    requests = pod["spec"]["containers"][0]["resources"]["requests"]
    return float(requests["cpu"]), float(requests["memory"].removesuffix("Mi"))


def pod_object(
    name: str, cores: float, mem_mib: float, work_core_s: float, scheduler: str
) -> dict[str, Any]:
    """A pending v1 Pod of the demo's workload.

    Parameters
    ----------
    name : str
    cores, mem_mib : float
        Its requests.
    work_core_s : float
        Reference core-seconds (the extender's ``eams.io/work-core-s`` annotation).
    scheduler : str
        ``spec.schedulerName`` (the profile that places it).
    """
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "uid": f"uid-{name}",
            "annotations": {WORK_ANNOTATION: f"{work_core_s:.6g}"},
        },
        "spec": {
            "schedulerName": scheduler,
            "containers": [
                {
                    "name": "task",
                    "image": "busybox",
                    "resources": {"requests": {"cpu": f"{cores:g}", "memory": f"{mem_mib:g}Mi"}},
                }
            ],
        },
        "status": {"phase": "Pending"},
    }


def _rfc3339(at_s: float) -> str:
    return datetime.fromtimestamp(at_s, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def bound_pod(pod: dict[str, Any], node: str, bound_at_s: float) -> dict[str, Any]:
    """``pod`` as the API server shows it once bound to ``node`` at ``bound_at_s`` (epoch s):
    ``spec.nodeName`` set, ``Running``, the ``PodScheduled`` condition true since then."""
    out = copy.deepcopy(pod)
    out["spec"]["nodeName"] = node
    at = _rfc3339(bound_at_s)
    out["status"] = {
        "phase": "Running",
        "startTime": at,
        "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": at}],
    }
    return out


def ended_pod(bound: dict[str, Any], ended_at_s: float) -> dict[str, Any]:
    """A :func:`bound_pod` once its container ended at ``ended_at_s`` (epoch s):
    ``Succeeded``, with ``state.terminated.finishedAt``."""
    out = copy.deepcopy(bound)
    out["status"]["phase"] = "Succeeded"
    out["status"]["containerStatuses"] = [
        {"name": "task", "state": {"terminated": {"exitCode": 0,
                                                  "finishedAt": _rfc3339(ended_at_s)}}}
    ]  # fmt: skip
    return out
