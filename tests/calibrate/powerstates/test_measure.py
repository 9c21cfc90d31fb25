"""``eams calibrate power-states`` on the PDU simulator recovers the hidden NodePower of the
virtual node within the intervals it reports: P_off, P_suspend, the wake's time and energy,
and the suspend, shutdown and boot, with the node's Ready time from a stand-in Kubernetes API.

The real parts: the simulator over SNMP and its Wake-on-LAN port, sshd on loopback whose
``systemctl`` is a stand-in (a CI machine cannot suspend) that puts the virtual node to sleep
through the simulator's control endpoint, and the façade's safety rules against the stand-in
API serving the published Node and PodList of a drained node whose Ready condition follows
the simulator (as kubelet's would). The virtual node's agent is a stand-in answering while
the simulator says the node runs.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from eams.calibrate.calfile import calibration_from_sweep, load_calibration, save_calibration
from eams.cli import cli
from tests.actuators.conftest import FAST, drained, inventory_data, write_inventory
from tests.servers.kubeapi import kube_api
from tests.sweeps import sweep_record

pytestmark = pytest.mark.integration

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def line_calibration(path: Path, node: str = "duckboat-01") -> Path:
    """A schema-1 calibration file of ``node`` (its line: 40 W idle, 90 W full)."""
    powers = {pct: [40.0 + 50.0 * pct / 100 + d for d in (-0.5, 0, 0.5)] for pct in (0, 50, 100)}
    record = sweep_record(node, powers, started_at=T0, settle_s=1.0, measure_s=2.0)
    return save_calibration(calibration_from_sweep(record, created_at=T0), path)


def _inside(estimate, truth: float) -> bool:
    lo, hi = estimate.ci95
    return lo <= truth <= hi


def test_power_states_recover_the_hidden_parameters(
    sim, node1, agent1, k8s, tmp_path: Path
) -> None:
    node, pods = drained(*k8s)

    def live_node() -> dict:  # Ready follows the virtual node, as kubelet's status would
        running = sim.state(1).node == "running"
        conditions = [{"type": "Ready", "status": "True" if running else "Unknown"}]
        return {**node, "status": {**node["status"], "conditions": conditions}}

    calibration = line_calibration(tmp_path / "duckboat-01.json")
    with kube_api({"duckboat-01": live_node}, {"duckboat-01": pods}) as api:
        data = inventory_data(sim, node1, kubeconfig=api.kubeconfig, agent_url=agent1.url)
        inventory = write_inventory(tmp_path / "power.yaml", data)
        args = ["calibrate", "power-states", "duckboat-01", "--inventory", str(inventory)]
        args += ["--calibration", str(calibration), "--settle-s", "1", "--measure-s", "1"]
        args += ["--sample-s", "0.05", "--meter-lag-s", "0.05", "--boot-off-s", "0.5"]
        args += ["--timeout-s", "60", "--meter-timeout-s", "5"]  # the PDU simulator is in-process
        result = CliRunner().invoke(cli, args)
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
