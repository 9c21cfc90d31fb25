"""Real parts for the power-state tests: the PDU simulator (switched outlets, power states,
Wake-on-LAN), sshd on loopback whose ``systemctl`` is a stand-in, the real Kubernetes API server
(``tests/servers/kube_control_plane.py``, one per test module) holding the reference data's
Node and pods, and a stand-in for a virtual node's agent.

A CI machine cannot really suspend or power off (it would end the test run), so the node's
``systemctl`` on sshd's PATH is a shell script: it records its arguments and, like the real
one, puts the node to sleep — here the simulator's virtual node, through the simulator's
control endpoint (``suspend`` or ``soft_off``). The virtual node has no agent process either:
its stand-in answers HTTP 200 exactly while the simulator says the node is running.
"""

from __future__ import annotations

import contextlib
import copy
import json
import shutil
import stat
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from eams.meter.simulator import LinearCurve, NodePower, PduSimulator, VirtualOutlet
from eams.meter.simulator.control import ControlServer
from tests.servers.kube_binaries import kube_binaries  # noqa: F401 (the real control plane)
from tests.servers.kube_control_plane import ControlPlane, control_plane  # noqa: F401
from tests.servers.kube_documents import clear, load
from tests.servers.sshd import SshServer, sshd

FAST = NodePower(
    boot_s=3.0,
    boot_power_w=25.0,
    off_w=1.6,
    suspend_w=3.4,
    wake_s=2.0,
    wake_power_w=30.0,
    suspend_s=1.0,
    shutdown_s=1.5,
)
"""Hidden power-state parameters of the virtual nodes (what the measurement must recover)."""
CURVE = LinearCurve(p_idle_w=40.0, p_max_w=90.0)


