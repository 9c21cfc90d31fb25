"""An :class:`~.record.Estimate` from repeated measurements and the instrument's resolution.

The interval is mean ± (t₀.₉₇₅,ₙ₋₁ · s / √n + r): Student's t over the repeats' spread, plus
the largest half-width ``r`` one repeat can be off by whatever the repeats say (meter
rounding, time between polls, a step between two readings). A repeat within ±r of the truth
keeps the mean within ±r, so the interval holds the truth even when the repeats agree exactly
(a simulator, a 1 W meter on a steady draw). GUM (JCGM 100:2008) §4.2–4.3, with r treated as
a bound, not a standard uncertainty: the conservative side.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from eams.calibrate.powerstates.record import MIN_REPEATS, Estimate


def estimate(values: Sequence[float], resolution: float) -> Estimate:
    """The :class:`Estimate` of ``values`` (one per repeat) with instrument half-width
    ``resolution`` (same unit, ≥ 0).

    Raises
    ------
    ValueError
        Fewer than :data:`~.record.MIN_REPEATS` values, or a value that is not finite.
    """
    from scipy.stats import t as student_t  # scipy only when measuring, not when loading

    values = [float(v) for v in values]
    if len(values) < MIN_REPEATS or not all(math.isfinite(v) for v in values):
        raise ValueError(f"need at least {MIN_REPEATS} finite repeats, got {values}")
    n = len(values)
    mean = sum(values) / n
    spread = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = float(student_t.ppf(0.975, n - 1)) * spread / math.sqrt(n) + resolution
    return Estimate(
        value=mean,
        ci95=(mean - half, mean + half),
        spread=spread,
        resolution=resolution,
        repeats=values,
    )
