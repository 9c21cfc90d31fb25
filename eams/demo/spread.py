"""What a demo figure's ± means: one run's measurement, or the spread of repeated runs.

One live run of a band gives a saving whose ± is that run's measurement alone (meter accuracy,
readings, sampling; ±2σ). The runs of one band differ by more than that: which node empties
first inside a ~25 s arrival window decides whether the power manager sleeps one node more,
and the live loop's few milliseconds of jitter decide which node that is (issue 35: six
demos' single-run savings 13.4–17.3 % at ±1.1–1.5). A figure over ``n ≥ 2`` repeats of the
band is their mean with its 95 % Student-t interval, ``t(0.975, n − 1) · s / √n``: the
interval of the mean, which allows for the run-to-run spread and, since every repeat is
metered afresh, the measurement's too (it is not a range every run falls in). ``s`` is taken
as at least the runs' own measurement 1σ: three repeats that agree by chance (the first full
demo of 7 Dec: eams+pm 12.8, 12.7, 12.8 %, s = 0.06 points against a measurement 1σ of 0.6)
would otherwise give ±0.2 points where the floor gives ±1.4.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from eams.calibrate.wallpower.plots import K_SIGMA
from eams.scheduler.bench.summary import seed_interval


def over_repeats(values: Sequence[float], floor_sd: float = 0.0) -> tuple[float, float]:
    """Mean of ``values`` and the half-width of its 95 % Student-t interval.

    Parameters
    ----------
    values : sequence of float, length n ≥ 2
        One figure per repeat (any unit; the result is in the same unit).
    floor_sd : float, ≥ 0
        The least standard deviation the spread between repeats is taken to have: each run's
        own measurement 1σ (the repeats cannot agree better than their meter can tell).

    Returns
    -------
    (float, float)
        Mean, and ``t(0.975, n − 1) · max(s, floor_sd) / √n`` with ``s`` the sample standard
        deviation.

    Raises
    ------
    ValueError
        Fewer than two values, or a value that is not finite.
    """
    data = np.asarray(values, dtype=float)
    if data.size < 2:
        raise ValueError(f"an interval over repeats needs at least 2 values, got {data.size}")
    if not np.all(np.isfinite(data)):
        raise ValueError(f"a figure over repeats is not finite: {data.tolist()}")
    mean, half = seed_interval(data.tolist(), floor_sd)
    assert half is not None  # two values or more
    return mean, half


def over_runs(values: Sequence[float], sds: Sequence[float]) -> tuple[float, float]:
    """A figure and its ± from its value in each repeat and that value's measurement 1σ.

    Parameters
    ----------
    values, sds : sequence of float, one per repeat (n ≥ 1), in one unit

    Returns
    -------
    (float, float)
        One repeat: its value ± :data:`K_SIGMA` σ; more: :func:`over_repeats` with the spread
        taken as at least the root mean square of ``sds``.

    Raises
    ------
    ValueError
        No value, ``values`` and ``sds`` of different lengths, or a value that is not finite.
    """
    if not values or len(values) != len(sds):
        raise ValueError(f"{len(values)} values against {len(sds)} standard deviations")
    if len(values) == 1:
        return float(values[0]), K_SIGMA * float(sds[0])
    rms = math.sqrt(sum(sd * sd for sd in sds) / len(sds))
    return over_repeats(values, rms)


def basis_text(repeats: int) -> str:
    """What the ± of the answer's figures is, in words (``± at 2σ`` for one run)."""
    if repeats == 1:
        return "± at 2σ, one run's measurement"
    return f"mean of {repeats} repeats, ± its 95 % interval"
