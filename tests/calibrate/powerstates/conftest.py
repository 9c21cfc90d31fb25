"""The power-state measurement runs on the actuators' real parts (``tests/actuators/conftest.py``):
the PDU simulator, sshd with a ``systemctl`` stand-in, the stand-in Kubernetes API and agent."""

from tests.actuators.conftest import agent1, control, k8s, node1, sim  # noqa: F401
