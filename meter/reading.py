"""The one record every meter driver returns: a :class:`Reading` of all outlets at one instant.

Units are SI and live in the field names. A value the device does not publish, or that failed
to read or decode, is ``None``: never 0. A 0 W reading below the vendor's metering floor is kept
as 0.0 but flagged by :attr:`OutletReading.below_floor`, so consumers can tell a trusted 0 W from
"too little current to measure".
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any


@dataclass(frozen=True, slots=True)
class OutletReading:
    """One outlet's values at the reading's instant.

    Attributes
    ----------
    outlet : int
        1-based outlet number as printed on the PDU.
    name : str or None
        The outlet's label on the device, if it has one.
    power_w, current_a, voltage_v : float or None
        Active power (W), RMS current (A), RMS voltage (V).
    energy_wh : float or None
        Cumulative active energy since the device's counter reset (Wh).
    below_floor : bool
        True when the reading is under the device's documented metering floor (for example
        APC outlets report 0 W below about 50 W / 0.3 A), so 0 W does not mean idle; never
        for an outlet switched off (an open relay draws nothing: its 0 W is exact).
    state : {"on", "off"} or None
        The outlet's switch state on a switched PDU; ``None`` when the PDU does not say (a
        metered-only model, or a state in transition).
    """

    outlet: int
    name: str | None = None
    power_w: float | None = None
    current_a: float | None = None
    voltage_v: float | None = None
    energy_wh: float | None = None
    below_floor: bool = False
    state: str | None = None


@dataclass(frozen=True, slots=True)
class Reading:
    """Every outlet of one meter, read in one call.

    Attributes
    ----------
    meter : str
        The meter URL with secrets removed (see :meth:`eams.meter.url.MeterUrl.redacted`).
    read_at : datetime
        When the values were measured (timezone-aware, UTC): the time the answer arrived.
        A naive or non-UTC datetime raises ``ValueError`` (``to_json`` writes it with ``Z``).
    driver : str
        Name of the driver (device family) that decoded the values.
    outlets : tuple of OutletReading
        In outlet order; empty for a device that only publishes a total.
    total_power_w : float or None
        The device (or inlet) total active power (W), where the device offers it.
    total_energy_wh : float or None
        The device (or inlet) cumulative energy (Wh), where offered.
    accuracy_pct : float or None
        The vendor's stated accuracy of power readings (±%), e.g. 3.0 for APC rPDU2.
    floor_w : float or None
        The vendor's metering floor per outlet (W); readings below it are flagged
        ``below_floor`` (unreliable).
    """

    meter: str
    read_at: datetime
    driver: str
    outlets: tuple[OutletReading, ...] = ()
    total_power_w: float | None = None
    total_energy_wh: float | None = None
    accuracy_pct: float | None = None
    floor_w: float | None = None

    def __post_init__(self) -> None:
        if self.read_at.utcoffset() != timedelta(0):  # None for a naive datetime
            raise ValueError(
                f"{self.meter}: read_at must be timezone-aware UTC, not {self.read_at!r}"
            )

    def outlet(self, number: int) -> OutletReading | None:
        """Return outlet ``number`` (1-based), or ``None`` if the device has no such outlet."""
        return next((o for o in self.outlets if o.outlet == number), None)

    def to_json(self) -> dict[str, Any]:
        """The ``eams meter read --json`` object (the CLI contract of issue 2).

        Keys: ``meter``, ``read_at`` (ISO-8601 UTC), ``driver``, ``total_power_w``,
        ``total_energy_wh``, ``accuracy_pct``, ``floor_w`` and ``outlets`` (each with
        ``outlet``, ``name``, ``power_w``, ``current_a``, ``voltage_v``, ``energy_wh``,
        ``below_floor``, ``state``: ``"on"``, ``"off"`` or ``null``). Missing values are
        ``null``.
        """
        return {
            "meter": self.meter,
            "read_at": self.read_at.isoformat().replace("+00:00", "Z"),
            "driver": self.driver,
            "total_power_w": self.total_power_w,
            "total_energy_wh": self.total_energy_wh,
            "accuracy_pct": self.accuracy_pct,
            "floor_w": self.floor_w,
            "outlets": [asdict(o) for o in self.outlets],
        }
