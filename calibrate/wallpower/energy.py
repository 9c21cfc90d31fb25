"""Energy of one node over a run's window: cumulative counter, or power integrated over time.

Pure numpy; times are seconds from the run's start, the window is ``[0, span_s]``.

- **Counter** (preferred where the PDU offers one): E = Σ positive increments of ``energy_wh``.
  A decrease is a counter wrap or reset: it is reported, and the interval across it is bridged
  by the trapezoid of the metered power at its two ends (or, without power there, by the new
  counter value, i.e. a restart from 0). A counter that advances fewer than
  :data:`COUNTER_MIN_STEPS` steps of its resolution is too coarse: power integration is used and
  the reason is reported.
- **Power**: the trapezoid rule between samples; before the first and after the last sample the
  nearest value is held to the window's edge.
- **Utilisation** (and modelled power, linear in it) is an *average* over the interval ending at
  its timestamp (the agent's /proc/stat delta): each value weighs its own interval, exactly.

A *gap* is an interval between samples (or between an edge of the window and the nearest
sample) longer than :data:`GAP_FACTOR` × the median interval between the valid samples of that
quantity, i.e. at least two consecutive samples missing. (The period is taken per quantity:
on a testbed the PDU-owner agent publishes every node's metered power while each node's own
agent publishes its utilisation, at other instants.) A gap is bridged by the straight line
between its end samples (never by zeros), listed, and charged a conservative sampling uncertainty of
``range(values) · length / √12``. Across an ordinary interval the value may have stepped at an
unknown instant: its uncertainty is ``|Δvalue| · Δt / √12`` (a step at a uniformly distributed
instant). Intervals are taken as independent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

GAP_FACTOR = 2.5
COUNTER_MIN_STEPS = 100
_SQRT12 = math.sqrt(12.0)


@dataclass(frozen=True, slots=True)
class Gap:
    """A stretch of the window without samples; seconds from the run's start."""

    start_s: float
    end_s: float

    @property
    def length_s(self) -> float:
        """Length (s)."""
        return self.end_s - self.start_s


@dataclass(frozen=True, slots=True)
class CounterEvent:
    """The energy counter went backwards (a wrap or a reset) between two readings.

    Attributes
    ----------
    at_s : float
        Time of the first reading after the drop (s from the run's start).
    before_wh, after_wh : float
        Counter values around the drop.
    bridged_wh : float
        Energy credited across the interval.
    how : {"power", "restart"}
        ``power``: trapezoid of metered power; ``restart``: the counter assumed restarted at 0.
    """

    at_s: float
    before_wh: float
    after_wh: float
    bridged_wh: float
    how: str


@dataclass(frozen=True, slots=True)
class Integral:
    """The time integral of a sampled quantity over the window.

    Attributes
    ----------
    value : float
        ∫ y dt in y-units × seconds (divide by 3600 for W → Wh).
    sampling_sd : float
        Standard uncertainty from sampling and gaps, same unit as ``value``.
    weights_s : ndarray, shape (M,)
        Trapezoid weight of each valid sample (s): ``value = Σ weights_s · y``.
    values : ndarray, shape (M,)
        The valid samples used.
    gaps : tuple of Gap
    """

    value: float
    sampling_sd: float
    weights_s: np.ndarray
    values: np.ndarray
    gaps: tuple[Gap, ...]


def sample_period_s(t_s: np.ndarray) -> float | None:
    """Median interval between successive samples (s), or ``None`` with fewer than 2 samples."""
    if t_s.size < 2:
        return None
    return float(np.median(np.diff(t_s)))


def find_gaps(t_s: np.ndarray, span_s: float, threshold_s: float) -> tuple[Gap, ...]:
    """Intervals longer than ``threshold_s`` between samples or between a sample and an edge.

    Parameters
    ----------
    t_s : ndarray, shape (M,)
        Sorted sample times inside ``[0, span_s]``.
    span_s : float
        Window length (s).
    threshold_s : float
        Longest interval that is not a gap (s).
    """
    bounds = np.concatenate(([0.0], t_s, [span_s]))
    lengths = np.diff(bounds)
    return tuple(
        Gap(float(bounds[i]), float(bounds[i + 1])) for i in np.flatnonzero(lengths > threshold_s)
    )


