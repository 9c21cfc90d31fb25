"""A pending pod's watch event sized for the auction without validating the whole pod.

The pending-pod watch hands every new pod of this scheduler to the batch (``watch.py``). Its
pydantic validation (``schemas.PodObject``) and request sizing (``requests.pod_request``, exact
``Decimal`` quantities) cost ≈ 0.1 ms a pod at 100 pods/s (issue 15), and the pods of one
workload repeat the same resources. So the event is decoded with msgspec into only what the
auction reads — the key, uid, ``eams.io/work-core-s`` annotation, ``spec.priority`` and, per
container and init container, the raw ``resources`` bytes and ``restartPolicy`` plus
``spec.overhead`` and pod-level ``spec.resources`` — and the request is looked up by those
bytes. A shape not seen yet (or anything msgspec refuses) is validated and sized whole, exactly
as before, and its request kept: the cache only ever answers for bytes that passed.
"""

from __future__ import annotations

import msgspec

from eams.scheduler.extender.market import PendingPod, pending_pod, sized_pod
from eams.scheduler.extender.requests import PodRequest
from eams.scheduler.extender.schemas import PodObject

MAX_SHAPES = 1024  # distinct resource shapes kept (the cache starts again beyond this)
_NULL = msgspec.Raw(b"null")


class _Meta(msgspec.Struct):
    name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    annotations: dict[str, str] | None = None


class _Container(msgspec.Struct):
    name: str | None = None
    resources: msgspec.Raw = _NULL
    restartPolicy: str | None = None


class _Spec(msgspec.Struct):
    containers: list[_Container] | None = None
    initContainers: list[_Container] | None = None
    overhead: msgspec.Raw = _NULL
    resources: msgspec.Raw = _NULL
    priority: int | None = None
    schedulerName: str | None = None
    nodeName: str | None = None


class _Status(msgspec.Struct):
    phase: str | None = None


class _Pod(msgspec.Struct):
    """Every field ``PodObject`` reads, with its type (so msgspec refuses what pydantic would,
    and anything refused takes the validated path)."""

    metadata: _Meta = msgspec.field(default_factory=_Meta)
    spec: _Spec = msgspec.field(default_factory=_Spec)
    status: _Status = msgspec.field(default_factory=_Status)


_decode = msgspec.json.Decoder(_Pod).decode
_Shape = tuple[bytes, ...]


def _shape(spec: _Spec) -> _Shape:
    """The bytes that size the pod: each container's resources and restart policy (in order,
    init containers after a separator), the overhead and the pod-level resources."""
    parts: list[bytes] = []
    for containers in (spec.containers, spec.initContainers):
        for c in containers or ():
            parts += (bytes(c.resources), (c.restartPolicy or "").encode())
        parts.append(b"|" if containers is not None else b"-")
    parts += (bytes(spec.overhead), bytes(spec.resources))
    return tuple(parts)


class PendingDecoder:
    """Sizes pending pods from their raw JSON, the resources of shapes already seen reused."""

    def __init__(self) -> None:
        self._requests: dict[_Shape, PodRequest] = {}

    def __call__(self, raw: bytes) -> PendingPod:
        """The pod as :func:`.market.pending_pod` sizes it.

        Raises
        ------
        pydantic.ValidationError, BadRequest
            As validating and sizing the whole pod does (a shape not seen yet).
        """
        try:
            pod = _decode(raw)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return pending_pod(PodObject.model_validate_json(raw))
        meta, shape = pod.metadata, _shape(pod.spec)
        request = self._requests.get(shape)
        if request is None or not meta.name:  # unnamed: the validated path keys it by uid
            sized = pending_pod(PodObject.model_validate_json(raw))
            if len(self._requests) >= MAX_SHAPES:
                self._requests.clear()
            self._requests[shape] = sized.request
            return sized
        return sized_pod(
            f"{meta.namespace or 'default'}/{meta.name}",
            request,
            pod.spec.priority,
            meta.namespace,
            meta.annotations,
            meta.uid,
        )
