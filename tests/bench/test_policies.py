"""Each baseline's choice on tiny hand-made clusters, through the real emulator."""

import numpy as np
import pytest

from eams.scheduler.bench.simulator import simulate
from eams.scheduler.policies import available, load
from eams.scheduler.policies.base import NodeState, Params, WorkloadPod
from tests.bench.conftest import tiny_cluster, tiny_workload


def _first_choice(name: str, cluster, alloc_cpu, pod_cpu=1.0, duration_s=100.0) -> int:
    """Place one pod on a cluster with ``alloc_cpu`` already allocated; return its node."""
    state = NodeState.empty(cluster)
    state.alloc_cpu[:] = alloc_cpu
    state.pods_on[:] = (np.asarray(alloc_cpu) > 0).astype(int)
    policy = load(name).make(cluster, Params(), 0)
    pod = WorkloadPod(0, "p", pod_cpu, 0.0, duration_s, 0)
    nodes = np.arange(cluster.size)
    if hasattr(policy, "score"):
        scores = np.floor(policy.score(pod, nodes, state))
        return int(nodes[np.argmax(scores)])
    feasible = np.ones((1, cluster.size), dtype=bool)
    return int(policy.assign([pod], feasible, state)[0])


def test_registry_lists_every_plugin_with_a_docstring() -> None:
    names = set(available())
    assert {"default", "most-allocated", "fcfs", "milp", "target-load-packing", "peaks"} <= names
    for module in available().values():
        assert "source" in (module.__doc__ or "").lower(), module.__name__


def test_default_spreads_and_most_allocated_packs() -> None:
    cluster = tiny_cluster([8, 8, 8])
    alloc = [6.0, 2.0, 4.0]
    assert _first_choice("default", cluster, alloc) == 1
    assert _first_choice("most-allocated", cluster, alloc) == 0


def test_fcfs_takes_the_first_feasible_node() -> None:
    cluster = tiny_cluster([8, 8, 8])
    workload = tiny_workload([0.0, 0.0], [7.0, 4.0], [10.0, 10.0])
    replay = simulate(cluster, workload, load("fcfs").make(cluster, Params(), 0), seed=0)
    assert replay.node.tolist() == [0, 1]  # the second pod no longer fits node 0


def test_target_load_packing_packs_up_to_target_then_spreads() -> None:
    cluster = tiny_cluster([10, 10, 10])
    # target 40 %: a 1-core pod brings the nodes to 11 %, 31 %, 71 %: 31 % is closest below
    assert _first_choice("target-load-packing", cluster, [0.1, 2.1, 6.1]) == 1
    # every node above target after placement: spread onto the least loaded (51 % < 81 %)
    assert _first_choice("target-load-packing", cluster, [4.1, 7.1, 7.1]) == 0


def test_peaks_prefers_the_smallest_power_jump() -> None:
    flat = list(np.linspace(100, 150, 11))  # +50 W over 8 cores
    steep = list(np.linspace(40, 240, 11))  # +200 W over 8 cores
    cluster = tiny_cluster([8, 8], points_w=[steep, flat])
    assert _first_choice("peaks", cluster, [0.0, 0.0]) == 1


def test_milp_minimises_marginal_energy_including_wake_cost() -> None:
    curve = list(np.linspace(50, 150, 11))
    cluster = tiny_cluster([8, 8], points_w=[curve, curve])
    # node 1 is already awake: waking node 0 would cost its idle power for the whole run
    assert _first_choice("milp", cluster, [0.0, 2.0]) == 1


def test_milp_batch_respects_capacity_jointly() -> None:
    curve = list(np.linspace(50, 150, 11))
    cluster = tiny_cluster([4, 4], points_w=[curve, curve])
    state = NodeState.empty(cluster)
    state.alloc_cpu[1] = 1.0
    state.pods_on[1] = 1
    pods = [WorkloadPod(j, f"p{j}", 2.0, 0.0, 100.0, 0) for j in range(3)]
    choice = (
        load("milp").make(cluster, Params(), 0).assign(pods, np.ones((3, 2), dtype=bool), state)
    )
    assert (choice >= 0).sum() == 3
    for n in (0, 1):
        assert sum(2.0 for c in choice if c == n) <= state.free_cpu[n]


@pytest.mark.parametrize("name", ["default", "most-allocated", "fcfs", "milp", "peaks"])
def test_every_policy_places_every_fitting_pod_without_violations(name: str) -> None:
    from eams.scheduler.bench.metrics import summarise

    cluster = tiny_cluster([4, 8, 16], speed=[0.5, 1.0, 2.0])
    rng = np.random.default_rng(7)
    j = 60
    workload = tiny_workload(
        list(np.cumsum(rng.exponential(5.0, j))),
        list(rng.choice([1.0, 2.0, 4.0], j)),
        list(rng.uniform(10, 100, j)),
    )
    replay = simulate(cluster, workload, load(name).make(cluster, Params(), 0), seed=3)
    figures = summarise(cluster, workload, replay)
    assert figures["placed"] == j and figures["violations"] == 0
