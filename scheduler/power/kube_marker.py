"""The manager's :class:`~.ports.NodeMarker` on the Kubernetes API: cordon, taint and annotate
a node before it sleeps; untaint and uncordon it once it is back.

Each change is one JSON merge patch of the Node (:mod:`.kube_client`), as ``kubectl cordon``,
``kubectl taint`` and ``kubectl annotate`` would make it: ``spec.unschedulable``,
``spec.taints`` (the whole list, only the ``eams.io/asleep`` entry added or removed, every
other taint — the node-lifecycle controller's ``unreachable`` / ``not-ready`` included — kept
as read) and ``metadata.annotations``. A patch that changes the taints carries the
``resourceVersion`` it was computed from; a 409 Conflict reads the node again (up to
:data:`CONFLICT_RETRIES` times).

A node a person had cordoned before the manager marked it stays cordoned when released: the
mark records it in the annotation ``eams.io/was-cordoned``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from eams.scheduler.power.errors import KubeApiError
from eams.scheduler.power.kube_client import CONFLICT, KubeClient
from eams.scheduler.power.ports import (
    ASLEEP_TAINT_EFFECT,
    ASLEEP_TAINT_KEY,
    REASON_ANNOTATION,
    STATE_ANNOTATION,
)

WAS_CORDONED = "eams.io/was-cordoned"
"""Annotation: ``"true"`` when the node was cordoned before the manager marked it."""
CONFLICT_RETRIES = 3
REASON_MAX_CHARS = 256
"""Annotation values are free text, but a reason is a line, not an essay."""


def _taint() -> dict[str, Any]:
    added = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"key": ASLEEP_TAINT_KEY, "effect": ASLEEP_TAINT_EFFECT, "timeAdded": added}


def _ours(taint: dict[str, Any]) -> bool:
    return taint.get("key") == ASLEEP_TAINT_KEY


class KubeMarker:
    """:class:`~.ports.NodeMarker` through ``client`` (module docstring).

    Parameters
    ----------
    client : KubeClient

    Raises
    ------
    KubeApiError
        From each method: the API refused or did not answer, or the node kept changing.
    """

    def __init__(self, client: KubeClient) -> None:
        self.client = client

    def mark_asleep(self, node: str, reason: str) -> None:
        """Cordon, taint ``eams.io/asleep:NoSchedule``, annotate ``suspending``."""

        def edit(doc: dict[str, Any]) -> dict[str, Any]:
            spec = doc.get("spec") or {}
            taints = list(spec.get("taints") or [])
            if not any(map(_ours, taints)):
                taints.append(_taint())
            annotations = _annotations("suspending", reason)
            if spec.get("unschedulable") and not any(map(_ours, spec.get("taints") or [])):
                annotations[WAS_CORDONED] = "true"
            return {"spec": {"unschedulable": True, "taints": taints}, "annotations": annotations}

        self._patch(node, edit)

    def release(self, node: str, reason: str) -> None:
        """Remove ``eams.io/asleep``, uncordon (unless it was cordoned before), annotate
        ``awake``."""

        def edit(doc: dict[str, Any]) -> dict[str, Any]:
            meta, spec = doc.get("metadata") or {}, doc.get("spec") or {}
            taints = [t for t in spec.get("taints") or [] if not _ours(t)]
            kept = (meta.get("annotations") or {}).get(WAS_CORDONED) == "true"
            annotations: dict[str, Any] = {**_annotations("awake", reason), WAS_CORDONED: None}
            return {"spec": {"unschedulable": kept, "taints": taints}, "annotations": annotations}

        self._patch(node, edit)

    def annotate(self, node: str, state: str, reason: str) -> None:
        """Set ``eams.io/power-state`` and ``eams.io/power-reason`` (no resourceVersion: an
        annotation of ours races with nothing)."""
        self.client.patch_node(node, {"metadata": {"annotations": _annotations(state, reason)}})

    def _patch(self, node: str, edit: Any) -> None:
        for attempt in range(CONFLICT_RETRIES + 1):
            doc = self.client.read_node(node)
            change = edit(doc)
            version = (doc.get("metadata") or {}).get("resourceVersion")
            meta: dict[str, Any] = {"annotations": change["annotations"]}
            if version is not None:
                meta["resourceVersion"] = version
            try:
                self.client.patch_node(node, {"metadata": meta, "spec": change["spec"]})
                return
            except KubeApiError as exc:
                if exc.status != CONFLICT or attempt == CONFLICT_RETRIES:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover


def _annotations(state: str, reason: str) -> dict[str, Any]:
    return {STATE_ANNOTATION: state, REASON_ANNOTATION: reason[:REASON_MAX_CHARS]}
