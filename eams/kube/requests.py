"""The effective resource request of a pending pod, as kube-scheduler computes it.

Source: kubernetes/component-helpers ``resource/helpers.go`` ``PodRequests`` and
``aggregateContainerResourcesByFn`` (the KEP-753 sidecar formula), with request defaulting from
kubernetes/kubernetes ``pkg/apis/core/v1/defaults.go`` ``SetDefaults_Pod``; summarised in
``../shared/reference/extender-protocol.md`` §5.1. Per resource r:

1. a container resource with a limit but no request has request = limit;
2. ``regular = Σ containers``;
3. walking ``initContainers`` in order with ``sidecars = 0``: a restartable one
   (``restartPolicy: Always``) adds to ``regular`` and ``sidecars`` and its candidate is
   ``sidecars``; an ordinary one's candidate is ``request + sidecars`` (sidecars declared before
   it); ``init_peak = max(candidates)``;
4. ``effective = max(regular, init_peak)``;
5. pod-level ``spec.resources.requests`` (PodLevelResources; cpu, memory, hugepages-*) replace
   the container-derived value;
6. ``spec.overhead`` is added.

Quantities are summed exactly (Decimal) and converted once per pod (§4.2): CPU to millicores
(ceil ×1000), everything else to integers (ceil). This is the one pod-requests rule of EAMS: the
extender's capacity and batch, the power manager's counts and the bench's emulated
kube-scheduler all size a pod here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal

from eams.kube.pods import Container, PodObject, ResourceList, ResourceRequirements
from eams.kube.quantity import integer_value, milli_value, resource_amount

MIB = 2**20
_POD_LEVEL_RESOURCES = ("cpu", "memory")
_SIDECAR_RESTART_POLICY = "Always"


@dataclass(frozen=True, slots=True)
class PodRequest:
    """Effective request of one pod.

    Attributes
    ----------
    cpu_milli : int
        CPU, millicores (ceil of cores × 1000).
    memory_bytes : int
        Memory, bytes (ceil).
    """

    cpu_milli: int
    memory_bytes: int

    @property
    def cores(self) -> float:
        """CPU, cores."""
        return self.cpu_milli / 1000

    @property
    def memory_mib(self) -> float:
        """Memory, MiB (2**20 bytes)."""
        return self.memory_bytes / MIB


def _parsed(resources: ResourceList | None, field: str) -> dict[str, Decimal]:
    return {
        name: resource_amount(value, f"{field}.{name}") for name, value in (resources or {}).items()
    }


def _defaulted(resources: ResourceRequirements | None, field: str) -> dict[str, Decimal]:
    """Requests with each limit-only resource defaulted to its limit (``SetDefaults_Pod``)."""
    if resources is None:
        return {}
    requests = _parsed(resources.requests, f"{field}.requests")
    for name, limit in _parsed(resources.limits, f"{field}.limits").items():
        requests.setdefault(name, limit)
    return requests


def _add(into: dict[str, Decimal], other: Mapping[str, Decimal]) -> None:
    for name, value in other.items():
        into[name] = into.get(name, Decimal(0)) + value


def _max(into: dict[str, Decimal], other: Mapping[str, Decimal]) -> None:
    for name, value in other.items():
        into[name] = max(into.get(name, Decimal(0)), value)


def _container_requests(
    containers: Iterable[Container] | None, field: str
) -> list[tuple[Container, dict[str, Decimal]]]:
    return [
        (c, _defaulted(c.resources, f"{field}[{i}].resources"))
        for i, c in enumerate(containers or ())
    ]


def pod_requests(pod: PodObject, field: str = "Pod") -> dict[str, Decimal]:
    """Effective requests of every resource the pod names, exact.

    Parameters
    ----------
    pod : PodObject
        The pod as received.
    field : str
        JSON path of the pod in the request, used in error messages.

    Returns
    -------
    dict of str to Decimal
        Resource name → effective request in base units (cores, bytes, count).

    Raises
    ------
    BadQuantity
        A quantity breaks the grammar or is negative; the message names its JSON path.
    """
    spec = pod.spec
    regular: dict[str, Decimal] = {}
    for _, requests in _container_requests(spec.containers, f"{field}.spec.containers"):
        _add(regular, requests)
    sidecars: dict[str, Decimal] = {}
    init_peak: dict[str, Decimal] = {}
    for container, requests in _container_requests(
        spec.initContainers, f"{field}.spec.initContainers"
    ):
        if container.restartPolicy == _SIDECAR_RESTART_POLICY:
            _add(regular, requests)
            _add(sidecars, requests)
            _max(init_peak, sidecars)
        else:
            candidate = dict(sidecars)
            _add(candidate, requests)
            _max(init_peak, candidate)
    effective = dict(regular)
    _max(effective, init_peak)
    pod_level = _defaulted(spec.resources, f"{field}.spec.resources")
    for name, value in pod_level.items():
        if name in _POD_LEVEL_RESOURCES or name.startswith("hugepages-"):
            effective[name] = value
    _add(effective, _parsed(spec.overhead, f"{field}.spec.overhead"))
    return effective


def pod_request(pod: PodObject, field: str = "Pod") -> PodRequest:
    """CPU and memory of :func:`pod_requests`, converted once (§4.2); absent counts as 0.

    A pod without requests needs nothing but a pod slot to pass NodeResourcesFit
    (kubernetes/kubernetes ``noderesources/fit.go``), so 0 here is the upstream meaning.

    Raises
    ------
    BadQuantity
        A quantity breaks the grammar or is negative.
    """
    requests = pod_requests(pod, field)
    return PodRequest(
        cpu_milli=milli_value(requests.get("cpu", Decimal(0))),
        memory_bytes=integer_value(requests.get("memory", Decimal(0))),
    )
