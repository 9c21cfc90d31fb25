"""The pending pod: what the auction reads of a pod waiting for placement, and how it is sized.

:class:`PendingPod` is sized from a received pod (:func:`pending_pod`: a ``/filter`` or
``/prioritize`` argument, validated by pydantic) or from its raw watch event
(:class:`PendingDecoder`). Per pod (study §5.1–5.2): its effective request, π from the resolved
``spec.priority`` through ``bids.priority_weight`` — never from anything the pod declares itself
(AR-7) —, the tenant from its namespace, and the reference core-seconds of its work from the
``eams.io/work-core-s`` annotation.

The pending-pod watch hands every new pod of this scheduler to the batch (``watch.py``). Its
pydantic validation (``eams.kube.pods.PodObject``) and request sizing
(``eams.kube.requests.pod_request``, exact ``Decimal`` quantities) cost ≈ 0.1 ms a pod at 100 pods/s
(issue 15), and the pods of one workload repeat the same resources. So the event is decoded with
msgspec into only what the auction reads — the key, uid, ``eams.io/work-core-s`` annotation,
``spec.priority`` and, per container and init container, the raw ``resources`` bytes and
``restartPolicy`` plus ``spec.overhead`` and pod-level ``spec.resources`` — and the request is
looked up by those bytes. A shape not seen yet (or anything msgspec refuses) is validated and sized
whole, exactly as before, and its request kept: the cache only ever answers for bytes that passed.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from typing import Any

import msgspec

from eams.kube.gates import can_pin, carries_market_gate, gate_names
from eams.kube.names import WORK_ANNOTATION
from eams.kube.pods import PodObject, pod_key
from eams.kube.requests import PodRequest, pod_request
from eams.kube.taints import Toleration
from eams.scheduler.auction import bids
from eams.scheduler.extender.errors import bad_request

# The extender does not track tenant quotas yet: every tenant counts as having its whole quota
# free (q = 1 in bids.priority_weight), so π depends on the PriorityClass value alone.
FREE_QUOTA_SHARE = 1.0
MAX_SHAPES = 1024  # distinct resource shapes kept (the cache starts again beyond this)
_NULL = msgspec.Raw(b"null")


@dataclass(frozen=True, slots=True)
class PendingPod:
    """A pod waiting for placement, sized for the auction.

    Attributes
    ----------
    key : str
        ``namespace/name``.
    request : PodRequest
        Effective CPU and memory request.
    priority : float
        π from ``spec.priority`` through ``bids.priority_weight`` (bounded, > 0).
    tenant : str
        Namespace (the fairness unit, study §6.2).
    work_core_s : float or None
        Reference core-seconds from the ``eams.io/work-core-s`` annotation; ``None`` when
        absent or not a positive number (the default runtime applies).
    candidates : frozenset of str or None
        Nodes kube-scheduler's filters passed for this pod (seen in a request), or ``None``.
    uid : str or None
        ``metadata.uid``: a pod deleted and created again under the same name (a StatefulSet
        pod) is another pod and must not inherit the old one's clearing row.
    node_selector : tuple of (str, str)
        ``spec.nodeSelector`` items, and
    tolerations : tuple of Toleration
        ``spec.tolerations``: which asleep nodes the pod could use once awake (a market wake,
        ``wakes.py``); kube-scheduler's own filters judge the awake ones.
    gated : bool
        The pod carries the ``eams.io/market`` scheduling gate: the extender releases it once
        cleared (``gates.py``, :mod:`eams.kube.gates`). Read from the pending-pod watch only
        (:class:`PendingDecoder`): kube-scheduler never sends a gated pod.
    pinnable : bool
        Gated, and the market judges every filter that could refuse it on its cleared node
        (:func:`eams.kube.gates.can_pin`), so it may be pinned there.
    """

    key: str
    request: PodRequest
    priority: float
    tenant: str
    work_core_s: float | None
    candidates: frozenset[str] | None = None
    uid: str | None = None
    node_selector: tuple[tuple[str, str], ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    gated: bool = False
    pinnable: bool = False


def pending_pod(pod: PodObject, candidates: frozenset[str] | None = None) -> PendingPod:
    """Size a received pod for the auction.

    Raises
    ------
    BadRequest
        A resource quantity of the pod breaks the grammar (names its JSON path).
    """
    meta = pod.metadata
    with bad_request():
        request = pod_request(pod)
    return sized_pod(
        pod.key(),
        request,
        pod.spec.priority,
        meta.namespace,
        meta.annotations,
        meta.uid,
        candidates,
        pod.spec.nodeSelector,
        pod.spec.tolerations,
    )


def sized_pod(
    key: str,
    request: PodRequest,
    priority: int | None,
    namespace: str | None,
    annotations: dict[str, str] | None,
    uid: str | None,
    candidates: frozenset[str] | None = None,
    node_selector: dict[str, str] | None = None,
    tolerations: list[dict[str, Any]] | None = None,
) -> PendingPod:
    """A :class:`PendingPod` from the fields the auction reads (its request already sized):
    π from ``spec.priority`` (:func:`_priority`), the tenant from the namespace, the work from
    the ``eams.io/work-core-s`` annotation, the node selector and tolerations as given."""
    return PendingPod(
        key=key,
        request=request,
        priority=_priority(priority or 0),
        tenant=namespace or "default",
        work_core_s=_positive_float((annotations or {}).get(WORK_ANNOTATION)),
        candidates=candidates,
        uid=uid or None,
        node_selector=tuple(sorted((node_selector or {}).items())),
        tolerations=tuple(Toleration.from_json(t) for t in tolerations or ()),
    )


@functools.lru_cache(maxsize=256)
def _priority(value: int) -> float:
    """π of a ``spec.priority`` value (``bids.priority_weight`` at a free quota), kept per
    value: a cluster has a few PriorityClasses."""
    return float(bids.priority_weight(value, FREE_QUOTA_SHARE))


def _positive_float(text: str | None) -> float | None:
    try:
        value = float(text) if text is not None else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) and value > 0 else None


class _Meta(msgspec.Struct):
    name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    annotations: dict[str, str] | None = None


class _Container(msgspec.Struct):
    name: str | None = None
    resources: msgspec.Raw = _NULL
    restartPolicy: str | None = None


class _Gate(msgspec.Struct):
    name: str | None = None


class _Spec(msgspec.Struct):
    containers: list[_Container] | None = None
    initContainers: list[_Container] | None = None
    overhead: msgspec.Raw = _NULL
    resources: msgspec.Raw = _NULL
    priority: int | None = None
    schedulerName: str | None = None
    nodeName: str | None = None
    nodeSelector: dict[str, str] | None = None
    tolerations: list[dict[str, Any]] | None = None
    schedulingGates: list[_Gate] | None = None


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
        """The pod as :func:`pending_pod` sizes it, and whether it is gated and pinnable
        (read whole, only when it carries the market's gate).

        Raises
        ------
        pydantic.ValidationError, BadRequest
            As validating and sizing the whole pod does (a shape not seen yet).
        """
        try:
            pod = _decode(raw)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return _gated(pending_pod(PodObject.model_validate_json(raw)), raw)
        meta, spec = pod.metadata, pod.spec
        shape = _shape(spec)
        request = self._requests.get(shape)
        if request is None or not meta.name:  # unnamed: the validated path keys it by uid
            sized = pending_pod(PodObject.model_validate_json(raw))
            if len(self._requests) >= MAX_SHAPES:
                self._requests.clear()
            self._requests[shape] = sized.request
            return _gated(sized, raw) if _carries_gate(spec) else sized
        sized = sized_pod(
            pod_key(meta.namespace, meta.name, meta.uid),
            request,
            spec.priority,
            meta.namespace,
            meta.annotations,
            meta.uid,
            None,
            spec.nodeSelector,
            spec.tolerations,
        )
        return _gated(sized, raw) if _carries_gate(spec) else sized


def _carries_gate(spec: _Spec) -> bool:
    return carries_market_gate(g.name or "" for g in spec.schedulingGates or ())


def _gated(pod: PendingPod, raw: bytes) -> PendingPod:
    """``pod`` marked gated and, by :func:`eams.kube.gates.can_pin` on its whole spec,
    pinnable, when it carries the market's gate; unchanged otherwise."""
    spec = (msgspec.json.decode(raw).get("spec") or {}) if raw else {}
    if not carries_market_gate(gate_names(spec)):
        return pod
    return replace(pod, gated=True, pinnable=can_pin(spec))
