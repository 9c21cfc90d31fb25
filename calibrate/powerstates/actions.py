"""The power-actions façade: wake, suspend and power off the inventory's nodes, safely.

Every action goes the same way: the safety rules first (:mod:`.safety`, for anything that
stops a node), then a plan that touches nothing (the SETs an outlet switch would send, read
from the PDU itself, so an unknown outlet or a PDU that cannot switch fails here), then — unless
it is a dry run — the steps, each checked; every outcome is one :class:`~.transitions.Transition`,
logged and counted, and a failure says what was done and what state it left.

The steps by method (:mod:`.inventory`):

- ``systemctl --no-block suspend`` / ``poweroff`` over SSH (paramiko through the one SSH
  transport, :class:`eams.ssh.SshClient`: key authentication, host keys verified
  against known_hosts, an unknown or changed key refused). ``--no-block`` queues the job and
  returns, so the exit status comes back before the node goes down; a connection that drops
  right after the command was sent counts as the node going down.
- Before a soft-off that an outlet-off will follow, the outlet is switched to the state it
  has (on): an idempotent SET, read back, that proves the PDU takes our SETs, so a read-only
  community is refused before the node is touched, not after.
- Outlet-off after a soft-off waits for the node to shut down: until its SSH port stops
  answering, for at most the inventory's ``grace_s`` (Ironic's and MAAS's soft power-off
  timeout, then hard power off). The outlet is then switched over SNMP and confirmed by
  reading its state back (:func:`eams.meter.snmp.switch.switch_outlet`).
- A wake is a magic packet (:func:`eams.meter.wol.send_magic_packet`; UDP: no confirmation —
  the node is back when its agent reports, which ``eams calibrate power-states`` measures) or
  the outlet switched on and read back.
"""

from __future__ import annotations

import getpass
import socket
import time
from collections.abc import Callable

from eams.calibrate.powerstates.errors import (
    InventoryError,
    PowerActionFailed,
    PowerRefused,
    PowerStateError,
)
from eams.calibrate.powerstates.inventory import NodeEntry, PowerInventory
from eams.calibrate.powerstates.safety import check_sleep
from eams.calibrate.powerstates.transitions import Transition, record
from eams.kube.nodeview import Cluster, NodeView
from eams.meter.blocking import BlockingMeter
from eams.meter.errors import MeterError
from eams.meter.wol import (
    DEFAULT_ADDRESS,
    DEFAULT_PORT,
    format_mac,
    parse_nic_mac,
    send_magic_packet,
)
from eams.ssh import CONNECTION_LOST, SshClient, SshError, SshTarget

SSH_COMMAND_TIMEOUT_S = 30.0
"""Bound on one ``systemctl`` over SSH (s)."""
DOWN_POLL_S = 1.0
"""Seconds between checks that a shutting-down node's SSH port stopped answering."""

