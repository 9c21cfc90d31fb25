"""``eams extender fallback``: gated pods go to kube-scheduler's default path when the extender
cannot release them (AR-5 on the gate integration).

The extender renews its Lease while it is ready (``heartbeat.py``). This process, a Deployment of
its own so that it outlives the extender's pod, reads that Lease every ``period_s`` and judges it
by when it last saw it change (:class:`~eams.kube.lease.LeaseObserver`). Once it has lapsed — the
extender crashed, hung, lost its watches, or never started — it lists the profile's pending pods
(``spec.schedulerName``, unbound, not finished) each period and releases every one the market's
gate alone holds **unpinned** (:func:`eams.kube.gates.release_patch` without a node: only that
gate removed), oldest first, over :data:`LANES` connections, so kube-scheduler places it by its
own filters and scores, with the extender ignorable as on the extender path. AR-5 asks for
default placement within 5 s: the Lease's 3 s, a 0.5 s period and the release.

While the Lease holds, a **backstop**: every ``stuck_after_s / 2`` the pending pods are listed
too, and a pod the market's gate alone has held for ``stuck_after_s`` (seen so at two lists that
far apart: released between one and two ``stuck_after_s`` after it was first held) is released
the same way — a release the extender gave up on (``gates.py``, after
:data:`~.gates.MAX_ATTEMPTS`, ~51 s of retries) or a pod it never saw must not wait for ever.

Each release carries the pod's uid and ``resourceVersion`` as listed: a pod that changed since
(the extender released or pinned it meanwhile) answers 409 and is left as it is; 404 (gone) and
422 (another pod of that name) end it too; any other failure is tried again at the next list.
A list, not a watch: the pods are read only while the extender is down and, as a backstop,
rarely.

RBAC: ``leases`` ``get`` in the Lease's namespace; ``pods`` ``list``, ``patch`` cluster-wide
(``deploy/k3s/gate-fallback.yaml``); checked once at start (:meth:`GateFallback.check_access`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge

from eams.kube.gates import gate_names, held_by_another_gate, release_patch
from eams.kube.lease import REQUEST_TIMEOUT_S, LeaseObserver, lease_ref, read_lease_spec
from eams.kube.names import CONFLICT, MARKET_GATE, NOT_FOUND, STRATEGIC_MERGE_PATCH, UNPROCESSABLE
from eams.kube.pods import pending_selector, pod_key
from eams.kube.raw import read_object
from eams.scheduler.extender.errors import ExtenderConfigError

log = logging.getLogger(__name__)

PERIOD_S = 0.5
"""How often the Lease is read and, once it has lapsed, the gated pods listed (s)."""
STUCK_AFTER_S = 120.0
"""A pod the market's gate alone holds this long is released whatever the Lease says (s): over
the extender's ~51 s of release retries and its window."""
LANES = 8
"""Releases sent at once, each on a connection of its own (kube-apiserver answers one
connection's requests in turn: ``gates.py``)."""
LIST_TIMEOUT_S = (1.0, 10.0)
"""(connect, read) timeout of a pod list (s): thousands of pending pods take a while to send."""
FORBIDDEN = 403


