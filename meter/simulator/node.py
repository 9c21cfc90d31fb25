"""The virtual node behind an outlet: its power states, their timing and what each draws.

Node states (``OutletState.node``)::

    off ──outlet on──▶ booting ──boot_s──▶ running ──suspend()──▶ suspending ──suspend_s──▶
    suspended ──magic packet──▶ waking ──wake_s──▶ running
    running ──soft_off()──▶ shutting_down ──shutdown_s──▶ soft_off ──magic packet──▶ booting
    any state ──outlet off──▶ off

A node boots whenever its outlet is switched on (firmware set to "power on after AC loss",
as a remotely managed machine must be). A reboot from the PDU is the outlet off, then on
again ``reboot_off_s`` later. Energy is integrated piecewise between transitions, so a counter
is exact whenever it is read.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from eams.meter.simulator.errors import SimulatorError
from eams.meter.simulator.load import LoadSource

if TYPE_CHECKING:
    from eams.meter.simulator.outlets import VirtualOutlet

_TIMED = {
    "booting": "running",
    "waking": "running",
    "suspending": "suspended",
    "shutting_down": "soft_off",
}
"""Timed states and the state each ends in."""


@dataclass(frozen=True, slots=True)
class NodePower:
    """Hidden power-state parameters of one virtual node (what a power-state calibration must
    recover). Defaults are assumptions for a small x86 node, not measurements.

    Attributes
    ----------
    boot_s : float
        Outlet on (or a magic packet in soft-off) → running, i.e. its agent reports (s).
    boot_power_w : float or None
        Draw while booting (W); ``None``: the node's curve at 50 % utilisation.
    off_w : float
        P_off: soft-off (ACPI S5, Wake-on-LAN armed) with the outlet on, standby draw (W).
    suspend_w : float
        P_suspend: suspend-to-RAM (ACPI S3) draw (W).
    wake_s : float
        Magic packet in suspend → running again (s).
    wake_power_w : float or None
        Draw while resuming (W); ``None``: the boot power.
    suspend_s, shutdown_s : float
        ``suspend()`` → suspended and ``soft_off()`` → soft-off (s), at the idle draw.

    Raises
    ------
    ValueError
        If any value is negative or not finite.
    """

    boot_s: float = 30.0
    boot_power_w: float | None = None
    off_w: float = 1.0
    suspend_w: float = 3.0
    wake_s: float = 5.0
    wake_power_w: float | None = None
    suspend_s: float = 2.0
    shutdown_s: float = 10.0

    def __post_init__(self) -> None:
        for name in self.__slots__:
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and value >= 0):
                raise ValueError(f"NodePower.{name} must be finite and >= 0, got {value}")


class OutletSlot:
    """Mutable state of one outlet and its node inside the simulator (guarded by its lock).

    Parameters
    ----------
    outlet : VirtualOutlet
        Its name, curve, :class:`NodePower` and MAC.
    mac : str
        The node's MAC, ``aa:bb:cc:dd:ee:ff``.
    """

    def __init__(self, outlet: VirtualOutlet, mac: str) -> None:
        self.outlet = outlet
        self.params: NodePower = outlet.power
        self.mac = mac
        self.utilisation = 0.0
        self.source: LoadSource | None = None
        self.energy_wh = 0.0
        self.relay_on = True
        self.node = "running"
        self._node_until_s: float | None = None  # end of a timed node state
        self._relay_on_at_s: float | None = None  # a PDU reboot turns the outlet on then
        self.peak_power_w = self.power_w

    @property
    def power_w(self) -> float:
        """What the node draws now (W)."""
        curve, p = self.outlet.curve, self.params
        if self.node == "running":
            return curve.power_w(self.utilisation)
        if self.node in ("booting", "waking"):
            boot_w = curve.power_w(0.5) if p.boot_power_w is None else p.boot_power_w
            waking_w = p.wake_power_w if self.node == "waking" else None
            return boot_w if waking_w is None else waking_w
        if self.node in ("suspending", "shutting_down"):
            return curve.power_w(0.0)
        return {"off": 0.0, "suspended": p.suspend_w, "soft_off": p.off_w}[self.node]

    def _enter(self, node: str, now_s: float, duration_s: float | None = None) -> None:
        self.node = node
        self._node_until_s = None if duration_s is None else now_s + duration_s
        self.peak_power_w = max(self.peak_power_w, self.power_w)

    @property
    def reboot_pending(self) -> bool:
        """True while a PDU reboot holds the outlet off (it will switch on by itself)."""
        return self._relay_on_at_s is not None

    def _next_event_s(self) -> float | None:
        times = [t for t in (self._node_until_s, self._relay_on_at_s) if t is not None]
        return min(times) if times else None

    def advance(self, from_s: float, to_s: float) -> None:
        """Integrate energy from ``from_s`` to ``to_s``, applying every transition due."""
        t = from_s
        while (event := self._next_event_s()) is not None and event <= to_s:
            self.energy_wh += self.power_w * max(0.0, event - t) / 3600.0
            t = max(t, event)
            if self._relay_on_at_s is not None and self._relay_on_at_s <= event:
                self._relay_on_at_s = None
                self._power_up(event)
            else:
                self._enter(_TIMED[self.node], event)
        self.energy_wh += self.power_w * max(0.0, to_s - t) / 3600.0

    def set_utilisation(self, utilisation: float) -> None:
        """The load the node runs (clipped to [0, 1]); it draws by it only while running."""
        self.utilisation = min(1.0, max(0.0, float(utilisation)))
        self.peak_power_w = max(self.peak_power_w, self.power_w)

    def _power_up(self, now_s: float) -> None:
        self.relay_on = True
        self._enter("booting", now_s, self.params.boot_s)

    def switch(self, action: str, now_s: float, reboot_off_s: float) -> None:
        """Outlet ``on``, ``off`` or ``reboot`` (off, then on ``reboot_off_s`` later)."""
        self._relay_on_at_s = None  # a new command cancels a reboot under way
        if action == "on":
            if not self.relay_on:
                self._power_up(now_s)
            return
        self.relay_on = False
        self._enter("off", now_s)
        if action == "reboot":
            self._relay_on_at_s = now_s + reboot_off_s

    def request(self, what: str, now_s: float) -> None:
        """The node's OS is asked to ``suspend`` or ``soft_off`` (systemctl suspend/poweroff).

        Raises
        ------
        SimulatorError
            If the node is not running (an OS that is off or asleep cannot be asked).
        """
        if self.node != "running":
            raise SimulatorError(f"{self.outlet.name} is {self.node}, not running: cannot {what}")
        if what == "suspend":
            self._enter("suspending", now_s, self.params.suspend_s)
        else:
            self._enter("shutting_down", now_s, self.params.shutdown_s)

    def wake(self, now_s: float) -> bool:
        """A magic packet for this node's MAC arrived; True if it woke (suspended or soft-off)."""
        if self.node == "suspended":
            self._enter("waking", now_s, self.params.wake_s)
            return True
        if self.node == "soft_off":
            self._enter("booting", now_s, self.params.boot_s)
            return True
        return False
