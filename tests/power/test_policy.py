"""The power policy's decisions, one call at a time: which nodes sleep, which wake and why,
phase timeouts, suspect nodes, rate limits, and the numbers behind each decision."""

import numpy as np
import pytest

from eams.scheduler.power.policy import PolicyConfig, PowerPolicy
from eams.scheduler.power.policy_fleet import FleetInputError, PowerState
from eams.scheduler.power.policy_plan import RATE_LIMIT, Action, PolicyMemory
from tests.power.conftest import BREAK_EVEN_S, fleet, node, pod

ASLEEP, WAKING, SUSPENDING = PowerState.ASLEEP, PowerState.WAKING, PowerState.SUSPENDING


def decide(state, config=None, memory=None):
    return PowerPolicy(config or PolicyConfig()).decide(state, memory)


def actions(plan) -> list[tuple[str, str, str]]:
    return [(d.action.value, d.node, d.reason.value) for d in plan.decisions]


def test_least_efficient_empty_node_sleeps_the_most_efficient_stays_for_the_reserve() -> None:
    nodes = [
        node("busy", pods=(2.0,)),
        node("fast", speed=2.0),  # twice the work per joule
        node("slow"),
    ]
    plan = decide(fleet(1000.0, nodes), PolicyConfig(reserve_cores=4.0))
    assert actions(plan) == [("sleep", "slow", "idle-past-break-even")]
    numbers = plan.decisions[0].numbers
    assert numbers["empty_s"] == 1000.0 and numbers["break_even_s"] == pytest.approx(BREAK_EVEN_S)
    assert numbers["expected_idle_s"] == 1000.0  # no gap seen yet: as long again
    assert plan.decisions[0].line().startswith("sleep slow idle-past-break-even empty_s=1000")


def test_default_reserve_is_the_largest_recent_pod() -> None:
    nodes = [node("busy", pods=(3.0, 1.0)), node("b"), node("c")]
    plan = decide(fleet(1000.0, nodes))  # free 0 on busy: one empty node holds the 3-core pod
    assert [d.node for d in plan.decisions] == ["c"]
    assert plan.memory.recent_largest_pod_cores == 3.0


def test_hysteresis_idle_before_sleep_and_min_awake_after_a_wake() -> None:
    config = PolicyConfig(reserve_cores=0.0, min_awake=0)
    young = [node("a", empty_since_s=950.0)]  # empty 50 s < 120 s
    plan = decide(fleet(1000.0, young), config)
    assert plan.decisions == () and plan.next_check_s == 1070.0
    woken = [node("a", last_wake_s=900.0, empty_since_s=800.0)]  # woke 100 s ago < 300 s
    plan = decide(fleet(1000.0, woken), config)
    assert plan.decisions == () and plan.next_check_s == 1200.0
    assert actions(decide(fleet(1200.0, woken), config)) == [("sleep", "a", "idle-past-break-even")]


def test_a_node_sleeps_only_when_its_expected_idle_time_beats_the_break_even() -> None:
    config = PolicyConfig(reserve_cores=0.0, min_awake=0)
    costly = [node("a", wake_energy_j=30_000.0)]  # break-even (30 + 30,000 − 13) / 9 ≈ 3,330 s
    assert decide(fleet(1000.0, costly), config).decisions == ()
    assert decide(fleet(3400.0, costly), config).decisions[0].action is Action.SLEEP
    # the fleet's idle gaps all ended after 150 s: at 130 s only 20 s more are expected
    short = PolicyMemory(idle_gaps_s=np.full(8, 150.0))
    plan = decide(fleet(130.0, [node("a")]), config, short)
    assert plan.decisions == () and plan.next_check_s == pytest.approx(150.0, abs=1e-3)
    long_gaps = PolicyMemory(idle_gaps_s=np.full(8, 2000.0))
    assert decide(fleet(130.0, [node("a")]), config, long_gaps).decisions != ()


def test_never_sleeps_pods_roles_unmeasured_nodes_or_one_a_pending_pod_fits() -> None:
    nodes = [
        node("busy", pods=(1.0,)),
        node("server", roles=frozenset({"k3s-server"})),
        node("owner", roles=frozenset({"pdu-owner"})),
        node("unmeasured", wake_energy_j=None),
        node("wanted", allocatable_cores=8.0),
    ]
    pending = [pod("big", 6.0, 999.0)]  # fits only "wanted"
    plan = decide(fleet(1000.0, nodes, pending), PolicyConfig(reserve_cores=0.0, min_awake=0))
    assert plan.decisions == ()


