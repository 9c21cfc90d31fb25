"""Filter predicates: resources, taints/tolerations, nodeSelector, and the independent checker."""

import numpy as np

from eams.kube.taints import Taint, Toleration
from eams.scheduler.bench.predicates import resource_fit, static_fit, static_masks
from eams.scheduler.bench.violations import check_placements
from eams.scheduler.policies.base import NodeMeta, PodConstraints
from tests.bench.conftest import tiny_cluster, tiny_workload

GPU = Taint("dedicated", "gpu", "NoSchedule")


def test_untolerated_noschedule_taint_filters_but_prefer_does_not() -> None:
    assert not static_fit(PodConstraints(), NodeMeta(taints=(GPU,)))
    assert static_fit(PodConstraints(), NodeMeta(taints=(Taint("x", "y", "PreferNoSchedule"),)))
    assert not static_fit(PodConstraints(), NodeMeta(taints=(Taint("x", "", "NoExecute"),)))


def test_toleration_matching_rules() -> None:
    node = NodeMeta(taints=(GPU,))
    assert static_fit(
        PodConstraints((Toleration("dedicated", "Equal", "gpu", "NoSchedule"),)), node
    )
    assert static_fit(PodConstraints((Toleration("dedicated", "Exists"),)), node)
    assert static_fit(PodConstraints((Toleration("", "Exists"),)), node)  # empty key + Exists
    assert not static_fit(PodConstraints((Toleration("", "Equal", "gpu"),)), node)
    assert not static_fit(PodConstraints((Toleration("dedicated", "Equal", "cpu"),)), node)
    assert not static_fit(
        PodConstraints((Toleration("dedicated", "Exists", effect="NoExecute"),)), node
    )


def test_node_selector_needs_every_label() -> None:
    pod = PodConstraints(node_selector=(("pool", "a"), ("zone", "1")))
    assert static_fit(pod, NodeMeta(labels={"pool": "a", "zone": "1", "x": "y"}))
    assert not static_fit(pod, NodeMeta(labels={"pool": "a"}))
    assert not static_fit(pod, NodeMeta(labels={"pool": "b", "zone": "1"}))


def test_static_masks_shape_and_values() -> None:
    nodes = [NodeMeta(), NodeMeta(taints=(GPU,)), NodeMeta(labels={"pool": "a"})]
    profiles = [PodConstraints(), PodConstraints(node_selector=(("pool", "a"),))]
    mask = static_masks(profiles, nodes)
    assert mask.tolist() == [[True, False, True], [False, False, True]]


def test_resource_fit_cpu_memory_and_slots() -> None:
    free_cpu = np.array([1.0, 4.0, 4.0, 4.0])
    free_mem = np.array([1e3, 1e3, 10.0, 1e3])
    slots = np.array([5, 5, 5, 0])
    assert resource_fit(2.0, 100.0, free_cpu, free_mem, slots).tolist() == [
        False,
        True,
        False,
        False,
    ]
    assert resource_fit(1.0, 0.0, free_cpu, free_mem, slots)[0]  # exact fit


def test_checker_reports_every_kind_of_violation() -> None:
    meta = [NodeMeta(taints=(GPU,)), NodeMeta(labels={"pool": "a"})]
    cluster = tiny_cluster([2, 2], meta=meta, mem_mib=[100, 100])
    workload = tiny_workload(
        [0, 0, 0],
        [1, 2, 1],
        [10, 10, 10],
        mem_mib=[0, 0, 200],
        profile=[0, 0, 1],
        profiles=[PodConstraints(), PodConstraints(node_selector=(("pool", "b"),))],
    )
    log = [(0.0, 1, 0, 0), (0.0, 1, 1, 1), (0.0, 1, 2, 1), (10.0, -1, 0, 0)]
    found = check_placements(cluster, workload, log)
    assert any("untolerated taint dedicated=gpu" in v for v in found)
    assert any("cpu 3.000 > 2 cores" in v for v in found)
    assert any("memory 200 > 100 MiB" in v for v in found)
    assert any("nodeSelector pool=b" in v for v in found)
    assert check_placements(cluster, workload, [(0.0, 1, 1, 1), (5.0, -1, 1, 1)]) == []
