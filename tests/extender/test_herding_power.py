"""The herding reservation of a cleared pod is its added power on its node (study §5.1)."""

import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest

from eams.scheduler.auction import AuctionParams, Nodes, Pods
from eams.scheduler.extender.market import Market


def test_expected_power_is_dynamic_share_clipped_to_the_node() -> None:
    nodes = Nodes(
        slots=[4, 8],
        cores=[4.0, 8.0],
        p_idle_w=[40.0, 50.0],
        p_max_w=[120.0, 210.0],
        speed=[1.0, 1.0],
        headroom=[0.5, 0.5],
        age_s=[1.0, 1.0],
        empty=[False, True],
    )
    pods = Pods(slots=[2, 6, 1, 1], work_core_s=[60.0] * 4, priority=[1.0] * 4, tenant=[0] * 4)
    snapshot = SimpleNamespace(node_arrays=nodes, pod_arrays=pods)
    clearing = SimpleNamespace(assignment=np.array([0, 0, 1, -1]))
    market = Market(None, None, AuctionParams(), default_runtime_s=60.0)  # type: ignore[arg-type]
    expected_w = market.expected_power_w(snapshot, clearing)  # type: ignore[arg-type]
    # 80 W × 2/4; 6 cores on a 4-core node: at most the whole range; 160 W × 1/8, and not the
    # empty node's 50 W idle: its reading shows it already
    assert expected_w[:3].tolist() == [40.0, 80.0, 20.0]
    assert np.isnan(expected_w[3])  # left unassigned: no reservation
    # a window clearing several pods onto one empty node: none of them carries its idle power
    clearing = SimpleNamespace(assignment=np.array([1, 0, 1, 1]))
    expected_w = market.expected_power_w(snapshot, clearing)  # type: ignore[arg-type]
    assert expected_w.tolist() == [40.0, 80.0, 20.0, 20.0]


def test_a_pod_bound_elsewhere_moves_its_reservation_to_the_bound_node(tmp_path) -> None:
    """kube-scheduler may bind a pod to another node than its clearing's (an in-tree filter or
    score overturned it): the cleared node gets its headroom back and the bound node carries
    the reservation, valued there — (P_max − P_idle)·c/C, not the empty node's idle power,
    which its reading shows — with its clearing time kept; to a node that cannot be valued it
    just ends.
    (No kube-scheduler runs here: the binding is the watch's ``observe_placed``.)"""
    from eams.calibrate.calfile import load_calibration
    from eams.kube.requests import PodRequest
    from eams.scheduler.extender.metrics import ExtenderMetrics
    from eams.scheduler.extender.pending import sized_pod
    from eams.scheduler.extender.service import Extender
    from eams.scheduler.extender.settings import Settings
    from eams.telemetry import TelemetrySample
    from tests.extender.conftest import node_object, sample, write_calibration

    now = 1_800_000_000.0
    lines = {"cheap": (30.0, 90.0), "dear": (60.0, 260.0)}  # P_idle, P_max, W
    calibrations = {
        name: load_calibration(write_calibration(tmp_path, name, idle_w, max_w))
        for name, (idle_w, max_w) in lines.items()
    }
    extender = Extender(Settings(mode="active"), calibrations, ExtenderMetrics(), lambda: now)
    extender.observe_nodes([node_object(n, cpu="8") for n in [*lines, "uncalibrated"]], "node")
    extender.ingest(
        [TelemetrySample.from_json(sample(n, now, 0.6, utilisation=0.0)) for n in lines]
    )
    request = PodRequest(2000, 256 * 2**20)  # 2 cores: 2 slots of the default 1-core slot
    table = extender.table

    def reserved_w(node: str) -> float:
        return float(table.cols["reserved_w"][table.index[node]])

    for pod, bound_to in (("ns/a", "dear"), ("ns/b", "uncalibrated")):
        rows = extender._clear([sized_pod(pod, request, 0, "ns", {}, f"uid-{pod}")])
        assert rows[0].node == "cheap" and extender.herd.held_by(pod)[0] == "cheap"
        cleared_at_s = extender.herd._by_node["cheap"][pod].cleared_at_s
        extender.observe_placed(pod, bound_to, request)
        assert reserved_w("cheap") == 0.0
        if bound_to == "dear":
            # the dynamic share alone; the fitted line's rounding aside
            expected_w = pytest.approx((260.0 - 60.0) * 2 / 8, rel=1e-9)
            assert extender.herd.held_by(pod) == ("dear", expected_w)
            assert reserved_w("dear") == expected_w
            assert table.cols["reserved_bound_w"][table.index["dear"]] == expected_w
            assert extender.herd._by_node["dear"][pod].cleared_at_s == cleared_at_s
        else:
            assert extender.herd.held_by(pod) is None
    assert extender.metrics.reservations_moved._value.get() == 2
    extender.observe_placed("ns/a", "dear", request)  # seen again on the same node: unchanged
    assert reserved_w("dear") == pytest.approx((260.0 - 60.0) * 2 / 8, rel=1e-9)


def test_a_pod_cleared_again_onto_no_node_ends_its_reservation(tmp_path) -> None:
    """A pod cleared onto a node and then cleared again (kube-scheduler no longer offered that
    node) where no offered node can take it: its first clearing's reservation ends instead of
    keeping that node full until the TTL."""
    from eams.calibrate.calfile import load_calibration
    from eams.kube.requests import PodRequest
    from eams.scheduler.extender.metrics import ExtenderMetrics
    from eams.scheduler.extender.pending import sized_pod
    from eams.scheduler.extender.service import Extender
    from eams.scheduler.extender.settings import Settings
    from eams.telemetry import TelemetrySample
    from tests.extender.conftest import node_object, sample, write_calibration

    now = 1_800_000_000.0
    calibrations = {"cheap": load_calibration(write_calibration(tmp_path, "cheap", 30.0, 90.0))}
    extender = Extender(Settings(mode="active"), calibrations, ExtenderMetrics(), lambda: now)
    extender.observe_nodes([node_object(n, cpu="8") for n in ("cheap", "uncalibrated")], "node")
    extender.ingest([TelemetrySample.from_json(sample("cheap", now, 0.6, utilisation=0.0))])
    pod = sized_pod("ns/a", PodRequest(2000, 256 * 2**20), 0, "ns", {}, "uid-a")
    (row,) = extender._clear([pod])
    assert row.node == "cheap" and extender.herd.held_by("ns/a") is not None
    (again,) = extender._clear([dataclasses.replace(pod, candidates=frozenset({"uncalibrated"}))])
    assert again.node is None  # the one offered node cannot be valued
    assert extender.herd.held_by("ns/a") is None
    assert extender.table.cols["reserved_w"][extender.table.index["cheap"]] == 0.0
