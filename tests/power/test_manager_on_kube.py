"""The live power manager against the real control plane (``../shared/k8s``): kube-apiserver
with the shipped RBAC (the manager runs as the ``eams-power-manager`` service account, so a verb
its ClusterRole lacks fails here), kube-controller-manager's node-lifecycle controller (a silent
node turns ``Unknown`` and gets the ``unreachable`` taints), and emulated kubelets
(:class:`~tests.servers.kube_node.NodeEmulator`: Lease and Ready heartbeats while their node
runs). The machines are the PDU simulator's virtual nodes, ``systemctl`` over a real sshd (a
stand-in script: a CI machine cannot suspend) and stand-in agents — the parts a CI machine
cannot be.

Each test's node ``A`` follows the simulator: its kubelet beats while the simulator says it
runs, unless the test holds the kubelet dead (a node whose machine and agent came back but
whose kubelet did not).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from eams.meter.simulator import PduSimulator
from eams.scheduler.power.kube_marker import WAS_CORDONED
from eams.scheduler.power.manager import PowerManager
from eams.scheduler.power.policy_fleet import ASLEEP, AWAKE, WAKING
from eams.scheduler.power.ports import ASLEEP_TAINT_KEY
from tests.calibrate.powerstates.conftest import AgentStandIn, inventory_data
from tests.power.live import Clock, Records, build, calibrate
from tests.servers.kube_control_plane import ControlPlane, eventually
from tests.servers.kube_controller_manager import KubeControllerManager
from tests.servers.kube_node import UNREACHABLE, NodeEmulator, condition

pytestmark = pytest.mark.integration

A = "duckboat-01"
SERVER = "mini1"
MANAGER_ACCOUNT = "kube-system/eams-power-manager"
GRACE_S = 15.0
"""The node-lifecycle controller's grace period here: a node asleep for less still reads
``Ready=True`` from before its sleep (50 s by default in 1.36)."""
UNSCHEDULABLE = "node.kubernetes.io/unschedulable"


@pytest.fixture(scope="module")
def lifecycle(control_plane: ControlPlane) -> Iterator[KubeControllerManager]:
    """kube-controller-manager with a :data:`GRACE_S` node grace period, for the module."""
    with KubeControllerManager(control_plane, node_monitor_grace_s=GRACE_S) as manager:
        yield manager


@pytest.fixture
def admin(control_plane: ControlPlane) -> Iterator[httpx.Client]:
    with control_plane.client() as client:
        yield client


@pytest.fixture
def agent(sim: PduSimulator) -> Iterator[AgentStandIn]:
    """The stand-in agent of A (outlet 1): answers while its virtual node runs."""
    made = AgentStandIn(sim, 1)
    try:
        yield made
    finally:
        made.close()


@dataclass
class Kubelet:
    """A's kubelet: beats while the simulator's outlet-1 node runs and ``alive`` is True."""

    sim: PduSimulator
    node: NodeEmulator
    alive: bool = True
    beating: bool = True

    def __call__(self) -> None:
        should = self.alive and self.sim.state(1).node == "running"
        if should and not self.beating:
            self.node.wake()
        elif not should and self.beating:
            self.node.sleep()
        self.beating = should


@dataclass
class Cluster:
    """The test's world: the manager, its clock, A's kubelet, the admin client."""

    manager: PowerManager
    clock: Clock
    kubelet: Kubelet
    admin: httpx.Client
    records: Records

    def tick_until(self, done, what: str, timeout_s: float = 40.0, each=None) -> None:
        """Tick the manager every 0.2 s (the kubelet follows the simulator after each tick)
        until ``done()``; fail naming ``what`` after ``timeout_s`` of real time."""
        deadline = time.monotonic() + timeout_s
        while not done():
            assert time.monotonic() < deadline, f"{what}: not within {timeout_s} s"
            self.manager.step(self.clock())
            self.kubelet()
            if each is not None:
                each()
            time.sleep(0.2)

    def node(self, name: str = A) -> dict[str, Any]:
        answer = self.admin.get(f"/api/v1/nodes/{name}")
        answer.raise_for_status()
        return dict(answer.json())

    def taint_keys(self, name: str = A) -> set[str]:
        return {t["key"] for t in self.node(name)["spec"].get("taints") or []}

    def pending_pod(self, name: str, cpu: str, **spec: Any) -> None:
        """A pod for a scheduler that does not run here: it stays Pending."""
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": name, "namespace": "default"},
               "spec": {"schedulerName": "eams-scheduler", **spec,
                        "containers": [{"name": "c", "image": "pause",
                                        "resources": {"requests": {"cpu": cpu}}}]}}  # fmt: skip
        self.admin.post("/api/v1/namespaces/default/pods", json=pod).raise_for_status()

    def sleep_a(self) -> None:
        """Let A's idle time pass its break-even; tick until the manager has put it to sleep."""
        self.manager.step(self.clock())
        self.clock.skew += 60.0
        self.tick_until(lambda: self.manager.phases[A].state == ASLEEP, "A asleep")
        assert self.sim_state() == "suspended"

    def sim_state(self) -> str:
        return str(self.kubelet.sim.state(1).node)


