"""The live power manager with the node-lifecycle controller of the real control plane
(:mod:`tests.power.kube_world`, plus kube-controller-manager: a silent node turns ``Unknown``
after its grace period and gets the ``unreachable`` taints), and the two faults of issue 31
that only a real API server shows."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from eams.kube.names import ASLEEP_TAINT, WAS_CORDONED_ANNOTATION
from eams.scheduler.power.policy_fleet import ASLEEP, AWAKE, WAKING
from tests.actuators.conftest import AgentStandIn
from tests.power.kube_world import MERGE, A, World, make_world
from tests.servers.kube_control_plane import ControlPlane, eventually
from tests.servers.kube_controller_manager import KubeControllerManager
from tests.servers.kube_documents import clear
from tests.servers.kube_node import UNREACHABLE, condition

pytestmark = pytest.mark.integration

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
def w(control_plane, lifecycle, emulated_nodes, sim, node1, tmp_path: Path) -> Iterator[World]:
    """A (4 cores, empty) and the k3s server (1 core, full), the manager active."""
    agent = AgentStandIn(sim, 1)
    with control_plane.client() as admin:
        world = make_world(control_plane, emulated_nodes, admin, sim, node1, {1: agent},
                           tmp_path / "calibration", lifecycle=True)  # fmt: skip
        try:
            yield world
        finally:
            world.close()
            clear(admin, ())
            agent.close()


def test_a_stale_ready_does_not_release_a_node_whose_kubelet_is_dead(w: World, node1) -> None:
    """Fault 1: A slept for less than the grace period, so the API still reads ``Ready=True``
    (its heartbeat from before the sleep). Its machine and agent come back, its kubelet does
    not: the manager keeps it waking, tainted and cordoned (and restarts its k3s agent); once
    the kubelet beats again it is released."""
    w.sleep_a()
    w.kubelets[A].alive = False
    w.pending_pod("job", "2")
    w.tick_until(lambda: w.manager.phases[A].state == WAKING, "wake sent")
    w.tick_until(lambda: w.machine(A) == "running", "A's machine up", 20.0)
    held_until = time.monotonic() + 3.0
    while time.monotonic() < held_until:  # the agent answers; Ready reads True, but stale
        w.step()
        ready = condition(w.node(), "Ready")
        assert ready is not None and ready["status"] == "True", (
            f"the controller marked A Unknown already (grace {GRACE_S} s): this run is too "
            "slow to show a stale Ready"
        )
        assert w.manager.phases[A].state == WAKING
        assert ASLEEP_TAINT in w.taint_keys() and w.node()["spec"]["unschedulable"]
        time.sleep(0.2)
    assert w.manager.metrics.wakes_confirmed._value.get() == 0
    assert node1.calls().count("restart k3s-agent") == 1
    w.kubelets[A].alive = True
    w.tick_until(lambda: w.manager.phases[A].state == AWAKE, "A back", 20.0)
    assert ASLEEP_TAINT not in w.taint_keys() and not w.node()["spec"].get("unschedulable")
    assert w.manager.metrics.wakes_confirmed._value.get() == 1


def test_the_full_cycle_with_the_node_lifecycle_controller(w: World) -> None:
    """Sleep (cordon, ``eams.io/asleep``); the controller marks the silent node Unknown and
    taints it unreachable, which the manager leaves alone; a pending pod wakes it; it counts
    once its kubelet beats; the controller's taints go with the controller."""
    w.sleep_a()
    eventually(lambda: UNREACHABLE in w.taint_keys() or None, GRACE_S + 30.0,
               "A tainted unreachable by the controller")  # fmt: skip
    ready = condition(w.node(), "Ready")
    assert ready is not None and ready["status"] == "Unknown"
    for _ in range(5):
        w.step()
        assert w.manager.phases[A].state == ASLEEP
    assert {ASLEEP_TAINT, UNREACHABLE} <= w.taint_keys()
    w.pending_pod("job", "2")
    w.tick_until(lambda: w.manager.phases[A].state == AWAKE, "A woken and back")
    assert w.machine(A) == "running"
    eventually(lambda: not w.taint_keys() & {ASLEEP_TAINT, UNREACHABLE, UNSCHEDULABLE}
               or None, 30.0, "A free of every sleep taint")  # fmt: skip
    assert not w.node()["spec"].get("unschedulable")
    assert w.records.reasons(A) == ["idle-past-break-even", "pending-unfit", "re-registered"]


def test_a_node_a_person_cordoned_is_never_woken_for_a_pod_that_cannot_use_it(w: World) -> None:
    """Fault 2: A was cordoned by a person before the manager slept it; a pending pod that does
    not tolerate the cordon does not wake it. One that does, does (kube-scheduler's
    NodeUnschedulable filter, not a blanket refusal)."""
    cordon = {"spec": {"unschedulable": True}}
    w.admin.patch(f"/api/v1/nodes/{A}", json=cordon, headers=MERGE).raise_for_status()
    w.sleep_a()
    assert w.annotations()[WAS_CORDONED_ANNOTATION] == "true"
    w.pending_pod("job", "2")
    for _ in range(15):
        w.step()
        w.clock.skew += 5.0
        assert w.manager.phases[A].state == ASLEEP
    assert w.machine(A) == "suspended"
    tolerates = {"key": UNSCHEDULABLE, "operator": "Exists", "effect": "NoSchedule"}
    w.pending_pod("tolerant", "2", tolerations=[tolerates])
    w.tick_until(lambda: w.manager.phases[A].state == AWAKE, "A woken")
    assert w.node()["spec"]["unschedulable"] is True  # the person's cordon stays
