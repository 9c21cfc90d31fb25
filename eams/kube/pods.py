"""The pod as EAMS reads it: one validated model of ``v1.Pod`` and the rule for a workload pod.

* :class:`PodObject` — the fields that size and place a pod (pydantic, unknown keys ignored, the
  upstream lowerCamelCase names): what the extender validates once per pod (a ``/filter``
  argument, a watch event of a shape not seen yet) and what :func:`eams.kube.requests.pod_request`
  sizes. The extender's hot path decodes watch events with its own msgspec views and falls back
  to this model for what they do not cover.
* :class:`PodRef` and :func:`pod_ref` — a pod as the power side sees it (the power-state safety
  check, the power manager): its key, its controller's kind, its phase and whether it is a
  static pod's mirror; :attr:`PodRef.is_workload` is the one rule for "sleeping its node would
  stop it".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from eams.kube.errors import BadObject
from eams.kube.names import (
    DAEMONSET_KIND,
    FINISHED_PHASES,
    MIRROR_ANNOTATION,
    NOT_FINISHED_SELECTOR,
)
from eams.validation import describe_validation_error

# A quantity as it may arrive in JSON: the API sends strings, hand-made pods may carry numbers
# (apimachinery ``Quantity.UnmarshalJSON`` accepts both). Parsed by :mod:`eams.kube.quantity`.
QuantityValue = str | int | float
ResourceList = dict[str, QuantityValue]


class _Object(BaseModel):
    model_config = ConfigDict(extra="ignore")


class ObjectMeta(_Object):
    """``metadata`` of a pod: the fields used to key it and read its hints."""

    name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    annotations: dict[str, str] | None = None


class ResourceRequirements(_Object):
    """``resources`` of a container (or pod-level ``spec.resources``)."""

    requests: ResourceList | None = None
    limits: ResourceList | None = None


class Container(_Object):
    """A container or init container; ``restartPolicy: Always`` marks a sidecar (KEP-753)."""

    name: str | None = None
    resources: ResourceRequirements | None = None
    restartPolicy: str | None = None


class SchedulingGate(_Object):
    """One of ``spec.schedulingGates`` (KEP-3521)."""

    name: str | None = None


class PodSpec(_Object):
    """``spec`` of a pod: the fields that size and rank it, and its scheduling gates."""

    containers: list[Container] | None = None
    initContainers: list[Container] | None = None
    overhead: ResourceList | None = None
    resources: ResourceRequirements | None = None
    priority: int | None = None
    schedulerName: str | None = None
    nodeName: str | None = None
    nodeSelector: dict[str, str] | None = None
    tolerations: list[dict[str, Any]] | None = None
    schedulingGates: list[SchedulingGate] | None = None

    def gate_names(self) -> list[str]:
        """``schedulingGates[].name``, in order."""
        return [gate.name or "" for gate in self.schedulingGates or ()]


class PodStatus(_Object):
    """``status`` of a pod: only the phase matters (a finished pod frees its node)."""

    phase: str | None = None


class PodObject(_Object):
    """``v1.Pod`` as far as EAMS reads it."""

    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: PodSpec = Field(default_factory=PodSpec)
    status: PodStatus = Field(default_factory=PodStatus)

    @property
    def finished(self) -> bool:
        """``status.phase`` is Succeeded or Failed: the pod no longer uses its node."""
        return self.status.phase in FINISHED_PHASES

    def key(self) -> str:
        """The pod's :func:`pod_key`."""
        meta = self.metadata
        return pod_key(meta.namespace, meta.name, meta.uid)


def pod_key(namespace: str | None, name: str | None, uid: str | None) -> str:
    """A pod's key in every table of the project: ``namespace/name`` (namespace ``default``
    when absent), or ``uid:UID`` for a pod without a name (it cannot be patched by name)."""
    if name:
        return f"{namespace or 'default'}/{name}"
    return f"uid:{uid or ''}"


def pending_selector(scheduler_name: str) -> str:
    """Field selector of the pods of profile ``scheduler_name`` waiting for a node: unbound
    (``spec.nodeName=``), not finished (:data:`~eams.kube.names.NOT_FINISHED_SELECTOR`)."""
    return f"spec.schedulerName={scheduler_name},spec.nodeName=,{NOT_FINISHED_SELECTOR}"


def parse_pod(pod: dict[str, Any], field: str = "pod") -> PodObject:
    """A ``v1.Pod`` as JSON (a dict) as a :class:`PodObject`.

    Raises
    ------
    BadObject
        A field the model reads has the wrong type; names ``field`` and every path at fault.
    """
    try:
        return PodObject.model_validate(pod)
    except ValidationError as exc:
        raise BadObject(field, describe_validation_error(exc)) from None


@dataclass(frozen=True, slots=True)
class PodRef:
    """One pod: ``namespace/name``, its controller's kind, its phase, whether it is a mirror."""

    namespace: str
    name: str
    owner_kind: str | None
    phase: str | None
    mirror: bool

    @property
    def is_workload(self) -> bool:
        """True for a pod that sleeping its node would stop: running or pending, not owned by
        a DaemonSet (those run on every node and come back with it), not a static pod's mirror
        (the kubelet runs it) — what ``kubectl drain`` and cluster-autoscaler's scale-down
        leave alone too."""
        return (
            self.owner_kind != DAEMONSET_KIND
            and not self.mirror
            and self.phase not in FINISHED_PHASES
        )

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


def pod_ref(pod: dict[str, Any]) -> PodRef:
    """The :class:`PodRef` of a ``v1.Pod`` as JSON; the controller is the owner reference
    marked ``controller``, else the first one."""
    meta = pod.get("metadata") or {}
    owners = meta.get("ownerReferences") or []
    controller = next((o for o in owners if o.get("controller")), owners[0] if owners else {})
    return PodRef(
        namespace=meta.get("namespace") or "default",
        name=meta.get("name") or "?",
        owner_kind=controller.get("kind"),
        phase=(pod.get("status") or {}).get("phase"),
        mirror=MIRROR_ANNOTATION in (meta.get("annotations") or {}),
    )
