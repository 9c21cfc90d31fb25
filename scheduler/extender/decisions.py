"""The extender's decision record (issue 19): every clearing on record, its outcome joined.

The wiring of ``eams.scheduler.record`` (that folder's README, "Wiring") into the extender:

* after each cleared batch, in both modes, one ``placement`` line per pod
  (:func:`~eams.scheduler.record.placement_records`: pod namespace/name/UID, clearing id, mode,
  the candidates with bid, price, headroom, telemetry age, gate and score, the gated nodes by
  reason, the cleared node, the method and its certificate). The lines are built on the event
  loop *after* the answer that cleared the batch is written (``loop.call_soon``), and handed to
  the never-blocking :class:`~eams.scheduler.record.Recorder` (a deque append; its thread
  encodes and writes), so ``/prioritize`` pays neither;
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
from collections import OrderedDict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
from prometheus_client import CollectorRegistry, Counter

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
    placement_records,
)
from eams.scheduler.record.files import SUFFIX
from eams.scheduler.record.schema import Bound

KEEP_PODS = 100_000
"""Pods whose latest clearing (and scoring) is remembered at most, the oldest forgotten first."""

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
        The engine's (the gate σ(k(ĥ − h0)) and AR-6's staleness limit of each record).
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
        clock: Callable[[], float],
        annotate: bool = True,
    ) -> None:
        self.annotate = annotate
        self.mode = "active" if mode == "active" else "shadow"
        self.params = params
        self.folder = settings.folder
        self.metrics = RecordMetrics(registry)
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
        # per-node masks kept while the node list and the set they come from are the same
        # objects (the node cache, the floor and the candidate sets each keep one object while
        # unchanged): one O(N) pass per change, not per clearing
        self._floor_mask: tuple[list[str], frozenset[str], np.ndarray] | None = None
        self._listed_row: tuple[list[str], frozenset[str], np.ndarray | None] | None = None
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
            self.annotator = PodAnnotator(api_sender(api_client), self.annotations)

    def cleared(
        self,
        snapshot: BatchSnapshot,
        clearing: Clearing,
        scores: np.ndarray,
        below_floor: Callable[[float], frozenset[str]],
        at_s: float,
    ) -> None:
        """Record a cleared batch: built once the loop is free (after the answer that
        cleared it is written), at once when no loop runs. ``below_floor(at_s)`` names the
        nodes under the headroom floor (``HeadroomFloor.below``), asked then too."""

        clearing_id = new_clearing_id()
        cleared_in = self._cleared_in
        for pod in snapshot.pods:
            cleared_in[pod.key] = clearing_id
            cleared_in.move_to_end(pod.key)
        _bound_size(cleared_in)

        def write() -> None:
            try:
                records = self.placements(
                    snapshot, clearing, scores, below_floor(at_s), at_s, clearing_id
                )
            except Exception:  # the record must never take the extender down
                log.exception("placement records of %d pods not built", len(snapshot.pods))
                return
            self.recorder.submit_all(records)
            self.outcomes.decided(records)

        try:
            asyncio.get_running_loop().call_soon(write)
        except RuntimeError:  # no running loop (a direct call)
            write()

    def placements(
        self,
        snapshot: BatchSnapshot,
        clearing: Clearing,
        scores: np.ndarray,
        below_floor: frozenset[str],
        at_s: float,
        clearing_id: str | None = None,
    ) -> list[Placement]:
        """The batch's ``placement`` records (pure but for the clearing id's counter when
        ``clearing_id`` is not given)."""
        names = snapshot.names
        excluded: dict[str, np.ndarray] = {}
        if below_floor:
            excluded["headroom_floor"] = self._below_floor_mask(names, below_floor)
        listed = self._candidate_masks(snapshot)
        if listed is not None:
            excluded["filter"] = ~listed  # tested before no_fit (GATE_REASONS' order)
        nodes = snapshot.node_arrays
        room = nodes.slots[None, :] >= snapshot.pod_arrays.slots[:, None]
        excluded["no_fit"] = ~(snapshot.feasible & room)
        return placement_records(
            pods=snapshot.pods,
            names=names,
            values=snapshot.values,
            clearing=clearing,
            headroom=nodes.headroom,
            age_s=nodes.age_s,
            mode=self.mode,  # type: ignore[arg-type]
            at_s=at_s,
            excluded=excluded,
            gate=bids.gate(nodes, self.params) if len(nodes) else None,
            scores=scores,
            stale_after_s=self.params.stale_after_s,
            clearing_id=clearing_id,
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

    def _below_floor_mask(self, names: list[str], below: frozenset[str]) -> np.ndarray:
        """(N,) bool: the node is under the headroom floor."""
        kept = self._floor_mask
        if kept is None or kept[0] is not names or kept[1] is not below:
            mask = np.fromiter((n in below for n in names), bool, len(names))
            kept = self._floor_mask = (names, below, mask)
        return kept[2]

    def _listed(self, names: list[str], candidates: frozenset[str]) -> np.ndarray | None:
        """(N,) bool: the node is among ``candidates``; ``None`` when every node is."""
        kept = self._listed_row
        if kept is None or kept[0] is not names or kept[1] is not candidates:
            row = None
            if not candidates.issuperset(names):
                row = np.fromiter((n in candidates for n in names), bool, len(names))
            kept = self._listed_row = (names, candidates, row)
        return kept[2]

    def _candidate_masks(self, snapshot: BatchSnapshot) -> np.ndarray | None:
        """(J, N) bool: node n was among pod j's candidates (kube-scheduler's filters passed
        it); ``None`` when every pod had every node (or its candidates are not known)."""
        names = snapshot.names
        rows = [
            None if p.candidates is None else self._listed(names, p.candidates)
            for p in snapshot.pods
        ]
        if all(row is None for row in rows):
            return None
        every = np.ones(len(names), bool)
        return np.stack([every if row is None else row for row in rows])

    def observe(self, event: Mapping[str, Any] | bytes) -> None:
        """One pod watch event (``{"type", "object"}``, a dict or the raw line) into the
        outcome join; a malformed one is logged and skipped."""
        try:
            self.outcomes.observe(event)
        except Exception as exc:
            log.warning("pod event not joined to the record: %s", exc)

    def observe_pod(self, kind: str, pod: WatchedPod) -> None:
        """One pod watch event already decoded (``watch.py``: :func:`decode_pod` in its
        thread) into the outcome join; a failure is logged and skipped."""
        try:
            self.outcomes.observe_pod(kind, pod)
        except Exception as exc:
            log.warning("pod event not joined to the record: %s", exc)

    def _bound(self, decision: Placement, _bound: Bound) -> None:
        annotator = self.annotator
        if annotator is None:
            self.annotations.labels("no_api").inc()
            return
        annotator.submit(decision)

    def close(self) -> None:
        """Send the waiting annotations, write what is queued and release the record folder
        (at shutdown)."""
        if self.annotator is not None:
            self.annotator.close()
        self.recorder.close()


def _bound_size(remembered: OrderedDict[str, str]) -> None:
    while len(remembered) > KEEP_PODS:
        remembered.popitem(last=False)
