"""Integrals of sampled quantities over a run's window: metered power, utilisation, gaps.

Pure numpy; times are seconds from the run's start, the window is ``[0, span_s]``. (The outlet's
cumulative energy counter, preferred where the PDU offers one, is in ``counter.py``.)

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
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

GAP_FACTOR = 2.5
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


GapEstimate = Callable[[float, float, float, float], tuple[float, float]]
"""``(start_s, end_s, value_before, value_after) → (integral over the gap, its standard
uncertainty)``: what
is known about an inner gap of an averaged quantity besides its end samples (in ``nodes``: the
meter's readings inside a utilisation gap)."""


def integrate(
    t_s: np.ndarray,
    y: np.ndarray,
    span_s: float,
    *,
    averaged: bool = False,
    gap_estimate: GapEstimate | None = None,
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
    gap_estimate : callable, optional
        Averaged only: replaces the bridge (the next sample's mean) and the charge
        (``range · length / √12``) of a gap between two samples by its answer
        (:data:`GapEstimate`) where that answer's uncertainty is the smaller; edge gaps keep
        the held value and the charge.

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
    value = float(weights @ values)
    if averaged and gap_estimate is not None:
        for k in np.flatnonzero(gap[1:-1]) + 1:  # interval k: from sample k − 1 to sample k
            estimate, sd = gap_estimate(
                float(tau[k - 1]), float(tau[k]), float(values[k - 1]), float(values[k])
            )
            if sd < unresolved[k]:  # the tighter of two bounds, each with its own bridge
                value += estimate - float(lengths[k] * values[k])
                unresolved[k] = sd
    return Integral(
        value=value,
        sampling_sd=float(np.sqrt(np.sum(unresolved**2))),
        weights_s=weights,
        values=values,
        gaps=find_gaps(tau, span_s, threshold_s),
    )
