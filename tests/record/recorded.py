"""A small recorded run, written through the real writer: two clearings (one active, one
shadow), the pods' lives from watch events through the outcome join, energy attributed to one
pod, and power decisions; the files rotated so a reader must read several."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from eams.scheduler.record import (
    Energy,
    OutcomeJoin,
    Placement,
    Power,
    Recorder,
    RecordMetrics,
    WriterSettings,
)
from tests.record.conftest import window

T0_S = 1_735_787_045.0


def _event(kind: str, p: Placement, node: str | None, phase: str) -> dict[str, Any]:
    meta = {"name": p.pod.name, "namespace": p.pod.namespace, "uid": p.pod.uid}
    status: dict[str, Any] = {"phase": phase}
    if node:
        status["conditions"] = [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2025-01-02T03:04:06Z"}
        ]
    if phase == "Succeeded":
        status["startTime"] = "2025-01-02T03:04:08Z"
        status["containerStatuses"] = [
            {"name": "c", "state": {"terminated": {"finishedAt": "2025-01-02T03:09:08Z"}}}
        ]
    spec = {"nodeName": node, "schedulerName": "eams-scheduler"}
    return {"type": kind, "object": {"metadata": meta, "spec": spec, "status": status}}


def record_run(folder: Path) -> list[Placement]:
    """Write the run into ``folder``; returns the placements (active window first)."""
    active = window(3, mode="active", at_s=T0_S)
    shadow = [
        msgspec.structs.replace(
            p, pod=msgspec.structs.replace(p.pod, name=f"batch-{i}", uid=f"s-{i}")
        )
        for i, p in enumerate(window(2, mode="shadow", at_s=T0_S + 10))
    ]
    settings = WriterSettings(folder=folder, max_file_bytes=2048, max_total_bytes=2**30)
    with Recorder(settings, RecordMetrics()) as recorder:
        join = OutcomeJoin(  # batch-1: bound without kube-scheduler asking for its scores
            recorder.submit, clock=lambda: T0_S + 400, was_scored=lambda d: d.pod.name != "batch-1"
        )
        recorder.submit_all(active + shadow)
        join.decided(active + shadow)
        # job-0 bound where cleared and runs to the end; job-1 bound elsewhere (mini-6)
        first = active[0]
        join.observe(_event("MODIFIED", first, first.cleared_node, "Running"))
        join.observe(_event("MODIFIED", first, first.cleared_node, "Succeeded"))
        join.observe(_event("MODIFIED", active[1], "mini-6", "Running"))
        join.observe(_event("MODIFIED", shadow[0], shadow[0].cleared_node, "Running"))
        join.observe(_event("MODIFIED", shadow[1], "mini-6", "Running"))
        assert first.cleared_node is not None
        recorder.submit(
            Energy(
                at_s=T0_S + 500,
                pod=first.pod,
                node=first.cleared_node,
                energy_wh=1.75,
                source="modelled",
                started_at_s=T0_S + 3,
                ended_at_s=T0_S + 303,
                method="calibrated_line",
            )
        )
        for at, to, reason in (
            (T0_S + 600, "suspended", "idle_past_break_even"),
            (T0_S + 900, "running", "pods_pending"),
        ):
            recorder.submit(
                Power(
                    at_s=at,
                    mode="active",
                    node="mini-4",
                    from_state="running" if to == "suspended" else "suspended",
                    to_state=to,
                    reason=reason,
                    detail="empty 620 s > break-even 240 s" if to == "suspended" else "",
                    numbers={"idle_s": 620.0, "break_even_s": 240.0},
                    action="ssh" if to == "suspended" else "wol",
                    result="ok",
                )
            )
        recorder.flush()
    return active + shadow
