"""kube-controller-manager 1.36 beside a :class:`ControlPlane`, with a short node grace period.

What it adds for tests is the node-lifecycle controller: it lifts the
``node.kubernetes.io/not-ready`` taint admission puts on a new node once the node is Ready;
a node whose Lease (``kube-node-lease/NAME``) and Ready heartbeat stop for
``--node-monitor-grace-period`` becomes ``Ready=Unknown`` and gets the
``node.kubernetes.io/unreachable`` NoSchedule and NoExecute taints, as a sleeping node does on
a real cluster; a node that posts Ready again loses them. The grace period defaults to 50 s
in 1.36; here 8 s, checked every 1 s (``--node-monitor-period``), so lifecycle tests take
seconds. Whatever heartbeats the nodes (:class:`~tests.servers.kube_node.NodeEmulator`) must
then beat well within 8 s.

Flags: ``--secure-port=0`` (no serving), ``--leader-elect=false`` (one instance),
``--controllers=*,-serviceaccount-token`` (no token signer configured), admin's kubeconfig.
Ready once its service-account controller made ``default`` in a namespace created after it
started: its informers synced and its controllers run. The ``controller_manager`` fixture adds
one to the module's ``control_plane``; modules that do not ask for it run without one.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import httpx
import pytest

from tests.servers._process import ServerProcess
from tests.servers.kube_control_plane import ControlPlane

_PROBES = itertools.count()


class KubeControllerManager(ServerProcess):
    """``kube-controller-manager`` for ``plane``, its log in ``plane.root``.

    Parameters
    ----------
    plane : ControlPlane
        A started control plane.
    node_monitor_grace_s : float
        ``--node-monitor-grace-period``: how long a silent node stays Ready, seconds.
    node_monitor_period_s : float
        ``--node-monitor-period``: how often the node-lifecycle controller looks, seconds.
    """

    start_timeout_s = 60.0

    def __init__(
        self, plane: ControlPlane, node_monitor_grace_s: float = 8.0,
        node_monitor_period_s: float = 1.0,
    ):  # fmt: skip
        super().__init__()
        self.plane = plane
        self.node_monitor_grace_s = node_monitor_grace_s
        self.argv = [
            str(plane.binaries / "kube-controller-manager"),
            f"--kubeconfig={plane.kubeconfig()}",
            "--secure-port=0",
            "--leader-elect=false",
            "--controllers=*,-serviceaccount-token",
            f"--node-monitor-grace-period={node_monitor_grace_s}s",
            f"--node-monitor-period={node_monitor_period_s}s",
        ]
        self.log_path = plane.root / "kube-controller-manager.log"
        self._probe = ""
        self.ready_url = "(a default service account in a new namespace)"

    def start(self) -> None:
        """Start it and wait until its controllers run (see the module)."""
        self._probe = f"kcm-probe-{next(_PROBES)}"
        with self.plane.client() as admin:
            namespace = {"apiVersion": "v1", "kind": "Namespace",
                         "metadata": {"name": self._probe}}  # fmt: skip
            admin.post("/api/v1/namespaces", json=namespace).raise_for_status()
        self.ready_url = f"/api/v1/namespaces/{self._probe}/serviceaccounts/default"
        super().start()

    def answers(self) -> bool:
        """The probe namespace's ``default`` service account exists."""
        try:
            with self.plane.client(timeout_s=2.0) as admin:
                return admin.get(self.ready_url).is_success
        except httpx.TransportError:
            return False


@pytest.fixture(scope="module")
def controller_manager(control_plane: ControlPlane) -> Iterator[KubeControllerManager]:
    """kube-controller-manager (node grace period 8 s) on the module's control plane, from the
    first test that asks for it to the module's end."""
    with KubeControllerManager(control_plane) as manager:
        yield manager
