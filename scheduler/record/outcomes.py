"""What happened after a decision: the pod watch joined to the record by UID.

Input is the Kubernetes watch stream of pods in its published shape (``GET
/api/v1/pods?watch=true``: one ``{"type": "ADDED"|"MODIFIED"|"DELETED"|"BOOKMARK"|"ERROR",
"object": Pod}`` per event, API reference "Watch"), as dicts or as the raw JSON line. From it
:class:`OutcomeJoin` takes:

- the node kube-scheduler bound the pod to: ``spec.nodeName`` once set (the binding subresource
  writes it), with the ``PodScheduled`` condition's ``lastTransitionTime`` as its time;
- the pod's end: ``status.phase`` ``Succeeded`` or ``Failed``, or a ``DELETED`` event; its run
  from ``status.startTime`` to the latest container ``state.terminated.finishedAt``.

Joined by ``metadata.uid`` (a pod deleted and created again under its name is another pod) to
the latest placement decision handed to :meth:`OutcomeJoin.decided`, each becomes a
:class:`~.schema.Bound` or :class:`~.schema.Ended` record, emitted once. Arrival order does not
matter: a binding seen before its decision (shadow mode records at clearing, which may come after
kube-scheduler bound the pod) is held until the decision arrives. Memory is bounded: at most
``keep`` pods are tracked, the least recently seen forgotten first.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import msgspec

from eams.scheduler.record.metrics import RecordMetrics
from eams.scheduler.record.schema import Bound, Ended, Placement, PodRef, Record

ENDED_PHASES = ("Succeeded", "Failed")


class _Meta(msgspec.Struct):
    name: str = ""
    namespace: str = "default"
    uid: str | None = None


class _Spec(msgspec.Struct):
    nodeName: str | None = None
    schedulerName: str | None = None


class _Condition(msgspec.Struct):
    type: str = ""
    status: str = ""
    lastTransitionTime: datetime | None = None


class _Terminated(msgspec.Struct):
    finishedAt: datetime | None = None


class _State(msgspec.Struct):
    terminated: _Terminated | None = None


class _ContainerStatus(msgspec.Struct):
    state: _State | None = None


class _Status(msgspec.Struct):
    phase: str | None = None
    startTime: datetime | None = None
    conditions: list[_Condition] | None = None
    containerStatuses: list[_ContainerStatus] | None = None


class WatchedPod(msgspec.Struct):
    """The fields of a pod (``core/v1`` Pod JSON) the join reads: ``metadata`` name, namespace,
    uid; ``spec`` nodeName, schedulerName; ``status`` phase, startTime, the ``PodScheduled``
    condition's time and the containers' ``state.terminated.finishedAt``. Decode a pod once
    with :func:`decode_pod` and hand it to :meth:`OutcomeJoin.observe_pod` (the extender's
    watch does)."""

    metadata: _Meta = msgspec.field(default_factory=_Meta)
    spec: _Spec = msgspec.field(default_factory=_Spec)
    status: _Status = msgspec.field(default_factory=_Status)


class _Event(msgspec.Struct):
    type: str
    object: WatchedPod | None = None


_decode_event = msgspec.json.Decoder(_Event).decode
decode_pod = msgspec.json.Decoder(WatchedPod).decode
"""``decode_pod(raw)``: a pod's JSON (bytes or str) → :class:`WatchedPod`; raises
``msgspec.ValidationError`` (naming the field's path) or ``msgspec.DecodeError``."""


def decode_event(event: Mapping[str, Any] | bytes | str) -> tuple[str, WatchedPod | None]:
    """A pod watch event (``{"type", "object"}``, a dict or the raw JSON line) → its type and
    its pod (``None`` when it has none, e.g. a ``BOOKMARK``).

    Raises
    ------
    msgspec.ValidationError
        The event is not a watch event of a pod (names the field's path).
    msgspec.DecodeError
        A raw line that is not JSON.
    """
    if isinstance(event, bytes | str):
        parsed = _decode_event(event)
    else:
        parsed = msgspec.convert(event, _Event)
    return parsed.type, parsed.object


@dataclass
class _Track:
    pod: PodRef
    decision: Placement | None = None
    bound_node: str | None = None
    bound_at_s: float | None = None
    bound_emitted: bool = False
    ended: bool = False


class OutcomeJoin:
    """Joins pod watch events to placement decisions; emits outcome records.

    Parameters
    ----------
    emit : callable
        Where outcome records go (``Recorder.submit``).
    metrics : RecordMetrics, optional
        ``eams_record_bindings_total`` and ``eams_record_ends_total`` are counted here.
    clock : callable
        Epoch seconds: the records' ``at_s`` and an end's time when no container says.
    scheduler_names : iterable of str, optional
        Track only pods with these ``spec.schedulerName`` (``{"eams-scheduler"}``); every pod
        when not given.
    keep : int
        Pods tracked at most.
    on_bound : callable, optional
        Called with (decision, bound record) once per decided pod when its binding is joined:
        where the extender sends the pod's annotations (``annotation_patch(decision)``).
    was_scored : callable, optional
        ``was_scored(decision)``: whether kube-scheduler asked the extender to score the pod
        after this decision (its ``/prioritize``). A binding it did not ask about offered no
        choice: ``honoured`` ``None``, ``scored`` false, counted ``not_scored``. Not given:
        ``scored`` ``None`` and every decision counts as offered.
    """

    def __init__(
        self,
        emit: Callable[[Record], object],
        metrics: RecordMetrics | None = None,
        clock: Callable[[], float] = time.time,
        scheduler_names: Iterable[str] | None = None,
        keep: int = 100_000,
        on_bound: Callable[[Placement, Bound], object] | None = None,
        was_scored: Callable[[Placement], bool] | None = None,
    ) -> None:
        self._emit = emit
        self._on_bound = on_bound
        self._was_scored = was_scored
        self.metrics = metrics or RecordMetrics()
        self._clock = clock
        self._schedulers = frozenset(scheduler_names) if scheduler_names is not None else None
        self._keep = keep
        self._tracks: OrderedDict[str, _Track] = OrderedDict()
        self._bindings: dict[tuple[str, str], Any] = {}  # (mode, label) → its counter child

    def decided(self, records: Iterable[Placement]) -> list[Record]:
        """Remember each pod's latest decision (a window's records); returns the outcome
        records this completes (a binding seen before its decision)."""
        out: list[Record] = []
        for record in records:
            track = self._track(_key(record.pod), record.pod)
            if track.bound_emitted:
                continue  # bound already: a later clearing of it changes nothing
            track.decision = record
            if track.bound_node is not None:
                out.append(self._bound(track))
        return out

    def deciding(self, key: str, uid: str | None) -> None:
        """A newer decision of pod ``key`` (``namespace/name``; ``uid`` when known) is on its
        way (cleared again, its record not built yet): a binding seen meanwhile waits for it
        (:meth:`decided`) instead of being judged against the earlier one."""
        track = self._tracks.get(uid or key) or (self._tracks.get(key) if uid else None)
        if track is not None and not track.bound_emitted:
            track.decision = None

    def observe(self, event: Mapping[str, Any] | bytes | str) -> list[Record]:
        """One watch event; returns (and emits) the outcome records it completes.

        Raises
        ------
        msgspec.ValidationError
            The event is not a watch event of a pod (names the field's path).
        """
        kind, pod = decode_event(event)
        if pod is None:
            return []
        return self.observe_pod(kind, pod)

    def observe_pod(self, kind: str, pod: WatchedPod) -> list[Record]:
        """One watch event already decoded: ``kind`` (``ADDED``/``MODIFIED``/``DELETED``; any
        other is ignored) and its pod (:func:`decode_pod`); returns (and emits) the outcome
        records it completes."""
        if kind not in ("ADDED", "MODIFIED", "DELETED"):
            return []
        if self._schedulers is not None and pod.spec.schedulerName not in self._schedulers:
            return []
        meta = pod.metadata
        ref = PodRef(namespace=meta.namespace, name=meta.name, uid=meta.uid)
        track = self._track(_key(ref), ref)
        out: list[Record] = []
        if pod.spec.nodeName and track.bound_node is None:
            track.bound_node = pod.spec.nodeName
            track.bound_at_s = _scheduled_at_s(pod.status)
            if track.decision is not None:
                out.append(self._bound(track))
        deleted = kind == "DELETED"
        if not track.ended and (deleted or pod.status.phase in ENDED_PHASES):
            track.ended = True
            if track.decision is not None:
                out.append(self._ended(track, pod, deleted))
            if deleted or track.decision is not None:
                self._tracks.pop(_key(ref), None)
        return out

    def _track(self, key: str, pod: PodRef) -> _Track:
        tracks = self._tracks
        track = tracks.get(key)
        if track is None and pod.uid is not None:  # decided before its UID was known?
            by_name = tracks.get(pod.key)
            if by_name is not None and by_name.pod.uid is None:
                track = tracks[key] = tracks.pop(pod.key)
                track.pod = pod
        if track is None:
            track = tracks[key] = _Track(pod)
            if len(tracks) > self._keep:
                tracks.popitem(last=False)
        else:
            tracks.move_to_end(key)
        return track

    def _bound(self, track: _Track) -> Bound:
        decision = track.decision
        assert decision is not None and track.bound_node is not None
        cleared = decision.cleared_node
        scored = None if self._was_scored is None else self._was_scored(decision)
        offered = cleared is not None and scored is not False
        honoured = track.bound_node == cleared if offered else None
        record = Bound(
            at_s=self._clock(),
            pod=track.pod,
            bound_node=track.bound_node,
            cleared_node=cleared,
            honoured=honoured,
            mode=decision.mode,
            clearing_id=decision.clearing_id,
            bound_at_s=track.bound_at_s,
            scored=scored,
        )
        track.bound_emitted = True
        if scored is False:
            label = "not_scored"
        else:
            label = "no_choice" if honoured is None else ("yes" if honoured else "no")
        child = self._bindings.get((decision.mode, label))
        if child is None:  # labels() once per pair: it costs more than the increment
            child = self._bindings[decision.mode, label] = self.metrics.bindings.labels(
                decision.mode, label
            )
        child.inc()
        self._emit(record)
        if self._on_bound is not None:
            self._on_bound(decision, record)
        return record

    def _ended(self, track: _Track, pod: WatchedPod, deleted: bool) -> Ended:
        now_s = self._clock()
        status = pod.status
        started = _epoch_s(status.startTime)
        finished = [
            _epoch_s(c.state.terminated.finishedAt)
            for c in status.containerStatuses or ()
            if c.state is not None and c.state.terminated is not None
        ]
        known = [f for f in finished if f is not None]
        ended_at_s = max(known) if known else now_s
        record = Ended(
            at_s=now_s,
            pod=track.pod,
            phase=status.phase,
            deleted=deleted,
            node=track.bound_node,
            started_at_s=started,
            ended_at_s=ended_at_s,
            runtime_s=max(0.0, ended_at_s - started) if started is not None else None,
        )
        phase = status.phase if status.phase in ENDED_PHASES else "deleted"
        self.metrics.ends.labels(phase).inc()
        self._emit(record)
        return record


def _key(pod: PodRef) -> str:
    return pod.uid or pod.key


def _epoch_s(at: datetime | None) -> float | None:
    return at.timestamp() if at is not None else None


def _scheduled_at_s(status: _Status) -> float | None:
    for condition in status.conditions or ():
        if condition.type == "PodScheduled" and condition.status == "True":
            return _epoch_s(condition.lastTransitionTime)
    return None
