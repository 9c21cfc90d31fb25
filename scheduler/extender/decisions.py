"""The extender's decision record (issue 19): every clearing on record, its outcome joined.

The wiring of ``eams.scheduler.record`` (that folder's README, "Wiring") into the extender:

* after each cleared batch, in both modes, one ``placement`` line per pod
  (:func:`~eams.scheduler.record.build.windows_records`: pod namespace/name/UID, clearing id,
  mode, the candidates with bid, price, headroom, telemetry age, gate and score, the gated nodes
  by reason, the cleared node, the method and its certificate; a node is under the headroom
  floor by the same fresh headroom, net of every reservation, that the batch's bids read). The
  batch is queued and its
  lines are built on the event loop with every batch queued meanwhile, in one pass (with
  kube-scheduler serial nearly every batch is one pod: built alone, its ~40 small numpy calls
  cost more than its structs), :data:`FLUSH_AFTER_S` after the first was queued, or once the
  answer is written when :data:`FLUSH_PODS` pods wait, and at shutdown; they go to the
  never-blocking :class:`~eams.scheduler.record.Recorder` (a deque append; its thread encodes
  and writes), so ``/prioritize`` pays neither. A binding seen before its batch's lines (for a
  pod cleared again, its newest batch's) is held by the join until they come; a pod's end
  waiting on them builds them first;
* the pod watch's bound-pod events (``watch.py``, or the ``POST /pending`` twin) go to the
  :class:`~eams.scheduler.record.OutcomeJoin`: the node kube-scheduler actually bound
  (``bound`` lines, ``eams_record_bindings_total{mode,honoured}``: the honoured fraction) and
  the pod's end (``ended``). A binding is judged against the decision kube-scheduler was
  answered from: :meth:`Decisions.scored` notes, at each ``/prioritize``, the clearing the
  pod's scores came from; a pod bound without being scored after its latest clearing (one
  node alone passed kube-scheduler's filters, so it skips scoring, or it bound the pod before
  the pod's batch cleared) had no choice offered (``scored`` false, ``honoured`` null,
  counted ``not_scored``), instead of counting as overridden;
* once a decided pod is bound, in both modes, the ``eams.io/*`` annotations
  (:func:`~eams.scheduler.record.annotation_patch`: cleared node, price, bid, mode, clearing
  id, method, certificate, time) go to the pod as a JSON merge patch, queued to the
  :class:`~eams.scheduler.extender.annotator.PodAnnotator` that ``watch.py`` attaches with its
  API client (:meth:`Decisions.attach_api`; one background thread, coalesced, rate-limited,
  dropped with a counter when full); without one (no ``--watch``) they are counted as
  ``no_api`` and not sent.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from prometheus_client import CollectorRegistry, Counter

from eams.kube.pods import pod_key
from eams.scheduler.auction import AuctionParams, Clearing, bids
from eams.scheduler.extender.annotator import PodAnnotator, api_sender
from eams.scheduler.extender.market import BatchSnapshot
from eams.scheduler.record import (
    OutcomeJoin,
    Placement,
    Recorder,
    RecordMetrics,
    WatchedPod,
    WriterSettings,
    new_clearing_id,
)
from eams.scheduler.record.build import Window, windows_records
from eams.scheduler.record.files import SUFFIX
from eams.scheduler.record.outcomes import ENDED_PHASES, decode_event
from eams.scheduler.record.schema import Bound

KEEP_PODS = 100_000
"""Pods whose latest clearing (and scoring) is remembered at most, the oldest forgotten first."""
FLUSH_AFTER_S = 0.25
"""The longest a cleared batch waits for its placement lines, s. Built together, batches of one
pod over 1,000 nodes cost ~215 µs a pod alone, ~65 five together, ~50 ten, ~45 sixteen (a
microbenchmark, 2 shared cores; in the server, caches colder, 0.10 ms a pod in tens and 0.07 in
sixteens): at 100 pods/s :data:`FLUSH_PODS` are queued first (0.16 s). A line goes to the
writer 0.25 s late at most (and reaches the file within its ``flush_interval_s`` more); a pod's
annotations, which the annotator gathers 0.5 s more and rate-limits, trail its binding by
under a second, far inside kube-scheduler's and the watch's own delays."""
FLUSH_PODS = 16
"""Queued pods whose lines are built at once (once the answer is written) instead of waiting:
a pass of 16 holds the loop ~1 ms, and a longer one would delay the requests behind it more
(their p99) than it saves (a few µs a pod)."""

log = logging.getLogger(__name__)


def record_settings(
    path: Path,
    max_file_bytes: int | None = None,
    max_file_age_s: float | None = None,
    max_total_bytes: int | None = None,
) -> WriterSettings:
    """The writer's settings for ``--record PATH``: a ``NAME.jsonl`` file is the active file
    of prefix ``NAME`` in its folder (rotated beside it); any other path is the folder, with
    prefix ``decisions``. Options left ``None`` keep the writer's defaults.

    Raises
    ------
    RecordConfigError
        A bad prefix or bound (:meth:`WriterSettings.validate`, names each).
    """
    folder, prefix = (path.parent, path.stem) if path.suffix == SUFFIX else (path, "decisions")
    given: dict[str, Any] = {
        "max_file_bytes": max_file_bytes,
        "max_file_age_s": max_file_age_s,
        "max_total_bytes": max_total_bytes,
    }
    settings = WriterSettings(
        folder=folder, prefix=prefix, **{k: v for k, v in given.items() if v is not None}
    )
    settings.validate()
    return settings


class Decisions:
    """The record of one extender: placements written, outcomes joined, pods annotated.

    Parameters
    ----------
    settings : WriterSettings
    registry : CollectorRegistry
        The extender's (``eams_record_*`` and the annotation counter appear on its /metrics).
    mode : {"shadow", "active"}
    scheduler_name : str
        Only pods of this profile are joined.
    params : AuctionParams
        The engine's (the headroom gate and AR-6's staleness limit of each record).
    headroom_floor : float
        The extender's floor (0–1, ``floor.py``): a node whose fresh headroom in the batch's
        snapshot is below it is gated ``headroom_floor``.
    clock : callable
        Epoch seconds.
    annotate : bool
        Send the ``eams.io/*`` annotations of each bound pod (one API write per pod, from the
        annotator's thread once :meth:`attach_api` gave it a client).

    Attributes
    ----------
    annotator : PodAnnotator or None
        Set by :meth:`attach_api` (``watch.py``, when it has an API client).

    Raises
    ------
    RecordConfigError
        The record folder cannot be used or is written by another process.
    """

    def __init__(
        self,
        settings: WriterSettings,
        registry: CollectorRegistry,
        mode: str,
        scheduler_name: str,
        params: AuctionParams,
        headroom_floor: float,
        clock: Callable[[], float],
        annotate: bool = True,
    ) -> None:
        self.annotate = annotate
        self.mode = "active" if mode == "active" else "shadow"
        self.params = params
        self.headroom_floor = headroom_floor
        self.folder = settings.folder
        self.metrics = RecordMetrics(registry)
        self._cpu_lines = self.metrics.cpu.labels("lines")
        self._cpu_join = self.metrics.cpu.labels("join")
        self.recorder = Recorder(settings, self.metrics, clock)
        self.outcomes = OutcomeJoin(
            self.recorder.submit,
            self.metrics,
            clock=clock,
            scheduler_names={scheduler_name},
            on_bound=self._bound if annotate else None,
            was_scored=self._was_scored,
        )
        self._cleared_in: OrderedDict[str, str] = OrderedDict()  # pod key → latest clearing id
        self._scored_in: OrderedDict[str, str] = OrderedDict()  # pod key → clearing it scored
        self._released: OrderedDict[str, str] = OrderedDict()  # annotated by its gate release
        self._queue: list[_Queued] = []  # cleared batches whose lines are not built yet
        self._queued_pods = 0
        self._queued_keys: set[str] = set()  # their pods (``namespace/name``)
        self._flush_at: asyncio.Handle | None = None
        self.annotator: PodAnnotator | None = None
        self.annotations = Counter(
            "eams_extender_annotation_patches",
            "eams.io/* annotation patches of bound pods, by outcome (no_api: no API client; "
            "dropped: the annotator's queue was full).",
            ["outcome"],
            registry=registry,
        )

    def attach_api(self, api_client: Any) -> None:
        """Send the annotations through ``api_client`` (a ``kubernetes.client.ApiClient``,
        the watch's) from a :class:`PodAnnotator`; nothing with ``annotate`` off."""
        if self.annotate and self.annotator is None:
            self.annotator = PodAnnotator(
                api_sender(api_client), self.annotations, cpu=self.metrics.cpu.labels("annotator")
            )

    def cleared(
        self,
        snapshot: BatchSnapshot,
        clearing: Clearing,
        scores: np.ndarray,
        at_s: float,
    ) -> None:
        """Record a cleared batch: queued, its records built with the others queued (one
        pass, :func:`~eams.scheduler.record.build.windows_records`) at most
        :data:`FLUSH_AFTER_S` later, or once the loop is free when :data:`FLUSH_PODS` pods
        are queued, or at :meth:`close`; at once when no loop runs."""
        clearing_id = new_clearing_id()
        cleared_in = self._cleared_in
        for pod in snapshot.pods:
            if pod.key in cleared_in:  # cleared before: a binding must wait for this decision
                self.outcomes.deciding(pod.key, pod.uid)
            cleared_in[pod.key] = clearing_id
            cleared_in.move_to_end(pod.key)
            self._queued_keys.add(pod.key)
        _bound_size(cleared_in)
        queued = _Queued(snapshot, clearing, scores, at_s, clearing_id)
        self._queue.append(queued)
        self._queued_pods += len(snapshot.pods)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no running loop (a direct call)
            self.flush()
            return
        if self._queued_pods >= FLUSH_PODS:
            if self._flush_at is not None:
                self._flush_at.cancel()
            self._flush_at = loop.call_soon(self.flush)  # after the answer is written
        elif self._flush_at is None:
            self._flush_at = loop.call_later(FLUSH_AFTER_S, self.flush)

    def flush(self) -> list[Placement]:
        """Build the queued batches' records (one pass per run of batches over the same
        nodes) and hand them to the recorder and the outcome join, in clearing order; returns
        the records that decide (a pod's newest)."""
        started_s = time.thread_time()
        try:
            return self._flush()
        finally:
            self._cpu_lines.inc(time.thread_time() - started_s)

    def release_annotations(self, keys: list[str]) -> dict[str, Placement]:
        """The decisions of gated pods about to be released (``gates.py``), their batch's
        records built now (every queued batch's: :data:`FLUSH_AFTER_S` is not waited for, so a
        clearing with gated pods builds its lines alone): with annotations on, each pod's
        ``eams.io/*`` annotations go with its release, one write instead of two, and are not
        sent again once it is bound. Empty with annotations off."""
        if not keys:
            return {}
        built = {r.pod.key: r for r in self.flush()}
        if not self.annotate:
            return {}
        found = {key: built[key] for key in keys if key in built}
        for key, decision in found.items():
            self._released[key] = decision.clearing_id
        _bound_size(self._released)
        return found

    def _flush(self) -> list[Placement]:
        if self._flush_at is not None:
            self._flush_at.cancel()
            self._flush_at = None
        queue, self._queue = self._queue, []
        self._queued_pods = 0
        self._queued_keys.clear()
        deciding: list[Placement] = []
        start = 0
        for end in range(1, len(queue) + 1):
            if end < len(queue) and _same(queue[end].snapshot.names, queue[start].snapshot.names):
                continue
            group = queue[start:end]
            start = end
            try:
                records = self._records(group)
            except Exception:  # the record must never take the extender down
                pods = sum(len(q.snapshot.pods) for q in group)
                log.exception("placement records of %d pods not built", pods)
                continue
            self.recorder.submit_all(records)
            latest = self._cleared_in  # a pod cleared again in the queue: its newest decides
            newest = [r for r in records if latest.get(r.pod.key, r.clearing_id) == r.clearing_id]
            self.outcomes.decided(newest)
            deciding += newest
        return deciding

    def _records(self, group: list[_Queued]) -> list[Placement]:
        """The ``placement`` records of batches cleared over the same nodes. The per-node
        arrays of every batch are taken as (W, N) rows and the per-pod ones as (ΣJ, N), so
        the floor and the free-slot test are a few numpy calls for all of them."""
        names = group[0].snapshot.names
        snapshots = [q.snapshot for q in group]
        sizes = [len(s.pods) for s in snapshots]
        window_of = np.repeat(np.arange(len(group)), sizes)
        nodes = [s.node_arrays for s in snapshots]
        with np.errstate(invalid="ignore"):  # NaN (unknown) is neither fresh nor under
            fresh = np.stack([n.age_s for n in nodes]) <= self.params.stale_after_s
            below = np.logical_and(
                fresh, np.stack([n.headroom for n in nodes]) < self.headroom_floor
            )
        with_below = set(np.flatnonzero(below.any(axis=1)).tolist())
        room = (
            np.stack([n.slots for n in nodes])[window_of]
            >= np.concatenate([s.pod_arrays.slots for s in snapshots])[:, None]
        )
        no_fit = ~(np.concatenate([s.feasible for s in snapshots]) & room)
        windows = []
        start = 0
        for i, q in enumerate(group):
            excluded: dict[str, np.ndarray] = {}
            if i in with_below:
                excluded["headroom_floor"] = below[i]
            listed = self._candidate_masks(q.snapshot)
            if listed is not None:
                excluded["filter"] = ~listed  # tested before no_fit (GATE_REASONS' order)
            end = start + sizes[i]
            excluded["no_fit"] = no_fit[start:end]
            start = end
            windows.append(
                Window(
                    pods=q.snapshot.pods,
                    values=q.snapshot.values,
                    clearing=q.clearing,
                    headroom=nodes[i].headroom,
                    age_s=nodes[i].age_s,
                    gate=bids.gate(nodes[i], self.params),
                    at_s=q.at_s,
                    clearing_id=q.clearing_id,
                    excluded=excluded,
                    scores=q.scores,
                )
            )
        return windows_records(
            windows,
            names=names,
            mode=self.mode,  # type: ignore[arg-type]
            stale_after_s=self.params.stale_after_s,
        )

    def scored(self, key: str) -> None:
        """kube-scheduler asked for the scores of pod ``key`` (``namespace/name``) now: they
        come from its latest clearing (called by ``/prioritize`` after the pod's batch
        cleared; a dict store)."""
        clearing_id = self._cleared_in.get(key)
        if clearing_id is not None:
            scored_in = self._scored_in
            scored_in[key] = clearing_id
            scored_in.move_to_end(key)
            _bound_size(scored_in)

    def _was_scored(self, decision: Placement) -> bool:
        key = decision.pod.key
        self._cleared_in.pop(key, None)  # bound: no longer needed
        return self._scored_in.pop(key, None) == decision.clearing_id

    def _candidate_masks(self, snapshot: BatchSnapshot) -> np.ndarray | None:
        """(J, N) bool: node n was among pod j's candidates (kube-scheduler's filters passed
        it); ``None`` when every pod had every node (or its candidates are not known)."""
        rows = snapshot.listed  # the market's, computed for the clearing
        if all(row is None for row in rows):
            return None
        every = np.ones(len(snapshot.names), bool)
        return np.stack([every if row is None else row for row in rows])

    def observe(self, event: Mapping[str, Any] | bytes) -> None:
        """One pod watch event (``{"type", "object"}``, a dict or the raw line) into the
        outcome join; a malformed one is logged and skipped."""
        started_s = time.thread_time()
        try:
            kind, pod = decode_event(event)
        except Exception as exc:
            log.warning("pod event not joined to the record: %s", exc)
            return
        finally:
            self._cpu_join.inc(time.thread_time() - started_s)
        if pod is not None:
            self.observe_pod(kind, pod)

    def observe_pod(self, kind: str, pod: WatchedPod) -> None:
        """One pod watch event already decoded (``watch.py``: :func:`decode_pod` in its
        thread) into the outcome join; a failure is logged and skipped."""
        if self._queued_keys and (kind == "DELETED" or pod.status.phase in ENDED_PHASES):
            meta = pod.metadata
            if pod_key(meta.namespace, meta.name, meta.uid) in self._queued_keys:
                self.flush()  # the join emits an end only after the pod's decision
        started_s = time.thread_time()
        try:
            self.outcomes.observe_pod(kind, pod)
        except Exception as exc:
            log.warning("pod event not joined to the record: %s", exc)
        self._cpu_join.inc(time.thread_time() - started_s)

    def _bound(self, decision: Placement, _bound: Bound) -> None:
        if self._released.pop(decision.pod.key, None) == decision.clearing_id:
            return  # annotated by its release
        annotator = self.annotator
        if annotator is None:
            self.annotations.labels("no_api").inc()
            return
        annotator.submit(decision)

    def close(self) -> None:
        """Build the queued batches' lines, send the waiting annotations, write what is queued
        and release the record folder (at shutdown)."""
        self.flush()
        if self.annotator is not None:
            self.annotator.close()
        self.recorder.close()


@dataclass
class _Queued:
    """A cleared batch whose lines are not built yet (:meth:`Decisions.cleared`'s arguments)."""

    snapshot: BatchSnapshot
    clearing: Clearing
    scores: np.ndarray
    at_s: float
    clearing_id: str


def _same(a: list[str], b: list[str]) -> bool:
    return a is b or a == b


def _bound_size(remembered: OrderedDict[str, str]) -> None:
    while len(remembered) > KEEP_PODS:
        remembered.popitem(last=False)
