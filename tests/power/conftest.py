"""The power-state fixtures (simulator, sshd with a systemctl stand-in, stand-in Kubernetes API)
are those of ``tests/calibrate/powerstates``."""

from tests.calibrate.powerstates.conftest import control, k8s, node1, sim  # noqa: F401
