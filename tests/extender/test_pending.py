"""The pending-pod watch's cheap decode (``pending.py``): the same sized pod as validating the
whole pod, for real pods, whether its resource shape was seen before or not."""

from __future__ import annotations

import copy
import json
from typing import Any

import msgspec
import pytest
from pydantic import ValidationError

from eams.datasets import data_file
from eams.kube.pods import PodObject
from eams.scheduler.extender.errors import BadRequest
from eams.scheduler.extender.pending import PendingDecoder, pending_pod


def _pods() -> list[dict[str, Any]]:
    return json.loads(data_file("k8s/honeycomb_pods.json").read_text())["items"]


def _validated(pod: dict[str, Any]) -> Any:
    return pending_pod(PodObject.model_validate_json(msgspec.json.encode(pod)))


def test_real_pods_size_as_the_validated_path_seen_or_not() -> None:
    decode = PendingDecoder()
    pods = _pods()
    assert len(pods) > 5
    for pod in pods:
        for _ in range(2):  # first its shape is new (validated), then it is kept
            assert decode(msgspec.json.encode(pod)) == _validated(pod)


def test_a_kept_shape_still_reads_each_pods_own_fields() -> None:
    decode = PendingDecoder()
    base = next(p for p in _pods() if p["spec"].get("containers"))
    decode(msgspec.json.encode(base))
    other = copy.deepcopy(base)
    other["metadata"].update(
        name="other",
        namespace="tenant-b",
        uid="uid-other",
        annotations={"eams.io/work-core-s": "90"},
    )
    other["spec"]["priority"] = 1_000_000
    got = decode(msgspec.json.encode(other))
    assert got == _validated(other)
    assert (got.key, got.tenant, got.work_core_s, got.uid) == (
        "tenant-b/other",
        "tenant-b",
        90.0,
        "uid-other",
    )
    assert got.priority == pytest.approx(3.0)  # priority 1e6 → π 3 (bids.priority_weight)


def test_a_changed_request_is_sized_again() -> None:
    decode = PendingDecoder()
    pod = copy.deepcopy(next(p for p in _pods() if p["spec"].get("containers")))
    pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "250m", "memory": "1Gi"}}
    first = decode(msgspec.json.encode(pod))
    pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "2", "memory": "1Gi"}}
    second = decode(msgspec.json.encode(pod))
    assert (first.request.cpu_milli, second.request.cpu_milli) == (250, 2000)


def test_bad_pods_are_refused_as_before_every_time() -> None:
    decode = PendingDecoder()
    pod = copy.deepcopy(next(p for p in _pods() if p["spec"].get("containers")))
    pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1K"}}  # 1K is invalid
    for _ in range(2):  # a refused shape is never kept
        with pytest.raises(BadRequest, match="cpu"):
            decode(msgspec.json.encode(pod))
    pod["spec"]["containers"][0]["resources"] = {}
    pod["spec"]["priority"] = "high"
    with pytest.raises(ValidationError):
        decode(msgspec.json.encode(pod))
    pod["spec"]["priority"] = "5"  # msgspec refuses, pydantic (lax) reads 5: its answer stands
    assert decode(msgspec.json.encode(pod)) == _validated(pod)


def test_the_row_check_after_a_binding_agrees_with_the_taint_set() -> None:
    """``HeadroomFloor.under`` (the check that decides whether a binding re-plans the taints)
    says what the whole-table ``to_taint`` says, for fresh, stale, reserved and unknown nodes;
    a reservation counts there once its pod is bound."""
    from eams.scheduler.extender.metrics import ExtenderMetrics
    from eams.scheduler.extender.service import Extender
    from eams.scheduler.extender.settings import Settings
    from eams.telemetry import TelemetrySample
    from tests.extender.conftest import sample

    now = 1_000_000.0
    extender = Extender(Settings(mode="active"), {}, ExtenderMetrics(), lambda: now)
    readings = {"ok": (now, 0.5), "low": (now, 0.02), "stale": (now - 60, 0.02), "full": (now, 0.1)}
    extender.ingest(
        [TelemetrySample.from_json(sample(n, at, h)) for n, (at, h) in readings.items()]
    )
    extender.herd.reserve("full", "ns/p", 0.08 * 200.0, now)  # 0.1 − 16 W / 200 W = 0.02
    floor = extender.floor
    for bound in (False, True):
        if bound:
            extender.observe_unpending("ns/p")  # it left the pending pods: bound
        for name in [*readings, "never-seen"]:
            assert floor.under([name], now) == (name in floor.to_taint(now)), (name, bound)
        assert floor.to_taint(now) == ({"low", "full"} if bound else {"low"})
        assert floor.below(now) == {"low", "full"}
        assert not floor.under(["ok", "stale", "never-seen"], now)
