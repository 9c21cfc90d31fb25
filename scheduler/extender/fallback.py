"""``eams extender fallback``: gated pods go to kube-scheduler's default path when the extender
cannot release them (AR-5 on the gate integration).

The extender renews its Lease while it is ready (``heartbeat.py``). This process, a Deployment of
its own so that it outlives the extender's pod, reads that Lease every ``period_s`` and judges it
by when it last saw it change (:class:`~eams.kube.lease.LeaseObserver`). While the Lease holds it
does nothing else. Once it has lapsed — the extender crashed, hung, lost its watches, or never
started — it lists the profile's pending pods (``spec.schedulerName``, unbound, not finished) each
period and releases every one carrying the ``eams.io/market`` gate **unpinned**
(:func:`eams.kube.gates.release_patch` without a node: only that gate removed, the pod's uid as a
precondition), so kube-scheduler places it by its own filters and scores, with the extender
ignorable as on the extender path. AR-5 asks for default placement within 5 s: the Lease's 3 s
duration, a 0.5 s period and the release add to at most ~4 s.

A list, not a watch: the pods are read only while the extender is down, and then every period
(each read finds the pods created since). A release that meets 404 (the pod is gone) or 422
(another pod of that name now) is done with; any other failure is tried again at the next
period.

RBAC: ``leases`` ``get`` in the Lease's namespace; ``pods`` ``list``, ``patch`` cluster-wide
(``deploy/k3s/gate-fallback.yaml``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import msgspec

from eams.kube.gates import carries_market_gate, gate_names, release_patch
from eams.kube.lease import LeaseObserver, lease_ref
from eams.kube.names import STRATEGIC_MERGE_PATCH
from eams.kube.pods import pending_selector, pod_key

log = logging.getLogger(__name__)

PERIOD_S = 0.5
"""How often the Lease is read and, once it has lapsed, the gated pods listed (s)."""
NOT_FOUND, UNPROCESSABLE = 404, 422

_decode = msgspec.json.Decoder(dict[str, Any]).decode


class GateFallback:
    """Release the gated pods unpinned while the extender's Lease has lapsed (module docstring).

    Parameters
    ----------
    core : kubernetes.client.CoreV1Api
    coordination : kubernetes.client.CoordinationV1Api
    lease : str
        ``NAMESPACE/NAME`` of the extender's Lease.
    scheduler_name : str
        ``spec.schedulerName`` of the profile whose pods the extender releases.
    clock : callable
        Monotonic seconds (``time.monotonic``; tests pass their own).

    Raises
    ------
    ValueError
        ``lease`` is not ``NAMESPACE/NAME`` (:func:`~eams.kube.lease.lease_ref`).
    """

    def __init__(
        self,
        core: Any,
        coordination: Any,
        lease: str,
        scheduler_name: str,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.core = core
        self.coordination = coordination
        self.namespace, self.name = lease_ref(lease)
        self.scheduler_name = scheduler_name
        self.selector = pending_selector(scheduler_name)
        self.clock = clock
        self.observer = LeaseObserver(clock())
        self.lapsed = False
        self.released = 0
        """Pods released so far."""

    def run(self, stop: threading.Event, period_s: float = PERIOD_S) -> None:
        """:meth:`tick` every ``period_s`` until ``stop`` is set; a failed read is logged and
        tried again at the next period."""
        log.info("fallback: releasing the gated pods of %s while lease %s/%s is unchanged for "
                 "its duration (read every %.2f s)", self.scheduler_name,
                 self.namespace, self.name, period_s)  # fmt: skip
        while not stop.wait(period_s):
            try:
                self.tick()
            except Exception as exc:  # the API unreachable: try again, never stop
                log.warning("fallback: %s", exc)

    def tick(self) -> int:
        """Read the Lease; if it has lapsed, release the gated pods. Returns how many were
        released.

        Raises
        ------
        kubernetes.client.ApiException, urllib3.exceptions.HTTPError
            The Lease or the pods could not be read (not a 404 of the Lease).
        """
        now = self.clock()
        self.observer.observe(self._lease_spec(), now)
        lapsed = self.observer.expired(now)
        if lapsed != self.lapsed:
            self.lapsed = lapsed
            if lapsed:
                log.warning(
                    "lease %s/%s unchanged for %.1f s: the extender cannot release gated pods; "
                    "releasing them unpinned to kube-scheduler's default path",
                    self.namespace,
                    self.name,
                    self.observer.silent_s(now),
                )
            else:
                log.info("lease %s/%s renewed: the extender releases gated pods again",
                         self.namespace, self.name)  # fmt: skip
        if not lapsed:
            return 0
        released = sum(self._release(pod) for pod in self._gated_pods())
        self.released += released
        return released

    def _lease_spec(self) -> dict[str, Any] | None:
        try:
            answer = self.coordination.read_namespaced_lease(
                self.name, self.namespace, _preload_content=False
            )
        except Exception as exc:
            if getattr(exc, "status", None) == NOT_FOUND:
                return None
            raise
        try:
            return _decode(answer.data).get("spec") or {}
        finally:
            answer.release_conn()

    def _gated_pods(self) -> list[dict[str, Any]]:
        answer = self.core.list_pod_for_all_namespaces(
            field_selector=self.selector, _preload_content=False
        )
        try:
            items = _decode(answer.data).get("items") or []
        finally:
            answer.release_conn()
        return [p for p in items if carries_market_gate(gate_names(p.get("spec") or {}))]

    def _release(self, pod: dict[str, Any]) -> bool:
        meta = pod.get("metadata") or {}
        key = pod_key(meta.get("namespace"), meta.get("name"), meta.get("uid"))
        try:
            answer = self.core.patch_namespaced_pod(
                meta["name"],
                meta["namespace"],
                release_patch(None, meta.get("uid")),
                _content_type=STRATEGIC_MERGE_PATCH,
                _preload_content=False,
            )
            answer.release_conn()
        except Exception as exc:
            status = getattr(exc, "status", None)
            if status not in (NOT_FOUND, UNPROCESSABLE):
                log.warning("pod %s: release failed (tried again): %s", key, exc)
            return False
        log.info("pod %s: released unpinned (the extender's lease has lapsed)", key)
        return True
