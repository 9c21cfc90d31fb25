"""A process's liveness as a ``coordination.k8s.io/v1`` Lease: renewed by the process, judged
by another.

The holder writes ``spec.renewTime`` (a ``MicroTime``) every :data:`RENEW_PERIOD_S` while it
is able to do its job (:func:`renew_lease`, one JSON merge patch; the Lease is created on its
first renewal). An observer in another process judges it as client-go's leader election does
(``k8s.io/client-go/tools/leaderelection``, ``observedTime``): by when *it* last saw the record
change on its own monotonic clock, never by comparing the holder's ``renewTime`` with its own
wall clock, so the two hosts' clocks need not agree (:class:`LeaseObserver`). A Lease that has
not changed for its ``spec.leaseDurationSeconds``, or is missing for as long, has expired; one
whose holder let it go on a clean stop (:func:`release_lease`: ``holderIdentity`` empty, as
client-go's ``ReleaseOnCancel`` writes it) has expired at once.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any, Final

from eams.kube.names import MERGE_PATCH, NOT_FOUND
from eams.kube.raw import read_object

RENEW_PERIOD_S: Final = 1.0
"""How often a holder renews its Lease."""
LEASE_DURATION_S: Final = 3
"""``spec.leaseDurationSeconds`` a holder writes: three renewals may be missed (a loaded host,
a slow API write) before the observer calls it down."""
REQUEST_TIMEOUT_S: Final = (1.0, 2.0)
"""(connect, read) timeout of every Lease request (s): a renewal or a read that hangs must fail
well inside the Lease's duration, not block the next one."""
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def lease_ref(text: str) -> tuple[str, str]:
    """``(namespace, name)`` of a Lease written ``NAMESPACE/NAME``.

    Raises
    ------
    ValueError
        Not two parts, or a namespace that is not a DNS-1123 label (≤ 63 characters) or a name
        that is not a DNS-1123 subdomain (≤ 253), as kube-apiserver requires; the message says
        which.
    """
    namespace, _, name = text.partition("/")
    if not _ or "/" in name:
        raise ValueError(f"{text!r} is not NAMESPACE/NAME")
    if len(namespace) > 63 or not _DNS_LABEL.fullmatch(namespace):
        raise ValueError(f"{text!r}: namespace {namespace!r} is not a DNS-1123 label")
    if len(name) > 253 or not _DNS_SUBDOMAIN.fullmatch(name):
        raise ValueError(f"{text!r}: name {name!r} is not a DNS-1123 subdomain")
    return namespace, name


def micro_time(at: datetime) -> str:
    """``at`` as a Kubernetes ``MicroTime``: RFC 3339 in UTC with microseconds
    (``2026-12-07T03:10:00.123456Z``)."""
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def lease_document(
    namespace: str, name: str, holder: str, duration_s: int, now: datetime
) -> dict[str, Any]:
    """The ``v1.Lease`` ``namespace/name`` held by ``holder``, renewed at ``now``."""
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "holderIdentity": holder,
            "leaseDurationSeconds": duration_s,
            "renewTime": micro_time(now),
        },
    }


def renew_lease(
    coordination: Any,
    namespace: str,
    name: str,
    holder: str,
    duration_s: int = LEASE_DURATION_S,
    now: datetime | None = None,
) -> None:
    """Write ``spec.renewTime`` of Lease ``namespace/name`` (one merge patch); create it when
    it is missing.

    Parameters
    ----------
    coordination : kubernetes.client.CoordinationV1Api
    namespace, name : str
    holder : str
        ``spec.holderIdentity`` (the process: its pod's name, or host and pid).
    duration_s : int
        ``spec.leaseDurationSeconds``: how long the observer waits for a renewal.
    now : datetime, optional
        The renewal's time (this host's wall clock by default).

    Raises
    ------
    kubernetes.client.ApiException, urllib3.exceptions.HTTPError
        The write was refused for anything but a missing Lease (RBAC: ``leases`` ``patch`` and
        ``create`` in ``namespace``), the Lease could not be created, or a request timed out
        (:data:`REQUEST_TIMEOUT_S`).
    """
    document = lease_document(namespace, name, holder, duration_s, now or datetime.now(UTC))
    try:
        coordination.patch_namespaced_lease(
            name,
            namespace,
            {"spec": document["spec"]},
            _content_type=MERGE_PATCH,
            _request_timeout=REQUEST_TIMEOUT_S,
        )
    except Exception as exc:
        if getattr(exc, "status", None) != NOT_FOUND:
            raise
        coordination.create_namespaced_lease(
            namespace, document, _request_timeout=REQUEST_TIMEOUT_S
        )


def release_lease(coordination: Any, namespace: str, name: str) -> None:
    """Let Lease ``namespace/name`` go on a clean stop: ``spec.holderIdentity`` emptied (one merge
    patch), which an observer takes as expired at once.

    Raises
    ------
    kubernetes.client.ApiException, urllib3.exceptions.HTTPError
        The write was refused or timed out (:data:`REQUEST_TIMEOUT_S`).
    """
    coordination.patch_namespaced_lease(
        name,
        namespace,
        {"spec": {"holderIdentity": ""}},
        _content_type=MERGE_PATCH,
        _request_timeout=REQUEST_TIMEOUT_S,
    )


def read_lease_spec(coordination: Any, namespace: str, name: str) -> dict[str, Any] | None:
    """``spec`` of Lease ``namespace/name`` as JSON; ``None`` when there is no such Lease.

    Raises
    ------
    kubernetes.client.ApiException, urllib3.exceptions.HTTPError
        Any answer but 200 or 404 (403: no ``get`` on it), or a timeout (:data:`REQUEST_TIMEOUT_S`).
    """
    try:
        answer = coordination.read_namespaced_lease(
            name, namespace, _preload_content=False, _request_timeout=REQUEST_TIMEOUT_S
        )
    except Exception as exc:
        if getattr(exc, "status", None) == NOT_FOUND:
            return None
        raise
    return read_object(answer).get("spec") or {}


class LeaseObserver:
    """Whether a Lease is held, judged by when this process last saw it change (module docstring).

    Parameters
    ----------
    now_s : float
        The observer's start on its monotonic clock (s): a Lease never seen is given one
        :data:`LEASE_DURATION_S` from then, as a new client-go candidate gives one.
    """

    def __init__(self, now_s: float) -> None:
        self._record: tuple[str, str] | None = None
        self._observed_s = now_s
        self._duration_s = float(LEASE_DURATION_S)
        self._released = False

    def observe(self, spec: dict[str, Any] | None, now_s: float) -> None:
        """Take the Lease's ``spec`` as read at ``now_s`` (``None``: no such Lease)."""
        if spec is None:
            return
        record = (str(spec.get("holderIdentity") or ""), str(spec.get("renewTime") or ""))
        duration = spec.get("leaseDurationSeconds")
        if isinstance(duration, int) and duration > 0:
            self._duration_s = float(duration)
        if record != self._record:
            self._record, self._observed_s = record, now_s
        self._released = not record[0]

    def silent_s(self, now_s: float) -> float:
        """Seconds since the Lease was last seen to change (or since the observer started)."""
        return now_s - self._observed_s

    def expired(self, now_s: float) -> bool:
        """True once the Lease has not changed for its ``leaseDurationSeconds``, or at once
        when its holder let it go (an empty ``holderIdentity``: :func:`release_lease`)."""
        return self._released or self.silent_s(now_s) > self._duration_s
