"""The steps every method is made of, each with its plan: ``systemctl`` over SSH, waiting for a
node to go down, an outlet switched and read back, a magic packet.

:class:`StepKit` builds the :class:`~.methods.base.Action` of each step for one inventory, and
lends the steps themselves to a method that composes them (:mod:`.methods.outlet`); it keeps
the monotonic window of the last step that changed a node (the transition's ``acted_s``).

- ``systemctl --no-block suspend`` / ``poweroff`` over SSH (paramiko through the one SSH
  transport, :class:`eams.ssh.SshClient`: key authentication, host keys verified against
  known_hosts, an unknown or changed key refused). ``--no-block`` queues the job and returns,
  so the exit status comes back before the node goes down; a connection that drops right after
  the command was sent counts as the node going down.
- Waiting for a soft-off: until the node's SSH port stops answering, for at most the
  inventory's ``grace_s`` (Ironic's and MAAS's soft power-off timeout, then hard power off).
- An outlet switched over SNMP and confirmed by reading its state back
  (:func:`eams.meter.snmp.switch.switch_outlet`).
- A magic packet (:func:`eams.meter.wol.send_magic_packet`; UDP: no confirmation — the node is
  back when its agent reports, which ``eams calibrate power-states`` measures).
"""

from __future__ import annotations

import socket
import threading
import time
from typing import TypedDict

from eams.actuators.errors import PowerActionFailed
from eams.actuators.inventory import NodeEntry, PowerInventory
from eams.actuators.methods.base import Action, Steps
from eams.meter.blocking import BlockingMeter
from eams.meter.errors import MeterError
from eams.meter.wol import send_magic_packet
from eams.ssh import CONNECTION_LOST, SshClient, SshError, SshTarget

SSH_COMMAND_TIMEOUT_S = 30.0
"""Bound on one ``systemctl`` over SSH (s)."""
DOWN_POLL_S = 1.0
"""Seconds between checks that a shutting-down node's SSH port stopped answering."""


class StepOptions(TypedDict, total=False):
    """The keyword options of :class:`StepKit` (what the façade passes on)."""

    switch_wait_s: float
    meter_timeout_s: float
    meter_retries: int
    ssh_timeout_s: float


