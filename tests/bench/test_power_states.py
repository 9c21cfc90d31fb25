"""The measured state model in the harness: the power manager's policy in simulated time, the
energy of every state and transition, pods that wait for a wake, failed wakes, the manifest."""

from pathlib import Path

import numpy as np
import pytest

from eams.scheduler.bench.errors import ManifestError
from eams.scheduler.bench.manifest import (
    MINI_PC_S3,
    PowerStatesSpec,
    load_manifest,
    parse_manifest,
)
from eams.scheduler.bench.power_manager import SimPowerManager, SleepModel
from eams.scheduler.bench.predicates import static_masks
from eams.scheduler.bench.simulator import simulate
from eams.scheduler.bench.violations import check_placements
from eams.scheduler.policies import load
from eams.scheduler.policies.base import Params
from eams.scheduler.power.policy import PolicyConfig
from tests.bench.conftest import tiny_cluster, tiny_workload

# straight 50 W → 150 W curve (tiny_cluster's default): 2 W asleep, 4 s / 100 J suspend,
# 10 s / 800 J wake
SLEEP = MINI_PC_S3.model_copy(  # the test's own figures: MINI_PC_S3's sources do not hold
    update=dict(
        sleep_power_w=2.0,
        suspend_time_s=4.0,
        suspend_energy_j=100.0,
        wake_time_s=10.0,
        wake_energy_j=800.0,
    )
)
MANIFESTS = Path(__file__).resolve().parents[2] / "scheduler" / "bench" / "manifests"
LONELY = PolicyConfig(min_awake=0, reserve_cores=0.0, idle_before_sleep_s=100.0, min_awake_s=0.0)


def manager(cluster, workload, config=LONELY, spec=SLEEP, seed=0, **kw) -> SimPowerManager:
    masks = static_masks(workload.profiles, cluster.meta)
    sleep = SleepModel.from_spec(spec, cluster)
    return SimPowerManager(cluster, workload, masks, sleep, config, seed, **kw)


def run(cluster, workload, config=LONELY, spec=SLEEP, scheduler="fcfs", seed=0, **kw):
    power = manager(cluster, workload, config, spec, seed, **kw)
    policy = load(scheduler).make(cluster, Params(), seed)
    return simulate(cluster, workload, policy, seed=seed, power=power)


def test_a_node_sleeps_wakes_for_a_pod_and_every_joule_is_counted() -> None:
    cluster = tiny_cluster([4])
    workload = tiny_workload([0.0, 1000.0], [4.0, 4.0], [50.0, 50.0])
    replay = run(cluster, workload)
    # busy 0–50 s at 150 W; empty 50–150 s at 50 W; suspend 150–154 s (100 J); asleep until the
    # pod has pended wake_after_s = 2 s (1002 s); waking 1002–1012 s (800 J); busy 1012–1062 s
    assert replay.start_s.tolist() == [0.0, 1012.0]
    expected = 150 * 50 + 50 * 100 + 100 + 2 * (1002 - 154) + 800 + 150 * 50
    assert replay.energy_j == pytest.approx(expected)
    assert replay.makespan_s == 1062.0
    # the arrival window ends with the last arrival (1000 s)
    assert replay.energy_window_j == pytest.approx(150 * 50 + 50 * 100 + 100 + 2 * (1000 - 154))
    assert replay.wake_wait_s == {1: pytest.approx(12.0)}
    power = replay.power
    assert power["sleeps"] == 1 and power["wakes"] == 1 and power["failed_wakes"] == 0
    assert power["transition_energy_j"] == 900.0
    assert power["transitions_per_node_hour"] == pytest.approx(2 / (1062 / 3600))
    assert power["asleep_fraction"] == pytest.approx((1002 - 154) / 1062)


def test_without_a_manager_every_node_stays_awake_at_its_idle_draw() -> None:
    cluster = tiny_cluster([4])
    workload = tiny_workload([0.0, 1000.0], [4.0, 4.0], [50.0, 50.0])
    policy = load("fcfs").make(cluster, Params(), 0)
    replay = simulate(cluster, workload, policy, seed=0)
    assert replay.start_s.tolist() == [0.0, 1000.0]
    assert replay.energy_j == pytest.approx(150 * 50 + 50 * 950 + 150 * 50)


def test_the_tick_delays_the_manager_and_the_wake_by_at_most_one_tick() -> None:
    cluster = tiny_cluster([4])
    workload = tiny_workload([0.0, 1000.0], [4.0, 4.0], [50.0, 50.0])
    replay = run(cluster, workload, tick_s=5.0)
    # asked at 1000 s (the arrival); the pod is 2 s old at 1002 s but the next tick is 1005 s
    assert replay.start_s[1] == 1015.0