def test_pending_pod_that_fits_no_awake_node_wakes_the_cheapest_node_that_fits() -> None:
    nodes = [
        node("busy", pods=(4.0,)),
        node("small", ASLEEP),  # 4 cores: too small
        node("dear", ASLEEP, allocatable_cores=8.0, wake_energy_j=3000.0),
        node("cheap", ASLEEP, allocatable_cores=8.0),
    ]
    state = fleet(1000.0, nodes, [pod("p", 6.0, 998.0, runtime_ref_s=600.0)])
    plan = decide(state, PolicyConfig(reserve_cores=0.0))
    assert actions(plan) == [("wake", "cheap", "pending-unfit")]
    wake = plan.decisions[0]
    assert wake.pods == ("p",) and wake.numbers["pending_s"] == 2.0
    # E_wake + (P_max − P_idle)·c/C·t + (P_idle − P_sleep)·t = 300 + 30·6/8·600 + 9·600
    assert wake.numbers["cost_j"] == pytest.approx(300 + 30 * 0.75 * 600 + 9 * 600)


def test_a_pod_is_not_woken_for_before_wake_after_s_nor_twice_while_a_node_wakes() -> None:
    nodes = [node("busy", pods=(4.0,)), node("b", ASLEEP), node("c", ASLEEP)]
    plan = decide(fleet(1000.0, nodes, [pod("p", 2.0, 999.0)]), PolicyConfig(reserve_cores=0.0))
    assert plan.decisions == () and plan.next_check_s == 1001.0  # wake_after_s = 2
    waking = [node("busy", pods=(4.0,)), node("b", WAKING, state_since_s=995.0), node("c", ASLEEP)]
    pending = [pod("p", 2.0, 990.0), pod("q", 2.0, 990.0)]  # both fit on the waking node
    plan = decide(fleet(1000.0, waking, pending), PolicyConfig(reserve_cores=0.0))
    assert plan.decisions == ()
    pending.append(pod("r", 1.0, 990.0))  # 5 cores pending: one more node
    plan = decide(fleet(1000.0, waking, pending), PolicyConfig(reserve_cores=0.0))
    assert actions(plan) == [("wake", "c", "pending-unfit")]


def test_wear_levelling_wakes_the_node_that_slept_longest_among_equals() -> None:
    nodes = [
        node("busy", pods=(4.0,)),
        node("recent", ASLEEP, state_since_s=900.0),
        node("oldest", ASLEEP, state_since_s=100.0),
        node("middle", ASLEEP, state_since_s=500.0),
    ]
    plan = decide(fleet(1000.0, nodes, [pod("p", 1.0, 900.0)]), PolicyConfig(reserve_cores=0.0))
    assert actions(plan) == [("wake", "oldest", "pending-unfit")]


def test_a_failed_wake_goes_asleep_and_suspect_and_the_next_node_wakes() -> None:
    config = PolicyConfig(reserve_cores=0.0)
    nodes = [
        node("busy", pods=(4.0,)),
        node("dud", WAKING, state_since_s=970.0, last_wake_s=970.0),  # 30 s > 10 s × 2
        node("next", ASLEEP, state_since_s=500.0),
    ]
    plan = decide(fleet(1000.0, nodes, [pod("p", 2.0, 960.0)]), config)
    assert actions(plan) == [
        ("wake-failed", "dud", "wake-timeout"),
        ("wake", "next", "pending-unfit"),
    ]
    failed = plan.decisions[0].numbers
    assert failed == {"in_phase_s": 30.0, "timeout_s": 20.0, "failed_wakes": 1.0}


def test_a_suspect_node_is_retried_only_after_its_backoff_and_never_loops() -> None:
    config = PolicyConfig(reserve_cores=0.0, suspect_retry_s=300.0)
    only = dict(state_since_s=1000.0, last_wake_s=970.0, suspect=True, failed_wakes=1)
    nodes = [node("busy", pods=(4.0,)), node("dud", ASLEEP, **only)]
    pending = [pod("p", 2.0, 960.0)]
    plan = decide(fleet(1100.0, nodes, pending), config)
    assert plan.decisions == () and plan.next_check_s == 1270.0  # 970 + 300
    assert actions(decide(fleet(1270.0, nodes, pending), config)) == [
        ("wake", "dud", "pending-unfit")
    ]
    twice = {**only, "failed_wakes": 2}  # the backoff doubles: 970 + 600
    nodes = [node("busy", pods=(4.0,)), node("dud", ASLEEP, **twice)]
    assert decide(fleet(1300.0, nodes, pending), config).next_check_s == 1570.0
    sound = node("sound", ASLEEP, state_since_s=990.0)  # a sound node goes first
    plan = decide(fleet(1600.0, [*nodes, sound], pending), config)
    assert actions(plan) == [("wake", "sound", "pending-unfit")]


def test_a_suspend_that_does_not_confirm_leaves_the_node_asleep_and_suspect() -> None:
    nodes = [node("a", pods=(1.0,)), node("b", SUSPENDING, state_since_s=990.0)]
    plan = decide(fleet(1000.0, nodes), PolicyConfig(reserve_cores=0.0))  # 10 s > 3 s × 2
    assert actions(plan) == [("suspend-failed", "b", "suspend-timeout")]
    assert decide(fleet(995.0, nodes)).next_check_s == 996.0