class StepKit:
    """The steps (module docstring) on the nodes of ``inventory``.

    Parameters
    ----------
    inventory : PowerInventory or None
        ``None`` only for a raw magic packet (:meth:`send`).
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
        switch_wait_s: float = 30.0,
        meter_timeout_s: float = 2.0,
        meter_retries: int = 1,
        ssh_timeout_s: float = 10.0,
    ) -> None:
        self._inventory = inventory
        self._switch_wait_s = switch_wait_s
        self._meter_kwargs = {"timeout_s": meter_timeout_s, "retries": meter_retries}
        self._ssh_timeout_s = ssh_timeout_s
        self._acted = threading.local()

    @property
    def acted(self) -> tuple[float, float] | None:
        """Monotonic window of the last step this thread ran that changed a node (``None``:
        none yet). Per thread: one façade acting from several threads at once (the demo
        measures five nodes together) gives each transition its own step's window."""
        return getattr(self._acted, "window", None)

    @acted.setter
    def acted(self, window: tuple[float, float] | None) -> None:
        self._acted.window = window

    @property
    def inventory(self) -> PowerInventory:
        assert self._inventory is not None  # the façade checks before it builds an action
        return self._inventory

    # --- the actions of one step -------------------------------------------------------------

    def systemctl(self, node: str, verb: str, *, note: str = "") -> Action:
        """``systemctl --no-block suspend`` (``verb="suspend"``) or ``poweroff`` on ``node``
        over SSH. Raises PowerActionFailed now for a node without an SSH target."""
        if verb not in ("suspend", "poweroff"):
            raise ValueError(f"verb {verb!r} is not suspend or poweroff")
        entry = self.inventory.node(node)
        target = self.target(node, entry)

        def plan() -> Steps:
            return [self.systemctl_step(target, verb)]

        def act(done: Steps) -> None:
            self.run_systemctl(node, entry, verb, done)

        to = "suspended" if verb == "suspend" else "soft_off"
        return Action(to, plan, act, stops=True, note=note)

    def outlet(self, node: str, action: str) -> Action:
        """``node``'s own outlet ``on`` or ``off``, confirmed by reading its state back."""
        if action not in ("on", "off"):
            raise ValueError(f"action {action!r} is not on or off")
        entry = self.inventory.node(node)

        def plan() -> Steps:
            return self.switch_plan(node, entry, action)

        def act(done: Steps) -> None:
            try:
                done.append(self.switch(entry, action))
            except MeterError as exc:
                raise PowerActionFailed(
                    f"node {node}: outlet {entry.outlet} {action}: {exc}"
                ) from exc

        to = "running" if action == "on" else "off"
        return Action(to, plan, act, stops=action == "off")

    def magic_packet(self, node: str) -> Action:
        """``node``'s magic packet (its MAC, to its ``wol_address`` or the inventory's)."""
        entry = self.inventory.node(node)
        address = entry.wol_address or self.inventory.wol.address
        port = self.inventory.wol.port

        def plan() -> Steps:
            if entry.mac is None:
                raise PowerActionFailed(f"node {node}: no mac in {self.inventory.source}")
            return [f"magic packet for {entry.mac} to {address}:{port}"]

        def act(done: Steps) -> None:
            assert entry.mac is not None
            done.append(self.send(node, entry.mac, address, port))

        return Action("running", plan, act, stops=False)

    # --- the steps themselves ----------------------------------------------------------------

    def target(self, node: str, entry: NodeEntry) -> SshTarget:
        """The node's SSH target. Raises PowerActionFailed when it has none."""
        if entry.ssh is None:
            raise PowerActionFailed(f"node {node}: no ssh target in {self.inventory.source}")
        try:
            return SshTarget.parse(entry.ssh)
        except SshError as exc:
            raise PowerActionFailed(f"node {node}: {exc}") from exc

    @staticmethod
    def systemctl_step(target: SshTarget, verb: str) -> str:
        """The step's words, as planned and as done."""
        return f"{target}: systemctl --no-block {verb}"

    def run_systemctl(self, node: str, entry: NodeEntry, verb: str, done: Steps) -> None:
        """``systemctl --no-block VERB`` over SSH; a connection dropped as the node goes down
        counts as done. Raises PowerActionFailed (nothing done when SSH refused)."""
        target = self.target(node, entry)
        step = self.systemctl_step(target, verb)
        try:
            client = SshClient(
                target,
                identity=self.inventory.ssh.identity,
                known_hosts=self.inventory.ssh.known_hosts,
                timeout_s=self._ssh_timeout_s,
            )
        except SshError as exc:
            raise PowerActionFailed(f"node {node}: cannot {verb}: {exc}; nothing was done") from exc
        called = time.monotonic()
        try:
            client.run(["systemctl", "--no-block", verb], timeout_s=SSH_COMMAND_TIMEOUT_S)
            self.acted = (called, time.monotonic())
        except SshError as exc:
            if f"{CONNECTION_LOST} running" not in str(exc):
                raise PowerActionFailed(f"node {node}: {verb} failed: {exc}") from exc
            step += " (the connection dropped as the node went down)"
            self.acted = (called, time.monotonic())
        finally:
            client.close()
        done.append(step)

    def wait_down(self, entry: NodeEntry) -> str:
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

    def switch_plan(self, node: str, entry: NodeEntry, action: str) -> Steps:
        """The SETs switching ``node``'s outlet would send, read from the PDU (a dry run).

        Raises
        ------
        PowerActionFailed
            No outlet, no pdu, the PDU cannot switch it, or (off) it does not read on.
        """
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

    def switch(self, entry: NodeEntry, action: str) -> str:
        """Switch the node's outlet and read it back; the step's words. Raises MeterError."""
        assert entry.outlet is not None
        with self._meter() as meter:
            meter.read()  # detect the family and learn the outlets before the clock starts
            result = meter.switch(entry.outlet, action, wait_s=self._switch_wait_s)
            self.acted = result.set_s  # the SETs, not the plan's read nor the read-back
        return (
            f"outlet {entry.outlet} {action}: state read back {result.state} after "
            f"{result.elapsed_s:.1f} s ({result.plan.state_oid})"
        )

    def send(self, node: str, mac: str, address: str, port: int) -> str:
        """Send the magic packet; the step's words. Raises PowerActionFailed."""
        called = time.monotonic()
        try:
            send_magic_packet(mac, address=address, port=port)
        except MeterError as exc:
            raise PowerActionFailed(f"node {node}: {exc}") from exc
        self.acted = (called, time.monotonic())
        return f"magic packet for {mac} sent to {address}:{port}"
