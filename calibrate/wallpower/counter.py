"""Energy from the outlet's cumulative counter, trusted only where the outlet could have drawn it.

Pure numpy; times are seconds from the run's start, the window is ``[0, span_s]``.

**Which increments are trusted.** Walking the readings, the step from the last trusted reading
``j`` to reading ``k`` is trusted when

    0  ≤  c_k − c_j  ≤  ceiling_w · (t_k − t_s) / 3600 + r

where ``t_s`` is when the counter first showed ``c_j`` (a counter that stood still and then
caught up is trusted), ``r`` the counter's resolution (readings are truncated to it) and
``ceiling_w`` the highest mean power the outlet can draw (:func:`counter_ceiling_w`: the
outlet's rating where known, else twice the most the node was metered or calibrated at). A
step that is not trusted is one of:

- **glitch**: 1 to :data:`MAX_GLITCH_READINGS` readings off the counter's course, after which
  it resumes where it was (116 300 → 0 → 116 300 Wh; or one reading too high, recognised when
  the counter then comes back below it): those readings are ignored and the counter's own
  increment across them counts.
- **wrap** (or reset): the counter went back and stays back. The interval is bridged by the
  trapezoid of the metered power at its two ends, or, without power there, by the new counter
  value (a restart from 0).
- **jump**: the counter leapt further than the ceiling allows and carries on from there. The
  leap is not counted; the interval is bridged by the metered power at its two ends, or without
  it by the counter's mean power over the trusted increments.

Each is reported as a :class:`CounterEvent`, whether or not the counter is then used. A counter
that advances fewer than :data:`COUNTER_MIN_STEPS` steps of its resolution over the trusted
increments is too coarse: power is integrated instead and the reason is reported.

Readings are compared with a tolerance of :data:`REL_TOLERANCE` of the counter's magnitude
(float64 carries about 16 digits): a 32-bit counter in tenths of kWh (APC
rPDU2OutletMeteredStatusEnergy) reaches 2³²·100 Wh = 4.29·10¹¹ Wh, whose 100 Wh steps are
2.3·10⁻¹⁰ of it, so any coarser tolerance would swallow them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from eams.calibrate.wallpower.energy import GAP_FACTOR, Gap, find_gaps, sample_period_s

COUNTER_MIN_STEPS = 100
MAX_GLITCH_READINGS = 3
CEILING_FACTOR = 2.0
"""Without the outlet's rating, the ceiling is this times the most the node drew (metered or
calibrated full load): a node does not draw twice its full-load power over a sample interval,
and a glitch is orders of magnitude beyond (the issue's implied 7 MW on a ~100 W outlet)."""
REL_TOLERANCE = 1e-12
_SQRT12 = math.sqrt(12.0)


@dataclass(frozen=True, slots=True)
class CounterEvent:
    """Counter readings that were not trusted as they stand (see the module doc).

    Attributes
    ----------
    kind : {"glitch", "wrap", "jump"}
    at_s : float
        Time of the first reading not trusted (s from the run's start).
    before_wh : float
        The last trusted reading before it (Wh).
    after_wh : float
        The first reading not trusted (Wh).
    bridged_wh : float
        Energy credited from ``before_wh``'s reading to the next trusted one (Wh).
    how : {"counter", "power", "restart", "mean"}
        ``counter``: the counter's own increment across a glitch; ``power``: trapezoid of the
        metered power; ``restart``: the counter assumed restarted at 0; ``mean``: the counter's
        mean power over its trusted increments.
    readings : int
        Readings ignored (a glitch); 0 otherwise.
    implied_w : float or None
        Mean power the untrusted step would mean (W); ``None`` when it goes back.
    ceiling_w : float or None
        The most the outlet could draw (W), ``None`` when nothing bounds it.
    """

    kind: str
    at_s: float
    before_wh: float
    after_wh: float
    bridged_wh: float
    how: str
    readings: int = 0
    implied_w: float | None = None
    ceiling_w: float | None = None


@dataclass(frozen=True, slots=True)
class CounterIntegral:
    """Energy from the cumulative counter over the window.

    Attributes
    ----------
    energy_wh : float
    sampling_sd_wh : float
        Quantisation of the counter (each reading truncated to ``resolution_wh``: r/√6 per
        difference), the bridges across wraps and jumps, and the window's edges.
    resolution_wh : float
        The counter's resolution as seen: the smallest trusted increment or difference
        between distinct trusted increments (an upper bound of the true resolution).
    events : tuple of CounterEvent
    gaps : tuple of Gap
        Gaps between trusted counter readings (the counter keeps counting through them).
    """

    energy_wh: float
    sampling_sd_wh: float
    resolution_wh: float
    events: tuple[CounterEvent, ...]
    gaps: tuple[Gap, ...]


@dataclass(frozen=True, slots=True)
class CounterFallback:
    """The counter is not used; power must be integrated.

    Attributes
    ----------
    reason : str or None
        Why (did not advance, too coarse); ``None`` when the samples carry no counter.
    events : tuple of CounterEvent
        What the counter did all the same (a wrap of a coarse counter is still reported).
    """

    reason: str | None
    events: tuple[CounterEvent, ...] = ()


def counter_ceiling_w(
    power_w: np.ndarray, *, p_max_w: float | None = None, rating_w: float | None = None
) -> float | None:
    """The most an outlet can draw on average over an interval (W), to bound counter steps.

    Parameters
    ----------
    power_w : ndarray, shape (K,)
        The node's metered power in the window (W), NaN where absent.
    p_max_w : float, optional
        The node's calibrated full-load power (W).
    rating_w : float, optional
        The outlet's power rating (W), e.g. APC rPDU2OutletMeteredPropertiesPowerRating
        (2300 W for a 10 A C13 outlet at 230 V).

    Returns
    -------
    float or None
        The smaller of the rating and :data:`CEILING_FACTOR` × the most the node drew (the
        highest metered power or ``p_max_w``); ``None`` when neither is known.
    """
    drawn = [float(np.nanmax(power_w))] if np.isfinite(power_w).any() else []
    drawn += [] if p_max_w is None else [p_max_w]
    bounds = [CEILING_FACTOR * max(drawn)] if drawn else []
    bounds += [] if rating_w is None else [rating_w]
    return min(bounds) if bounds else None


def _resolution(increments: np.ndarray, tolerance: float) -> float | None:
    """Smallest positive increment or difference between distinct ones (readings are
    multiples of the resolution, so are their increments and the increments' differences)."""
    positive = increments[increments > tolerance]
    if positive.size == 0:
        return None
    spread = np.abs(np.diff(np.unique(np.round(positive / tolerance) * tolerance)))
    return float(min(positive.min(), spread[spread > tolerance].min(initial=np.inf)))


@dataclass(slots=True)
class _Walk:
    """The trusted readings and how each is reached from the one before."""

    kept: list[int]
    since_s: list[float]  # when the counter first showed each kept reading's value
    link: list[str]  # "ok" | "wrap" | "jump", from the previous kept reading (first: "ok")
    glitches: list[tuple[int, int, int]]  # (last trusted, first ignored, readings ignored)


def _walk(
    tau: np.ndarray, counter: np.ndarray, ceiling_w: float | None, slack_wh: float, tol: float
) -> _Walk:
    """Classify every step of the counter (see the module doc)."""

    def fits(j: int, k: int, since_s: float) -> bool:
        step = counter[k] - counter[j]
        if step < -tol:
            return False
        return ceiling_w is None or step <= ceiling_w * (tau[k] - since_s) / 3600 + slack_wh + tol

    walk = _Walk([0], [float(tau[0])], ["ok"], [])

    def keep(k: int, link: str) -> None:
        advanced = link != "ok" or counter[k] > counter[walk.kept[-1]] + tol
        walk.since_s.append(float(tau[k]) if advanced else walk.since_s[-1])
        walk.kept.append(k)
        walk.link.append(link)

    k = 1
    while k < counter.size:
        j, since = walk.kept[-1], walk.since_s[-1]
        if fits(j, k, since):
            keep(k, "ok")
            k += 1
            continue
        ahead = range(1, min(MAX_GLITCH_READINGS, counter.size - 1 - k) + 1)
        m = next((m for m in ahead if fits(j, k + m, since)), None)
        if m is not None:  # k .. k+m-1 off course, then back
            walk.glitches.append((j, k, m))
            keep(k + m, "ok")
            k += m + 1
            continue
        if counter[k] < counter[j] - tol and len(walk.kept) > 1 and walk.link[-1] == "ok":
            i = walk.kept[-2]
            if fits(i, k, walk.since_s[-2]):  # j itself was too high (nothing bounded it)
                for field in (walk.kept, walk.since_s, walk.link):
                    field.pop()
                walk.glitches.append((i, j, 1))
                continue
        keep(k, "wrap" if counter[k] < counter[j] - tol else "jump")
        k += 1
    return walk


def _implied_w(tau: np.ndarray, counter: np.ndarray, j: int, k: int) -> float | None:
    """Mean power (W) the step from reading j to k would mean; ``None`` when it goes back."""
    step_wh = float(counter[k] - counter[j])
    return step_wh * 3600 / float(tau[k] - tau[j]) if step_wh > 0 else None


def counter_energy(
    t_s: np.ndarray,
    energy_wh: np.ndarray,
    power_w: np.ndarray,
    span_s: float,
    *,
    ceiling_w: float | None,
) -> CounterIntegral | CounterFallback:
    """Energy from the counter, or why it cannot be used (see the module doc).

    Parameters
    ----------
    t_s : ndarray, shape (K,)
        Sorted sample times (s from the window's start).
    energy_wh : ndarray, shape (K,)
        Counter readings (Wh); NaN where absent.
    power_w : ndarray, shape (K,)
        Metered power (W) at the same times, NaN where absent (bridges wraps and jumps).
    span_s : float
        Window length (s).
    ceiling_w : float or None
        The most the outlet can draw (:func:`counter_ceiling_w`); ``None``: increments are
        only checked for going backwards.

    Returns
    -------
    CounterIntegral or CounterFallback
    """
    valid = np.isfinite(energy_wh)
    if valid.sum() < 2:
        return CounterFallback(None)
    tau, counter, power = t_s[valid], energy_wh[valid], power_w[valid]
    tol = REL_TOLERANCE * max(1.0, float(np.abs(counter).max()))
    walk = _walk(tau, counter, ceiling_w, _resolution(np.diff(counter), tol) or 0.0, tol)
    kept = np.array(walk.kept)
    steps = np.diff(counter[kept])
    trusted = np.array(walk.link[1:]) == "ok"
    increments = np.where(trusted, np.clip(steps, 0.0, None), 0.0)
    mean_trusted_w = increments.sum() * 3600 / max(float(np.diff(tau[kept])[trusted].sum()), 1e-9)
    events, bridge_var = [], 0.0
    for j, k, m in walk.glitches:
        resumed = next(i for i in walk.kept if i > j)  # the next trusted reading
        events.append(
            CounterEvent(
                kind="glitch",
                at_s=float(tau[k]),
                before_wh=float(counter[j]),
                after_wh=float(counter[k]),
                bridged_wh=float(counter[resumed] - counter[j]),
                how="counter",
                readings=m,
                implied_w=_implied_w(tau, counter, j, k),
                ceiling_w=ceiling_w,
            )
        )
    for i in np.flatnonzero(~trusted):
        j, k, kind = kept[i], kept[i + 1], walk.link[i + 1]
        dt = float(tau[k] - tau[j])
        if np.isfinite(power[j]) and np.isfinite(power[k]):
            bridged, how = float(power[j] + power[k]) / 2 * dt / 3600, "power"
            bridge_var += (abs(float(power[k] - power[j])) * dt / _SQRT12 / 3600) ** 2
        elif kind == "wrap":
            bridged, how = float(counter[k]), "restart"
        else:
            bridged, how = mean_trusted_w * dt / 3600, "mean"
        events.append(
            CounterEvent(
                kind=kind,
                at_s=float(tau[k]),
                before_wh=float(counter[j]),
                after_wh=float(counter[k]),
                bridged_wh=bridged,
                how=how,
                implied_w=_implied_w(tau, counter, j, k),
                ceiling_w=ceiling_w,
            )
        )
    found = tuple(sorted(events, key=lambda e: e.at_s))
    resolution = _resolution(increments, tol)
    if resolution is None:
        return CounterFallback(
            "the PDU's energy counter (Wh) did not change during this run (its steps are too "
            "coarse for so short a run), so energy is the metered power integrated over time",
            found,
        )
    if increments.sum() < COUNTER_MIN_STEPS * resolution:
        return CounterFallback(
            f"the energy counter advanced only {increments.sum() / resolution:.0f} steps of "
            f"{resolution:g} Wh (< {COUNTER_MIN_STEPS}): too coarse for this run, so energy is "
            "the metered power integrated over time",
            found,
        )
    n_bridges = int((~trusted).sum())
    inside_wh = float(increments.sum()) + sum(e.bridged_wh for e in found if e.kind != "glitch")
    mean_power_w = inside_wh * 3600 / float(tau[-1] - tau[0])
    edges_s = float(tau[0]) + (span_s - float(tau[-1]))
    quantisation_var = (1 + n_bridges) * resolution**2 / 6
    edge_var = (mean_power_w * edges_s / _SQRT12 / 3600) ** 2
    period_s = sample_period_s(tau[kept])
    return CounterIntegral(
        energy_wh=inside_wh + mean_power_w * edges_s / 3600,
        sampling_sd_wh=math.sqrt(quantisation_var + bridge_var + edge_var),
        resolution_wh=resolution,
        events=found,
        gaps=find_gaps(tau[kept], span_s, GAP_FACTOR * (period_s or span_s)),
    )
