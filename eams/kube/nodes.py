"""The node as EAMS reads it: allocatable resources and the Ready condition, from ``v1.Node``
JSON.

Capacity follows kube-scheduler's NodeResourcesFit: ``status.allocatable``, or
``status.capacity`` when allocatable is absent (kubernetes/kubernetes ``SetDefaults_NodeStatus``),
each amount parsed exactly (:mod:`eams.kube.quantity`) and converted once: CPU to millicores,
memory and pods to integers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from eams.kube.errors import BadObject
from eams.kube.quantity import integer_value, milli_value, resource_amount
from eams.kube.timestamps import epoch_s


@dataclass(frozen=True, slots=True)
class NodeCapacity:
    """Allocatable resources of one node; ``None`` where the node does not say.

    Attributes
    ----------
    cpu_milli : int or None
        Allocatable CPU, millicores.
    memory_bytes : int or None
        Allocatable memory, bytes.
    pods : int or None
        Allocatable pod count.
    """

    cpu_milli: int | None
    memory_bytes: int | None
    pods: int | None


def _resources(item: dict[str, Any], field: str) -> tuple[dict[str, Any], str]:
    status = item.get("status")
    if status is None:
        return {}, f"{field}.status"
    if not isinstance(status, dict):
        raise BadObject(f"{field}.status", "must be an object")
    for key in ("allocatable", "capacity"):
        resources = status.get(key)
        if resources is not None:
            if not isinstance(resources, dict):
                raise BadObject(f"{field}.status.{key}", "must be an object")
            return resources, f"{field}.status.{key}"
    return {}, f"{field}.status"


def node_capacity(item: dict[str, Any], field: str = "node") -> NodeCapacity:
    """A node object's allocatable cpu, memory and pods.

    Parameters
    ----------
    item : dict
        The ``v1.Node`` as JSON.
    field : str
        Its JSON path, for errors.

    Raises
    ------
    BadObject
        ``status`` (or its ``allocatable``/``capacity``) is not an object, or a quantity breaks
        the grammar or is negative (:class:`~eams.kube.errors.BadQuantity`); names the path.
    """
    resources, where = _resources(item, field)

    def get(name: str, convert: Any) -> int | None:
        value = resources.get(name)
        return None if value is None else convert(resource_amount(value, f"{where}.{name}"))

    return NodeCapacity(
        get("cpu", milli_value), get("memory", integer_value), get("pods", integer_value)
    )


def kubelet_heartbeat_s(node: dict[str, Any], lease_renew_time: str | None) -> float | None:
    """When the node's kubelet last said it is alive (epoch s, the kubelet's clock): the later
    of its Lease's ``spec.renewTime`` (``lease_renew_time``; the Lease ``kube-node-lease/NAME``,
    renewed every ~10 s) and its Ready condition's ``lastHeartbeatTime``; ``None`` when neither
    says.

    A ``Ready=True`` alone does not say the kubelet is alive now: the node-lifecycle controller
    marks a silent node ``Unknown`` only after its grace period (``--node-monitor-grace-period``,
    50 s by default in 1.36), so a node read within that of its last beat still says Ready.
    """
    stamps = [lease_renew_time]
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            stamps.append(condition.get("lastHeartbeatTime"))
    times = [t for t in map(epoch_s, stamps) if t is not None]
    return max(times) if times else None


def ready_condition(node: dict[str, Any]) -> bool | None:
    """The node's ``Ready`` condition: ``True``/``False`` as its status says, ``None`` when the
    node reports none (the last ``Ready`` entry counts)."""
    ready = None
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            ready = condition.get("status") == "True"
    return ready
