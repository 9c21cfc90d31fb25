"""The manager's :class:`~.ports.Actuator` on real nodes: the power-state actions of
:mod:`eams.actuators` (Wake-on-LAN, ``systemctl`` over SSH, switched outlets read
back), with their safety rules: a node with pods that are not DaemonSets', one not cordoned
and tainted, the k3s server and the PDU owner are refused, never forced.

A refusal or failure comes back as a :class:`~eams.actuators.transitions.Transition`
(``refused`` / ``failed``, the error in ``detail``); the actions have already logged and
counted it (``eams_power_transitions_total``). :meth:`PowerActuator.restart_agent` runs
``systemctl restart k3s-agent`` over the same SSH target, logged and counted the same way.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from eams.actuators.actions import PowerActions
from eams.actuators.errors import PowerRefused, PowerStateError
from eams.actuators.inventory import PowerInventory
from eams.actuators.methods import METHODS
from eams.actuators.steps import SSH_COMMAND_TIMEOUT_S
from eams.actuators.transitions import Transition, record
from eams.kube.nodeview import NodeView
from eams.ssh import SshClient, SshError, SshTarget

WHO = "eams-power-manager"
K3S_AGENT_RESTART = ("systemctl", "restart", "k3s-agent")


class PowerActuator:
    """:class:`~.ports.Actuator` (module docstring).

    Parameters
    ----------
    inventory : PowerInventory
    node_view : callable
        ``name -> NodeView`` for the safety check (:meth:`KubeClient.node
        <eams.kube.nodeview.Cluster.node>`).
    ssh_timeout_s : float
        SSH connect timeout (s).
    """

    def __init__(
        self,
        inventory: PowerInventory,
        node_view: Callable[[str], NodeView],
        ssh_timeout_s: float = 10.0,
    ) -> None:
        self.inventory, self._node_view, self._ssh_timeout_s = inventory, node_view, ssh_timeout_s

    def _actions(self, why: str) -> PowerActions:
        return PowerActions(
            self.inventory,
            who=WHO,
            why=why,
            node_view=self._node_view,
            ssh_timeout_s=self._ssh_timeout_s,
        )

    def sleep_state(self, node: str) -> str:
        """The state the node's method's sleep leaves it in (``suspended`` for wol, ``soft_off``
        for ssh, ``off`` for outlet: :data:`eams.actuators.methods.METHODS`)."""
        return METHODS[self.inventory.node(node).method].sleep_state

    def sleep(self, node: str, reason: str) -> Transition:
        """:meth:`PowerActions.suspend` (after its safety rules)."""
        try:
            return self._actions(reason).suspend(node)
        except PowerStateError as exc:
            return self._outcome(node, self.sleep_state(node), reason, exc)

    def wake(self, node: str, reason: str) -> Transition:
        """:meth:`PowerActions.wake`: a magic packet, or the outlet on and read back."""
        try:
            return self._actions(reason).wake(node)
        except PowerStateError as exc:
            return self._outcome(node, "running", reason, exc)

    def restart_agent(self, node: str) -> Transition:
        """``systemctl restart k3s-agent`` on the node over SSH."""
        entry = self.inventory.node(node)
        started = time.monotonic()
        why = "NotReady after the wake"
        step = f"{entry.ssh}: {' '.join(K3S_AGENT_RESTART)}"
        try:
            runner = SshClient(
                SshTarget.parse(entry.ssh or ""),
                identity=self.inventory.ssh.identity,
                known_hosts=self.inventory.ssh.known_hosts,
                timeout_s=self._ssh_timeout_s,
            )
            try:
                runner.run(list(K3S_AGENT_RESTART), timeout_s=SSH_COMMAND_TIMEOUT_S)
            finally:
                runner.close()
        except SshError as exc:
            return record(Transition(node, "running", "ssh", "failed", WHO, why, (), 0.0, str(exc)))
        elapsed = time.monotonic() - started
        return record(Transition(node, "running", "ssh", "ok", WHO, why, (step,), elapsed))

    def _outcome(self, node: str, to: str, why: str, exc: PowerStateError) -> Transition:
        """The Transition of an action that raised (already logged and counted by it)."""
        result = "refused" if isinstance(exc, PowerRefused) else "failed"
        method = self.inventory.node(node).method
        return Transition(node, to, method, result, WHO, why, (), 0.0, str(exc))
