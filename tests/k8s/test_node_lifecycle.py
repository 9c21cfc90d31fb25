"""With kube-controller-manager's node-lifecycle controller (grace period 8 s), an emulated
node behaves as a real one: Ready lifts admission's not-ready taint, silence makes it Unknown
and unreachable, waking brings it back."""

from __future__ import annotations

import pytest

from tests.servers.kube_control_plane import eventually
from tests.servers.kube_controller_manager import KubeControllerManager
from tests.servers.kube_node import NOT_READY, UNREACHABLE, condition, taints

pytestmark = pytest.mark.integration  # a real kube-apiserver and etcd

UNREACHABLE_TAINTS = {(UNREACHABLE, "NoSchedule"), (UNREACHABLE, "NoExecute")}
DEFAULT_GRACE_S = 50.0  # kube-controller-manager 1.36's --node-monitor-grace-period default


def test_a_silent_node_becomes_unreachable_and_a_woken_one_recovers(
    controller_manager: KubeControllerManager, emulated_nodes
) -> None:
    assert controller_manager.node_monitor_grace_s < DEFAULT_GRACE_S / 2
    # a second node that keeps beating: with every node of the zone not Ready, the controller
    # enters "full disruption" and puts no NoExecute taint on any of them
    witness = emulated_nodes("life-witness", period_s=1.0)
    sleeper = emulated_nodes("life-sleeper", period_s=1.0)
    for node in (witness, sleeper):
        eventually(lambda n=node: not taints(n.node()), 60, f"{node.name} not-ready lifted")

    sleeper.sleep()

    def unreachable() -> bool:
        doc = sleeper.node()
        return condition(doc)["status"] == "Unknown" and taints(doc) >= UNREACHABLE_TAINTS

    # the deadline is under the default grace period: only the short one can meet it
    eventually(unreachable, DEFAULT_GRACE_S - 10, "the silent node Unknown and unreachable")
    assert condition(sleeper.node())["reason"] == "NodeStatusUnknown"
    assert condition(witness.node())["status"] == "True"
    assert taints(witness.node()) == set()

    sleeper.wake()

    def recovered() -> bool:
        doc = sleeper.node()
        return condition(doc)["status"] == "True" and not taints(doc) & UNREACHABLE_TAINTS

    eventually(recovered, 60, "the woken node Ready without unreachable taints")
    assert (NOT_READY, "NoSchedule") not in taints(sleeper.node())
    assert witness.errors == sleeper.errors == []
