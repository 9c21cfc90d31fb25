"""The manager's :class:`~.ports.NodeMarker` on the Kubernetes API: cordon, taint and annotate
a node before it sleeps; untaint and uncordon it once it is back.

Each change is one JSON merge patch of the Node (:mod:`.kube_client`), as ``kubectl cordon``,
``kubectl taint`` and ``kubectl annotate`` would make it: ``spec.unschedulable``,
``spec.taints`` and ``metadata.annotations``. The taints are the Kubernetes layer's
(:func:`eams.kube.patch.taints_patch`): only the ``eams.io/asleep`` entry added or removed, every
other taint — the node-lifecycle controller's ``unreachable`` / ``not-ready`` included — kept as
read, except the controller's mirror of the cordon when the patch flips the cordon; the patch
carries the ``resourceVersion`` it was computed from, and a 409 Conflict reads the node again
(:func:`eams.kube.patch.patch_node`, up to :data:`~eams.kube.patch.CONFLICT_RETRIES` times).

A node a person had cordoned before the manager marked it stays cordoned when released: the
mark records it in the annotation ``eams.io/was-cordoned``.

The market's wake request (``eams.io/wake-request``, :mod:`eams.kube.wakerequest`) is removed
(merge patch ``null``) in the same patch that releases a node (it is awake: the request is
served) and that annotates it ``asleep-suspect`` (its wake failed: the market clears its pods
again elsewhere).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from eams.kube.names import (
    ASLEEP_TAINT,
    CONFLICT,
    NO_SCHEDULE,
    POWER_REASON_ANNOTATION,
    POWER_STATE_ANNOTATION,
    WAKE_REQUEST_ANNOTATION,
    WAS_CORDONED_ANNOTATION,
)
from eams.kube.patch import patch_node, taints_patch
from eams.kube.taints import has_taint
from eams.scheduler.power.errors import KubeApiError
from eams.scheduler.power.kube_client import KubeClient
from eams.scheduler.power.ports import SUSPECT

REASON_MAX_CHARS = 256
"""Annotation values are free text, but a reason is a line, not an essay."""


def _taint() -> dict[str, Any]:
    added = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"key": ASLEEP_TAINT, "effect": NO_SCHEDULE, "timeAdded": added}


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
            annotations = _annotations("suspending", reason)
            cordoned = (doc.get("spec") or {}).get("unschedulable")
            if cordoned and not has_taint(doc, ASLEEP_TAINT):
                annotations[WAS_CORDONED_ANNOTATION] = "true"
            return taints_patch(doc, add=[_taint()], unschedulable=True, annotations=annotations)

        self._patch(node, edit)

    def release(self, node: str, reason: str) -> None:
        """Remove ``eams.io/asleep``, uncordon (unless it was cordoned before), annotate
        ``awake``, remove the wake request."""

        def edit(doc: dict[str, Any]) -> dict[str, Any]:
            annotations = (doc.get("metadata") or {}).get("annotations") or {}
            kept = annotations.get(WAS_CORDONED_ANNOTATION) == "true"
            change = {**_annotations("awake", reason), WAS_CORDONED_ANNOTATION: None,
                      WAKE_REQUEST_ANNOTATION: None}  # fmt: skip
            return taints_patch(doc, remove={ASLEEP_TAINT}, unschedulable=kept, annotations=change)

        self._patch(node, edit)

    def annotate(self, node: str, state: str, reason: str) -> None:
        """Set ``eams.io/power-state`` and ``eams.io/power-reason`` (no resourceVersion: an
        annotation of ours races with nothing); for ``asleep-suspect``, remove the wake request."""
        annotations: dict[str, str | None] = _annotations(state, reason)
        if state == SUSPECT:
            annotations[WAKE_REQUEST_ANNOTATION] = None
        self.client.patch_node(node, {"metadata": {"annotations": annotations}})

    def _patch(self, node: str, edit: Any) -> None:
        sent = patch_node(self.client, node, edit)
        if not sent.applied:
            raise KubeApiError(
                f"the Kubernetes API at {self.client.server} refused a patch of node {node}: "
                f"{CONFLICT} Conflict {sent.conflicts} times (the node kept changing)",
                CONFLICT,
            )


def _annotations(state: str, reason: str) -> dict[str, str | None]:
    return {POWER_STATE_ANNOTATION: state, POWER_REASON_ANNOTATION: reason[:REASON_MAX_CHARS]}
