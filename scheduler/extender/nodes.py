"""What the extender knows about each node: allocatable resources and the pods placed on it.

In ``nodeCacheCapable: true`` mode kube-scheduler sends node *names* only, so the extender keeps
its own cache (reference §2.3, CFG ``NodeCacheCapable``). It learns nodes from every full
``Nodes`` payload it receives, from the API-server watch (``watch.py``) and from ``POST /nodes``
(the harness's twin of the watch); it learns placed pods from the watch and ``POST /pending``.
Capacity follows NodeResourcesFit: the node's allocatable resources
(:func:`eams.kube.nodes.node_capacity`) minus the effective requests of pods on the node
(:func:`eams.kube.requests.pod_request`; kubernetes/kubernetes
``pkg/scheduler/framework/plugins/noderesources/fit.go``).

A node the power manager put to sleep carries its ``eams.io/asleep`` taint and its
``eams.io/power-state`` annotation (``suspending``, ``asleep``, ``waking``, ``asleep-suspect``;
the taint alone reads ``asleep``): :attr:`NodeCache.sleeping` keeps that state per node, which
the market's wake pricing reads (``wakes.py``), and :meth:`NodeCache.awake_names` leaves out
of a batch window's clearing (kube-scheduler never offers them).
"""

from __future__ import annotations

from collections.abc import Iterable, KeysView
from typing import Any

from eams.kube.names import ASLEEP_TAINT, HEADROOM_TAINT, POWER_STATE_ANNOTATION
from eams.kube.nodes import NodeCapacity, node_capacity
from eams.kube.requests import PodRequest
from eams.kube.taints import has_taint
from eams.scheduler.extender.errors import BadRequest, bad_request
from eams.scheduler.extender.table import NodeTable


def node_name(item: Any, field: str) -> str:
    """``metadata.name`` of a node object.

    Raises
    ------
    BadRequest
        The item is not an object or has no string name; names ``field``.
    """
    if not isinstance(item, dict):
        raise BadRequest(f"{field}: node must be an object")
    meta = item.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    if not isinstance(name, str) or not name:
        raise BadRequest(f"{field}.metadata.name: must be a non-empty string, got {name!r}")
    return name


