"""Fixtures of the tests that run the real Kubernetes control plane (``tests/servers/kube_*``):
the unpacked binaries (once per machine), a control plane per test module, and on request a
controller-manager, kube-schedulers and emulated nodes."""

from tests.servers.kube_binaries import kube_binaries  # noqa: F401 (the fixtures)
from tests.servers.kube_control_plane import control_plane  # noqa: F401
from tests.servers.kube_controller_manager import controller_manager  # noqa: F401
from tests.servers.kube_node import emulated_nodes  # noqa: F401
from tests.servers.kube_scheduler import kube_scheduler  # noqa: F401
