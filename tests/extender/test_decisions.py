"""The record's queue (``decisions.py``): cleared batches queued on the loop, their lines built
together, as each batch alone would give them, and flushed at shutdown and before a pod's end.

The batches are real clearings: an in-process extender is given nodes and telemetry over
HTTP, and its market snapshots and clears them.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import msgspec
import pytest
from prometheus_client import CollectorRegistry

from eams.kube.pods import PodObject
from eams.scheduler.extender.decisions import Decisions, record_settings
from eams.scheduler.extender.pending import PendingPod, pending_pod
from eams.scheduler.record import decode_pod, read_records
from eams.scheduler.record.schema import Placement
from eams.telemetry import TelemetrySample
from tests.extender.conftest import node_object, pod_object, post_json, sample

NAMES = ["node-a", "node-b", "node-c"]
FLOOR = 0.25
"""The record's headroom floor here: node-b's 0.3 is above it."""
pytestmark = pytest.mark.anyio


async def _extender(make_client, clock):  # type: ignore[no-untyped-def]
    client = await make_client()
    cpus = ("8", "8", "4")
    nodes = [node_object(n, cpu=c) for n, c in zip(NAMES, cpus, strict=True)]
    await post_json(client, "/nodes", {"items": nodes})
    samples = [sample(n, clock() - 1.0, h) for n, h in zip(NAMES, (0.6, 0.3, 0.8), strict=True)]
    await post_json(client, "/telemetry", {"samples": samples})
    return client.app.state.extender


def _pod(name: str, candidates: list[str] | None = None, cpu: str = "500m") -> PendingPod:
    pod = PodObject.model_validate(pod_object(name, cpu=cpu))
    return pending_pod(pod, frozenset(candidates or NAMES))


def _decisions(extender, folder: Path) -> Decisions:  # type: ignore[no-untyped-def]
    return Decisions(
        record_settings(folder),
        CollectorRegistry(),
        "active",
        "eams-scheduler",
        extender.market.params,
        FLOOR,
        time.time,
    )


def _placed(decisions: Decisions) -> float:
    """Placement lines written (the recorder's thread writes what it was handed first)."""
    assert decisions.recorder.flush()
    value = decisions.metrics.registry.get_sample_value(
        "eams_record_decisions_total", {"kind": "placement", "mode": "active"}
    )
    return value or 0.0


async def test_queued_batches_are_built_together_as_each_alone(make_client, clock, tmp_path):
    """Four batches — one pod; two pods, one too big for node-c, one with a shorter candidate
    list; one pod
    over a shorter node list (its own pass); one pod after node-c's headroom fell under the
    floor — queued give, at close(), the lines each gives built alone, and none before."""
    extender = await _extender(make_client, clock)
    market, now_s = extender.market, clock()
    batches = [
        ([_pod("p0")], NAMES),
        ([_pod("p1", cpu="6"), _pod("p2", ["node-a", "node-c"])], NAMES),
        ([_pod("p3")], NAMES[:2]),
        ([_pod("p4")], NAMES),
    ]
    cleared = []
    for i, (pods, names) in enumerate(batches):
        if pods[0].key == "default/p4":
            low = sample("node-c", now_s, FLOOR - 0.05)
            extender.ingest([TelemetrySample.from_json(low, now_ns=int(now_s * 1e9))])
        snapshot = market.snapshot(pods, list(names), now_s + i)
        clearing, scores = market.solve(snapshot)
        cleared.append((snapshot, clearing, scores, now_s + i))

    alone, together = _decisions(extender, tmp_path / "alone"), _decisions(extender, tmp_path / "t")
    built = 0
    for snapshot, clearing, scores, at_s in cleared:
        alone.cleared(snapshot, clearing, scores, at_s)
        alone.flush()
        built += len(snapshot.pods)
        assert _placed(alone) == built
    for snapshot, clearing, scores, at_s in cleared:
        together.cleared(snapshot, clearing, scores, at_s)
    assert _placed(together) == 0  # queued: nothing built yet
    together.close()
    alone.close()

    def lines(folder: Path) -> list[Placement]:
        records = read_records(folder).records
        assert all(isinstance(r, Placement) for r in records)
        return [msgspec.structs.replace(r, clearing_id="") for r in records]  # type: ignore[type-var]

    built_alone = lines(tmp_path / "alone")
    assert [r.pod.name for r in built_alone] == ["p0", "p1", "p2", "p3", "p4"]
    assert lines(tmp_path / "t") == built_alone
    gated = {r.pod.name: {g.node: g.reason for g in r.gated} for r in built_alone}
    assert gated["p1"] == {"node-c": "no_fit"} and gated["p2"] == {"node-b": "filter"}
    assert gated["p4"] == {"node-c": "headroom_floor"} and gated["p0"] == {}
    assert built_alone[3].candidates_total == 2


async def test_the_floor_is_read_as_the_bids_saw_it(make_client, clock, tmp_path):
    """A pod cleared onto node-b leaves a reservation that puts node-b under the floor: the
    next pod's line gates node-b ``headroom_floor`` at its lowered headroom, while the first
    pod's line does not gate its own cleared node (the floor before its reservation)."""
    extender = await _extender(make_client, clock)
    market, now_s = extender.market, clock()
    decisions = _decisions(extender, tmp_path / "rec")
    first = market.snapshot([_pod("p0", ["node-b"])], NAMES, now_s)
    clearing, scores = market.solve(first)
    market.apply(first, clearing, scores, now_s, reserve=True)
    decisions.cleared(first, clearing, scores, now_s)
    second = market.snapshot([_pod("p1")], NAMES, now_s + 1)
    decisions.cleared(second, *market.solve(second), now_s + 1)
    decisions.close()
    p0, p1 = read_records(tmp_path / "rec").records
    assert p0.cleared_node == "node-b"  # type: ignore[union-attr]
    assert {g.node: g.reason for g in p0.gated} == {  # type: ignore[union-attr]
        "node-a": "filter",
        "node-c": "filter",
    }
    gated = {g.node: (g.reason, g.headroom) for g in p1.gated}  # type: ignore[union-attr]
    assert gated["node-b"][0] == "headroom_floor" and gated["node-b"][1] < FLOOR < 0.3


async def test_a_queued_pods_end_builds_its_line_first(make_client, clock, tmp_path):
    """A pod bound and deleted while its batch waits: the join still has its decision when the
    end comes (placement, bound, ended), instead of forgetting the pod unjoined."""
    extender = await _extender(make_client, clock)
    snapshot = extender.market.snapshot([_pod("p0")], NAMES, clock())
    clearing, scores = extender.market.solve(snapshot)
    decisions = _decisions(extender, tmp_path / "rec")
    decisions.cleared(snapshot, clearing, scores, clock())
    bound = pod_object("p0")
    bound["spec"]["nodeName"] = "node-a"
    bound["status"] = {"phase": "Running"}
    decisions.observe_pod("MODIFIED", decode_pod(json.dumps(bound)))
    assert _placed(decisions) == 0  # the binding is held, the line still queued
    decisions.observe_pod("DELETED", decode_pod(json.dumps(bound)))
    assert _placed(decisions) == 1
    decisions.close()
    records = read_records(tmp_path / "rec").records
    assert [type(r).__name__ for r in records] == ["Placement", "Bound", "Ended"]
    assert records[1].bound_node == "node-a"  # type: ignore[union-attr]
