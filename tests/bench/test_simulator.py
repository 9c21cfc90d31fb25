"""The event loop: energy integration on the measured curve (empty nodes at their active idle),
unschedulable pods, Jain."""

import numpy as np
import pytest

from eams.kube.taints import Taint
from eams.scheduler.bench.metrics import jain_index, summarise, tenant_shares
from eams.scheduler.bench.simulator import simulate
from eams.scheduler.policies import load
from eams.scheduler.policies.base import NodeMeta, Params, PodConstraints, PowerCurves
from tests.bench.conftest import tiny_cluster, tiny_workload

# a measured, clearly non-linear curve (W at 0, 10 … 100 %)
CURVE = [60, 100, 115, 125, 133, 140, 147, 155, 165, 180, 200]


def test_piecewise_power_interpolates_measured_points() -> None:
    curves = PowerCurves(np.array([CURVE], dtype=float))
    assert curves.power_w(0, 0.25) == pytest.approx((115 + 125) / 2)
    assert curves.power_all_w(np.array([1.0]))[0] == 200
    assert curves.power_all_w(np.array([0.05]))[0] == pytest.approx(80)


def test_energy_is_integrated_on_the_measured_curve_not_the_fit() -> None:
    cluster = tiny_cluster([4], points_w=[CURVE])
    # 1 core for 100 s (u = 0.25), then 2 more cores join for 50 s (u = 0.75), node off after
    workload = tiny_workload([0.0, 25.0], [1.0, 2.0], [100.0, 50.0])
    replay = simulate(cluster, workload, load("fcfs").make(cluster, Params(), 0), seed=0)
    expected = 120 * 25 + 160 * 50 + 120 * 25  # P(0.25) = 120 W, P(0.75) = 160 W
    assert replay.energy_j == pytest.approx(expected)
    p_idle, p_max = cluster.p_idle_w[0], cluster.p_max_w[0]
    linear = (p_idle + (p_max - p_idle) * 0.25) * 50 + (p_idle + (p_max - p_idle) * 0.75) * 50
    assert abs(replay.energy_j - linear) > 100  # the fit would give a different number


def test_an_empty_awake_node_draws_its_measured_active_idle() -> None:
    cluster = tiny_cluster([4, 4], points_w=[CURVE, CURVE])
    workload = tiny_workload([0.0], [4.0], [10.0])
    replay = simulate(cluster, workload, load("fcfs").make(cluster, Params(), 0), seed=0)
    assert replay.energy_j == pytest.approx(200 * 10 + 60 * 10)  # no free "off" state
    assert replay.power == {}  # no power manager


def test_pod_that_fits_nowhere_is_reported_unschedulable_not_dropped() -> None:
    taint = Taint("dedicated", "x", "NoSchedule")
    cluster = tiny_cluster([4, 8], meta=[NodeMeta(), NodeMeta(taints=(taint,))])
    workload = tiny_workload([0.0, 1.0, 2.0], [2.0, 6.0, 16.0], [10.0, 10.0, 10.0])
    replay = simulate(cluster, workload, load("default").make(cluster, Params(), 0), seed=0)
    figures = summarise(cluster, workload, replay)
    assert figures["placed"] == 1 and figures["unschedulable"] == 2
    reasons = figures["unschedulable_examples"]
    assert "0/2 nodes are available: 1 Insufficient cpu" in reasons["p1"]
    assert "untolerated taint" in reasons["p1"]
    assert "2 Insufficient cpu" in reasons["p2"]


def test_pod_waits_for_room_and_its_wait_counts() -> None:
    cluster = tiny_cluster([4])
    workload = tiny_workload([0.0, 1.0], [4.0, 4.0], [10.0, 10.0])
    replay = simulate(cluster, workload, load("default").make(cluster, Params(), 0), seed=0)
    assert replay.start_s.tolist() == [0.0, 10.0] and replay.finish_s.tolist() == [10.0, 20.0]


def test_batch_policy_waits_for_the_window() -> None:
    cluster = tiny_cluster([4, 4])
    workload = tiny_workload([0.0, 0.1], [1.0, 1.0], [10.0, 10.0])
    replay = simulate(
        cluster, workload, load("milp").make(cluster, Params(), 0), seed=0, batch_window_s=0.2
    )
    assert replay.start_s.tolist() == [0.2, 0.2]


def test_jain_index_values() -> None:
    assert jain_index(np.array([1.0, 1.0, 1.0])) == pytest.approx(1.0)
    assert jain_index(np.array([1.0, 0.0, 0.0, 0.0])) == pytest.approx(0.25)
    assert jain_index(np.array([])) is None


def test_tenant_shares_are_quota_normalised() -> None:
    cluster = tiny_cluster([2])
    # tenant 0 runs 1 core for the whole window, tenant 1 waits until after the window
    workload = tiny_workload(
        [0.0, 0.0, 10.0], [2.0, 2.0, 1.0], [20.0, 5.0, 1.0], tenant=[0, 1, 1], quotas=[0.5, 0.5]
    )
    replay = simulate(cluster, workload, load("fcfs").make(cluster, Params(), 0), seed=0)
    shares = tenant_shares(cluster, workload, replay)
    assert shares.tolist() == [2.0, 0.0]  # all window work went to tenant 0 (quota 0.5)
    assert jain_index(shares) == pytest.approx(0.5)


def test_node_selector_pods_only_land_on_labelled_nodes() -> None:
    cluster = tiny_cluster([8, 8], meta=[NodeMeta(), NodeMeta(labels={"pool": "a"})])
    profiles = [PodConstraints(), PodConstraints(node_selector=(("pool", "a"),))]
    workload = tiny_workload([0.0, 0.0], [1.0, 1.0], [5.0, 5.0], profile=[1, 1], profiles=profiles)
    replay = simulate(cluster, workload, load("default").make(cluster, Params(), 0), seed=0)
    assert replay.node.tolist() == [1, 1]


def test_window_metric_counts_energy_and_work_inside_the_arrival_window_only() -> None:
    cluster = tiny_cluster([4, 4])
    # a 4-core pod runs 0–300 s; the last arrival (1 core, 10 s) at 100 s ends the window
    workload = tiny_workload([0.0, 100.0], [4.0, 1.0], [300.0, 10.0])
    replay = simulate(cluster, workload, load("fcfs").make(cluster, Params(), 0), seed=0)
    figures = summarise(cluster, workload, replay)
    assert figures["work_window_core_s"] == 4 * 100  # the second pod starts as it closes
    assert figures["energy_window_j"] == pytest.approx((150 + 50) * 100)
    assert figures["energy_per_work_window_j_per_core_s"] == pytest.approx(50.0)
    assert figures["work_core_s"] == 4 * 300 + 1 * 10
