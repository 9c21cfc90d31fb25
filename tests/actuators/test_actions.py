"""The power actions end to end: ``systemctl`` over SSH against a real sshd on loopback (whose
``systemctl`` is a stand-in: a CI machine cannot really suspend or power off), magic packets
and outlet switches against the PDU simulator over real SNMP and UDP, the node and its pods
from the real API server (``tests/servers/kube_control_plane.py``) holding the reference data's
documents, read with the operator's admin kubeconfig. Each refusal or failure leaves nothing
half-done."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from eams.actuators.actions import PowerActions
from eams.actuators.errors import ClusterUnreachable, PowerActionFailed, PowerRefused
from eams.actuators.inventory import parse_inventory
from eams.actuators.transitions import TRANSITIONS
from eams.meter.simulator import PduSimulator
from tests.actuators.conftest import Node, drained, inventory_data, served
from tests.servers.kube_control_plane import ControlPlane
from tests.servers.kube_documents import MERGE

pytestmark = pytest.mark.integration


@pytest.fixture
def api(k8s, control_plane: ControlPlane):
    """The admin kubeconfig of the API server holding duckboat-01 cordoned, tainted and
    drained."""
    with served(control_plane, *drained(*k8s)) as kubeconfig:
        yield kubeconfig


def _actions(sim: PduSimulator, node: Node, api: Path | None, **kwargs) -> PowerActions:
    options = {k: kwargs.pop(k) for k in ("force", "dry_run") if k in kwargs}
    kubeconfig = api or Path("/nonexistent/kubeconfig")
    data = inventory_data(sim, node, kubeconfig=kubeconfig, **kwargs)
    inventory = parse_inventory(data, Path("."), "power.yaml")
    # the simulated PDU answers in the test's own process: patient SNMP on a loaded machine
    patient = {"meter_timeout_s": 5.0, "meter_retries": 2}
    return PowerActions(
        inventory, who="tester", why="test", switch_wait_s=5.0, **patient, **options
    )


def _until(predicate, timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def _count(**labels: str) -> float:
    return TRANSITIONS.labels(**labels)._value.get()


def test_suspend_runs_systemctl_over_ssh_and_a_magic_packet_wakes(sim, node1, api) -> None:
    actions = _actions(sim, node1, api)
    before = _count(node="duckboat-01", to="suspended", method="wol", result="ok")
    done = actions.suspend("duckboat-01")
    assert node1.calls() == ["--no-block suspend"]
    assert done.result == "ok" and done.to == "suspended" and done.who == "tester"
    assert done.steps == (f"ssh://{node1.ssh.user}@127.0.0.1:{node1.ssh.port}: systemctl "
                          "--no-block suspend",)  # fmt: skip
    assert _count(node="duckboat-01", to="suspended", method="wol", result="ok") == before + 1
    assert _until(lambda: sim.state(1).node == "suspended")
    woken = actions.wake("duckboat-01")
    assert woken.steps == (f"magic packet for {sim.mac(1)} sent to 127.0.0.1:{sim.wol_port}",)
    assert _until(lambda: sim.state(1).node in ("waking", "running"))


def test_poweroff_of_an_outlet_node_is_soft_off_then_outlet_off_read_back(sim, node1, api) -> None:
    actions = _actions(sim, node1, api, method="outlet", mac=None)
    done = actions.poweroff("duckboat-01")
    assert node1.calls() == ["--no-block poweroff"]
    assert done.to == "off" and done.result == "ok"
    assert "write access checked" in done.steps[0]
    assert "still answered after the 0.5 s grace period: outlet cut" in done.steps[2]
    assert done.steps[3].startswith("outlet 1 off: state read back off after")
    assert sim.state(1).state == "off" and sim.state(1).power_w == 0.0
    assert actions.wake("duckboat-01").steps[0].startswith("outlet 1 on: state read back on")
    assert sim.state(1).node == "booting"


def test_a_node_that_cannot_suspend_is_powered_off_instead(sim, node1, api) -> None:
    done = _actions(sim, node1, api, method="ssh").suspend("duckboat-01")
    assert node1.calls() == ["--no-block poweroff"] and done.to == "soft_off"
    assert "cannot suspend (method ssh): powered off instead" in done.detail
    assert _until(lambda: sim.state(1).node == "soft_off")


def test_a_node_with_pods_is_refused_and_nothing_is_run(sim, node1, k8s, control_plane) -> None:
    with served(control_plane, *k8s) as server:
        actions = _actions(sim, node1, server, method="outlet", mac=None)
        with pytest.raises(PowerRefused, match=r"runs 6 pod\(s\) not owned by a DaemonSet"):
            actions.poweroff("duckboat-01")
        assert node1.calls() == [] and sim.state(1).state == "on"
        forced = _actions(sim, node1, server, force=True).suspend("duckboat-01")
    assert forced.result == "ok" and forced.detail.startswith("--force: not cordoned")


def test_an_unreachable_api_is_refused_unless_forced(sim, node1) -> None:
    with pytest.raises(ClusterUnreachable, match=r"no Kubernetes API configured"):
        _actions(sim, node1, None).suspend("duckboat-01")
    assert node1.calls() == []
    assert _actions(sim, node1, None, force=True).suspend("duckboat-01").result == "ok"


def test_the_pdu_owner_is_never_switched_off(sim, node1, api) -> None:
    with pytest.raises(PowerRefused, match=r"mini1 is the k3s server and the PDU's owner"):
        _actions(sim, node1, api, force=True).poweroff("mini1")
    assert node1.calls() == [] and sim.state(3).node == "running"


def test_an_unreachable_ssh_host_fails_with_nothing_done(sim, node1, api, tcp_port) -> None:
    actions = _actions(sim, node1, api, method="outlet", mac=None, ssh=f"root@127.0.0.1:{tcp_port}")
    with pytest.raises(PowerActionFailed) as caught:
        actions.poweroff("duckboat-01")
    message = str(caught.value)
    assert f"ssh://root@127.0.0.1:{tcp_port}: cannot connect" in message
    assert message.endswith("nothing was done") and "\n" not in message
    assert sim.state(1).state == "on" and sim.state(1).node == "running"


def test_an_unknown_host_key_is_refused(sim, node1, api, tmp_path) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    actions = _actions(sim, node1, api)
    actions = PowerActions(
        actions.inventory.model_copy(
            update={"ssh": actions.inventory.ssh.model_copy(update={"known_hosts": empty})}
        )
    )
    with pytest.raises(PowerActionFailed, match=r"host key is not in .*nothing was done"):
        actions.suspend("duckboat-01")
    assert node1.calls() == [] and empty.read_text() == ""


def test_a_failing_systemctl_is_an_error_and_the_outlet_stays_on(
    sim, api, tmp_path, control
) -> None:
    from tests.actuators.conftest import need_sshd, systemctl_bin
    from tests.servers.sshd import sshd

    need_sshd()
    log = tmp_path / "log"
    folder = systemctl_bin(tmp_path / "bin", log, fail="power off system")
    with sshd(env={"PATH": f"{folder}:/usr/bin:/bin"}) as server:
        node = Node(server, log, 1)
        actions = _actions(sim, node, api, method="outlet", mac=None)
        with pytest.raises(PowerActionFailed, match=r"poweroff failed: .*exit 1.*Access denied"):
            actions.poweroff("duckboat-01")
    assert node.calls() == ["--no-block poweroff"] and sim.state(1).state == "on"


def test_a_read_only_community_is_refused_before_the_node_is_touched(sim, node1, api) -> None:
    actions = _actions(sim, node1, api, method="outlet", mac=None, pdu=sim.url)
    with pytest.raises(
        PowerActionFailed, match=r"cannot be switched: .*noAccess.*nothing was done"
    ):
        actions.poweroff("duckboat-01")
    assert node1.calls() == [] and sim.state(1).node == "running"


def test_an_outlet_the_pdu_does_not_have_is_refused_before_anything(sim, node1, api) -> None:
    actions = _actions(sim, node1, api, method="outlet", mac=None, outlet=9)
    with pytest.raises(PowerActionFailed, match=r"no outlet 9; this PDU has outlets: 1, 2, 3"):
        actions.poweroff("duckboat-01")
    assert node1.calls() == []


def test_a_dry_run_checks_and_plans_and_does_nothing(sim, node1, api, control_plane) -> None:
    actions = _actions(sim, node1, api, method="outlet", mac=None, dry_run=True)
    plan = actions.poweroff("duckboat-01")
    assert plan.result == "dry_run"
    assert plan.steps[1].endswith("systemctl --no-block poweroff")
    assert "  SET 1.3.6.1.4.1.318.1.1.26.9.2.4.1.5.1 = 2" in plan.steps
    assert node1.calls() == [] and sim.state(1).state == "on"
    # the dry run checks the safety rules on the node as it is now: uncordoned, it is refused
    with control_plane.client() as admin:
        admin.patch("/api/v1/nodes/duckboat-01", json={"spec": {"unschedulable": None}},
                    headers=MERGE).raise_for_status()  # fmt: skip
    with pytest.raises(PowerRefused, match=r"duckboat-01 is not cordoned"):
        actions.poweroff("duckboat-01")
    assert node1.calls() == [] and sim.state(1).state == "on"
