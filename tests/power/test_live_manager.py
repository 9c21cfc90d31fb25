"""The live power manager end to end: Kubernetes calls against the stand-in API (no
kube-apiserver runs here: it serves the published Node, NodeList and PodList shapes and applies
the manager's merge patches as RFC 7386 says), ``systemctl`` over a real sshd (a stand-in
script: a CI machine cannot suspend), magic packets and power states in the PDU simulator, and
stand-in agents that answer while their virtual node runs."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from eams.kube.names import ASLEEP_TAINT, POWER_REASON_ANNOTATION, POWER_STATE_ANNOTATION
from eams.meter.simulator import PduSimulator
from eams.scheduler.power.policy_fleet import ASLEEP, AWAKE, WAKING
from tests.calibrate.powerstates.conftest import AgentStandIn, drained, inventory_data
from tests.power.live import (
    HOUND,
    Clock,
    Follow,
    Records,
    build,
    calibrate,
    node_doc,
    step_until,
    taint_keys,
    workload_pod,
)
from tests.servers.kubeapi import kube_api

pytestmark = pytest.mark.integration

A = "duckboat-01"
SERVER = "mini1"


@pytest.fixture
def agents(sim: PduSimulator) -> Iterator[dict[int, AgentStandIn]]:
    """Stand-in agents of the outlet-1 and outlet-2 nodes."""
    made = {outlet: AgentStandIn(sim, outlet) for outlet in (1, 2)}
    try:
        yield made
    finally:
        for agent in made.values():
            agent.close()


@pytest.fixture
def cals(tmp_path: Path) -> Path:
    folder = tmp_path / "calibration"
    calibrate(folder, A)
    calibrate(folder, "duckboat-02", wake_energy_j=90.0)
    calibrate(folder, SERVER, wake_energy_j=None)
    return folder


def world(sim, k8s, pods_on_a=None, *, a_asleep: bool = False):
    """Nodes: A (outlet 1, Ready following the simulator; tainted eams.io/asleep when
    ``a_asleep``) and the k3s server, full with one workload pod. Pods: A's DaemonSet pods."""
    base, pods = k8s
    _, drained_pods = drained(base, pods)
    taints = list(base["spec"]["taints"])
    if a_asleep:
        taints.append({"key": ASLEEP_TAINT, "effect": "NoSchedule"})
    nodes = {
        A: Follow(sim, 1, node_doc(base, A, taints=taints)),
        SERVER: node_doc(base, SERVER, cpu="1", taints=[]),
    }
    server_pods = {"items": [workload_pod("db", SERVER, "1")]}
    return nodes, {A: pods_on_a or drained_pods, SERVER: server_pods}