@pytest.fixture
def cluster(
    sim,
    node1,
    agent,
    tmp_path: Path,
    control_plane,
    lifecycle,
    emulated_nodes,
    admin,
) -> Iterator[Cluster]:
    """A (4 cores, empty) and the k3s server (1 core, full with a workload pod), both Ready
    with the not-ready taint lifted by the controller; the manager active as its service
    account."""
    a = emulated_nodes(A, cpu="4", period_s=1.0)
    emulated_nodes(SERVER, cpu="1", period_s=1.0)
    for name in (A, SERVER):
        eventually(lambda n=name: "node.kubernetes.io/not-ready" not in {
            t["key"] for t in admin.get(f"/api/v1/nodes/{n}").json()["spec"].get("taints") or []
        } or None, 30.0, f"{name} without the not-ready taint")  # fmt: skip
    server_pod = {"apiVersion": "v1", "kind": "Pod",
                  "metadata": {"name": "db", "namespace": "default"},
                  "spec": {"nodeName": SERVER, "containers": [
                      {"name": "c", "image": "db",
                       "resources": {"requests": {"cpu": "1"}}}]}}  # fmt: skip
    admin.post("/api/v1/namespaces/default/pods", json=server_pod).raise_for_status()
    folder = tmp_path / "calibration"
    calibrate(folder, A)
    calibrate(folder, SERVER, wake_energy_j=None)
    kubeconfig = control_plane.kubeconfig(MANAGER_ACCOUNT)
    data = inventory_data(sim, node1, kubeconfig=kubeconfig, agent_url=agent.url)
    records = Records()
    manager, _ = build(kubeconfig, data, folder, "active", records)
    try:
        yield Cluster(manager, Clock(), Kubelet(sim, a), admin, records)
    finally:
        admin.delete("/api/v1/namespaces/default/pods",
                     params={"gracePeriodSeconds": 0})  # fmt: skip


