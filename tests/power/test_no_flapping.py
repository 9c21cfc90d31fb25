"""The policy under a periodic load, in the bench's simulator (the same closed loop the sweep
runs): it does not flap when the idle stretches are too short to pay for a sleep, and it does
sleep, once per stretch and no more, when they are long enough."""

import pytest

from eams.scheduler.bench.manifest import MINI_PC_S3
from eams.scheduler.bench.power_manager import SimPowerManager, SleepModel
from eams.scheduler.bench.predicates import static_masks
from eams.scheduler.bench.simulator import simulate
from eams.scheduler.policies import load
from eams.scheduler.policies.base import Params
from eams.scheduler.power.policy import PolicyConfig
from tests.bench.conftest import tiny_cluster, tiny_workload

NODES, PERIODS, BUSY_S = 4, 20, 400.0
# 50 W idle, 2 W asleep; a wake dear enough that the break-even is
# (100 + 7128 − 2·14) / (50 − 2) = 150 s
SLEEP = MINI_PC_S3.model_copy(  # the test's own figures: MINI_PC_S3's sources do not hold
    update=dict(
        sleep_power_w=2.0,
        suspend_time_s=4.0,
        suspend_energy_j=100.0,
        wake_time_s=10.0,
        wake_energy_j=7128.0,
    )
)


def periodic(gap_s: float):
    """Every BUSY_S + gap_s seconds, one 4-core pod per node for BUSY_S seconds."""
    period = BUSY_S + gap_s
    arrivals = [k * period for k in range(PERIODS) for _ in range(NODES)]
    count = len(arrivals)
    return tiny_workload(arrivals, [4.0] * count, [BUSY_S] * count)


def replay(gap_s: float):
    cluster = tiny_cluster([4.0] * NODES)
    workload = periodic(gap_s)
    masks = static_masks(workload.profiles, cluster.meta)
    sleep = SleepModel.from_spec(SLEEP, cluster)
    power = SimPowerManager(cluster, workload, masks, sleep, PolicyConfig(), seed=0, tick_s=5.0)
    policy = load("most-allocated").make(cluster, Params(), 0)
    return simulate(cluster, workload, policy, seed=0, power=power)


def test_short_idle_stretches_do_not_make_it_flap() -> None:
    # 200 s gaps: past idle_before_sleep_s (120 s), and longer than the break-even, but once
    # the policy has seen one, at 120 s only 80 s more are expected: below 150 s
    result = replay(200.0)
    transitions = result.power["sleeps"] + result.power["wakes"]
    assert transitions <= 2 * NODES  # the first gap only, before any gap was seen
    assert result.power["transitions_per_node_hour"] <= 2 * NODES / (
        NODES * result.makespan_s / 3600
    )
    assert (result.node >= 0).all()


def test_long_idle_stretches_are_slept_through_once_each() -> None:
    result = replay(2000.0)
    sleeps, wakes = result.power["sleeps"], result.power["wakes"]
    gaps = PERIODS - 1
    # every gap: the nodes beyond the reserve (one 4-core node) sleep once and wake once
    assert sleeps >= (NODES - 1) * gaps
    assert sleeps <= NODES * gaps and wakes <= sleeps
    assert result.power["asleep_fraction"] == pytest.approx(
        (NODES - 1) / NODES * 2000 / 2400, rel=0.15
    )
