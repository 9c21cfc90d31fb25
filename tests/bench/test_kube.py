"""kube-scheduler details the emulator reproduces, and the wire objects it sends the extender."""

import numpy as np

from eams.kube.pods import PodObject
from eams.kube.requests import pod_request
from eams.kube.taints import Taint, Toleration
from eams.scheduler.bench.simulator import _Sim, feasible_to_find
from eams.scheduler.policies import load
from eams.scheduler.policies.base import (
    NodeMeta,
    NodeState,
    Params,
    PodConstraints,
    WorkloadPod,
)
from eams.scheduler.policies.eams.kube_objects import node_object, pod_object, telemetry
from eams.telemetry import TelemetrySample
from tests.bench.conftest import tiny_cluster, tiny_workload


def test_num_feasible_nodes_to_find_matches_kube_scheduler() -> None:
    assert feasible_to_find(99, 0) == 99  # below 100 nodes: all
    assert feasible_to_find(1000, 0) == 420  # adaptive: 50 − 1000/125 = 42 %
    assert feasible_to_find(5000, 0) == 500
    assert feasible_to_find(6000, 0) == 300
    assert feasible_to_find(1000, 10) == 100
    assert feasible_to_find(500, 10) == 100  # at least 100
    assert feasible_to_find(1000, 100) == 1000


def test_search_stops_early_and_resumes_where_it_stopped() -> None:
    cluster = tiny_cluster([4.0] * 300)
    workload = tiny_workload([0.0], [1.0], [1.0])
    sim = _Sim(cluster, workload, load("default").make(cluster, Params(), 0), 0, 0.0, 10)
    feasible = np.ones(300, dtype=bool)
    feasible[:50] = False
    first = sim.search(feasible)
    assert first.tolist() == list(range(50, 150)) and sim.next_start == 150
    second = sim.search(feasible)
    assert second.tolist() == list(range(150, 250)) and sim.next_start == 250
    third = sim.search(feasible)  # wraps past the end, skipping the infeasible head
    assert third.tolist() == [*range(50, 100), *range(250, 300)]


def test_pod_object_is_sized_by_the_extender_as_the_emulator_sizes_it() -> None:
    profiles = [PodConstraints((Toleration("dedicated", "Exists"),), (("pool", "a"),))]
    workload = tiny_workload([0.0], [1.5], [100.0], mem_mib=[2048.0], profiles=profiles)
    pod = WorkloadPod.of(workload, 0)
    obj = pod_object(workload, pod)
    parsed = pod_request(PodObject.model_validate(obj))
    assert parsed.cpu_milli == 1500 and parsed.memory_bytes == 2048 * 2**20
    assert obj["metadata"]["annotations"]["eams.io/work-core-s"] == "150.0"
    assert obj["spec"]["nodeSelector"] == {"pool": "a"}
    assert obj["spec"]["tolerations"][0]["operator"] == "Exists"


def test_node_object_carries_allocatable_labels_and_taints() -> None:
    meta = [NodeMeta({"pool": "a"}, (Taint("dedicated", "x", "NoSchedule"),))]
    cluster = tiny_cluster([7.5], mem_mib=[4096.0], meta=meta)
    node = node_object(cluster, 0)
    assert node["status"]["allocatable"] == {"cpu": "7500m", "memory": "4096Mi", "pods": "110"}
    assert node["metadata"]["labels"] == {"pool": "a"}
    assert node["spec"]["taints"] == [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]


def test_telemetry_rows_are_the_telemetry_contract() -> None:
    cluster = tiny_cluster([4.0, 4.0])
    state = NodeState.empty(cluster)
    state.alloc_cpu[0], state.pods_on[0], state.now_s = 2.0, 1, 30.0
    state.power_w[0], state.power_w[1] = 100.0, 3.0  # the emulator's draw: busy, and asleep
    rows = telemetry(state, [0, 1], measured_at_s=1000.0)
    samples = [TelemetrySample.from_json(r) for r in rows]
    assert rows == [s.to_json() for s in samples]
    assert samples[0].utilisation == 0.5 and samples[0].power_w == 100.0
    assert samples[1].power_w == 3.0  # what the node draws, not a curve point
    assert samples[0].measured_at_ns == 1000 * 10**9
    assert samples[0].headroom == 1 - 100.0 / 150.0