class FallbackMetrics:
    """The fallback's Prometheus metrics, on a registry of its own (``--metrics-port``)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.releases = Counter(
            "eams_gate_fallback_releases_total",
            "Releases of gated pods by the fallback: why (lapsed: the extender's Lease; stuck: "
            "held past --stuck-after-s) and how they ended",
            ["reason", "outcome"],
            registry=self.registry,
        )
        self.lapsed = Gauge(
            "eams_gate_fallback_lease_lapsed",
            "1 while the extender's Lease has lapsed (the fallback releases gated pods)",
            registry=self.registry,
        )
        self.last_read = Gauge(
            "eams_gate_fallback_last_read_timestamp_seconds",
            "When the Lease was last read (Unix time): a stalled fallback stops moving it",
            registry=self.registry,
        )


class GateFallback:
    """Release gated pods unpinned while the extender cannot (module docstring).

    Parameters
    ----------
    core : kubernetes.client.CoreV1Api
    coordination : kubernetes.client.CoordinationV1Api
    lease : str
        ``NAMESPACE/NAME`` of the extender's Lease.
    scheduler_name : str
        ``spec.schedulerName`` of the profile whose pods the extender releases.
    stuck_after_s : float
        The backstop's age, s (:data:`STUCK_AFTER_S`).
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
        stuck_after_s: float = STUCK_AFTER_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.core = core
        self.coordination = coordination
        self.namespace, self.name = lease_ref(lease)
        self.scheduler_name = scheduler_name
        self.selector = pending_selector(scheduler_name)
        self.stuck_after_s = stuck_after_s
        self.clock = clock
        self.metrics = FallbackMetrics()
        self.observer = LeaseObserver(clock())
        self.lapsed = False
        self.released = 0
        """Pods released so far."""
        self._gated_since: dict[str, float] = {}  # pod uid → first list that saw it held
        self._backstop_at = clock() + stuck_after_s / 2
        self._lanes = ThreadPoolExecutor(LANES, thread_name_prefix="release")
        self._last_failure = ""

    def check_access(self) -> None:
        """Read the Lease and list one pending pod, as the loop will.

        Raises
        ------
        ExtenderConfigError
            kube-apiserver refused either (403: the account lacks ``leases get`` in the Lease's
            namespace or ``pods list``; ``deploy/k3s/gate-fallback.yaml`` grants both), or could
            not be reached; the message names what and why.
        """
        what = f"lease {self.namespace}/{self.name}"
        try:
            read_lease_spec(self.coordination, self.namespace, self.name)
            what = "the pending pods"
            self.core.list_pod_for_all_namespaces(
                field_selector=self.selector, limit=1, _request_timeout=LIST_TIMEOUT_S
            )
        except Exception as exc:
            status = getattr(exc, "status", None)
            why = "forbidden: check the fallback's RBAC" if status == FORBIDDEN else str(exc)
            raise ExtenderConfigError(f"cannot read {what}: {' '.join(why.split())}") from exc

    def run(self, stop: threading.Event, period_s: float = PERIOD_S) -> None:
        """:meth:`tick` every ``period_s`` until ``stop`` is set; a failure is logged (once
        while it repeats) and tried again at the next period."""
        log.info("fallback: releasing the gated pods of %s while lease %s/%s is unchanged for "
                 "its duration (read every %.2f s), and any held %.0f s",
                 self.scheduler_name, self.namespace, self.name, period_s,
                 self.stuck_after_s)  # fmt: skip
        while not stop.wait(period_s):
            try:
                self.tick()
                self._last_failure = ""
            except Exception as exc:  # the API unreachable: try again, never stop
                failure = " ".join(str(exc).split())
                if failure != self._last_failure:
                    log.warning("fallback: %s (tried again every %.2f s)", failure, period_s)
                self._last_failure = failure
        self._lanes.shutdown(wait=False)

    def tick(self) -> int:
        """Read the Lease; release the gated pods if it has lapsed, and the stuck ones when the
        backstop is due. Returns how many were released.

        Raises
        ------
        kubernetes.client.ApiException, urllib3.exceptions.HTTPError
            The Lease or the pods could not be read (not a 404 of the Lease).
        """
        spec = read_lease_spec(self.coordination, self.namespace, self.name)
        now = self.clock()  # after the read: a slow read does not age the Lease
        self.metrics.last_read.set_to_current_time()
        self.observer.observe(spec, now)
        self._note(self.observer.expired(now), now)
        if self.lapsed:
            return self._release(self._held_pods(), "lapsed")
        if now < self._backstop_at:
            return 0
        self._backstop_at = now + self.stuck_after_s / 2
        held = self._held_pods()
        seen = {p["metadata"]["uid"]: p for p in held}
        self._gated_since = {uid: self._gated_since.get(uid, now) for uid in seen}
        stuck = [p for uid, p in seen.items() if now - self._gated_since[uid] >= self.stuck_after_s]
        return self._release(stuck, "stuck")

    def _note(self, lapsed: bool, now: float) -> None:
        if lapsed == self.lapsed:
            return
        self.lapsed = lapsed
        self.metrics.lapsed.set(1 if lapsed else 0)
        if lapsed:
            log.warning(
                "lease %s/%s unchanged for %.1f s or let go: the extender cannot release gated "
                "pods; releasing them unpinned to kube-scheduler's default path",
                self.namespace,
                self.name,
                self.observer.silent_s(now),
            )
        else:
            log.info("lease %s/%s renewed: the extender releases gated pods again",
                     self.namespace, self.name)  # fmt: skip

    def _held_pods(self) -> list[dict[str, Any]]:
        """The pending pods of the profile the market's gate alone holds, oldest first."""
        answer = self.core.list_pod_for_all_namespaces(
            field_selector=self.selector, _preload_content=False, _request_timeout=LIST_TIMEOUT_S
        )
        items = read_object(answer).get("items") or []
        held = []
        for pod in items:
            names = gate_names(pod.get("spec") or {})
            if MARKET_GATE in names and not held_by_another_gate(names):
                held.append(pod)
        return sorted(held, key=lambda p: p["metadata"].get("creationTimestamp") or "")

    def _release(self, pods: list[dict[str, Any]], reason: str) -> int:
        outcomes = list(self._lanes.map(self._release_one, pods))
        for outcome in outcomes:
            self.metrics.releases.labels(reason, outcome).inc()
        released = outcomes.count("released")
        self.released += released
        if released:
            log.info("released %d gated pods unpinned (%s)", released, reason)
        return released

    def _release_one(self, pod: dict[str, Any]) -> str:
        meta = pod["metadata"]
        key = pod_key(meta.get("namespace"), meta.get("name"), meta.get("uid"))
        body = release_patch(None, meta.get("uid"), meta.get("resourceVersion"))
        try:
            answer = self.core.patch_namespaced_pod(
                meta["name"],
                meta["namespace"],
                body,
                _content_type=STRATEGIC_MERGE_PATCH,
                _preload_content=False,
                _request_timeout=REQUEST_TIMEOUT_S,
            )
            answer.drain_conn()  # the pod as patched, unread: off the connection before reuse
            answer.release_conn()
        except Exception as exc:
            status = getattr(exc, "status", None)
            if status == CONFLICT:
                return "changed"  # released or pinned since the list: left as it is
            if status in (NOT_FOUND, UNPROCESSABLE):
                return "gone"
            log.warning("pod %s: release failed (tried again): %s", key, exc)
            return "error"
        log.info("pod %s: released unpinned", key)
        return "released"
