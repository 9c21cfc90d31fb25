"""``eams meter check``: does the sum of outlet power agree with the device total?

The allowed gap is the device's stated accuracy applied to both sides (each outlet reading and
the total may each be off by ``accuracy_pct`` of their value), plus, per outlet reported under
the metering floor, up to the floor itself (such an outlet may draw up to ``floor_w`` yet read
0 W). With no stated accuracy, 5 % is assumed and the summary says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from eams.meter.reading import Reading

#: The band used when the vendor states no accuracy (%).
DEFAULT_ACCURACY_PCT = 5.0


@dataclass(frozen=True)
class OutletSumCheck:
    """One reading's sum of outlet power checked against the device total.

    Attributes
    ----------
    meter : str
    outlet_sum_w, total_w : float or None
        Sum of outlet active power, and the device/inlet total (W).
    gap_w : float or None
        ``outlet_sum_w - total_w`` (W).
    allowed_w : float or None
        The largest gap the stated accuracy and floor explain (W).
    accuracy_pct : float
        The accuracy used (±%); ``assumed`` says whether it was the default.
    ok : bool
        Both values present and ``|gap_w| <= allowed_w``.
    reason : str
        Why not, when a comparison was impossible.
    under_floor : int
        Outlets reported under the metering floor (each widens the band by ``floor_w``).
    """

    meter: str
    outlet_sum_w: float | None
    total_w: float | None
    gap_w: float | None
    allowed_w: float | None
    accuracy_pct: float
    assumed: bool
    ok: bool
    reason: str = ""
    under_floor: int = 0

    def summary(self) -> str:
        """One line for the terminal."""
        if self.gap_w is None or self.allowed_w is None:
            return f"{self.meter}: cannot check: {self.reason}"
        verdict = "OK" if self.ok else "MISMATCH"
        rel = 100.0 * self.gap_w / self.total_w if self.total_w else float("nan")
        basis = "assumed" if self.assumed else "stated"
        return (
            f"{self.meter}: {verdict}: outlets sum {self.outlet_sum_w:.1f} W, total "
            f"{self.total_w:.1f} W, gap {self.gap_w:+.1f} W ({rel:+.1f} %), allowed "
            f"±{self.allowed_w:.1f} W (±{self.accuracy_pct:g} % {basis}"
            f"{f', + floor for {self.under_floor} outlets under it' if self.under_floor else ''})"
        )


def check_reading(reading: Reading) -> OutletSumCheck:
    """Compare Σ outlet ``power_w`` with ``total_power_w`` (see the module docstring).

    Parameters
    ----------
    reading : Reading

    Returns
    -------
    OutletSumCheck
        ``ok`` False with a ``reason`` when the device lacks outlet power or a total, or
        some outlet's power failed to read (a partial sum is no evidence of a mismatch).
    """
    accuracy = reading.accuracy_pct
    assumed = accuracy is None
    pct = DEFAULT_ACCURACY_PCT if accuracy is None else accuracy
    powers = [o.power_w for o in reading.outlets if o.power_w is not None]
    missing = [str(o.outlet) for o in reading.outlets if o.power_w is None]
    total = reading.total_power_w
    reason = ""
    if not powers:
        reason = "the device publishes no per-outlet power"
    elif missing:  # a partial sum would show a false mismatch
        reason = f"no power value for outlet(s) {', '.join(missing)}"
    elif total is None:
        reason = "the device publishes no total/inlet power"
    if reason:
        return OutletSumCheck(reading.meter, None, total, None, None, pct, assumed, False, reason)
    assert total is not None  # no reason left: every outlet and the total have a value
    outlet_sum = sum(powers)
    floor = reading.floor_w or 0.0
    under = sum(1 for o in reading.outlets if o.below_floor)
    allowed = pct / 100.0 * (outlet_sum + total) + floor * under
    gap = outlet_sum - total
    return OutletSumCheck(
        reading.meter,
        outlet_sum,
        total,
        gap,
        allowed,
        pct,
        assumed,
        abs(gap) <= allowed,
        under_floor=under if floor else 0,
    )
