"""Virtual outlets: the node behind each outlet (name, power curve, power states, MAC) and
the ground truth the simulator reports for it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from eams.meter.simulator.node import NodePower


class PowerCurve(Protocol):
    """Anything with ``power_w(utilisation) -> float`` (W at a utilisation in [0, 1])."""

    def power_w(self, utilisation: float) -> float: ...


@dataclass(frozen=True, slots=True)
class VirtualOutlet:
    """One PDU outlet feeding one virtual node.

    Attributes
    ----------
    name : str
        The outlet's label (served as rPDU2OutletMeteredStatusName).
    curve : PowerCurve
        The node's hidden power curve, e.g. :class:`LinearCurve` or :class:`MeasuredCurve`.
    power : NodePower
        Its hidden power-state parameters (boot and wake times, P_off, P_suspend...).
    mac : str or None
        The node's MAC for Wake-on-LAN; ``None``: ``02:ea:a5:00:HH:LL`` from the outlet
        number (a locally administered address, IEEE 802 U/L bit set).
    """

    name: str
    curve: PowerCurve
    power: NodePower = field(default_factory=NodePower)
    mac: str | None = None


@dataclass(frozen=True, slots=True)
class OutletState:
    """The simulator's ground truth for one outlet (what the served MIB rounds).

    Attributes
    ----------
    utilisation : float
        The load set, in [0, 1] (the node draws by it only while running).
    power_w, current_a : float
        Active power (W) and RMS current (A) = power / (voltage × power factor).
    energy_wh : float
        Energy integrated since start (Wh).
    state : {"on", "off"}
        The outlet's switch state.
    node : str
        The node's power state: ``off``, ``booting``, ``running``, ``suspending``,
        ``suspended``, ``waking``, ``shutting_down`` or ``soft_off`` (see
        :mod:`eams.meter.simulator.node`).
    """

    utilisation: float
    power_w: float
    current_a: float
    energy_wh: float
    state: str
    node: str