def test_a_stale_ready_does_not_release_a_node_whose_kubelet_is_dead(cluster: Cluster) -> None:
    """Issue 31, fault 1: A slept for less than the grace period, so the API still reads
    ``Ready=True`` (its heartbeat from before the sleep). Its machine and agent come back, its
    kubelet does not: the manager keeps it waking, tainted and cordoned; once the kubelet
    heartbeats again it is released."""
    cluster.sleep_a()
    cluster.kubelet.alive = False
    cluster.pending_pod("job", "2")
    cluster.tick_until(lambda: cluster.manager.phases[A].state == WAKING, "wake sent")
    cluster.tick_until(lambda: cluster.sim_state() == "running", "A's machine up", 20.0)
    held_until = time.monotonic() + 3.0
    while time.monotonic() < held_until:  # the agent answers; Ready reads True, but stale
        cluster.manager.step(cluster.clock())
        ready = condition(cluster.node(), "Ready")
        assert ready is not None and ready["status"] == "True", (
            "the controller marked A Unknown already: this run cannot show a stale Ready "
            f"(grace {GRACE_S} s; the machine is too slow for the scenario)"
        )
        assert cluster.manager.phases[A].state == WAKING
        assert ASLEEP_TAINT_KEY in cluster.taint_keys() and cluster.node()["spec"]["unschedulable"]
        time.sleep(0.2)
    assert cluster.manager.metrics.wakes_confirmed._value.get() == 0
    cluster.kubelet.alive = True
    cluster.tick_until(lambda: cluster.manager.phases[A].state == AWAKE, "A back", 20.0)
    assert ASLEEP_TAINT_KEY not in cluster.taint_keys()
    assert not cluster.node()["spec"].get("unschedulable")
    assert cluster.manager.metrics.wakes_confirmed._value.get() == 1


def test_the_full_cycle_with_the_node_lifecycle_controller(cluster: Cluster) -> None:
    """Sleep (cordon, ``eams.io/asleep``); the controller marks the silent node Unknown and
    taints it unreachable, which the manager leaves alone; a pending pod wakes it; it counts
    once its kubelet beats; the release leaves the controller's taints to the controller, and
    they go."""
    cluster.sleep_a()
    eventually(lambda: UNREACHABLE in cluster.taint_keys() or None, GRACE_S + 30.0,
               "A tainted unreachable by the controller")  # fmt: skip
    ready = condition(cluster.node(), "Ready")
    assert ready is not None and ready["status"] == "Unknown"
    for _ in range(5):
        cluster.manager.step(cluster.clock())
        assert cluster.manager.phases[A].state == ASLEEP
    assert {ASLEEP_TAINT_KEY, UNREACHABLE} <= cluster.taint_keys()
    cluster.pending_pod("job", "2")
    cluster.tick_until(lambda: cluster.manager.phases[A].state == AWAKE, "A woken and back", 40.0)
    assert cluster.sim_state() == "running"
    eventually(lambda: not cluster.taint_keys() & {ASLEEP_TAINT_KEY, UNREACHABLE, UNSCHEDULABLE}
               or None, 30.0, "A free of every sleep taint")  # fmt: skip
    assert not cluster.node()["spec"].get("unschedulable")
    assert cluster.records.reasons(A) == ["idle-past-break-even", "pending-unfit", "re-registered"]


def test_a_node_a_person_cordoned_is_never_woken_for_a_pod_that_cannot_use_it(
    cluster: Cluster,
) -> None:
    """Issue 31, fault 2: A was cordoned by a person before the manager slept it; a pending pod
    that does not tolerate the cordon does not wake it. One that does, does (the rule is
    kube-scheduler's NodeUnschedulable filter, not a blanket refusal)."""
    cluster.admin.patch(f"/api/v1/nodes/{A}", json={"spec": {"unschedulable": True}},
                        headers={"Content-Type": "application/merge-patch+json"}
                        ).raise_for_status()  # fmt: skip
    cluster.sleep_a()
    assert cluster.node()["metadata"]["annotations"][WAS_CORDONED] == "true"
    cluster.pending_pod("job", "2")
    for _ in range(15):
        cluster.manager.step(cluster.clock())
        cluster.clock.skew += 5.0
        assert cluster.manager.phases[A].state == ASLEEP
    assert cluster.sim_state() == "suspended"
    cordon = {"key": UNSCHEDULABLE, "operator": "Exists", "effect": "NoSchedule"}
    cluster.pending_pod("tolerant", "2", tolerations=[cordon])
    cluster.tick_until(lambda: cluster.manager.phases[A].state == AWAKE, "A woken", 40.0)
    assert cluster.node()["spec"]["unschedulable"] is True  # the person's cordon stays