def integrate(
    t_s: np.ndarray, y: np.ndarray, span_s: float, *, averaged: bool = False
) -> Integral | None:
    """Integral of ``y`` over ``[0, span_s]``, ignoring NaN samples (see module doc).

    Parameters
    ----------
    t_s : ndarray, shape (K,)
        Sorted sample times (s from the window's start).
    y : ndarray, shape (K,)
        Values; NaN = missing (never read as 0).
    span_s : float
        Window length (s), > 0.
    averaged : bool
        False: ``y`` are instantaneous readings (metered power): trapezoid rule. True: each
        value is the mean over the interval that ends at its timestamp (utilisation from
        /proc/stat deltas, and anything linear in it): each value weighs its own interval,
        which is exact, so ordinary intervals carry no sampling uncertainty.

    Returns
    -------
    Integral or None
        ``None`` with fewer than two valid samples (no sample period).
    """
    valid = np.isfinite(y)
    tau, values = t_s[valid], y[valid]
    period_s = sample_period_s(tau)
    if period_s is None or period_s <= 0:
        return None
    bounds = np.concatenate(([0.0], tau, [span_s]))
    lengths = np.diff(bounds)  # edge, intervals..., edge
    threshold_s = GAP_FACTOR * period_s
    gap = lengths > threshold_s
    steps = np.abs(np.diff(np.concatenate(([values[0]], values, [values[-1]]))))
    steps[0], steps[-1] = steps[1], steps[-2]  # an edge inherits its neighbour's step
    if averaged:  # interval i ends at sample i; the last value is held to the end
        weights = lengths[:-1].copy()
        weights[-1] += lengths[-1]
        steps[:-1] = np.where(gap[:-1], steps[:-1], 0.0)
    else:
        weights = (lengths[:-1] + lengths[1:]) / 2
        weights[0] += lengths[0] / 2
        weights[-1] += lengths[-1] / 2
    spread = float(values.max() - values.min())
    unresolved = np.where(gap, spread, steps) * lengths / _SQRT12
    return Integral(
        value=float(weights @ values),
        sampling_sd=float(np.sqrt(np.sum(unresolved**2))),
        weights_s=weights,
        values=values,
        gaps=find_gaps(tau, span_s, threshold_s),
    )


@dataclass(frozen=True, slots=True)
class CounterIntegral:
    """Energy from the cumulative counter over the window.

    Attributes
    ----------
    energy_wh : float
    sampling_sd_wh : float
        Quantisation of the counter (each reading truncated to ``resolution_wh``: r/√6 per
        difference), the bridges across drops, and the window's edges.
    resolution_wh : float
        The counter's resolution as seen: the smallest positive increment or difference
        between distinct increments (an upper bound of the true resolution).
    events : tuple of CounterEvent
    gaps : tuple of Gap
        Gaps between counter readings (the counter keeps counting through them).
    """

    energy_wh: float
    sampling_sd_wh: float
    resolution_wh: float
    events: tuple[CounterEvent, ...]
    gaps: tuple[Gap, ...]


def counter_energy(
    t_s: np.ndarray, energy_wh: np.ndarray, power_w: np.ndarray, span_s: float
) -> CounterIntegral | str:
    """Energy from the counter, or the reason it cannot be used.

    Parameters
    ----------
    t_s : ndarray, shape (K,)
        Sorted sample times (s from the window's start).
    energy_wh : ndarray, shape (K,)
        Counter readings (Wh); NaN where absent.
    power_w : ndarray, shape (K,)
        Metered power (W) at the same times, NaN where absent (bridges drops).
    span_s : float
        Window length (s).

    Returns
    -------
    CounterIntegral or str
        The str says why the counter was not used (absent, did not advance, too coarse).
    """
    valid = np.isfinite(energy_wh)
    if valid.sum() < 2:
        return "no energy counter"
    tau, counter, power = t_s[valid], energy_wh[valid], power_w[valid]
    period_s = sample_period_s(tau)
    steps = np.diff(counter)
    tolerance = 1e-9 * max(1.0, float(np.abs(counter).max()))
    drops = np.flatnonzero(steps < -tolerance)
    increments = np.clip(steps, 0.0, None)
    increments[drops] = 0.0
    positive = increments[increments > tolerance]
    if positive.size == 0:
        return "the energy counter did not advance (too coarse for this run): power integrated"
    # readings are multiples of the resolution, so are increments and their differences
    spread = np.abs(np.diff(np.unique(np.round(positive / tolerance) * tolerance)))
    resolution = float(min(positive.min(), spread[spread > tolerance].min(initial=np.inf)))
    if increments.sum() < COUNTER_MIN_STEPS * resolution:
        return (
            f"the energy counter advanced only {increments.sum() / resolution:.0f} steps of "
            f"{resolution:g} Wh (< {COUNTER_MIN_STEPS}): too coarse, power integrated instead"
        )
    events, bridge_var = [], 0.0
    for i in drops:
        dt = float(tau[i + 1] - tau[i])
        if np.isfinite(power[i]) and np.isfinite(power[i + 1]):
            bridged, how = float(power[i] + power[i + 1]) / 2 * dt / 3600, "power"
            bridge_var += (abs(float(power[i + 1] - power[i])) * dt / _SQRT12 / 3600) ** 2
        else:
            bridged, how = float(counter[i + 1]), "restart"
        events.append(
            CounterEvent(float(tau[i + 1]), float(counter[i]), float(counter[i + 1]), bridged, how)
        )
    inside_wh = float(increments.sum()) + sum(e.bridged_wh for e in events)
    mean_power_w = inside_wh * 3600 / float(tau[-1] - tau[0])
    edges_s = float(tau[0]) + (span_s - float(tau[-1]))
    quantisation_var = (1 + len(drops)) * resolution**2 / 6
    edge_var = (mean_power_w * edges_s / _SQRT12 / 3600) ** 2
    return CounterIntegral(
        energy_wh=inside_wh + mean_power_w * edges_s / 3600,
        sampling_sd_wh=math.sqrt(quantisation_var + bridge_var + edge_var),
        resolution_wh=resolution,
        events=tuple(events),
        gaps=find_gaps(tau, span_s, GAP_FACTOR * (period_s or span_s)),
    )
