"""The virtual PDU's ground truth: outlets, their nodes' loads and power states, energy.

:class:`VirtualPdu` is everything the simulator knows, with no SNMP in it; the agent
(:class:`~eams.meter.simulator.agent.PduSimulator`) serves it. Every method takes the lock and
first integrates energy up to now, so counters are exact at any call.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

from eams.meter.errors import BadMacAddress
from eams.meter.simulator.errors import SimulatorError
from eams.meter.simulator.load import LoadSource
from eams.meter.simulator.node import OutletSlot
from eams.meter.simulator.outlets import OutletState, VirtualOutlet
from eams.meter.wol import format_mac, parse_mac

SWITCH_ACTIONS = ("on", "off", "reboot")
"""What the PDU can do to an outlet."""


def default_mac(outlet: int) -> str:
    """``02:ea:a5:00:HH:LL``: a locally administered unicast MAC (IEEE 802, U/L bit set) for
    the node on outlet ``outlet``."""
    return f"02:ea:a5:00:{outlet >> 8 & 0xFF:02x}:{outlet & 0xFF:02x}"


class VirtualPdu:
    """Outlets feeding virtual nodes, their loads, power states and energy counters.

    Parameters
    ----------
    outlets : sequence of VirtualOutlet
        Outlet 1 is ``outlets[0]``. Every node starts running, its outlet on.
    voltage_v : float
        Outlet RMS voltage (V), for current = power / (voltage × power factor).
    power_factor : float
        Load power factor in (0, 1].
    reboot_off_s : float
        How long a reboot from the PDU holds the outlet off (s; APC's
        rPDU2OutletSwitchedConfigRebootDuration, 5 s by default there).
    clock : callable
        Monotonic seconds; energy integrates over it and timed states end by it.

    Raises
    ------
    SimulatorError
        No outlet, a voltage, power factor or reboot time out of range, or a malformed or
        repeated MAC.
    """

    def __init__(
        self,
        outlets: Sequence[VirtualOutlet],
        *,
        voltage_v: float = 230.0,
        power_factor: float = 0.95,
        reboot_off_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not outlets:
            raise SimulatorError("PduSimulator needs at least one outlet")
        if not (voltage_v > 0 and 0 < power_factor <= 1 and reboot_off_s >= 0):
            raise SimulatorError(
                f"bad voltage_v={voltage_v}, power_factor={power_factor} or "
                f"reboot_off_s={reboot_off_s}"
            )
        macs = []
        for n, outlet in enumerate(outlets, start=1):
            try:
                macs.append(format_mac(parse_mac(outlet.mac or default_mac(n))))
            except BadMacAddress as exc:
                raise SimulatorError(f"outlet {n} ({outlet.name}): {exc}") from None
        if len(set(macs)) != len(macs):
            raise SimulatorError(f"two outlets have the same MAC: {macs}")
        self._outlets = [OutletSlot(o, mac) for o, mac in zip(outlets, macs, strict=True)]
        self._voltage_v, self._power_factor = voltage_v, power_factor
        self._reboot_off_s = reboot_off_s
        self._clock = clock
        self._lock = threading.Lock()
        self._t0_s = self._t_s = clock()

    def _changed(self) -> None:
        """Called (under the lock) after every change; the agent drops its snapshot."""

    def _slot(self, outlet: int) -> OutletSlot:
        if not 1 <= outlet <= len(self._outlets):
            raise SimulatorError(f"no outlet {outlet}: this PDU has 1..{len(self._outlets)}")
        return self._outlets[outlet - 1]

    def _advance(self) -> float:
        """Integrate energy and apply due transitions up to now, then poll load sources (caller
        holds the lock); returns now."""
        now = self._clock()
        for slot in self._outlets:
            slot.advance(self._t_s, now)
            if slot.source is not None:
                utilisation = slot.source()
                if utilisation is not None:
                    slot.set_utilisation(utilisation)
        self._t_s = max(self._t_s, now)
        return now

    def set_load(self, outlet: int, utilisation: float) -> None:
        """Set outlet ``outlet``'s (1-based) load to ``utilisation`` (clipped to [0, 1]).

        Removes a load source set earlier on that outlet. The node draws by its load only
        while running.

        Raises
        ------
        SimulatorError
            If the outlet does not exist.
        """
        slot = self._slot(outlet)
        with self._lock:
            self._advance()
            slot.source = None
            slot.set_utilisation(utilisation)
            self._changed()

    def set_load_source(self, outlet: int, source: LoadSource | None) -> None:
        """Drive outlet ``outlet`` (1-based) from ``source()`` (polled at each request).

        ``source`` returns utilisation in [0, 1] or ``None`` (keep the previous load), e.g.
        :class:`HostCpuLoad`; ``None`` detaches it.
        """
        slot = self._slot(outlet)
        with self._lock:
            self._advance()
            slot.source = source
            self._changed()

    def state(self, outlet: int) -> OutletState:
        """Ground truth of outlet ``outlet`` (1-based) now: power, energy, outlet switch state
        and the node's power state."""
        slot = self._slot(outlet)
        with self._lock:
            self._advance()
            return OutletState(
                utilisation=slot.utilisation,
                power_w=slot.power_w,
                current_a=slot.power_w / (self._voltage_v * self._power_factor),
                energy_wh=slot.energy_wh,
                state="on" if slot.relay_on else "off",
                node=slot.node,
            )

    def mac(self, outlet: int) -> str:
        """The MAC (``aa:bb:cc:dd:ee:ff``) of the node on outlet ``outlet``."""
        return self._slot(outlet).mac

    def switch_outlet(self, outlet: int, action: str) -> None:
        """Switch outlet ``outlet`` ``on``, ``off`` or ``reboot`` it, as the PDU's relay does.

        Off: the node loses power (0 W, its counter stops). On: it boots (``boot_s`` at the
        boot power) and then follows its load. Reboot: off, then on ``reboot_off_s`` later.

        Raises
        ------
        SimulatorError
            Unknown outlet or action.
        """
        if action not in SWITCH_ACTIONS:
            raise SimulatorError(f"action {action!r} is not one of {', '.join(SWITCH_ACTIONS)}")
        slot = self._slot(outlet)
        with self._lock:
            now = self._advance()
            slot.switch(action, now, self._reboot_off_s)
            self._changed()

    def suspend(self, outlet: int) -> None:
        """The node's OS suspends to RAM (``systemctl suspend``): after ``suspend_s`` it draws
        P_suspend until a magic packet for its MAC wakes it.

        Raises
        ------
        SimulatorError
            Unknown outlet, or the node is not running.
        """
        self._request(outlet, "suspend")

    def soft_off(self, outlet: int) -> None:
        """The node's OS powers off (``systemctl poweroff``), the outlet staying on: after
        ``shutdown_s`` it draws P_off; a magic packet boots it.

        Raises
        ------
        SimulatorError
            Unknown outlet, or the node is not running.
        """
        self._request(outlet, "soft_off")

    def _request(self, outlet: int, what: str) -> None:
        slot = self._slot(outlet)
        with self._lock:
            now = self._advance()
            slot.request(what, now)
            self._changed()

    def wake(self, mac: str) -> list[int]:
        """A magic packet for ``mac`` reached the nodes: the outlets whose node woke (from
        suspend, or booted from soft-off); others ignore it.

        Raises
        ------
        BadMacAddress
            If ``mac`` does not parse.
        """
        mac = format_mac(parse_mac(mac))
        with self._lock:
            now = self._advance()
            slots = enumerate(self._outlets, start=1)
            woken = [n for n, slot in slots if slot.mac == mac and slot.wake(now)]
            self._changed()
            return woken

    @property
    def voltage_v(self) -> float:
        """Outlet RMS voltage (V) the simulator serves."""
        return self._voltage_v

    @property
    def outlet_count(self) -> int:
        """Number of outlets."""
        return len(self._outlets)
