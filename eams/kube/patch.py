"""Node merge patches of ``spec.taints`` with optimistic concurrency: one implementation for the
extender's headroom-floor taint and the power manager's cordon-and-taint.

``spec.taints`` has no patch merge key (k8s.io/api ``core/v1`` ``NodeSpec.Taints``), so a JSON
merge patch (RFC 7386) replaces the list whole: :func:`taints_patch` therefore sends the node's
other taints back as read, plus the node's ``metadata.resourceVersion``, so the API server
answers 409 Conflict if the node changed meanwhile (as the node-lifecycle controller's own
``PatchNodeTaints`` does); :func:`patch_node` then reads the node again and retries.

Other parties' taints are kept as read — the node-lifecycle controller's ``not-ready`` and
``unreachable`` included: the resourceVersion guarantees they are the node's current ones. One
exception: ``node.kubernetes.io/unschedulable``. The controller mirrors it from
``spec.unschedulable`` (``doNoScheduleTaintingPass`` adds it while the node is cordoned and
removes it otherwise, on every node update). A patch that changes ``spec.unschedulable``
itself must not send it back: uncordoning while echoing the taint would leave an uncordoned node
with the cordon's taint (kept off until the controller's next pass, and a person reading the node
sees a contradiction), and cordoning needs no copy (the controller adds it). So when the patch
flips the cordon, that taint is dropped and left to the controller; when it does not, the taint
is kept as read like any other.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from eams.kube.names import CONFLICT, MERGE_PATCH, UNSCHEDULABLE_TAINT
from eams.kube.raw import read_object
from eams.kube.taints import node_taints

CONFLICT_RETRIES = 3
"""Reads and patches again after this many 409 Conflicts at most (:func:`patch_node`)."""


class NodeApi(Protocol):
    """Reads and merge-patches nodes as JSON; a refusal raises an exception whose ``status``
    attribute is the HTTP status (``kubernetes.client.ApiException``, the power manager's
    ``KubeApiError``)."""

    def read_node(self, name: str) -> dict[str, Any]:
        """The ``v1.Node`` ``name``."""
        ...

    def patch_node(self, name: str, body: dict[str, Any]) -> dict[str, Any]:
        """Apply the merge patch ``body`` to node ``name``; the node as patched."""
        ...


def taints_patch(
    node: dict[str, Any],
    *,
    add: Iterable[dict[str, Any]] = (),
    remove: Collection[str] = (),
    unschedulable: bool | None = None,
    annotations: dict[str, str | None] | None = None,
) -> dict[str, Any]:
    """The merge patch of ``node`` that adds and removes taints of ours (module docstring).

    Parameters
    ----------
    node : dict
        The ``v1.Node`` as read (its taints, cordon and resourceVersion).
    add : dicts
        Taints to put on, each unless the node has one with its key already (kept as it is).
    remove : keys
        Keys of taints to take off.
    unschedulable : bool, optional
        Set ``spec.unschedulable`` (cordon, uncordon); ``None`` leaves it alone.
    annotations : dict, optional
        ``metadata.annotations`` to set (``None`` values remove the key).

    Returns
    -------
    dict
        ``{"metadata": {"resourceVersion", "annotations"?}, "spec": {"taints", "unschedulable"?}}``
        (no resourceVersion when the node had none).
    """
    cordoned = bool((node.get("spec") or {}).get("unschedulable"))
    flips_cordon = unschedulable is not None and unschedulable != cordoned
    taints = [
        t
        for t in node_taints(node)
        if t.get("key") not in remove and not (flips_cordon and t.get("key") == UNSCHEDULABLE_TAINT)
    ]
    present = {t.get("key") for t in taints}
    taints += [dict(t) for t in add if t["key"] not in present]
    spec: dict[str, Any] = {"taints": taints}
    if unschedulable is not None:
        spec["unschedulable"] = unschedulable
    meta: dict[str, Any] = {}
    if annotations is not None:
        meta["annotations"] = annotations
    version = (node.get("metadata") or {}).get("resourceVersion")
    if version:
        meta["resourceVersion"] = version
    return {"metadata": meta, "spec": spec} if meta else {"spec": spec}


@dataclass(frozen=True)
class Patched:
    """What :func:`patch_node` did.

    Attributes
    ----------
    node : dict
        The node as patched (``applied``), else as read after the last conflict.
    applied : bool
        False when every attempt met a 409 Conflict.
    conflicts : int
        409 Conflicts met.
    """

    node: dict[str, Any]
    applied: bool
    conflicts: int


def patch_node(
    api: NodeApi,
    name: str,
    change: Callable[[dict[str, Any]], dict[str, Any]],
    *,
    node: dict[str, Any] | None = None,
    retries: int = CONFLICT_RETRIES,
) -> Patched:
    """Patch node ``name`` with ``change(node)`` (a merge patch carrying the node's
    resourceVersion, :func:`taints_patch`); on 409 Conflict read the node and try again, up to
    ``retries`` times.

    Parameters
    ----------
    api : NodeApi
    name : str
    change : callable
        ``node -> merge patch``, computed again from each read.
    node : dict, optional
        The node as the caller already has it (a watch's copy); read first otherwise.
    retries : int
        Attempts after the first conflict (0: one patch, and the node read after a conflict).

    Raises
    ------
    Exception
        What ``api`` raises for anything but a 409 Conflict.
    """
    conflicts = 0
    while True:
        if node is None:
            node = api.read_node(name)
        try:
            return Patched(api.patch_node(name, change(node)), True, conflicts)
        except Exception as exc:
            if getattr(exc, "status", None) != CONFLICT:
                raise
        conflicts += 1
        node = None
        if conflicts > retries:
            return Patched(api.read_node(name), False, conflicts)


class RawNodes:
    """:class:`NodeApi` on a ``kubernetes.client.CoreV1Api``, reading the JSON as published
    (``_preload_content=False``, decoded with msgspec, not into the client's model objects)."""

    def __init__(self, core: Any) -> None:
        self.core = core

    def read_node(self, name: str) -> dict[str, Any]:
        return read_object(self.core.read_node(name, _preload_content=False))

    def patch_node(self, name: str, body: dict[str, Any]) -> dict[str, Any]:
        return read_object(
            self.core.patch_node(name, body, _content_type=MERGE_PATCH, _preload_content=False)
        )
