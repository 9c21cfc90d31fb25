"""The power-actions façade: wake, suspend and power off the inventory's nodes, safely.

Every action goes the same way: the node's method (:data:`~.methods.METHODS`, by its inventory
entry) builds it from the steps of :mod:`.steps`; then the safety rules (:mod:`.safety`, for
anything that stops a node), then a plan that touches nothing (the SETs an outlet switch would
send, read from the PDU itself, so an unknown outlet or a PDU that cannot switch fails here),
then — unless it is a dry run — the steps, each checked; every outcome is one
:class:`~.transitions.Transition`, logged and counted, and a failure says what was done and what
state it left. The methods and their steps: :mod:`.methods` (``wol``, ``ssh``, ``outlet``).
"""

from __future__ import annotations

import getpass
import time
from collections.abc import Callable
from typing import Unpack

from eams.actuators.errors import InventoryError, PowerRefused, PowerStateError
from eams.actuators.inventory import PowerInventory
from eams.actuators.methods import METHODS, Method
from eams.actuators.methods.base import Action, Steps
from eams.actuators.safety import check_sleep
from eams.actuators.steps import StepKit, StepOptions
from eams.actuators.transitions import Transition, record
from eams.kube.nodeview import Cluster, NodeView
from eams.meter.wol import DEFAULT_ADDRESS, DEFAULT_PORT, format_mac, parse_nic_mac


