"""Small fleets for the policy tests, described as the live manager would (NodePowerView); the
power-state fixtures (simulator, sshd with a systemctl stand-in, the reference Node and pods)
are those of ``tests/actuators``, the real control plane that of ``tests/servers``."""

from __future__ import annotations

from eams.scheduler.power.policy_fleet import FleetState, NodePowerView, PendingPod, PowerState
from tests.actuators.conftest import control, k8s, node1, sim  # noqa: F401
from tests.servers.kube_binaries import kube_binaries  # noqa: F401 (the real control plane)
from tests.servers.kube_control_plane import control_plane  # noqa: F401
from tests.servers.kube_node import emulated_nodes  # noqa: F401
from tests.servers.kube_scheduler import kube_scheduler  # noqa: F401

# a mini-PC-like node: 4 cores, 10 W idle, 40 W full; 1 W asleep; 10 s / 300 J wake, 3 s / 30 J
# suspend → break-even (30 + 300 − 1·13) / (10 − 1) = 35.2 s
NODE = {
    "allocatable_cores": 4.0,
    "allocatable_mem_mib": 8192.0,
    "p_idle_w": 10.0,
    "p_max_w": 40.0,
    "speed": 1.0,
    "sleep_power_w": 1.0,
    "wake_time_s": 10.0,
    "wake_energy_j": 300.0,
    "suspend_time_s": 3.0,
    "suspend_energy_j": 30.0,
    "state_since_s": 0.0,
}
BREAK_EVEN_S = (30 + 300 - 1 * 13) / (10 - 1)


def node(name: str, state: PowerState = PowerState.AWAKE, pods=(), **changes) -> NodePowerView:
    """A NodePowerView from :data:`NODE`; empty nodes became empty at 0 unless told otherwise."""
    fields = {**NODE, "pod_cores": tuple(pods), "empty_since_s": None if pods else 0.0}
    fields.update(changes)
    return NodePowerView(name=name, state=state, **fields)


def pod(name: str, cores: float, since_s: float, **changes) -> PendingPod:
    """A pending pod (no memory request unless told)."""
    return PendingPod(
        name=name,
        cores=cores,
        mem_mib=changes.pop("mem_mib", 0.0),
        pending_since_s=since_s,
        **changes,
    )


def fleet(now_s: float, nodes, pending=()) -> FleetState:
    """The fleet state of ``nodes`` at ``now_s``."""
    return FleetState.from_views(now_s, nodes, pending)