def k8s_documents(shared_data: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The real Node ``duckboat-01`` and the real PodList of its 11 pods (5 DaemonSet, 6
    ReplicaSet), from ``k8s/`` of the reference data."""
    nodes = json.loads((shared_data / "k8s" / "honeycomb_eks_nodes.json").read_text())
    pods = json.loads((shared_data / "k8s" / "honeycomb_pods.json").read_text())
    node = next(n for n in nodes["items"] if n["metadata"]["name"] == "duckboat-01")
    return {"kind": "Node", "apiVersion": "v1", **node}, pods


def drained(node: dict[str, Any], pods: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The same node cordoned (``spec.unschedulable``; it already has a NoSchedule taint) and
    drained: only its DaemonSet pods left, as ``kubectl drain --ignore-daemonsets`` leaves it."""
    node = copy.deepcopy(node)
    node["spec"]["unschedulable"] = True
    kept = [
        pod
        for pod in pods["items"]
        if any(o.get("kind") == "DaemonSet" for o in pod["metadata"].get("ownerReferences", []))
    ]
    return node, {**pods, "items": kept}


@contextlib.contextmanager
def served(plane: ControlPlane, node: dict[str, Any], pods: dict[str, Any]) -> Iterator[Path]:
    """``node`` and the PodList ``pods`` made objects of ``plane``'s API server; yields the
    operator's admin kubeconfig (what ``eams power`` is run with by hand), and deletes the pods
    and the node after the block."""
    with plane.client() as admin:
        load(admin, [node], pods["items"])
        try:
            yield plane.kubeconfig()
        finally:
            clear(admin, [node["metadata"]["name"]])


@pytest.fixture
def k8s(shared_data: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The real Node and PodList documents."""
    return k8s_documents(shared_data)


@pytest.fixture
def sim() -> Iterator[PduSimulator]:
    """Three virtual nodes on a switched PDU on loopback, with fast power states."""
    outlets = [VirtualOutlet(f"node{n}", CURVE, FAST) for n in (1, 2, 3)]
    with PduSimulator(outlets, write_community="private", reboot_off_s=1.0) as simulator:
        yield simulator


@pytest.fixture
def control(sim: PduSimulator) -> Iterator[ControlServer]:
    """The simulator's HTTP control endpoint (what the systemctl stand-in calls)."""
    with ControlServer(sim) as server:
        yield server


STANDIN = """#!/bin/sh
# A stand-in for systemctl: a CI machine cannot really suspend or power off.
echo "$*" >> {log}
[ -n "{fail}" ] && {{ echo "Failed to {fail}: Access denied" >&2; exit 1; }}
case "$*" in
  *suspend) action=suspend ;;
  *poweroff) action=soft_off ;;
  *) exit 0 ;;
esac
[ -n "{control}" ] || exit 0
curl -sf -X PUT -d "{{\\"action\\": \\"$action\\"}}" {control}/outlets/{outlet}/node >/dev/null
"""


def systemctl_bin(folder: Path, log: Path, *, control: str = "", outlet: int = 1,
                  fail: str = "") -> Path:  # fmt: skip
    """A PATH folder with the systemctl stand-in (recording to ``log``; driving ``outlet`` of
    the simulator behind ``control``; failing with exit 1 when ``fail`` is set)."""
    if control and shutil.which("curl") is None:
        pytest.skip("curl is not installed (the systemctl stand-in calls the simulator with it)")
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "systemctl"
    script.write_text(STANDIN.format(log=log, control=control, outlet=outlet, fail=fail))
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return folder


def need_sshd() -> None:
    if not Path("/usr/sbin/sshd").exists():
        pytest.skip("/usr/sbin/sshd is not installed (apt-get install openssh-server; CI has it)")


@dataclass
class Node:
    """One virtual node reachable over SSH: its sshd, the systemctl log, its outlet."""

    ssh: SshServer
    log: Path
    outlet: int

    def calls(self) -> list[str]:
        """What systemctl was asked, in order."""
        return self.log.read_text().splitlines() if self.log.exists() else []


@pytest.fixture
def node1(tmp_path: Path, control: ControlServer) -> Iterator[Node]:
    """sshd whose systemctl stand-in puts the simulator's outlet-1 node to sleep."""
    need_sshd()
    log = tmp_path / "systemctl-1.log"
    folder = systemctl_bin(tmp_path / "bin1", log, control=control.url, outlet=1)
    with sshd(env={"PATH": f"{folder}:/usr/bin:/bin"}) as server:
        yield Node(server, log, 1)


class AgentStandIn:
    """HTTP on loopback answering 200 exactly while the simulator's node on ``outlet`` is
    running (the virtual node's agent), 503 otherwise."""

    def __init__(self, sim: PduSimulator, outlet: int) -> None:
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                return

            def do_GET(self) -> None:
                up = sim.state(outlet).node == "running"
                self.send_response(200 if up else 503)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/metrics"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._thread.join()
        self._server.server_close()


@pytest.fixture
def agent1(sim: PduSimulator) -> Iterator[AgentStandIn]:
    """The stand-in agent of the outlet-1 node."""
    agent = AgentStandIn(sim, 1)
    try:
        yield agent
    finally:
        agent.close()


def write_inventory(path: Path, data: dict[str, Any]) -> Path:
    """Write a power inventory YAML."""
    path.write_text(yaml.safe_dump(data))
    return path


def inventory_data(
    sim: PduSimulator, node: Node, *, method: str = "wol", kubeconfig: Path | None = None,
    agent_url: str | None = None, pdu: str | None = None, **entry: Any,
) -> dict[str, Any]:  # fmt: skip
    """An inventory whose node ``duckboat-01`` is the simulator's outlet-``node.outlet`` node
    reached through ``node``'s sshd, plus the PDU owner / k3s server ``mini1`` on outlet 3."""
    nodes: dict[str, Any] = {
        "duckboat-01": {
            "method": method,
            "mac": sim.mac(node.outlet),
            "outlet": node.outlet,
            "ssh": node.ssh.target,
            "agent_url": agent_url,
            **entry,
        },
        "mini1": {
            "method": "wol",
            "mac": sim.mac(3),
            "outlet": 3,
            "ssh": node.ssh.target,
            "k3s_server": True,
            "pdu_owner": True,
        },
    }
    if agent_url is None:
        del nodes["duckboat-01"]["agent_url"]
    data: dict[str, Any] = {
        "pdu": pdu or sim.write_url,
        "meter": sim.url,
        "wol": {"address": "127.0.0.1", "port": sim.wol_port},
        "ssh": {"identity": str(node.ssh.client_key), "known_hosts": str(node.ssh.known_hosts)},
        "grace_s": 0.5,
        "nodes": nodes,
    }
    if kubeconfig is not None:
        data["kubeconfig"] = str(kubeconfig)
    return data
