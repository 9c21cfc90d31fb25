"""Which nodes to taint or untaint for the power-headroom floor, as node patches.

``floor.py`` says which nodes the taint belongs on (under the floor, counting the herding
reservations of bound pods only) and which have recovered; this module turns that into patches
of ``spec.taints`` that ``watch.py`` sends, built by the Kubernetes layer
(:func:`eams.kube.patch.taints_patch`: the node's other taints as read plus its
``metadata.resourceVersion``, so the API server answers 409 Conflict if the node changed
meanwhile). A patch is planned from the watch's copy of the node and sent once; after a
conflict the next plan starts from the node as read again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from eams.kube.patch import taints_patch
from eams.scheduler.extender.floor import TAINT, HeadroomFloor
from eams.scheduler.extender.nodes import NodeCache


@dataclass(frozen=True)
class TaintPatch:
    """One node patch.

    Attributes
    ----------
    node : str
    action : {"add", "remove"}
    body : dict
        JSON merge patch: ``{"metadata": {"resourceVersion"}, "spec": {"taints": [...]}}``.
    read : dict
        The node it was computed from (the watch's copy).
    """

    node: str
    action: str
    body: dict[str, Any]
    read: dict[str, Any]


class TaintKeeper:
    """Plans the taint patches that bring the nodes in line with the floor.

    Parameters
    ----------
    floor : HeadroomFloor
    nodes : NodeCache
        The watched node objects (their taints and resourceVersions).
    clock : callable
        Epoch seconds.
    """

    def __init__(self, floor: HeadroomFloor, nodes: NodeCache, clock: Callable[[], float]) -> None:
        self.floor, self.nodes, self.clock = floor, nodes, clock
        self.in_flight: set[str] = set()
        self.holding: Callable[[], set[str]] = set  # nodes not to taint yet (``gates.py``)

    def plan(self) -> list[TaintPatch]:
        """Patches for nodes the taint belongs on (``HeadroomFloor.to_taint``) without it and
        for tainted nodes that recovered (nodes with a patch in flight are left until it is
        answered, and nodes :attr:`holding` a pinned pod not bound yet are not tainted)."""
        now_s = self.clock()
        below, recovered = self.floor.to_taint(now_s), self.floor.recovered(now_s)
        patches = []
        held = self.holding() if below else set()
        for name in below:
            if name not in self.nodes.tainted and name not in self.in_flight and name not in held:
                patch = self._patch(name, "add")
                if patch is not None:
                    patches.append(patch)
        for name in self.nodes.tainted:
            if name in recovered and name not in self.in_flight:
                patch = self._patch(name, "remove")
                if patch is not None:
                    patches.append(patch)
        self.in_flight.update(p.node for p in patches)
        return patches

    def _patch(self, name: str, action: str) -> TaintPatch | None:
        node = self.nodes.node(name)
        if node is None:
            return None
        if action == "add":
            body = taints_patch(node, add=[TAINT])
        else:
            body = taints_patch(node, remove={TAINT["key"]})
        return TaintPatch(name, action, body, node)

    def answered(self, patch: TaintPatch, node: dict[str, Any] | None) -> None:
        """A patch came back: ``node`` is the patched object (``None`` when it failed)."""
        self.in_flight.discard(patch.node)
        if node is not None:
            self.nodes.learn([node], "patched node")