Steps = list[str]


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
    switch_wait_s : float
        How long an outlet's state may take to read back as asked (s).
    meter_timeout_s, meter_retries : float, int
        Per SNMP request.
    ssh_timeout_s : float
        SSH connect and authentication timeout (s).
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
        switch_wait_s: float = 30.0,
        meter_timeout_s: float = 2.0,
        meter_retries: int = 1,
        ssh_timeout_s: float = 10.0,
    ) -> None:
        self._inventory = inventory
        self.who = who or getpass.getuser()
        self.why = why
        self.force, self.dry_run = force, dry_run
        self._node_view = node_view
        self._switch_wait_s = switch_wait_s
        self._meter_kwargs = {"timeout_s": meter_timeout_s, "retries": meter_retries}
        self._ssh_timeout_s = ssh_timeout_s
        self._acted: tuple[float, float] | None = None

    @property
    def inventory(self) -> PowerInventory:
        """The inventory; InventoryError when none was given."""
        if self._inventory is None:
            raise InventoryError("no power inventory given (--inventory FILE)")
        return self._inventory

    # --- the composite actions ---------------------------------------------------------------

    def suspend(self, node: str) -> Transition:
        """Put ``node`` into its method's sleep state: suspend-to-RAM (wol), soft-off (ssh),
        soft-off then outlet off (outlet). Raises as :meth:`poweroff`."""
        entry = self.inventory.node(node)
        if entry.method == "wol":
            return self.os_sleep(node, "suspend")
        return self.poweroff(node, instead_of_suspend=True)

    def poweroff(self, node: str, *, instead_of_suspend: bool = False) -> Transition:
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
        entry = self.inventory.node(node)
        if entry.method != "outlet":
            return self.os_sleep(node, "poweroff", cannot_suspend=instead_of_suspend)
        target = self._target(node, entry)
        assert entry.outlet is not None  # the inventory requires it for method outlet

        def plan() -> Steps:
            switch = self._switch_plan(node, entry, "off")
            wait = f"wait up to {self.inventory.grace_s:g} s for {target} to stop answering"
            check = f"outlet {entry.outlet} on (as it is): the PDU takes our SETs"
            return [check, self._systemctl_step(target, "poweroff"), wait, *switch]

        def act(done: Steps) -> None:
            try:  # a read-only community or user fails here, before the node is touched
                done.append(self._switch(entry, "on") + ": write access checked")
            except MeterError as exc:
                raise PowerActionFailed(
                    f"node {node}: outlet {entry.outlet} cannot be switched: {exc}; nothing "
                    "was done"
                ) from exc
            self._systemctl(node, entry, "poweroff", done)
            done.append(self._wait_down(entry))
            try:
                done.append(self._switch(entry, "off"))
            except MeterError as exc:
                raise PowerActionFailed(
                    f"node {node}: soft-off sent, but outlet {entry.outlet} was not switched "
                    f"off: {exc}; the node is soft-off with its outlet on"
                ) from exc

        return self._run(node, "off", entry.method, plan, act, stops=True)

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
        entry = self.inventory.node(node)
        if entry.method == "outlet":
            return self.outlet(node, "on")
        return self.magic_packet(node)

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
            done.append(self._send(label, label, address, port))

        step = f"magic packet for {label} to {address}:{port}"
        return self._run(label, "running", "mac", lambda: [step], act, stops=False)

    # --- the primitives (also what the power-state measurement drives) ----------------------

    def os_sleep(self, node: str, verb: str, *, cannot_suspend: bool = False) -> Transition:
        """``systemctl --no-block suspend`` (``verb="suspend"``) or ``poweroff`` on ``node``
        over SSH, after the safety rules. Raises as :meth:`poweroff`."""
        if verb not in ("suspend", "poweroff"):
            raise ValueError(f"verb {verb!r} is not suspend or poweroff")
        entry = self.inventory.node(node)
        target = self._target(node, entry)
        note = f"node {node} cannot suspend (method {entry.method}): powered off instead"

        def plan() -> Steps:
            return [self._systemctl_step(target, verb)]

        def act(done: Steps) -> None:
            self._systemctl(node, entry, verb, done)

        to = "suspended" if verb == "suspend" else "soft_off"
        return self._run(
            node, to, entry.method, plan, act, stops=True, note=note if cannot_suspend else ""
        )

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
        entry = self.inventory.node(node)

        def plan() -> Steps:
            return self._switch_plan(node, entry, action)

        def act(done: Steps) -> None:
            try:
                done.append(self._switch(entry, action))
            except MeterError as exc:
                raise PowerActionFailed(
                    f"node {node}: outlet {entry.outlet} {action}: {exc}"
                ) from exc

        to = "running" if action == "on" else "off"
        return self._run(node, to, entry.method, plan, act, stops=action == "off")

    def magic_packet(self, node: str) -> Transition:
        """Send ``node``'s magic packet (its MAC, to its ``wol_address`` or the inventory's).

        Raises
        ------
        PowerActionFailed
            The node has no MAC in the inventory, or the datagram could not be sent.
        """
        entry = self.inventory.node(node)
        address = entry.wol_address or self.inventory.wol.address
        port = self.inventory.wol.port

        def plan() -> Steps:
            if entry.mac is None:
                raise PowerActionFailed(f"node {node}: no mac in {self.inventory.source}")
            return [f"magic packet for {entry.mac} to {address}:{port}"]

        def act(done: Steps) -> None:
            assert entry.mac is not None
            done.append(self._send(node, entry.mac, address, port))

        return self._run(node, "running", entry.method, plan, act, stops=False)

    # --- machinery ---------------------------------------------------------------------------

    def _run(
        self,
        node: str,
        to: str,
        method: str,
        plan: Callable[[], Steps],
        act: Callable[[Steps], None],
        *,
        stops: bool,
        note: str = "",
    ) -> Transition:
        """Safety (when the action ``stops`` the node), plan, act; one transition recorded."""
        started = time.monotonic()
        done: Steps = []
        notes = [note] if note else []
        self._acted = None

        def outcome(result: str, steps: Steps, detail: str = "") -> Transition:
            detail = "; ".join([*notes, detail] if detail else notes)
            return record(
                Transition(
                    node=node,
                    to=to,
                    method=method,
                    result=result,
                    who=self.who,
                    why=self.why,
                    steps=tuple(steps),
                    elapsed_s=time.monotonic() - started,
                    detail=detail,
                    acted_s=self._acted,
                )
            )

        try:
            if stops:
                entry = self.inventory.node(node)
                notes += check_sleep(node, entry, self._view, force=self.force)
            steps = plan()
            if self.dry_run:
                return outcome("dry_run", steps)
            act(done)
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

    def _target(self, node: str, entry: NodeEntry) -> SshTarget:
        if entry.ssh is None:
            raise PowerActionFailed(f"node {node}: no ssh target in {self.inventory.source}")
        try:
            return SshTarget.parse(entry.ssh)
        except SshError as exc:
            raise PowerActionFailed(f"node {node}: {exc}") from exc

    @staticmethod
    def _systemctl_step(target: SshTarget, verb: str) -> str:
        return f"{target}: systemctl --no-block {verb}"

    def _systemctl(self, node: str, entry: NodeEntry, verb: str, done: Steps) -> None:
        target = self._target(node, entry)
        step = self._systemctl_step(target, verb)
        try:
            runner = SshClient(
                target,
                identity=self.inventory.ssh.identity,
                known_hosts=self.inventory.ssh.known_hosts,
                timeout_s=self._ssh_timeout_s,
            )
        except SshError as exc:
            raise PowerActionFailed(f"node {node}: cannot {verb}: {exc}; nothing was done") from exc
        called = time.monotonic()
        try:
            runner.run(["systemctl", "--no-block", verb], timeout_s=SSH_COMMAND_TIMEOUT_S)
            self._acted = (called, time.monotonic())
        except SshError as exc:
            if f"{CONNECTION_LOST} running" not in str(exc):
                raise PowerActionFailed(f"node {node}: {verb} failed: {exc}") from exc
            step += " (the connection dropped as the node went down)"
            self._acted = (called, time.monotonic())
        finally:
            runner.close()
        done.append(step)

    def _wait_down(self, entry: NodeEntry) -> str:
        """Wait until the node's SSH port stops answering, at most ``grace_s``; says which."""
        target = SshTarget.parse(entry.ssh or "")
        grace_s = self.inventory.grace_s
        started = time.monotonic()
        while time.monotonic() - started < grace_s:
            try:
                with socket.create_connection((target.host, target.port), timeout=DOWN_POLL_S):
                    pass
            except OSError:
                return f"{target} stopped answering after {time.monotonic() - started:.1f} s"
            time.sleep(min(DOWN_POLL_S, max(0.0, grace_s - (time.monotonic() - started))))
        return f"{target} still answered after the {grace_s:g} s grace period: outlet cut"

    def _meter(self) -> BlockingMeter:
        if self.inventory.pdu is None:
            raise PowerActionFailed(f"{self.inventory.source}: no pdu URL to switch outlets")
        try:
            return BlockingMeter(self.inventory.pdu, **self._meter_kwargs)
        except MeterError as exc:
            raise PowerActionFailed(f"{self.inventory.source}: pdu: {exc}") from exc

    def _switch_plan(self, node: str, entry: NodeEntry, action: str) -> Steps:
        if entry.outlet is None:
            raise PowerActionFailed(f"node {node}: no outlet in {self.inventory.source}")
        try:
            with self._meter() as meter:
                result = meter.switch(entry.outlet, action, dry_run=True)
        except MeterError as exc:
            raise PowerActionFailed(
                f"node {node}: outlet {entry.outlet} {action}: {exc}; nothing was done"
            ) from exc
        if action == "off" and result.plan.state_before != "on":
            state = result.plan.state_before or "neither on nor off"
            raise PowerActionFailed(
                f"node {node}: outlet {entry.outlet} reads {state}, not on: the node is off "
                "already or the PDU cannot say; nothing was done"
            )
        return result.plan.describe()

    def _switch(self, entry: NodeEntry, action: str) -> str:
        assert entry.outlet is not None
        with self._meter() as meter:
            meter.read()  # detect the family and learn the outlets before the clock starts
            called = time.monotonic()
            result = meter.switch(entry.outlet, action, wait_s=self._switch_wait_s)
            self._acted = (called, time.monotonic())
        return (
            f"outlet {entry.outlet} {action}: state read back {result.state} after "
            f"{result.elapsed_s:.1f} s ({result.plan.state_oid})"
        )

    def _send(self, node: str, mac: str, address: str, port: int) -> str:
        called = time.monotonic()
        try:
            send_magic_packet(mac, address=address, port=port)
        except MeterError as exc:
            raise PowerActionFailed(f"node {node}: {exc}") from exc
        self._acted = (called, time.monotonic())
        return f"magic packet for {mac} sent to {address}:{port}"