def test_pods_never_land_on_a_node_that_is_not_awake() -> None:
    cluster = tiny_cluster([4, 4, 8])
    rng = np.random.default_rng(3)
    arrivals = np.sort(rng.uniform(0, 20_000, 120))
    workload = tiny_workload(
        list(arrivals), list(rng.choice([1.0, 2.0, 4.0], 120)), list(rng.uniform(10, 900, 120))
    )
    power = manager(cluster, workload, PolicyConfig())
    states_at_bind = []
    bound = power.pod_bound
    power.pod_bound = lambda n, pod: (states_at_bind.append(int(power.state[n])), bound(n, pod))
    policy = load("most-allocated").make(cluster, Params(), 0)
    replay = simulate(cluster, workload, policy, seed=0, power=power)
    assert (replay.node >= 0).all()
    assert check_placements(cluster, workload, replay.log) == []
    assert replay.power["sleeps"] > 0 and replay.power["wakes"] > 0
    assert len(states_at_bind) == 120 and set(states_at_bind) == {0}  # PowerState.AWAKE


def test_failed_wakes_go_to_the_next_node_and_every_pod_still_runs() -> None:
    cluster = tiny_cluster([4, 4, 4, 4])
    rng = np.random.default_rng(5)
    arrivals = np.cumsum(rng.exponential(400.0, 60))
    workload = tiny_workload(list(arrivals), [4.0] * 60, list(rng.uniform(50, 300, 60)))
    flaky = SLEEP.model_copy(update={"wake_failure_rate": 0.5})
    config = PolicyConfig(min_awake=1, reserve_cores=0.0, suspect_retry_s=60.0)
    replay = run(cluster, workload, config=config, spec=flaky, seed=2)
    power = replay.power
    assert power["failed_wakes"] > 0 and power["wakes"] > power["failed_wakes"]
    assert (replay.node >= 0).all() and replay.unschedulable == {}
    # a failed wake costs its timeout (10 s × 2) before the next node wakes: the waits show it
    assert max(replay.wake_wait_s.values()) >= 10.0 * 2


def test_sleep_model_defaults_come_from_each_nodes_curve() -> None:
    cluster = tiny_cluster([4, 8], points_w=[list(np.linspace(50, 150, 11)), [20] * 11])
    model = SleepModel.from_spec(MINI_PC_S3, cluster)
    assert model.sleep_power_w.tolist() == [3.0, 3.0]
    assert model.suspend_energy_j.tolist() == [50.0 * 2.0, 20.0 * 2.0]  # idle draw × 2 s
    assert model.wake_energy_j.tolist() == [100.0 * 15.0, 20.0 * 15.0]  # 50 % draw × 15 s


def test_a_server_state_draws_its_share_of_each_nodes_full_power() -> None:
    cluster = tiny_cluster([4, 8], points_w=[list(np.linspace(50, 150, 11)), [20] * 11])
    spec = load_manifest(MANIFESTS / "regime-1000.yaml").cluster.power_states
    assert spec.state == "soft-off" and spec.sources
    model = SleepModel.from_spec(spec, cluster)
    assert model.sleep_power_w.tolist() == [150.0 * 0.05, 20.0 * 0.05]
    assert model.suspend_energy_j.tolist() == [50.0 * 45.0, 20.0 * 45.0]  # idle draw × 45 s
    assert model.wake_energy_j.tolist() == [100.0 * 210.0, 20.0 * 210.0]  # 50 % draw × 210 s
    assert load_manifest(MANIFESTS / "testbed.yaml").cluster.power_states == MINI_PC_S3


def test_a_sleep_state_without_a_source_or_with_two_draws_is_refused() -> None:
    base = {"name": "m", "schedulers": ["default"], "rho": [0.5], "seeds": [1]}
    state = MINI_PC_S3.model_dump()
    unsourced = {key: value for key, value in state.items() if key != "sources"}
    with pytest.raises(ManifestError, match=r"cluster.power_states.sources: Field required"):
        parse_manifest({**base, "cluster": {"power_states": unsourced}})
    with pytest.raises(ManifestError, match=r"power_states.sources: List should have at least 1"):
        parse_manifest({**base, "cluster": {"power_states": {**state, "sources": []}}})
    no_url = {**state, "sources": [{"title": "a paper", "figures": "3 W"}]}
    with pytest.raises(ManifestError, match=r"power_states.sources\[0\].url: Field required"):
        parse_manifest({**base, "cluster": {"power_states": no_url}})
    both = {**state, "sleep_power_fraction_of_max": 0.1}
    with pytest.raises(ManifestError, match=r"exactly one of sleep_power_w and sleep_power_frac"):
        parse_manifest({**base, "cluster": {"power_states": both}})
    assert PowerStatesSpec.model_validate(state) == MINI_PC_S3


def test_manifest_power_manager_section_is_checked() -> None:
    base = {"name": "m", "schedulers": ["default"], "rho": [0.5], "seeds": [1]}
    manifest = parse_manifest(base)
    assert manifest.power_manager.modes == ["none", "policy"]
    assert manifest.power_manager.policy == PolicyConfig()
    with pytest.raises(ValueError, match=r"power_manager.policy.idle_before_sleeps: Extra"):
        parse_manifest({**base, "power_manager": {"policy": {"idle_before_sleeps": 1}}})
    with pytest.raises(ValueError, match=r"power_manager.modes\[0\]: Input should be 'none'"):
        parse_manifest({**base, "power_manager": {"modes": ["always-off"]}})
    with pytest.raises(ValueError, match=r"cluster.empty_node: Extra inputs"):
        parse_manifest({**base, "cluster": {"empty_node": "off"}})
