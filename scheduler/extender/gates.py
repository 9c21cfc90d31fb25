"""The gate integration (issue 32): the market places gated pods without kube-scheduler asking.

A pod created with the ``eams.io/market`` scheduling gate (:mod:`eams.kube.gates`) is out of
kube-scheduler's queue until the extender releases it, so kube-scheduler spends nothing on it
meanwhile. The pending-pod watch hands it to the batch like any pod of the profile, with its
candidates the awake nodes kube-scheduler's static filters would pass (its ``nodeSelector``,
its tolerations against every ``NoSchedule``/``NoExecute`` taint, the cordon:
:func:`eams.kube.admission.admits_now`); the batch clears W after its first pod came (study §4:
every pod of the window cleared together, not one per kube-scheduler cycle), and each cleared
row is released here by one strategic merge patch that removes the gate and pins the pod to its
cleared node (a required node affinity term ``metadata.name In [NODE]``). kube-scheduler then
filters that one node and binds it without scoring and without calling the extender.

* **Released unpinned**, kube-scheduler deciding through the extender as for any pod: a gated
  pod with constraints the market does not judge (``spec.affinity``,
  ``spec.topologySpreadConstraints``: at once, without a clearing), a pod the market
  cleared nowhere (no node fit or bid), and in shadow mode every one once cleared (the record
  keeps what active would have pinned), so a gated pod never waits on a neutral extender.
* **Sent** from :data:`LANES` background threads, each over a keep-alive connection of its own
  (:class:`~.annotator.PodAnnotator` with this body, no gathering delay, a pod always in the same
  lane), so the event loop only queues: kube-apiserver answers one connection's requests in
  turn, so the releases' share of it under load grows with their connections (300 pods/s
  offered at 1,000 nodes, ``benchmarks/kube_pace.py``, 6 Dec: one connection bound 32 pods/s,
  four 65, sixteen 100, against 84–88 through the extender path in the same runs).
* **With the decision record's annotations** (``--record``, annotating): a pod's ``eams.io/*``
  annotations go in its release patch, built from its batch's records at the clearing
  (:meth:`~.decisions.Decisions.release_annotations`), and are not written again once it is
  bound: every write of a pod costs kube-apiserver and etcd ~4.5 ms of CPU whatever it carries
  (measured: a strategic merge or a JSON merge patch alike, 3.6 ms kube-apiserver and 0.9 ms
  etcd a patch, 500 patches, no watches), so a release that carried them alone would add one.
* **A failed release** (an HTTP error or a transport failure) is cleared again and sent again,
  up to :data:`ATTEMPTS` releases in all; on a 422 (the pin refused: the pod's spec changed
  meanwhile) the next one is unpinned; a pod the API server no longer has (404) is dropped;
  after the last, the pod keeps its gate and a warning names it. Counted in
  ``eams_extender_gate_releases_total{outcome}``.
* **The floor taint waits for the pinned pods**: a node with a pinned pod not yet bound is not
  tainted ``eams.io/power-headroom-low`` until that pod is bound or :data:`PIN_HOLD_S` passed
  (:meth:`GateReleaser.holding`): the pin cannot be undone once the gate is gone, and kube-
  scheduler would refuse the pinned pod a node tainted after the clearing counted it. Any other
  taint or cordon put on the node in those milliseconds leaves the pod pending until it goes,
  as it would a pod bound there.
* The decision record judges a pinned pod's binding against its clearing as if kube-scheduler
  had asked (:meth:`~.decisions.Decisions.scored` at release).

RBAC: pods ``patch`` (``deploy/k3s/rbac.yaml``).
"""

from __future__ import annotations

import logging
import time
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, Counter

from eams.kube.gates import release_patch
from eams.scheduler.extender.annotator import PodAnnotator, PodPatchSender
from eams.scheduler.extender.pending import PendingPod
from eams.scheduler.extender.rows import Cleared
from eams.scheduler.record import Placement, annotation_patch
from eams.scheduler.record.schema import PodRef

log = logging.getLogger(__name__)

ATTEMPTS = 3
"""Releases of one pod tried at most (the first and two more after a failure)."""
PIN_HOLD_S = 30.0
"""A pinned pod not bound after this long no longer keeps the floor taint off its node, s."""
MAX_RELEASES_PER_S = 1000.0
"""Releases sent per second at most, all lanes together (above any pace kube-scheduler binds at:
~200 pods/s without extenders on the 2-core test VM, ``benchmarks/kube_pace.py``)."""
LANES = 16
"""Release threads, each with its own connection (module docstring); idle ones cost nothing."""
NOT_FOUND, UNPROCESSABLE = 404, 422


@dataclass(frozen=True, slots=True)
class Release:
    """One pod's release: ``node`` is where it is pinned (``None``: unpinned); ``source`` is
    the pending pod, cleared again after a failed release; ``attempt`` counts from 1;
    ``decision`` is its placement record when its annotations go with the release."""

    pod: PodRef
    node: str | None
    source: PendingPod
    attempt: int = 1
    decision: Placement | None = None


def _body(release: Release) -> dict[str, Any]:
    body = release_patch(release.node)
    if release.decision is not None:
        body.update(annotation_patch(release.decision))
    return body