def suspend(sim: PduSimulator, outlet: int) -> None:
    sim.suspend(outlet)
    deadline = time.monotonic() + 10
    while sim.state(outlet).node != "suspended":
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_active_cordons_and_taints_before_the_sleep_and_releases_only_when_back(
    sim, node1, agents, k8s, cals
) -> None:
    nodes, pods = world(sim, k8s)
    clock, records = Clock(), Records()
    with kube_api(nodes, pods) as api:
        data = inventory_data(sim, node1, kubeconfig=api.kubeconfig, agent_url=agents[1].url)
        manager, _ = build(api, data, cals, "active", records)
        manager.step(clock())  # empty since now: not yet past its break-even
        assert node1.calls() == [] and not api.patches
        clock.skew += 60.0
        manager.step(clock())
        assert node1.calls() == ["--no-block suspend"]
        mark = api.patches_of(A)[0]  # the first change: cordon, taint, annotate
        assert mark["spec"]["unschedulable"] is True
        assert [t["key"] for t in mark["spec"]["taints"]] == ["type", ASLEEP_TAINT]
        assert mark["metadata"]["annotations"][POWER_STATE_ANNOTATION] == "suspending"
        reason = mark["metadata"]["annotations"][POWER_REASON_ANNOTATION]
        assert reason.startswith("idle-past-break-even")
        patched = api.requests.index(f"PATCH /api/v1/nodes/{A}")
        assert f"/api/v1/nodes/{A}" in api.requests[patched + 1 :]  # the safety check read it
        assert api.patches[0].content_type == "application/merge-patch+json"
        step_until(manager, clock, lambda: manager.phases[A].state == ASLEEP)
        assert sim.state(1).node in ("suspending", "suspended")  # its agent went silent

        api.pending.append(workload_pod("job", None, "2", tolerations=HOUND))

        def still_marked_while_down() -> None:
            if sim.state(1).node != "running":
                assert ASLEEP_TAINT in taint_keys(api, A)

        step_until(
            manager, clock, lambda: manager.phases[A].state == AWAKE, each=still_marked_while_down
        )
        assert sim.state(1).node == "running"
        doc = api.node(A)
        assert doc is not None
        assert taint_keys(api, A) == ["type"]  # ours gone, the node's own kept
        assert doc["spec"]["unschedulable"] is False
        assert doc["metadata"]["annotations"][POWER_STATE_ANNOTATION] == "awake"
        assert doc["metadata"]["annotations"][POWER_REASON_ANNOTATION].startswith("re-registered")
    assert records.reasons(A) == ["idle-past-break-even", "pending-unfit", "re-registered"]
    assert [(r.action, r.result) for r in records.items[:2]] == [("wol", "ok"), ("wol", "ok")]
    assert SERVER not in {r.node for r in records.items}  # the k3s server never sleeps
    assert manager.metrics.wakes_confirmed._value.get() == 1


def test_shadow_mode_records_but_patches_switches_and_sends_nothing(
    sim, node1, agents, k8s, cals
) -> None:
    suspend(sim, 2)  # another node asleep already: the pending pod would wake it
    nodes, pods = world(sim, k8s)
    base = k8s[0]
    taints = [*base["spec"]["taints"], {"key": ASLEEP_TAINT, "effect": "NoSchedule"}]
    nodes["duckboat-02"] = Follow(sim, 2, node_doc(base, "duckboat-02", taints=taints))
    clock, records = Clock(), Records()
    with kube_api(nodes, pods) as api:
        data = inventory_data(sim, node1, kubeconfig=api.kubeconfig, agent_url=agents[1].url)
        data["nodes"]["duckboat-02"] = {
            **data["nodes"][A], "mac": sim.mac(2), "outlet": 2, "agent_url": agents[2].url
        }  # fmt: skip
        manager, _ = build(api, data, cals, "shadow", records)
        manager.step(clock())
        clock.skew += 60.0
        only_b = {"kubernetes.io/hostname": "duckboat-02"}  # fits no awake node
        api.pending.append(workload_pod("job", None, "2", tolerations=HOUND, nodeSelector=only_b))
        for _ in range(3):
            manager.step(clock())
        time.sleep(3.0)  # a packet would have woken it by now (its wake takes 2 s)
        assert [r for r in api.requests if r.startswith("PATCH")] == []
    assert node1.calls() == []
    assert sim.state(1).node == "running" and sim.state(2).node == "suspended"
    assert [(r.node, r.reason, r.mode, r.result) for r in records.items] == [
        ("duckboat-02", "pending-unfit", "shadow", None),
        (A, "idle-past-break-even", "shadow", None),
    ]  # once each while the decision stands, not at every tick
    assert manager.phases[A].state == AWAKE and manager.phases["duckboat-02"].state == ASLEEP


