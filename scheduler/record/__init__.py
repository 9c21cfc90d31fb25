"""The decision record: every placement and power decision on record, and what came of it.

One JSON line per decision (:mod:`.schema`, versioned), written off the hot path by a bounded,
rotating writer (:mod:`.writer`), built from a clearing's arrays (:mod:`.build`), joined to the
pod watch (:mod:`.outcomes`), written onto pods as ``eams.io/*`` annotations
(:mod:`.annotations`), served as ``GET /decisions`` (:mod:`.route`: it imports FastAPI, so it
is not imported here; its client is :mod:`.remote`) and read back by ``eams explain``
(:mod:`.reader`, :mod:`.explain`, :mod:`.cli`). It imports only the ground and the scheduler's
error root, so the extender, the power manager, the bench and the demo can all use it. See this
folder's README.md.
"""

from eams.scheduler.record.annotations import annotation_patch
from eams.scheduler.record.build import BestBid, new_clearing_id, placement_records
from eams.scheduler.record.metrics import RecordMetrics
from eams.scheduler.record.outcomes import OutcomeJoin, WatchedPod, decode_pod
from eams.scheduler.record.reader import Query, read_records
from eams.scheduler.record.schema import (
    SCHEMA_VERSION,
    Bound,
    Ended,
    Energy,
    Placement,
    PodRef,
    Power,
    Record,
    Wake,
)
from eams.scheduler.record.writer import Recorder, WriterSettings

__all__ = [
    "SCHEMA_VERSION",
    "BestBid",
    "Bound",
    "Ended",
    "Energy",
    "OutcomeJoin",
    "Placement",
    "PodRef",
    "Power",
    "Query",
    "Record",
    "RecordMetrics",
    "Recorder",
    "Wake",
    "WatchedPod",
    "WriterSettings",
    "annotation_patch",
    "decode_pod",
    "new_clearing_id",
    "placement_records",
    "read_records",
]