def test_the_rate_limit_holds_sleeps_back_and_says_so() -> None:
    nodes = [node("keep", pods=(1.0,))] + [node(f"n{i}") for i in range(10)]
    nodes.append(node("slept", ASLEEP, last_sleep_s=970.0))  # one sleep in the last minute
    config = PolicyConfig(reserve_cores=0.0, suspend_rate_per_min=4)
    plan = decide(fleet(1000.0, nodes), config)
    assert [d.action for d in plan.decisions] == [Action.SLEEP] * 3
    assert len(plan.held) == 1 and plan.held[0].held_by == RATE_LIMIT
    assert plan.held_total == 7 and plan.next_check_s == 1030.0  # 970 + 60


def test_a_market_wake_request_wakes_exactly_the_requested_node_at_once() -> None:
    nodes = [
        node("hot", pods=(1.0,)),  # the pod fits here: without a request nothing wakes
        node("cheap", ASLEEP, speed=2.0),  # the cheapest wake
        node("cleared", ASLEEP),  # the node the market cleared the pod onto
    ]
    asked = [pod("p", 2.0, 999.9, runtime_ref_s=3600.0, wake_node="cleared")]
    plan = decide(fleet(1000.0, nodes, asked), PolicyConfig(reserve_cores=0.0))
    assert actions(plan) == [("wake", "cleared", "market-bid")]
    assert plan.decisions[0].pods == ("p",)  # no wake_after_s wait: the market decided
    unasked = [pod("p", 2.0, 999.9, runtime_ref_s=3600.0)]
    assert decide(fleet(1000.0, nodes, unasked), PolicyConfig(reserve_cores=0.0)).decisions == ()


def test_a_market_wake_request_is_refused_when_the_node_may_not_be_woken() -> None:
    suspect = node("cleared", ASLEEP, suspect=True, failed_wakes=1, last_wake_s=990.0)
    nodes = [node("hot", pods=(1.0,)), suspect]
    asked = [pod("p", 2.0, 999.9, runtime_ref_s=3600.0, wake_node="cleared")]
    plan = decide(fleet(1000.0, nodes, asked), PolicyConfig(reserve_cores=0.0))
    assert plan.decisions == ()  # in its backoff: the pod is served as any other (it fits "hot")
    waking = [node("hot", pods=(1.0,)), node("cleared", WAKING, state_since_s=995.0)]
    assert decide(fleet(1000.0, waking, asked), PolicyConfig(reserve_cores=0.0)).decisions == ()


def test_a_wake_request_for_an_unknown_node_is_refused_with_its_name() -> None:
    asked = [pod("p", 2.0, 999.9, wake_node="nowhere")]
    with pytest.raises(FleetInputError, match=r"pending\.wake_node: unknown nodes \['nowhere'\]"):
        fleet(1000.0, [node("hot")], asked)


def test_floor_and_reserve_wakes_the_most_efficient_asleep_node() -> None:
    nodes = [node("a", ASLEEP, state_since_s=0.0), node("b", ASLEEP, speed=1.5)]
    plan = decide(fleet(1000.0, nodes), PolicyConfig(min_awake=1, reserve_cores=0.0))
    assert actions(plan) == [("wake", "b", "min-awake")]
    nodes = [node("full", pods=(3.0,)), node("a", ASLEEP, last_sleep_s=950.0)]
    config = PolicyConfig(reserve_cores=2.0, cooldown_s=120.0)
    plan = decide(fleet(1000.0, nodes), config)
    assert plan.decisions == () and plan.next_check_s == 1070.0  # slept 50 s ago: cooldown
    assert actions(decide(fleet(1070.0, nodes), config)) == [("wake", "a", "reserve")]


def test_a_node_asleep_for_max_asleep_s_is_woken_to_check_it() -> None:
    nodes = [node("a", pods=(1.0,)), node("b", ASLEEP, state_since_s=0.0)]
    config = PolicyConfig(reserve_cores=0.0, max_asleep_s=3600.0)
    assert decide(fleet(3599.0, nodes), config).next_check_s == 3600.0
    assert actions(decide(fleet(3600.0, nodes), config)) == [("wake", "b", "asleep-timeout")]


def test_memory_records_idle_gaps_and_survives_a_restart_empty() -> None:
    config = PolicyConfig(reserve_cores=0.0)
    first = decide(fleet(10.0, [node("a", empty_since_s=5.0), node("b", pods=(1.0,))]), config)
    later = fleet(505.0, [node("a", pods=(2.0,)), node("b", pods=(1.0,))])
    memory = decide(later, config, first.memory).memory
    assert memory.idle_gaps_s.tolist() == [500.0]  # a: empty from 5 s to 505 s
    assert decide(later, config, None).memory.idle_gaps_s.tolist() == []  # restarted: no gap
