"""Virtual outlets: the node behind each outlet (name, power curve) and its live state."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from eams.meter.simulator.load import LoadSource


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
    """

    name: str
    curve: PowerCurve


@dataclass(frozen=True, slots=True)
class OutletState:
    """The simulator's ground truth for one outlet (what the served MIB rounds).

    Attributes
    ----------
    utilisation : float
        Load fraction in [0, 1].
    power_w, current_a : float
        Active power (W) and RMS current (A) = power / (voltage × power factor).
    energy_wh : float
        Energy integrated since start (Wh).
    """

    utilisation: float
    power_w: float
    current_a: float
    energy_wh: float


class OutletSlot:
    """Mutable state of one outlet inside :class:`PduSimulator` (guarded by its lock)."""

    __slots__ = ("energy_wh", "outlet", "peak_power_w", "power_w", "source", "utilisation")

    def __init__(self, outlet: VirtualOutlet) -> None:
        self.outlet = outlet
        self.utilisation = 0.0
        self.source: LoadSource | None = None
        self.power_w = outlet.curve.power_w(0.0)
        self.peak_power_w = self.power_w
        self.energy_wh = 0.0

    def set_utilisation(self, utilisation: float) -> None:
        self.utilisation = min(1.0, max(0.0, float(utilisation)))
        self.power_w = self.outlet.curve.power_w(self.utilisation)
        self.peak_power_w = max(self.peak_power_w, self.power_w)