class NodeCache:
    """Node capacities and bound pods, keyed by name; numbers are mirrored into ``table``.

    Parameters
    ----------
    table : NodeTable
        Receives every capacity and usage change (``market.py`` reads it vectorised).
    """

    def __init__(self, table: NodeTable) -> None:
        self.table = table
        self._capacity: dict[str, NodeCapacity] = {}
        self._version: dict[str, Any] = {}
        self._pods: dict[str, tuple[str, PodRequest]] = {}
        self._objects: dict[str, dict[str, Any]] = {}
        self._names: list[str] | None = None  # list(self._capacity), while it holds
        self.version = 0  # changes whenever a node is added or forgotten
        self.rules_version = 0  # changes whenever a node's labels, taints or cordon change too
        self._rules: dict[str, tuple[Any, Any, Any]] = {}
        self.tainted: set[str] = set()  # nodes carrying names.HEADROOM_TAINT
        self.sleeping: dict[str, str] = {}  # nodes carrying names.ASLEEP_TAINT → power state
        self._awake: list[str] | None = None  # names() without the sleeping ones, while it holds

    def learn(self, items: Iterable[Any], field: str) -> list[str]:
        """Add or refresh node objects (a ``NodeList``'s items); returns their names in order.

        A node whose ``metadata.resourceVersion`` (or, without one, whose ``status``) is unchanged
        since the last call is not parsed again, which keeps full-payload requests at 1,000
        nodes cheap.

        Raises
        ------
        BadRequest
            An item has no name or a bad quantity; nothing after it is learnt.
        """
        names = []
        for index, item in enumerate(items):
            where = f"{field}[{index}]"
            name = node_name(item, where)
            version = item["metadata"].get("resourceVersion") or item.get("status")
            if name not in self._capacity or self._version.get(name) != version:
                with bad_request():
                    capacity = node_capacity(item, where)
                if name not in self._capacity:
                    self._names, self._awake, self.version = None, None, self.version + 1
                self._capacity[name] = capacity
                self._version[name] = version
                self.table.set_capacity(
                    name, capacity.cpu_milli, capacity.memory_bytes, capacity.pods
                )
            self._objects[name] = item
            rules = _admission_rules(item)
            if self._rules.get(name) != rules:
                self._rules[name] = rules
                self.rules_version += 1
            if has_taint(item, HEADROOM_TAINT):
                self.tainted.add(name)
            else:
                self.tainted.discard(name)
            if has_taint(item, ASLEEP_TAINT):
                annotations = item["metadata"].get("annotations") or {}
                if name not in self.sleeping:
                    self._awake = None
                self.sleeping[name] = str(annotations.get(POWER_STATE_ANNOTATION) or "asleep")
            elif self.sleeping.pop(name, None) is not None:
                self._awake = None
            names.append(name)
        return names

    def forget(self, name: str) -> None:
        """Drop a deleted node."""
        self._objects.pop(name, None)
        if self._rules.pop(name, None) is not None:
            self.rules_version += 1
        self.tainted.discard(name)
        if self.sleeping.pop(name, None) is not None:
            self._awake = None
        if self._capacity.pop(name, None) is not None:
            self._names, self._awake, self.version = None, None, self.version + 1
            self._version.pop(name, None)
            self.table.set_capacity(name, None, None, None)

    def capacity(self, name: str) -> NodeCapacity | None:
        """The node's allocatable resources, ``None`` if the node was never seen."""
        return self._capacity.get(name)

    def names(self) -> list[str]:
        """Every known node name: one list object while the set of nodes holds (callers must
        not change it; the market keeps derived columns while it repeats)."""
        if self._names is None:
            self._names = list(self._capacity)
        return self._names

    def awake_names(self) -> list[str]:
        """The known nodes kube-scheduler can offer a pod: :meth:`names` without those carrying
        the asleep taint (:attr:`sleeping`, in any power state), in the same order; ``names()``
        itself while none sleeps, else one list object while neither set changes (the market
        keeps derived columns while it repeats)."""
        if not self.sleeping:
            return self.names()
        if self._awake is None:
            self._awake = [name for name in self.names() if name not in self.sleeping]
        return self._awake

    def known(self) -> KeysView[str]:
        """The known node names, as a set-like view."""
        return self._capacity.keys()

    def node(self, name: str) -> dict[str, Any] | None:
        """The node object as last learnt (a watch event or a full payload), or ``None``."""
        return self._objects.get(name)

    def knows(self, name: str) -> bool:
        """Whether ``name`` is a known node."""
        return name in self._capacity

    def __len__(self) -> int:
        return len(self._capacity)

    def place(self, pod: str, node: str, request: PodRequest) -> None:
        """Record that ``pod`` is bound to ``node`` (moves it if it was elsewhere)."""
        self.unplace(pod)
        self._pods[pod] = (node, request)
        self.table.add_used(node, request.cpu_milli, request.memory_bytes, 1)

    def unplace(self, pod: str) -> None:
        """Forget a pod that was deleted or finished."""
        held = self._pods.pop(pod, None)
        if held is not None:
            node, request = held
            self.table.add_used(node, -request.cpu_milli, -request.memory_bytes, -1)

    def used(self, name: str) -> tuple[int, int, int]:
        """``(cpu_milli, memory_bytes, pod_count)`` requested by pods bound to ``name``."""
        i = self.table.row(name)
        cols = self.table.cols
        keys = ("used_cpu_milli", "used_memory_bytes", "used_pods")
        cpu, memory, pods = (int(cols[k][i]) for k in keys)
        return cpu, memory, pods


def _admission_rules(node: dict[str, Any]) -> tuple[Any, Any, Any]:
    """What kube-scheduler's static filters read of a node: labels, taints, cordon."""
    return (
        (node.get("metadata") or {}).get("labels"),
        (node.get("spec") or {}).get("taints"),
        (node.get("spec") or {}).get("unschedulable"),
    )