class PowerActions:
    """Wake, suspend and power off the nodes of ``inventory``.

    Parameters
    ----------
    inventory : PowerInventory or None
        ``None`` only for :meth:`wake_mac` (a raw wake needs no inventory).
    who : str, optional
        Who asks (default: the login name), for the log line.
    why : str
        The reason, for the log line.
    force : bool
        Override the forceable safety rules (pods on the node, an unreachable API).
    dry_run : bool
        Check and plan only: print what would happen, do nothing.
    node_view : callable, optional
        ``name -> NodeView``; default: :meth:`Cluster.node` on the inventory's kubeconfig.
    **options
        ``switch_wait_s``, ``meter_timeout_s``, ``meter_retries``, ``ssh_timeout_s``: as
        :class:`~.steps.StepKit` (the outlet's read-back, SNMP, SSH).
    """

    def __init__(
        self,
        inventory: PowerInventory | None,
        *,
        who: str | None = None,
        why: str = "",
        force: bool = False,
        dry_run: bool = False,
        node_view: Callable[[str], NodeView] | None = None,
        **options: Unpack[StepOptions],
    ) -> None:
        self._inventory = inventory
        self.who = who or getpass.getuser()
        self.why = why
        self.force, self.dry_run = force, dry_run
        self._node_view = node_view
        self._kit = StepKit(inventory, **options)

    @property
    def inventory(self) -> PowerInventory:
        """The inventory; InventoryError when none was given."""
        if self._inventory is None:
            raise InventoryError("no power inventory given (--inventory FILE)")
        return self._inventory

    # --- the composite actions ---------------------------------------------------------------

    def method(self, node: str) -> Method:
        """The method of ``node`` (:data:`~.methods.METHODS`), on this façade's steps."""
        return METHODS[self.inventory.node(node).method](self._kit)

    def suspend(self, node: str) -> Transition:
        """Put ``node`` into its method's sleep state: suspend-to-RAM (wol), soft-off (ssh),
        soft-off then outlet off (outlet). Raises as :meth:`poweroff`."""
        return self._do(node, self.method(node).sleep(node))

    def poweroff(self, node: str) -> Transition:
        """Power ``node`` off: soft-off over SSH, then (method outlet) its outlet off once it
        has shut down.

        Raises
        ------
        InventoryError
            No such node.
        PowerRefused, ClusterUnreachable
            A safety rule (nothing done).
        PowerActionFailed
            SSH unreachable or refused, ``systemctl`` failed (nothing done), or the outlet
            could not be switched off after the soft-off (the message says the node is soft-off
            with its outlet on).
        """
        return self._do(node, self.method(node).poweroff(node))

    def wake(self, node: str) -> Transition:
        """Wake ``node``: a magic packet (wol, ssh) or its outlet on, read back (outlet).

        Raises
        ------
        InventoryError
            No such node.
        PowerActionFailed
            The packet could not be sent, or the outlet not switched on (unknown outlet,
            read-only community, a PDU that cannot switch, a read-back that differs).
        """
        return self._do(node, self.method(node).wake(node))

    def wake_mac(
        self, mac: str, *, address: str | None = None, port: int | None = None
    ) -> Transition:
        """Send a magic packet for ``mac`` (no inventory node) to ``address:port``, default
        255.255.255.255:9.

        Raises
        ------
        BadMacAddress
            A malformed MAC (before anything is logged: it is a usage error).
        PowerActionFailed
            The datagram could not be sent.
        """
        label = format_mac(parse_nic_mac(mac))
        address = address or DEFAULT_ADDRESS
        port = DEFAULT_PORT if port is None else port

        def act(done: Steps) -> None:
            done.append(self._kit.send(label, label, address, port))

        step = f"magic packet for {label} to {address}:{port}"
        return self._run(label, "mac", Action("running", lambda: [step], act, stops=False))

    # --- the primitives (also what the power-state measurement drives) ----------------------

    def os_sleep(self, node: str, verb: str) -> Transition:
        """``systemctl --no-block suspend`` (``verb="suspend"``) or ``poweroff`` on ``node``
        over SSH, after the safety rules. Raises as :meth:`poweroff`."""
        if verb not in ("suspend", "poweroff"):
            raise ValueError(f"verb {verb!r} is not suspend or poweroff")
        self.inventory.node(node)
        return self._do(node, self._kit.systemctl(node, verb))

    def outlet(self, node: str, action: str) -> Transition:
        """Switch ``node``'s own outlet ``on`` or ``off`` (the safety rules first for off),
        confirmed by reading its state back.

        Raises
        ------
        PowerActionFailed
            The node has no outlet in the inventory, the inventory no ``pdu``, or the switch
            failed (names the meter's reason: unknown outlet, refused (noAccess), cannot
            switch, did not read back).
        """
        if action not in ("on", "off"):
            raise ValueError(f"action {action!r} is not on or off")
        self.inventory.node(node)
        return self._do(node, self._kit.outlet(node, action))

    def magic_packet(self, node: str) -> Transition:
        """Send ``node``'s magic packet (its MAC, to its ``wol_address`` or the inventory's).

        Raises
        ------
        PowerActionFailed
            The node has no MAC in the inventory, or the datagram could not be sent.
        """
        self.inventory.node(node)
        return self._do(node, self._kit.magic_packet(node))

    # --- machinery ---------------------------------------------------------------------------

    def _do(self, node: str, action: Action) -> Transition:
        """Run an inventory node's ``action`` (recorded under the node's method)."""
        return self._run(node, self.inventory.node(node).method, action)

    def _run(self, node: str, method: str, action: Action) -> Transition:
        """Safety (when the action ``stops`` the node), plan, act; one transition recorded."""
        started = time.monotonic()
        done: Steps = []
        notes = [action.note] if action.note else []
        self._kit.acted = None

        def outcome(result: str, steps: Steps, detail: str = "") -> Transition:
            detail = "; ".join([*notes, detail] if detail else notes)
            return record(
                Transition(
                    node=node,
                    to=action.to,
                    method=method,
                    result=result,
                    who=self.who,
                    why=self.why,
                    steps=tuple(steps),
                    elapsed_s=time.monotonic() - started,
                    detail=detail,
                    acted_s=self._kit.acted,
                )
            )

        try:
            if action.stops:
                entry = self.inventory.node(node)
                notes += check_sleep(node, entry, self._view, force=self.force)
            steps = action.plan()
            if self.dry_run:
                return outcome("dry_run", steps)
            action.act(done)
        except PowerRefused as exc:
            outcome("refused", [], str(exc))
            raise
        except PowerStateError as exc:
            outcome("failed", done, str(exc))
            raise
        return outcome("ok", done)

    def _view(self, name: str) -> NodeView:
        if self._node_view is None:
            self._node_view = Cluster(self.inventory.kubeconfig).node
        return self._node_view(name)
