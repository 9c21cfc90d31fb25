"""Prometheus metrics of the decision record, registered on the registry of whoever writes it.

The extender passes its own registry (``RecordMetrics(extender_metrics.registry)``), so the
names below appear on its ``/metrics``; the power manager does the same with its own. The
writer and the outcome join increment them; callers increment only ``cpu`` (the CPU their own
parts of the record spent: the extender's lines, join and annotator).

``eams_record_decisions_total{kind,mode}`` (counter)
    Decisions handed to the writer: ``kind`` ``placement`` or ``power``, ``mode`` ``shadow``
    or ``active`` (counted when written or dropped, so it is the decision rate).
``eams_record_bindings_total{mode,honoured}`` (counter)
    Decided pods seen bound by kube-scheduler: ``honoured`` ``yes`` (bound where the extender
    cleared it), ``no`` (bound elsewhere), ``no_choice`` (the clearing left it unassigned),
    ``not_scored`` (kube-scheduler bound it without asking the extender to score it).
    The honoured fraction is ``yes / (yes + no)``.
``eams_record_ends_total{phase}`` (counter)
    Decided pods seen ending: ``Succeeded``, ``Failed``, or ``deleted``.
``eams_record_written_total{kind}`` (counter)
    Records written to disk.
``eams_record_written_bytes_total`` (counter)
    Bytes written to disk.
``eams_record_dropped_total{reason}`` (counter)
    Records lost (:data:`DROP_REASONS`): ``queue_full`` (the writer fell behind: the queue
    bound), ``disk_full`` (ENOSPC or EDQUOT), ``write_error`` (another I/O error), ``closed``
    (submitted after close).
``eams_record_queue_records`` (gauge)
    Records waiting for the writer thread (sampled at each write).
``eams_record_rotations_total``, ``eams_record_deleted_files_total`` (counters)
    Files rotated by size or age, and old files deleted to keep the folder under its bound.
``eams_record_cpu_seconds_total{part}`` (counter)
    CPU time the record itself spent, s (``time.thread_time``, so only the thread doing it),
    by :data:`CPU_PARTS`: ``lines`` (placement lines built on the event loop), ``join`` (pod
    events joined to decisions, on the loop), ``writer`` (the writer thread: encoding, writing,
    rotating) and ``annotator`` (the annotation thread). What the record costs a process,
    measured rather than inferred from two noisy runs; not counted are a pod's few dict stores
    at each clearing and ``/prioritize``, and the watch events the annotations cause.
"""

from __future__ import annotations

import time

from prometheus_client import CollectorRegistry, Counter, Gauge

DROP_REASONS = ("queue_full", "disk_full", "write_error", "closed")
"""Values of ``eams_record_dropped_total``'s ``reason`` label."""
HONOURED = ("yes", "no", "no_choice", "not_scored")
"""Values of ``eams_record_bindings_total``'s ``honoured`` label."""
CPU_PARTS = ("lines", "join", "writer", "annotator")
"""Values of ``eams_record_cpu_seconds_total``'s ``part`` label."""


class RecordMetrics:
    """The record's collectors, on ``registry`` (a private one when not given)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.decisions = Counter(
            "eams_record_decisions",
            "Decisions recorded, by kind (placement, power) and mode (shadow, active).",
            ["kind", "mode"],
            registry=r,
        )
        self.bindings = Counter(
            "eams_record_bindings",
            "Decided pods seen bound, by mode and whether the cleared node was honoured "
            "(yes, no, no_choice, not_scored).",
            ["mode", "honoured"],
            registry=r,
        )
        self.ends = Counter(
            "eams_record_ends",
            "Decided pods seen ending, by phase (Succeeded, Failed, deleted).",
            ["phase"],
            registry=r,
        )
        self.written = Counter(
            "eams_record_written", "Records written to disk, by kind.", ["kind"], registry=r
        )
        self.written_bytes = Counter(
            "eams_record_written_bytes", "Bytes of records written to disk.", registry=r
        )
        self.dropped = Counter(
            "eams_record_dropped",
            "Records lost, by reason (queue_full, disk_full, write_error, closed).",
            ["reason"],
            registry=r,
        )
        self.queue = Gauge(
            "eams_record_queue_records", "Records waiting for the writer thread.", registry=r
        )
        self.rotations = Counter(
            "eams_record_rotations", "Record files rotated by size or age.", registry=r
        )
        self.deleted_files = Counter(
            "eams_record_deleted_files",
            "Old record files deleted to keep the folder under its bound.",
            registry=r,
        )
        self.cpu = Counter(
            "eams_record_cpu_seconds",
            "CPU time the record spent, s, by part (lines, join: on the event loop; writer, "
            "annotator: their threads).",
            ["part"],
            registry=r,
        )


class ThreadCpu:
    """Adds the CPU time of the thread that calls :meth:`count` since its last call (since the
    thread started, the first time) to ``counter``: a background thread's whole cost, its
    wake-ups included, counted once a pass of its loop.

    Parameters
    ----------
    counter : prometheus_client.Counter
        A child of a labelled counter, e.g. ``RecordMetrics.cpu.labels("writer")``; seconds
        are added.
    """

    def __init__(self, counter: Counter) -> None:
        self._counter = counter
        self._counted_s = 0.0

    def count(self) -> None:
        """Add this thread's CPU time since the last call (``time.thread_time``), s."""
        spent_s = time.thread_time()
        self._counter.inc(spent_s - self._counted_s)
        self._counted_s = spent_s
