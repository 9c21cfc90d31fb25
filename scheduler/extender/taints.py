"""Which nodes to taint or untaint for the power-headroom floor, as node patches.

``floor.py`` says which nodes the taint belongs on (under the floor, counting the herding
reservations of bound pods only) and which have recovered; this module turns that into patches
of ``spec.taints`` that ``watch.py`` sends. ``spec.taints`` carries no patch merge key
(k8s.io/api ``core/v1`` ``NodeSpec.Taints``), so a patch replaces the whole list: each patch
therefore carries the node's other taints unchanged plus the node's
``metadata.resourceVersion``, which makes the API server refuse it with 409 Conflict if the
node changed meanwhile (optimistic concurrency, as the node lifecycle controller's
``PatchNodeTaints`` does); the next plan starts from the node the watch then delivers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from eams.scheduler.extender.floor import TAINT, TAINT_KEY, HeadroomFloor
from eams.scheduler.extender.nodes import NodeCache, taints

MERGE_PATCH = "application/merge-patch+json"  # RFC 7386: lists are replaced whole


@dataclass(frozen=True)
class TaintPatch:
    """One node patch.

    Attributes
    ----------
    node : str
    action : {"add", "remove"}
    body : dict
        JSON merge patch: ``{"metadata": {"resourceVersion"}, "spec": {"taints": [...]}}``.
    """

    node: str
    action: str
    body: dict[str, Any]


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

    def plan(self) -> list[TaintPatch]:
        """Patches for nodes the taint belongs on (``HeadroomFloor.to_taint``) without it and
        for tainted nodes that recovered (nodes with a patch in flight are left until it is
        answered)."""
        now_s = self.clock()
        below, recovered = self.floor.to_taint(now_s), self.floor.recovered(now_s)
        patches = []
        for name in below:
            if name not in self.nodes.tainted and name not in self.in_flight:
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
        others = [t for t in taints(node) if t.get("key") != TAINT_KEY]
        new = [*others, dict(TAINT)] if action == "add" else others
        version = (node.get("metadata") or {}).get("resourceVersion")
        body: dict[str, Any] = {"spec": {"taints": new}}
        if version:
            body["metadata"] = {"resourceVersion": version}
        return TaintPatch(name, action, body)

    def answered(self, patch: TaintPatch, node: dict[str, Any] | None) -> None:
        """A patch came back: ``node`` is the patched object (``None`` when it failed)."""
        self.in_flight.discard(patch.node)
        if node is not None:
            self.nodes.learn([node], "patched node")
