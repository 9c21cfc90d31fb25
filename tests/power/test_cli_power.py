"""``eams power`` through the real console entry point (a subprocess): the transition line on
stdout, ``--dry-run``, the raw wake's datagram, and every refusal or failure as one ``eams:
error:`` line on stderr with nothing switched: a malformed MAC (exit 2), an unknown outlet, a
read-only community, a PDU family without switching, a read-back that differs, an unreachable
SSH host, a node with pods on it, the PDU owner. The node and its pods are the reference data's,
served by the real API server (``../shared/k8s``; the operator's admin kubeconfig);
``systemctl`` on the test sshd's PATH is a stand-in (a CI machine cannot suspend)."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from eams.meter.wol import magic_packet
from tests.actuators.conftest import drained, inventory_data, served, write_inventory
from tests.servers.kube_control_plane import ControlPlane
from tests.servers.snmpsim import SnmpSim, snmpsim

pytestmark = pytest.mark.integration

EAMS = str(Path(sys.executable).parent / "eams")


def _eams(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EAMS, *args], capture_output=True, text=True, timeout=120)


def _one_error_line(result: subprocess.CompletedProcess[str], *needles: str, code: int = 1) -> str:
    assert result.returncode == code, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("eams: error: "), result.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


@pytest.fixture
def api(k8s, control_plane: ControlPlane) -> Iterator[Path]:
    """The kubeconfig of an API server holding the reference node, cordoned and drained."""
    with served(control_plane, *drained(*k8s)) as kubeconfig:
        yield kubeconfig


@pytest.fixture(scope="module")
def recorded(shared_data: Path) -> Iterator[SnmpSim]:
    """snmpsim serving a PDU without switching (Panduit G5) and one whose relay does not move
    (Gude: snmpsim acknowledges the SET and changes nothing)."""
    folder = shared_data / "pdu_snmp" / "snmprec"
    with snmpsim(
        [folder / "panduit_g5-p32g13m.snmprec", folder / "gude-epc_8031.snmprec"]
    ) as agent:
        yield agent


def _inventory(tmp_path, sim, node1, kubeconfig: Path, **kwargs) -> str:
    data = inventory_data(sim, node1, kubeconfig=kubeconfig, **kwargs)
    return str(write_inventory(tmp_path / "power.yaml", data))


def test_a_raw_wake_sends_the_published_datagram(udp_port: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", udp_port))
        sock.settimeout(10)
        result = _eams("power", "wake", "--mac", "02-EA-A5-00-00-07", "--address", "127.0.0.1",
                       "--port", str(udp_port), "--reason", "test")  # fmt: skip
        data = sock.recv(200)
    assert result.returncode == 0, result.stderr
    assert data == b"\xff" * 6 + bytes.fromhex("02eaa5000007") * 16 == magic_packet("02eaa5000007")
    assert result.stdout.startswith("power transition: node=02:ea:a5:00:00:07 to=running ")
    assert "method=mac result=ok who=" in result.stdout and 'why="test"' in result.stdout


@pytest.mark.parametrize("mac", ["02:ea:a5:00:00", "zz:ea:a5:00:00:01", ""])
def test_a_malformed_mac_is_a_usage_error(mac: str) -> None:
    result = _eams("power", "wake", "--mac", mac)
    assert result.returncode == 2, result.stderr
    assert (
        "eams: error: invalid value for '--mac'" in result.stderr.splitlines()[0]
        and "aa:bb:cc:dd:ee:ff" in result.stderr
    )
    assert result.stdout == ""


@pytest.mark.parametrize(
    ("args", "option", "reason"),
    [
        (["--mac", "ff:ff:ff:ff:ff:ff"], "--mac", "is a group (multicast or broadcast) address"),
        (["--mac", "02:ea:a5:00:00:07", "--address", "999.1.1.1"], "--address", "not an IPv4"),
    ],
)
def test_a_wake_no_nic_could_answer_is_a_usage_error(args, option, reason) -> None:
    result = _eams("power", "wake", *args, "--dry-run")
    assert result.returncode == 2, result.stderr
    assert f"invalid value for '{option}'" in result.stderr and reason in result.stderr
    assert result.stdout == ""


def test_manage_with_a_missing_config_is_a_usage_error(tmp_path) -> None:
    result = _eams("power", "manage", "--calibrations", str(tmp_path),
                   "--config", str(tmp_path / "nosuch.yaml"))  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "invalid value for '--config'" in result.stderr and "is not a file" in result.stderr


def test_suspend_prints_the_transition_and_a_dry_run_does_nothing(
    tmp_path, sim, node1, api
) -> None:
    inventory = _inventory(tmp_path, sim, node1, api)
    dry = _eams("power", "suspend", "duckboat-01", "--inventory", inventory, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.splitlines()[1:3] == [
        "duckboat-01: suspended would:",
        f"  ssh://{node1.ssh.user}@127.0.0.1:{node1.ssh.port}: systemctl --no-block suspend",
    ]
    assert "result=dry_run" in dry.stdout.splitlines()[0] and node1.calls() == []
    done = _eams("power", "suspend", "duckboat-01", "--inventory", inventory, "--reason", "drill")
    assert done.returncode == 0, done.stderr
    assert "to=suspended method=wol result=ok" in done.stdout and 'why="drill"' in done.stdout
    assert node1.calls() == ["--no-block suspend"]


def test_a_node_with_pods_is_refused(tmp_path, sim, node1, k8s, control_plane) -> None:
    with served(control_plane, *k8s) as kubeconfig:
        inventory = _inventory(tmp_path, sim, node1, kubeconfig)
        result = _eams("power", "poweroff", "duckboat-01", "--inventory", inventory)
    _one_error_line(result, "node duckboat-01 is not cordoned", "runs 6 pod(s)", "or --force")
    assert "result=refused" in result.stdout and node1.calls() == []


def test_the_pdu_owner_is_refused_even_forced(tmp_path, sim, node1, api) -> None:
    inventory = _inventory(tmp_path, sim, node1, api)
    result = _eams("power", "poweroff", "mini1", "--inventory", inventory, "--force")
    _one_error_line(result, "mini1 is the k3s server and the PDU's owner", "does not override")


def test_an_unknown_outlet_is_named(tmp_path, sim, node1, api) -> None:
    inventory = _inventory(tmp_path, sim, node1, api, method="outlet", mac=None, outlet=7)
    result = _eams("power", "wake", "duckboat-01", "--inventory", inventory)
    _one_error_line(result, "outlet 7 on", "no outlet 7; this PDU has outlets: 1, 2, 3")


def test_a_read_only_community_is_refused(tmp_path, sim, node1, api) -> None:
    inventory = _inventory(tmp_path, sim, node1, api, method="outlet", mac=None, pdu=sim.url)
    sim.switch_outlet(1, "off")
    result = _eams("power", "wake", "duckboat-01", "--inventory", inventory)
    _one_error_line(result, "outlet 1 on", "noAccess")
    assert sim.state(1).state == "off"


def test_a_pdu_without_switching_and_a_switch_that_does_not_take(
    tmp_path, sim, node1, api, recorded
) -> None:
    panduit = recorded.url("panduit_g5-p32g13m")
    inventory = _inventory(tmp_path, sim, node1, api, method="outlet", mac=None, pdu=panduit)
    _one_error_line(_eams("power", "wake", "duckboat-01", "--inventory", inventory),
                    "panduit_g5", "cannot switch outlets")  # fmt: skip
    gude = recorded.url("gude-epc_8031")  # port 1 is off in the recording and stays off
    inventory = _inventory(tmp_path, sim, node1, api, method="outlet", mac=None, pdu=gude)
    result = _eams("power", "wake", "duckboat-01", "--inventory", inventory, "--wait-s", "0.5")
    _one_error_line(result, "asked on", "did not read on within 0.5 s")
    assert "result=failed" in result.stdout


def test_an_unreachable_ssh_host_is_one_line(tmp_path, sim, node1, api, tcp_port) -> None:
    inventory = _inventory(tmp_path, sim, node1, api, ssh=f"root@127.0.0.1:{tcp_port}")
    result = _eams("power", "suspend", "duckboat-01", "--inventory", inventory)
    _one_error_line(result, f"127.0.0.1:{tcp_port}: cannot connect", "nothing was done")
    assert sim.state(1).node == "running"


@pytest.mark.parametrize("port", ["0", "99999"])
def test_check_inventory_refuses_an_ssh_port_that_suspend_would_refuse(tmp_path, port) -> None:
    bad = tmp_path / "power.yaml"
    bad.write_text(f"nodes:\n  a: {{method: outlet, outlet: 1, ssh: 'root@127.0.0.1:{port}'}}\n")
    result = _eams("power", "check-inventory", str(bad))
    _one_error_line(result, "nodes.a.ssh", f"port {port} is outside 1-65535")


def test_check_inventory(tmp_path, sim, node1, api) -> None:
    inventory = _inventory(tmp_path, sim, node1, api)
    result = _eams("power", "check-inventory", inventory)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"duckboat-01: method wol, mac {sim.mac(1)}, outlet 1, may sleep",
        f"mini1: method wol, mac {sim.mac(3)}, outlet 3, the k3s server, the PDU's owner",
    ]
    bad = tmp_path / "bad.yaml"
    bad.write_text("nodes:\n  a: {method: outlet, ssh: root@h}\n  b: {method: wol}\n")
    result = _eams("power", "check-inventory", str(bad))
    _one_error_line(result, "nodes.a: method outlet needs outlet", "method wol needs mac and ssh")
