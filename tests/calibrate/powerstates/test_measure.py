"""``eams calibrate power-states`` on the PDU simulator recovers the hidden NodePower of the
virtual node within the intervals it reports: P_off, P_suspend, the wake's time and energy,
and the suspend, shutdown and boot, with the node's Ready time from the real Kubernetes API
server.

The real parts: the simulator over SNMP and its Wake-on-LAN port, sshd on loopback whose
``systemctl`` is a stand-in (a CI machine cannot suspend) that puts the virtual node to sleep
through the simulator's control endpoint, and the real API server
(``tests/servers/kube_control_plane.py``; the operator's admin kubeconfig) holding the node,
cordoned, tainted and drained (the reference data's DaemonSet pods), for the façade's safety
rules and the measurement's Ready probe (``Cluster.ready``: the Ready condition is True). The
virtual node's agent is a stand-in answering while the simulator says the node runs.

The node's kubelet is a :class:`~tests.servers.kube_node.NodeEmulator` that a follower thread
keeps in step with the simulator: beating while the virtual machine runs (and posting Ready at
once when it is back, as a kubelet does on start), silent otherwise. A silent node keeps its
last Ready until the node-lifecycle controller marks it ``Unknown`` after its grace period
(8 s with ``tests/servers/kube_controller_manager.py``, longer than these fast sleeps
last: the measurement would only note that Kubernetes kept the node Ready), so the
follower marks it ``Unknown`` itself the moment the machine stops
(:func:`~tests.servers.kube_node.mark_unknown`): the controller's answer with no grace
period. It never posts Ready False: a kubelet that goes to sleep posts nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from eams.calibrate.calfile import calibration_from_sweep, load_calibration, save_calibration
from eams.cli import cli
from eams.meter.simulator import PduSimulator
from tests.actuators.conftest import FAST, drained, inventory_data, write_inventory
from tests.servers.kube_control_plane import ControlPlane
from tests.servers.kube_documents import MERGE, clear, load
from tests.servers.kube_node import NodeEmulator, mark_unknown
from tests.sweeps import sweep_record

pytestmark = pytest.mark.integration

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def line_calibration(path: Path, node: str = "duckboat-01") -> Path:
    """A schema-1 calibration file of ``node`` (its line: 40 W idle, 90 W full)."""
    powers = {pct: [40.0 + 50.0 * pct / 100 + d for d in (-0.5, 0, 0.5)] for pct in (0, 50, 100)}
    record = sweep_record(node, powers, started_at=T0, settle_s=1.0, measure_s=2.0)
    return save_calibration(calibration_from_sweep(record, created_at=T0), path)


class Follower:
    """A thread keeping ``node``'s kubelet in step with the simulator's machine on ``outlet``
    (module docstring), looking every ``period_s``; what its posts raised is kept in
    ``errors``."""

    def __init__(self, sim: PduSimulator, outlet: int, node: NodeEmulator, period_s: float = 0.02):
        self.sim, self.outlet, self.node, self.period_s = sim, outlet, node, period_s
        self.errors: list[Exception] = []
        self.changes = 0
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ready-follower", daemon=True)

    def __enter__(self) -> Follower:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        self._thread.join()

    def _run(self) -> None:
        running = True  # the emulated node is up, and the machine runs, when this starts
        while not self._stopping.wait(self.period_s):
            now = self.sim.state(self.outlet).node == "running"
            if now == running:
                continue
            running, self.changes = now, self.changes + 1
            try:
                if now:
                    self.node.wake()
                else:
                    self.node.sleep()
                    mark_unknown(self.node.client, self.node.name)
            except httpx.HTTPError as error:
                self.errors.append(error)


def _inside(estimate, truth: float) -> bool:
    lo, hi = estimate.ci95
    return lo <= truth <= hi


def test_power_states_recover_the_hidden_parameters(
    sim, node1, agent1, k8s, tmp_path: Path, control_plane: ControlPlane,
    emulated_nodes: Callable[..., NodeEmulator],
) -> None:  # fmt: skip
    node, pods = drained(*k8s)
    kubelet = emulated_nodes("duckboat-01")
    cordon = {"spec": {"unschedulable": True, "taints": node["spec"]["taints"]}}  # not-ready goes
    kubelet.client.patch("/api/v1/nodes/duckboat-01", json=cordon,
                         headers=MERGE).raise_for_status()  # fmt: skip
    load(kubelet.client, pods=pods["items"])
    calibration = line_calibration(tmp_path / "duckboat-01.json")
    try:
        with Follower(sim, 1, kubelet) as follower:
            data = inventory_data(sim, node1, kubeconfig=control_plane.kubeconfig(),
                                  agent_url=agent1.url)  # fmt: skip
            inventory = write_inventory(tmp_path / "power.yaml", data)
            args = ["calibrate", "power-states", "duckboat-01", "--inventory", str(inventory)]
            args += ["--calibration", str(calibration), "--settle-s", "1", "--measure-s", "1"]
            args += ["--sample-s", "0.05", "--meter-lag-s", "0.05", "--boot-off-s", "0.5"]
            args += ["--timeout-s", "60", "--meter-timeout-s", "5"]  # the simulator is in-process
            result = CliRunner().invoke(cli, args)
    finally:
        clear(kubelet.client, [])  # the node goes with the emulator, after the test
    assert result.exit_code == 0, f"{result.output}\n{result.exception!r}"
    assert follower.errors == [] and kubelet.errors == []
    assert follower.changes == 12  # down and up again: 3 × (suspend, wake, poweroff, boot)
    assert result.exit_code == 0, f"{result.output}\n{result.exception!r}"
    assert node1.calls() == ["--no-block suspend", "--no-block poweroff"] * 3
    states = load_calibration(calibration, expect_node="duckboat-01").power_states
    assert states is not None and states.repeats == 3 and states.method == "wol"
    truth = {
        "p_off_w": (states.p_off_w, FAST.off_w),
        "p_suspend_w": (states.p_suspend_w, FAST.suspend_w),
        "wake time": (states.wake.time_s, FAST.wake_s),
        "wake energy": (states.wake.energy_j, FAST.wake_power_w * FAST.wake_s),
        "wake Ready": (states.wake.kubernetes_ready_s, FAST.wake_s),
        "suspend time": (states.suspend.time_s, FAST.suspend_s),
        "suspend energy": (states.suspend.energy_j, 40.0 * FAST.suspend_s),
        "shutdown time": (states.shutdown.time_s, FAST.shutdown_s),
        "boot time": (states.boot.time_s, FAST.boot_s),
        "boot energy": (states.boot.energy_j, FAST.boot_power_w * FAST.boot_s),
    }
    missed = {k: (e.ci95, t) for k, (e, t) in truth.items() if e is None or not _inside(e, t)}
    assert missed == {}
    # informative, not just wide (no absolute time: the probes' spacing grows with the load):
    # a wake is told apart from no time at all, the sleep levels from each other
    assert states.wake.time_s.ci95[0] > 0
    assert states.p_suspend_w.ci95[1] - states.p_suspend_w.ci95[0] <= 1.5
    assert states.p_off_w.ci95[1] < states.p_suspend_w.value
    assert states.boot_from == "outlet" and states.below_floor  # APC's 50 W floor
    assert sim.state(1).node == "running"  # left running
    assert "power states" in result.output and "written:" in result.output
    shown = CliRunner().invoke(cli, ["calibrate", "show", str(calibration)], env={"COLUMNS": "250"})
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    at = lines.index(next(line for line in lines if line.split()[:2] == ["duckboat-01", "wol,"]))
    row = next(line for line in lines[at:] if line.startswith("  P_suspend W"))
    lo, hi = states.p_suspend_w.ci95
    assert f"{states.p_suspend_w.value:.1f} [{lo:.1f}, {hi:.1f}]" in row
    print(shown.output)
