"""The gate integration (issue 32): the market places gated pods without kube-scheduler asking.

A pod created with the ``eams.io/market`` scheduling gate (:mod:`eams.kube.gates`) is out of
kube-scheduler's queue until the extender releases it, so kube-scheduler spends nothing on it
meanwhile. The pending-pod watch hands it to the batch like any pod of the profile (once no
other controller's gate holds it: :func:`eams.kube.gates.held_by_another_gate`), with its
candidates the awake nodes kube-scheduler's static filters would pass (its ``nodeSelector``,
its tolerations against every ``NoSchedule``/``NoExecute`` taint, the cordon:
:func:`eams.kube.admission.admits_now`); the batch clears W after its first pod came (study §4:
every pod of the window cleared together, not one per kube-scheduler cycle), and each cleared
row is released here by one strategic merge patch that removes the gate and pins the pod to its
cleared node (a required node affinity term ``metadata.name In [NODE]``). kube-scheduler then
filters that one node and binds it without scoring and, with no ``filterVerb`` configured (the
shipped profile), without calling the extender.

* **Pinned only if still admitted at release** (``service.py``): the cleared node as the watch
  has it now admits the pod (taints, cordon, labels) and is not under the headroom floor
  counting every other reservation (what ``/filter`` would say); otherwise, and for a gated pod
  :func:`eams.kube.gates.can_pin` refuses (affinity, volumes, host ports, … : at once, without a
  clearing), a pod the market cleared nowhere, and every one in shadow mode (the record keeps
  what active would have pinned), the pod is **released unpinned**: kube-scheduler places it by
  its own filters, through the extender as any pod. Gated pods seen before the nodes are listed
  (the extender blind) wait a window more instead.
* **Sent** from :data:`LANES` background threads, each over a keep-alive connection of its own
  (:class:`~.annotator.PodAnnotator` with this body, no gathering delay, a pod always in the same
  lane), so the event loop only queues: kube-apiserver answers one connection's requests in
  turn, so the releases' share of it under load grows with their connections (300 pods/s
  offered at 1,000 nodes, ``benchmarks/kube_pace.py``, 6 Dec: one connection bound 32 pods/s,
  four 65, sixteen 100–127, against 80–88 through the extender path in the same runs).
* **With the decision record's annotations** (``--record``, annotating): a pod's ``eams.io/*``
  annotations go in its release patch, built from its batch's records at the clearing
  (:meth:`~.decisions.Decisions.release_annotations`), and are not written again once it is
  bound: every write of a pod costs kube-apiserver and etcd ~4.5 ms of CPU whatever it carries
  (measured: a strategic merge or a JSON merge patch alike, 3.6 ms kube-apiserver and 0.9 ms
  etcd a patch, 500 patches, no watches), so a release that carried them alone would add one.
* **The pod's uid** goes in every release: another pod of the same name (a StatefulSet's, made
  again) refuses it (422).
* **A failed release** is sent again, on the event loop, after :func:`backoff_s` (0.2 s
  doubling to 30 s): the first time as it was, then unpinned (the pin may have gone stale); a
  422 is sent once more unpinned (the pin refused, or the spec changed), and a second 422 ends
  it (``refused``: another pod of that name, or a release kube-apiserver will not take); a 404
  ends it (``gone``); so does the pod's binding or deletion meanwhile. After
  :data:`MAX_ATTEMPTS` the pod keeps its gate and a warning names it (``abandoned``). A release
  the full queue dropped is retried the same way. Counted in
  ``eams_extender_gate_releases_total{outcome}``.
* **A clearing that fails** releases its gated pods unpinned (kube-scheduler would never ask
  about them).
* **The floor taint waits for the pinned pods**: a node with a pinned pod not yet bound is not
  tainted ``eams.io/power-headroom-low`` until that pod is bound or :data:`PIN_HOLD_S` passed
  (:meth:`GateReleaser.holding`): the pin cannot be undone once the gate is gone, and kube-
  scheduler would refuse the pinned pod a node tainted after the clearing counted it (a pinned
  pod binds within ~10–100 ms of its release here). Another taint or a cordon put on the node
  between the release and the binding leaves the pod pending until it goes.
* The decision record judges a pinned pod's binding against its clearing as if kube-scheduler
  had asked (:meth:`~.decisions.Decisions.scored` at release).

RBAC: pods ``patch`` (``deploy/k3s/rbac.yaml``).
"""

from __future__ import annotations

import functools
import logging
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from prometheus_client import CollectorRegistry, Counter

from eams.kube.gates import release_patch
from eams.kube.names import NOT_FOUND, UNPROCESSABLE
from eams.scheduler.extender.annotator import PodAnnotator, PodPatchSender
from eams.scheduler.extender.pending import PendingPod
from eams.scheduler.record import Placement, annotation_patch
from eams.scheduler.record.schema import PodRef

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 8
"""Releases of one pod sent at most (the first and seven more after failures, ~25 s)."""
PIN_HOLD_S = 30.0
"""A pinned pod not bound after this long no longer keeps the floor taint off its node, s."""
MAX_RELEASES_PER_S = 1000.0
"""Releases sent per second at most, all lanes together (above any pace kube-scheduler binds at:
~200 pods/s without extenders on the 2-core test VM, ``benchmarks/kube_pace.py``)."""
LANES = 16
"""Release threads, each with its own connection (module docstring); idle ones cost nothing."""
DROPPED = "dropped"
"""The status of a release the full queue did not take."""


