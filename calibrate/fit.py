"""Fit the study's §5.1 line to one node's points: P(u) = P_idle + (P_max − P_idle)·u.

Pure numpy/scipy, no I/O (STYLE.md §8). :func:`fit_linear` checks the points (naming the bad
one), fits them with the vectorised robust core :func:`eams.calibrate.robust.fit_linear_batch`
(whose docstring gives the method and its sources), and adds the per-level model error, the
linearity verdict in words, and which idle power applies for waking an empty node. The result
types are declared once, in :mod:`eams.calibrate.fitresult`, and shared with the calibration file.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from eams.calibrate.errors import FitError
from eams.calibrate.fitresult import FitResult, LevelFit
from eams.calibrate.idlestep import STEP_ALPHA, STEP_TOLERANCE_PCT
from eams.calibrate.robust import (
    CURVATURE_ALPHA,
    CURVATURE_TOLERANCE_PCT,
    METHOD,
    BatchFit,
    fit_linear_batch,
)

__all__ = [
    "BatchFit",
    "FitResult",
    "LevelFit",
    "confidence_band_w",
    "fit_linear",
    "fit_linear_batch",
]

MIN_LEVELS = 3
MAX_POWER_W = 50_000.0
"""No one node's outlet delivers more: a three-phase 400 V, 63 A feed (the largest IEC 60309
industrial plug) carries √3·400·63 ≈ 43.6 kW. A reading above it is a meter or transcription
error (a value in mW, say), refused naming its row: fitted, it would get weight 0 yet still
swamp R², the RMSE and the idle-step test."""
Array = NDArray[np.float64]


def confidence_band_w(
    utilisation: ArrayLike,
    p_idle_w: float,
    p_max_w: float,
    covariance_w2: ArrayLike,
    n_points: int,
    confidence: float = 0.95,
) -> tuple[Array, Array]:
    """Pointwise confidence band of the line: P(u) ± t·sqrt(xᵀ C x), x = (1 − u, u).

    Parameters
    ----------
    utilisation : (k,) array_like, fraction
    p_idle_w, p_max_w : float, W
    covariance_w2 : (2, 2) array_like, W²
        Covariance of (P_idle, P_max), as fitted.
    n_points : int
        Points of the fit (Student's t with n − 2 degrees of freedom).
    confidence : float

    Returns
    -------
    (lo, hi) : two (k,) float arrays, W
    """
    u = np.asarray(utilisation, dtype=np.float64)
    x = np.stack([1 - u, u], axis=-1)
    var = np.einsum("ki,ij,kj->k", x, np.asarray(covariance_w2, dtype=np.float64), x)
    half = stats.t.ppf(0.5 + confidence / 2, max(n_points - 2, 1)) * np.sqrt(np.maximum(var, 0))
    line = p_idle_w + (p_max_w - p_idle_w) * u
    return line - half, line + half


def _interval(ci: Array) -> tuple[float, float] | None:
    return (float(ci[0]), float(ci[1])) if np.all(np.isfinite(ci)) else None


def _curvature_reason(
    p: float, pct: float, sign: float, n_levels: int, lo: float, hi: float, alpha: float, tol: float
) -> str:
    if np.isnan(p):
        return (
            f"Not tested for curvature: {n_levels} distinct levels leave no degree of freedom "
            "for a quadratic term; a straight line is assumed."
        )
    where = f"over u = {lo:.2f}–{hi:.2f}"
    if p >= alpha:
        return f"A straight line fits: no significant curvature (quadratic term p = {p:.2g})."
    if pct <= tol:
        return (
            f"A straight line fits: the curvature is significant (p = {p:.2g}) but the best "
            f"quadratic departs from the line by at most {pct:.1f} % {where}, within {tol:g} %."
        )
    shape = "concave: power rises fastest at low load" if sign < 0 else "convex: power rises "
    shape += "" if sign < 0 else "fastest at high load"
    return (
        f"A straight line is the wrong model: a significant quadratic term (p = {p:.2g}) "
        f"departs from the line by up to {pct:.1f} % {where} ({shape})."
    )


def _linear_reason(curvature: str, stepped: bool, step: str) -> str:
    """The verdict in words: a step at idle first (it decides), else the curvature sentence."""
    if not step:
        return curvature
    if stepped:
        return f"{step} Over the loaded levels: {curvature[0].lower()}{curvature[1:]}"
    return f"{curvature} {step}"


def _step_reason(
    found: bool,
    step_w: float,
    step_pct: float,
    p: float,
    idle_w: float | None,
    lowest: float,
    alpha: float,
    tol: float,
) -> str:
    """The idle-step verdict in words; empty without an idle point."""
    if idle_w is None:
        return ""
    if np.isnan(p):
        return (
            "The active idle was not tested for a step: the loaded levels leave the line's "
            "uncertainty unknown."
        )
    at_zero = idle_w - step_w
    if found:
        return (
            f"A straight line is the wrong model at idle: the measured active idle "
            f"{idle_w:.1f} W sits {abs(step_w):.1f} W ({step_pct:.0f} %) "
            f"{'below' if step_w < 0 else 'above'} the line through the loaded levels "
            f"(P_idle {at_zero:.1f} W; p = {p:.2g}): power steps between idle and "
            f"u = {lowest:.2f}. The line is fitted to the loaded levels; the measured idle is "
            "kept as p_active_idle_w (the wake term)."
        )
    size = f"{step_w:+.1f} W ({step_pct:.1f} %; p = {p:.2g})"
    if p >= alpha:
        return (
            f"The measured active idle {idle_w:.1f} W differs from the line through the loaded "
            f"levels at u = 0 by {size}, within that line's uncertainty there: the line uses it."
        )
    return (
        f"The measured active idle {idle_w:.1f} W differs from the line through the loaded "
        f"levels at u = 0 by {size}: significant, but within {tol:g} %: the line uses it."
    )


def _check_points(
    u: Array,
    y: Array,
    labels: Sequence[str],
    columns: tuple[str, str],
    floor_w: float | None,
    outlet: str | None,
) -> None:
    if u.ndim != 1 or u.shape != y.shape:
        raise FitError(f"utilisation {u.shape} and power_w {y.shape} must be equal 1-D arrays")
    for values, column in ((u, columns[0]), (y, columns[1])):
        bad = np.flatnonzero(~np.isfinite(values))
        if bad.size:
            raise FitError(f"{labels[bad[0]]}, column '{column}': {values[bad[0]]} is not a number")
    bad = np.flatnonzero((u < 0) | (u > 1))
    if bad.size:
        raise FitError(
            f"{labels[bad[0]]}, column '{columns[0]}': {u[bad[0]]:g} is outside 0–1 "
            "(utilisation is a fraction, not a percentage)"
        )
    floor = 0.0 if floor_w is None else floor_w
    low = np.flatnonzero(y <= floor)
    if low.size:
        where = f"outlet {outlet}" if outlet is not None else f"column '{columns[1]}'"
        shown = ", ".join(labels[i] for i in low[:5]) + (", …" if low.size > 5 else "")
        raise FitError(
            f"{where}: {low.size} of {y.size} power readings ({shown}) are at or below the "
            f"meter floor of {floor:g} W; a reading under the floor is not idle power but no "
            "measurement: meter this node where its power is above the floor"
        )
    high = np.flatnonzero(y > MAX_POWER_W)
    if high.size:
        raise FitError(
            f"{labels[high[0]]}, column '{columns[1]}': {y[high[0]]:g} W is above "
            f"{MAX_POWER_W:g} W, more than any outlet delivers (three-phase 400 V 63 A ≈ "
            "43.6 kW): a misread or mistyped value (mW or kW for W?)"
        )
    levels = np.unique(u)
    if levels.size < MIN_LEVELS:
        shown = ", ".join(f"{v:g}" for v in levels)
        raise FitError(
            f"column '{columns[0]}': only {levels.size} distinct level(s) ({shown}); a line with "
            f"uncertainty needs at least {MIN_LEVELS}"
        )


def fit_linear(
    utilisation: ArrayLike,
    power_w: ArrayLike,
    *,
    floor_w: float | None = None,
    outlet: str | int | None = None,
    labels: Sequence[str] | None = None,
    columns: tuple[str, str] = ("utilization", "power_w"),
    confidence: float = 0.95,
    resolution_w: float | None = None,
    idle: ArrayLike | None = None,
) -> FitResult:
    """Fit P(u) = P_idle + (P_max − P_idle)·u robustly to measured points (study §5.1).

    Parameters
    ----------
    utilisation : (n,) array_like, fraction in [0, 1]
        Measured utilisation of each point (replicates share a level).
    power_w : (n,) array_like, W
        Measured power of each point.
    floor_w : float, optional
        The meter's metering floor (W). Readings at or below it (or at or below 0 W when not
        given) are refused: under the floor a PDU reads 0 W, which is not idle.
    outlet : str or int, optional
        The outlet the readings came from, named in the floor error.
    labels : sequence of str, optional
        How to name each point in errors (e.g. ``"row 7"``); ``"point i"`` by default.
    columns : (str, str)
        Names of the utilisation and power columns, used in errors.
    confidence : float
        Level of the intervals.
    resolution_w : float, optional
        The meter's reading resolution (W); see
        :func:`eams.calibrate.robust.fit_linear_batch`.
    idle : (n,) array_like of bool, optional
        Which points are active idle (no load started); by default those at u = 0 exactly.
        Their mean is ``p_active_idle_w``; they are never rejected, and tested for a step
        against the line through the other points (:mod:`eams.calibrate.idlestep`).

    Returns
    -------
    FitResult

    Raises
    ------
    FitError
        Naming the point and column: a NaN or infinite value, a utilisation outside 0–1, a
        power at or below the floor (naming the outlet) or above :data:`MAX_POWER_W`, or fewer
        than 3 distinct levels.
    """
    u = np.asarray(utilisation, dtype=np.float64)
    y = np.asarray(power_w, dtype=np.float64)
    names = list(labels) if labels is not None else [f"point {i}" for i in range(u.size)]
    _check_points(u, y, names, columns, floor_w, None if outlet is None else str(outlet))
    at_idle = u == 0 if idle is None else np.asarray(idle, dtype=bool)
    if at_idle.shape != u.shape:
        raise FitError(f"idle {at_idle.shape} must have the shape of utilisation {u.shape}")
    batch = fit_linear_batch(
        u[None, :],
        y[None, :],
        idle=at_idle[None, :],
        confidence=confidence,
        resolution_w=resolution_w,
    )
    p_idle, p_max = float(batch.p_idle_w[0]), float(batch.p_max_w[0])
    values, inverse = np.unique(u, return_inverse=True)
    weights = batch.weights[0]
    levels = []
    for index, level in enumerate(values):
        at = inverse == index
        measured = float(y[at].mean())
        model = float(p_idle + (p_max - p_idle) * level)
        levels.append(
            LevelFit(
                utilisation=float(level),
                n_points=int(at.sum()),
                measured_w=measured,
                model_w=model,
                error_w=model - measured,
                error_pct=100 * (model - measured) / measured,
                weight=float(weights[at].mean()),
            )
        )
    p_curve = float(batch.curvature_p[0])
    idle_w = float(y[at_idle].mean()) if at_idle.any() else None
    step_p = float(batch.idle_step_p[0])
    return FitResult(
        p_idle_w=p_idle,
        p_max_w=p_max,
        p_idle_ci95_w=_interval(batch.p_idle_ci_w[0]),
        p_max_ci95_w=_interval(batch.p_max_ci_w[0]),
        covariance_w2=(
            (float(batch.covariance_w2[0, 0, 0]), float(batch.covariance_w2[0, 0, 1])),
            (float(batch.covariance_w2[0, 1, 0]), float(batch.covariance_w2[0, 1, 1])),
        ),
        r2=float(batch.r2[0]),
        rmse_w=float(batch.rmse_w[0]),
        n_points=int(u.size),
        n_levels=int(values.size),
        linear_ok=bool(batch.linear_ok[0]),
        linear_reason=_linear_reason(
            _curvature_reason(
                p_curve,
                float(batch.curvature_pct[0]),
                float(batch.curvature_sign[0]),
                int(values.size),
                float(values[0]),
                float(values[-1]),
                CURVATURE_ALPHA,
                CURVATURE_TOLERANCE_PCT,
            ),
            bool(batch.idle_stepped[0]),
            _step_reason(
                bool(batch.idle_stepped[0]),
                float(batch.idle_step_w[0]),
                float(batch.idle_step_pct[0]),
                step_p,
                idle_w,
                float(u[~at_idle].min()) if (~at_idle).any() else float("nan"),
                STEP_ALPHA,
                STEP_TOLERANCE_PCT,
            ),
        ),
        curvature_p_value=None if np.isnan(p_curve) else p_curve,
        curvature_pct=None if np.isnan(p_curve) else float(batch.curvature_pct[0]),
        residuals_w=tuple(float(r) for r in batch.residuals_w[0]),
        weights=tuple(float(w) for w in weights),
        levels=tuple(levels),
        p_active_idle_w=idle_w,
        idle_step_w=None if np.isnan(step_p) else float(batch.idle_step_w[0]),
        idle_step_p_value=None if np.isnan(step_p) else step_p,
        method=METHOD,
        confidence=confidence,
    )