def test_a_wake_that_never_gets_ready_makes_the_node_suspect_and_wakes_the_next(
    sim, node1, agents, k8s, cals
) -> None:
    suspend(sim, 1)
    suspend(sim, 2)
    nodes, pods = world(sim, k8s, a_asleep=True)
    base = k8s[0]
    taints = [*base["spec"]["taints"], {"key": ASLEEP_TAINT, "effect": "NoSchedule"}]
    nodes["duckboat-02"] = Follow(sim, 2, node_doc(base, "duckboat-02", taints=taints))
    clock, records = Clock(), Records()
    with kube_api(nodes, pods, [workload_pod("job", None, "2", tolerations=HOUND)]) as api:
        data = inventory_data(sim, node1, kubeconfig=api.kubeconfig, agent_url=agents[1].url)
        data["nodes"][A]["mac"] = "02:00:00:00:00:99"  # its packets reach no node
        data["nodes"]["duckboat-02"] = {
            **data["nodes"][A], "mac": sim.mac(2), "outlet": 2, "agent_url": agents[2].url
        }  # fmt: skip
        manager, _ = build(api, data, cals, "active", records)
        manager.step(clock())  # A is the cheaper wake (60 J against 90 J)
        assert manager.phases[A].state == WAKING and manager.phases["duckboat-02"].state == ASLEEP
        clock.skew += 30.0  # past 5 × its 2 s wake
        manager.step(clock())
        assert manager.phases[A].suspect and manager.phases[A].failed_wakes == 1
        assert manager.phases[A].state == ASLEEP
        assert manager.phases["duckboat-02"].state == WAKING  # the next node, in the same tick
        step_until(manager, clock, lambda: manager.phases["duckboat-02"].state == AWAKE)
        assert api.node(A)["metadata"]["annotations"][POWER_STATE_ANNOTATION] == "asleep-suspect"
        assert ASLEEP_TAINT in taint_keys(api, A)  # still kept off: it never came back
        assert ASLEEP_TAINT not in taint_keys(api, "duckboat-02")
    assert sim.state(1).node == "suspended" and sim.state(2).node == "running"
    assert records.reasons(A) == ["pending-unfit", "wake-timeout"]
    assert manager.metrics.failed_wakes.labels(A)._value.get() == 1


def test_never_sleeps_a_node_with_pods_that_are_not_daemonsets(
    sim, node1, agents, k8s, cals
) -> None:
    _, pods = k8s  # the real node's 11 pods: 5 DaemonSet, 6 ReplicaSet
    nodes, pods_by_node = world(sim, k8s, pods_on_a=pods)
    clock = Clock()
    with kube_api(nodes, pods_by_node) as api:
        data = inventory_data(sim, node1, kubeconfig=api.kubeconfig, agent_url=agents[1].url)
        manager, _ = build(api, data, cals, "active")
        observed = manager.observer.observe(clock())
        assert observed.fleet.pods.tolist() == [6, 1]  # DaemonSet pods do not count
        for _ in range(3):
            manager.step(clock())
            clock.skew += 1000.0
        assert not api.patches and node1.calls() == []
    assert sim.state(1).node == "running"


def test_a_woken_node_that_stays_notready_gets_its_k3s_agent_restarted(
    sim, node1, agents, k8s, cals
) -> None:
    suspend(sim, 1)
    nodes, pods = world(sim, k8s, a_asleep=True)
    nodes[A].hold = True  # the kubelet does not come back by itself
    clock = Clock()
    with kube_api(nodes, pods, [workload_pod("job", None, "2", tolerations=HOUND)]) as api:
        data = inventory_data(sim, node1, kubeconfig=api.kubeconfig, agent_url=agents[1].url)
        manager, _ = build(api, data, cals, "active")
        step_until(manager, clock, lambda: "restart k3s-agent" in node1.calls())
        assert manager.phases[A].state == WAKING and ASLEEP_TAINT in taint_keys(api, A)
        assert node1.calls().count("restart k3s-agent") == 1  # once per wake
        nodes[A].hold = False  # the restarted kubelet reports Ready
        step_until(manager, clock, lambda: manager.phases[A].state == AWAKE)
        assert ASLEEP_TAINT not in taint_keys(api, A)
        assert node1.calls().count("restart k3s-agent") == 1