def backoff_s(attempt: int) -> float:
    """Wait before sending release ``attempt + 1`` after release ``attempt`` failed, s:
    0.2 s doubling, at most 30 s."""
    return float(min(30.0, 0.2 * 2 ** (attempt - 1)))


@dataclass(frozen=True, slots=True)
class Release:
    """One pod's release: ``node`` is where it is pinned (``None``: unpinned); ``attempt``
    counts from 1; ``decision`` is its placement record when its annotations go with it."""

    pod: PodRef
    node: str | None
    attempt: int = 1
    decision: Placement | None = None


def _body(release: Release) -> dict[str, Any]:
    body = release_patch(release.node, release.pod.uid)
    if release.decision is not None:
        body["metadata"] = {
            **body.get("metadata", {}),
            **annotation_patch(release.decision)["metadata"],
        }
    return body


class GateReleaser:
    """Releases gated pods once cleared, sends failed releases again, and remembers the
    pinned pods until they are bound.

    Every method runs on the event loop; the sending threads hand their failures over through
    ``on_loop``.

    Parameters
    ----------
    connect : callable
        ``connect()`` → a :data:`PodPatchSender` of strategic merge patches over a connection
        of its own (``annotator.api_sender``); called once per lane.
    registry : CollectorRegistry
        Where ``eams_extender_gate_releases_total{outcome}`` is registered.
    on_loop : callable
        ``on_loop(action)``: run ``action()`` on the event loop, callable from any thread
        (``watch.py``'s hand-over).
    later : callable
        ``later(delay_s, action)``: run ``action()`` on the event loop ``delay_s`` from now
        (``loop.call_later``).
    clock : callable
        Epoch seconds (the hold of :meth:`holding`).
    """

    def __init__(
        self,
        connect: Callable[[], PodPatchSender],
        registry: CollectorRegistry,
        on_loop: Callable[[Callable[[], None]], None],
        later: Callable[[float, Callable[[], None]], object],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.outcomes = Counter(
            "eams_extender_gate_releases",
            "eams.io/market gate releases, by outcome: pinned, unpinned (sent); ok, error, "
            "dropped (the patches' answers); retried, gone (404), refused (422 twice), "
            "abandoned (kept gated).",
            ["outcome"],
            registry=registry,
        )
        self.later, self._clock = later, clock
        self._live: dict[str, str | None] = {}  # pod key → uid, released and not bound yet
        self._pinned: dict[str, tuple[str, float]] = {}  # pod key → (node, released at, s)
        self._lanes = [
            PodAnnotator(
                connect(),
                self.outcomes,
                max_per_s=MAX_RELEASES_PER_S / LANES,
                body=_body,
                gather_s=0.0,
                on_failed=lambda failed: on_loop(lambda: self._failed(failed)),
                thread_name=f"eams-gate-release-{lane}",
            )
            for lane in range(LANES)
        ]

    def release(self, pod: PendingPod, node: str | None, decision: Placement | None = None) -> None:
        """Release ``pod``, pinned to ``node`` (``None``: unpinned), with ``decision``'s
        annotations if given. A pod without a ``namespace/name`` key cannot be patched by name
        and is left alone (logged)."""
        namespace, _, name = pod.key.partition("/")
        if not name:  # an unnamed pod's key is uid:UID
            log.warning("gated pod %s has no name: not released", pod.key)
            return
        self._live[pod.key] = pod.uid
        self.outcomes.labels("pinned" if node is not None else "unpinned").inc()
        self._send(Release(PodRef(namespace=namespace, name=name, uid=pod.uid), node, 1, decision))

    def _send(self, release: Release) -> None:
        key = release.pod.key
        if release.node is not None:
            self._pinned[key] = (release.node, self._clock())
        else:
            self._pinned.pop(key, None)
        lane = self._lanes[zlib.crc32(key.encode()) % LANES]
        if not lane.submit(release):
            self._failed([(release, DROPPED)])

    def bound(self, key: str) -> None:
        """The pod was bound or deleted: no release of it is sent again, and it no longer holds
        its node's taint off."""
        self._pinned.pop(key, None)
        self._live.pop(key, None)

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
            lane.close(timeout_s=1.0)

    def _failed(self, failed: Sequence[tuple[Release, int | Exception | str]]) -> None:
        """Releases that failed (module docstring), on the event loop."""
        for release, status in failed:
            key = release.pod.key
            if status == NOT_FOUND:
                self.outcomes.labels("gone").inc()
                self.bound(key)
            elif status == UNPROCESSABLE and release.node is None:
                self.outcomes.labels("refused").inc()
                log.warning("pod %s: its gate release was refused twice (422)", key)
                self.bound(key)
            elif release.attempt >= MAX_ATTEMPTS:
                self.outcomes.labels("abandoned").inc()
                log.warning(
                    "pod %s keeps its eams.io/market gate: %d releases failed, the last: %s",
                    key,
                    release.attempt,
                    status,
                )
                self.bound(key)
            else:
                self.outcomes.labels("retried").inc()
                keep_pin = status != UNPROCESSABLE and release.attempt == 1
                again = replace(
                    release,
                    node=release.node if keep_pin else None,
                    attempt=release.attempt + 1,
                )
                delay_s = 0.0 if status == UNPROCESSABLE else backoff_s(release.attempt)
                self.later(delay_s, functools.partial(self._again, again))

    def _again(self, release: Release) -> None:
        key = release.pod.key
        if key in self._live and self._live[key] == release.pod.uid:  # not bound or gone since
            self._send(release)
