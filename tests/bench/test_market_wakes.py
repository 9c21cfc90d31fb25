"""Issue 34 in the harness: the real extender (in-process, its whole ASGI stack) prices the
asleep nodes, and its clearing wakes them through the simulated power manager.

Two or three nodes: ``n0`` never sleeps (a role node) and ``n1`` (and ``n2``) fall asleep once
empty; then one long pod arrives that fits the awake ``n0``. Which node it gets is the market's
price: waking an efficient node pays for itself over a long pod, not over a short one.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from eams.calibrate.calfolder import load_calibration_folder
from eams.calibrate.powerstates.figures import node_figures
from eams.scheduler.bench.power_manager import SimPowerManager, SleepModel
from eams.scheduler.bench.predicates import static_masks
from eams.scheduler.bench.simulator import simulate
from eams.scheduler.policies import load
from eams.scheduler.policies.base import Params
from eams.scheduler.policies.eams import write_calibrations
from eams.scheduler.power.policy import PolicyConfig
from eams.scheduler.power.policy_fleet import PowerState
from tests.bench.conftest import tiny_cluster, tiny_workload
from tests.bench.test_power_states import SLEEP

HUNGRY = list(np.linspace(100, 300, 11))  # 8 cores: 25 W a core
FRUGAL = list(np.linspace(20, 60, 11))  # 8 cores: 5 W a core
ARRIVAL_S = 1000.0  # every node but n0 asleep by then (empty from 0 s, asleep from ~100 s)
CONFIG = PolicyConfig(min_awake=0, reserve_cores=0.0, idle_before_sleep_s=60.0, min_awake_s=0.0)


def replay(points_w: list[list[float]], duration_s: float, scheduler: str = "eams", **sleep):
    """One pod (index 1) of 4 cores × ``duration_s`` arriving at ARRIVAL_S on nodes of
    ``points_w`` (n0 a role node), under the manager with :data:`SLEEP` (10 s wake) updated by
    ``sleep``; returns (replay, manager)."""
    cluster = tiny_cluster([8] * len(points_w), points_w=points_w)
    # a first short pod at 0 s starts the manager's clock (it is asked at events)
    workload = tiny_workload([0.0, ARRIVAL_S], [1.0, 4.0], [10.0, duration_s])
    model = SleepModel.from_spec(SLEEP.model_copy(update=sleep), cluster)
    cluster.power_states = model.records()
    masks = static_masks(workload.profiles, cluster.meta)
    power = SimPowerManager(cluster, workload, masks, model, CONFIG, seed=1, no_sleep_nodes=1)
    policy = load(scheduler).make(cluster, Params(), 0)
    try:
        out = simulate(cluster, workload, policy, seed=0, power=power)
    finally:
        policy.close()
    return out, power


def test_a_clearing_onto_an_asleep_node_wakes_exactly_that_node() -> None:
    out, power = replay([HUNGRY, FRUGAL, HUNGRY], duration_s=3600.0)
    assert out.node[1] == 1  # the frugal node, asleep when the pod came
    assert out.market_held_pods == 1
    assert out.power["market_wakes"] == 1 and out.power["wakes"] == 1  # n1 only; n2 slept on
    assert power.state[2] == PowerState.ASLEEP and np.isnan(power.last_wake_s[2])
    # held at its first pass (0.2 s), woken at once, bound in the pass after it was Ready (10 s)
    assert out.start_s[1] == pytest.approx(ARRIVAL_S + 0.2 + 10.0 + 0.2)
    assert out.wake_wait_s == {1: pytest.approx(10.4)}


def test_a_bound_pods_reservation_ends_with_the_sample_that_shows_it() -> None:
    """eams-batch: pod 2 (4 cores) is cleared onto n0 (n1, awake too, draws twice as much) and
    bound there at once; the agent's next sample (3 s later, when pod 3 comes) shows its 200 W
    (headroom 1/3 of the 300 W cap). Its reservation (100 W, −1/3) still counted beside that
    sample put n0 at headroom 0, under the floor, and pod 3, which only n0 fits (its memory),
    was held for the asleep n2 and waited for its wake; the single-pod path places it on n0 at
    once. (Pod 1 at 995 s has the agents report, so pod 2's window clears on fresh readings.)"""
    cluster = tiny_cluster(
        [8, 8, 8], points_w=[HUNGRY, [2 * w for w in HUNGRY], HUNGRY], mem_mib=[1e6, 1e3, 1e6]
    )
    workload = tiny_workload(
        [0.0, ARRIVAL_S - 5.0, ARRIVAL_S, ARRIVAL_S + 3.0],
        [1.0, 1.0, 4.0, 2.0],
        [10.0, 1.0, 3600.0, 3600.0],
        mem_mib=[100.0, 100.0, 100.0, 2000.0],
    )
    model = SleepModel.from_spec(SLEEP, cluster)
    cluster.power_states = model.records()
    masks = static_masks(workload.profiles, cluster.meta)
    power = SimPowerManager(cluster, workload, masks, model, CONFIG, seed=1, no_sleep_nodes=2)
    policy = load("eams-batch").make(cluster, Params(), 0)
    try:
        out = simulate(cluster, workload, policy, seed=0, power=power)
    finally:
        policy.close()
    assert out.node[2:].tolist() == [0, 0] and out.market_held_pods == 0
    assert out.start_s[3] == pytest.approx(ARRIVAL_S + 3.0 + 0.2)
    assert out.power["wakes"] == 0


def test_without_market_wakes_the_pod_takes_the_awake_node() -> None:
    out, _ = replay([HUNGRY, FRUGAL, HUNGRY], duration_s=3600.0, scheduler="eams-no-wakes")
    assert out.node[1] == 0 and out.start_s[1] == pytest.approx(ARRIVAL_S + 0.2)
    assert out.market_held_pods == 0 and out.power["wakes"] == 0


def test_a_pod_never_waits_when_an_awake_node_is_the_better_price() -> None:
    # a short pod: the frugal node's wake (800 J, 10 s) does not pay back over 5 s
    out, _ = replay([HUNGRY, FRUGAL], duration_s=5.0)
    assert out.node[1] == 0 and out.start_s[1] == pytest.approx(ARRIVAL_S + 0.2)
    assert out.market_held_pods == 0 and out.power["wakes"] == 0
    # the awake node frugal, the asleep one hungry: no wake whatever the pod's length
    out, _ = replay([FRUGAL, HUNGRY], duration_s=3600.0)
    assert out.node[1] == 0 and out.start_s[1] == pytest.approx(ARRIVAL_S + 0.2)
    assert out.market_held_pods == 0 and out.power["wakes"] == 0


def test_a_failed_market_wake_sends_the_pod_to_the_next_best_node() -> None:
    out, power = replay([HUNGRY, FRUGAL], duration_s=3600.0, wake_failure_rate=0.99)
    assert out.power["market_wakes"] == 1 and out.power["failed_wakes"] == 1
    assert power.suspect[1]
    assert out.node[1] == 0  # the awake node, once the wake timed out (2 × 10 s)
    assert ARRIVAL_S + 2 * 10.0 <= out.start_s[1] <= ARRIVAL_S + 2 * 10.0 + 1.0


@pytest.mark.parametrize("state", ["suspend-to-ram", "soft-off"])
def test_the_extender_reads_the_sleep_state_the_manager_runs(state: str, tmp_path: Path) -> None:
    """The calibration files the plug-in writes read back, through the one reader the manager
    and the extender share, to the figures the simulated manager runs on."""
    cluster = tiny_cluster([8, 8], points_w=[HUNGRY, FRUGAL])
    model = SleepModel.from_spec(SLEEP.model_copy(update={"state": state}), cluster)
    cluster.power_states = model.records()
    write_calibrations(cluster, tmp_path)
    calibrations = load_calibration_folder(tmp_path)
    for n, name in enumerate(cluster.names):
        calibration = calibrations[name][1]
        assert calibration.power_states is not None
        assert calibration.power_states.method == ("wol" if state == "suspend-to-ram" else "ssh")
        figures = node_figures(calibration)
        assert figures["sleep_power_w"] == model.sleep_power_w[n]
        assert figures["wake_time_s"] == model.wake_time_s[n]
        assert figures["wake_energy_j"] == model.wake_energy_j[n]
        assert figures["suspend_time_s"] == model.suspend_time_s[n]
        assert figures["suspend_energy_j"] == model.suspend_energy_j[n]
