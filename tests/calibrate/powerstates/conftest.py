"""The power-state measurement runs on the actuators' real parts (``tests/actuators/conftest.py``):
the PDU simulator, sshd with a ``systemctl`` stand-in, the real Kubernetes API server with an
emulated node (``tests/servers/kube_node.py``), and the agent's stand-in."""

from tests.actuators.conftest import agent1, control, k8s, node1, sim  # noqa: F401
from tests.servers.kube_binaries import kube_binaries  # noqa: F401 (the real control plane)
from tests.servers.kube_control_plane import control_plane  # noqa: F401
from tests.servers.kube_node import emulated_nodes  # noqa: F401