class GateReleaser:
    """Releases gated pods once cleared, and remembers the pinned ones until they are bound.

    Parameters
    ----------
    connect : callable
        ``connect()`` → a :data:`PodPatchSender` of strategic merge patches over a connection
        of its own (``annotator.api_sender``); called once per lane.
    registry : CollectorRegistry
        Where ``eams_extender_gate_releases_total{outcome}`` is registered.
    retry : callable
        ``retry(pod)``: clear the :class:`PendingPod` of a failed release again
        (``Extender.retry_release``); called on the event loop.
    on_loop : callable
        ``on_loop(action)``: run ``action()`` on the event loop, callable from any thread
        (``watch.py``'s hand-over); a failure's bookkeeping goes through it, so every method but
        the sending threads' runs on the loop and no lock is needed.
    clock : callable
        Epoch seconds (the hold of :meth:`holding`).
    """

    def __init__(
        self,
        connect: Callable[[], PodPatchSender],
        registry: CollectorRegistry,
        retry: Callable[[PendingPod], None],
        on_loop: Callable[[Callable[[], None]], None],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.outcomes = Counter(
            "eams_extender_gate_releases",
            "eams.io/market gate releases, by outcome: pinned, unpinned (sent); ok, error, "
            "dropped (the patches' answers); retried, gone (404), abandoned (kept gated).",
            ["outcome"],
            registry=registry,
        )
        self._retry, self._on_loop, self._clock = retry, on_loop, clock
        self._attempts: dict[str, int] = {}  # pod key → attempt of its last release
        self._pinned: dict[str, tuple[str, float]] = {}  # pod key → (node, released at, s)
        self._lanes = [
            PodAnnotator(
                connect(),
                self.outcomes,
                max_per_s=MAX_RELEASES_PER_S / LANES,
                body=_body,
                gather_s=0.0,
                on_failed=lambda failed: self._on_loop(lambda: self._failed(failed)),
            )
            for _ in range(LANES)
        ]

    def _submit(self, release: Release) -> bool:
        lane = self._lanes[zlib.crc32(release.pod.key.encode()) % LANES]
        return lane.submit(release)

    def release(self, pod: PendingPod, node: str | None, decision: Placement | None = None) -> bool:
        """Queue ``pod``'s release, pinned to ``node`` (``None``: unpinned), with
        ``decision``'s annotations if given; ``False`` when the pod cannot be patched by name
        (no ``namespace/name`` key) or the queue is full."""
        namespace, _, name = pod.key.partition("/")
        if not name or pod.key.startswith("uid:"):
            return False
        attempt = self._attempts.get(pod.key, 0) + 1
        self._attempts[pod.key] = attempt
        if node is not None:
            self._pinned[pod.key] = (node, self._clock())
        self.outcomes.labels("pinned" if node is not None else "unpinned").inc()
        ref = PodRef(namespace=namespace, name=name, uid=pod.uid)
        return self._submit(Release(ref, node, pod, attempt, decision))

    @staticmethod
    def gated(rows: list[Cleared]) -> list[Cleared]:
        """The rows of gated pods (the ones :meth:`release_rows` releases)."""
        return [row for row in rows if row.source is not None and row.source.gated]

    def release_rows(
        self,
        rows: list[Cleared],
        pin: bool = True,
        decisions: Mapping[str, Placement] | None = None,
    ) -> list[str]:
        """Release each gated pod of a clearing's ``rows`` onto its cleared node (unpinned
        where it cleared nowhere, and every one without ``pin``: shadow mode), each with its
        placement record of ``decisions`` as annotations when there is one; returns the keys
        of the pods pinned."""
        pinned = []
        for row in self.gated(rows):
            pod = row.source
            assert pod is not None  # gated() keeps rows with a source
            node = row.node if pin and pod.pinnable else None
            decision = None if decisions is None else decisions.get(pod.key)
            if self.release(pod, node, decision) and node is not None:
                pinned.append(pod.key)
        return pinned

    def bound(self, key: str) -> None:
        """The pod was bound or deleted: it no longer holds its node's taint off."""
        self._pinned.pop(key, None)
        self._attempts.pop(key, None)

    def holding(self) -> set[str]:
        """Nodes with a pinned pod not bound yet, released less than :data:`PIN_HOLD_S` ago."""
        now_s = self._clock()
        expired = [k for k, (_, at_s) in self._pinned.items() if now_s - at_s > PIN_HOLD_S]
        for key in expired:
            del self._pinned[key]
        return {node for node, _ in self._pinned.values()}

    def close(self) -> None:
        """Send what waits, then stop the threads (at shutdown)."""
        for lane in self._lanes:
            lane.close()

    def _failed(self, failed: list[tuple[Release, int | Exception]]) -> None:
        """Releases that failed (on the event loop, :attr:`_on_loop`)."""
        for release, status in failed:
            if status == NOT_FOUND:
                self.outcomes.labels("gone").inc()
            elif release.attempt >= ATTEMPTS:
                self.outcomes.labels("abandoned").inc()
                log.warning(
                    "pod %s keeps its eams.io/market gate: %d releases failed, the last: %s",
                    release.pod.key,
                    release.attempt,
                    status,
                )
            elif status == UNPROCESSABLE and release.node is not None:
                # the pin itself may be what is refused: the next try lets kube-scheduler decide
                self.outcomes.labels("retried").inc()
                self._pinned.pop(release.pod.key, None)
                self._attempts[release.pod.key] = release.attempt + 1
                self._submit(
                    Release(
                        release.pod, None, release.source, release.attempt + 1, release.decision
                    )
                )
            else:
                self.outcomes.labels("retried").inc()
                self._retry(release.source)
