"""The numeric core of the fit: many robust straight-line fits at once, with their uncertainty.

Pure numpy/scipy, no I/O (STYLE.md §8); :mod:`eams.calibrate.fit` wraps it for one data set.
The model is the study's §5.1 line P(u) = P_idle + (P_max − P_idle)·u, written in the basis
(1 − u, u) so that the two fitted coefficients *are* P_idle and P_max, and their confidence
intervals come straight from the coefficient covariance.

Method
------
Iteratively reweighted least squares (IRLS) M-estimation, vectorised over many fits at once,
ending with Tukey's bisquare (c = 4.685, 95 % efficiency at normal errors; Beaton & Tukey,
Technometrics 16, 1974), which gives a gross outlier (a bad meter reading) zero weight, so it
cannot move the line. Two starts are iterated and one kept per data set
(:func:`eams.calibrate.mestimate.robust_line`, where the estimator lives):

- *smooth*: least squares, then Huber steps (c = 1.345; Huber, *Robust Statistics*, 1981) —
  stable at few points, but one wild point at high leverage (a bad reading at an end of the
  range, with 5–6 levels) drags it;
- *resistant*: the Theil–Sen line (Sen, JASA 63, 1968; up to 29 % wild points cannot move
  it), then bisquare steps at its residual scale held fixed.

The scale is the normalised median absolute residual (1.4826·MAD) with Rousseeuw & Leroy's
finite-sample factor 1 + 5/(n − 2). Coefficient covariance: Huber's H1 estimate (Huber 1981,
§7.6, eq. 6.5; the ``cov="H1"`` of statsmodels' RLM) over the points kept; intervals use
Student's t with (points kept − 2) degrees of freedom. Measured coverage on normal noise
(``tests/calibrate/test_fit.py``): 95 % at 4 points, 93 % at 5–6, 94–95 % at 8–11.

Active idle (issue 16, item 5): the idle points are a measurement, not candidates for
rejection. The line is first fitted to the loaded points alone and the idle level tested
against it (:mod:`eams.calibrate.idlestep`). With a step (significant and material) the line is
the loaded one, the idle points get weight 0 (not used by it) and the fit is not linear; else
the line goes through every point with the idle points pinned at weight 1 (least-squares
points inside the M-estimation).

Non-linearity: a quadratic term is added (weighted least squares with the robust weights). The
line is the wrong model when that term is significant (two-sided t-test, p < 0.01) *and*
material (the quadratic departs from the line by more than 5 % of the line's power somewhere in
the measured range), or when the idle level steps off it. Significance alone is not enough:
with many samples a meter finds curvature far too small to matter to a scheduler.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from eams.calibrate.errors import FitError
from eams.calibrate.idlestep import STEP_ALPHA, STEP_TOLERANCE_PCT, idle_step
from eams.calibrate.mestimate import (
    bisquare_psi,
    distinct,
    robust_line,
    robust_scale,
    solve_line,
    solve_wls,
)

CURVATURE_ALPHA = 0.01
CURVATURE_TOLERANCE_PCT = 5.0
METHOD = (
    "robust IRLS ending in Tukey bisquare c=4.685 (least-squares/Huber start, or Theil-Sen "
    "when wild points dragged it; MAD scale); H1 covariance over kept points, Student-t CIs; "
    "quadratic-term curvature test; active idle never rejected, tested for a step against the "
    "line through the loaded levels"
)

Array = NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class BatchFit:
    """Fits of m data sets at once (see :func:`fit_linear_batch`). Every array has m rows.

    Attributes
    ----------
    p_idle_w, p_max_w : (m,) float, W
        The line at u = 0 and at u = 1.
    p_idle_ci_w, p_max_ci_w : (m, 2) float, W
        Their two-sided confidence intervals [lo, hi] (±inf when n ≤ 2 leaves no residual).
    covariance_w2 : (m, 2, 2) float, W²
        Covariance of (P_idle, P_max) (H1 estimate), for bands along the line.
    r2 : (m,) float
        Coefficient of determination of the line over all points (unweighted).
    rmse_w : (m,) float, W
        Root-mean-square residual over all points (unweighted, outliers included).
    residuals_w, weights : (m, k) float
        Measured − fitted power (W) and the final robust weight in [0, 1] of each point; NaN
        where the point was missing.
    n_points : (m,) int
        Points used (non-NaN pairs).
    curvature_p : (m,) float
        p-value of the quadratic term; NaN when there are too few levels to test it.
    curvature_pct : (m,) float
        Largest departure of the quadratic from the line over the measured range, in % of the
        line's power; NaN when not tested.
    curvature_sign : (m,) float
        Sign of the quadratic coefficient (−1: concave, rises fastest at low load).
    idle_step_w, idle_step_pct, idle_step_p : (m,) float
        Measured idle mean − the line through the loaded levels at u = 0 (W; % of the idle),
        and the step's p-value (:class:`eams.calibrate.idlestep.IdleStep`; NaN where there is
        no idle point or the step cannot be tested).
    idle_stepped : (m,) bool
        A significant and material idle step: then the line is the one through the loaded
        levels, and the idle points' weights are 0 (not used by the line, not rejected).
    linear_ok : (m,) bool
        False when the curvature, or the idle step, is both significant and material.
    """

    p_idle_w: Array
    p_max_w: Array
    p_idle_ci_w: Array
    p_max_ci_w: Array
    covariance_w2: Array
    r2: Array
    rmse_w: Array
    residuals_w: Array
    weights: Array
    n_points: NDArray[np.int64]
    curvature_p: Array
    curvature_pct: Array
    curvature_sign: Array
    idle_step_w: Array
    idle_step_pct: Array
    idle_step_p: Array
    idle_stepped: NDArray[np.bool_]
    linear_ok: NDArray[np.bool_]


def _curvature(
    u: Array, y: Array, w: Array, mask: NDArray[np.bool_], line: Array
) -> tuple[Array, Array, Array]:
    """Quadratic-term test: (p-value, largest departure in %, sign of the u² coefficient)."""
    x2 = np.stack([np.ones_like(u), u, u * u], axis=-1)
    beta, inverse = solve_wls(x2, y, w)
    resid = np.where(mask, y - np.einsum("mki,mi->mk", x2, beta), 0.0)
    used = (w > 0) & mask
    df = used.sum(axis=1) - 3
    testable = (distinct(u, used) >= 4) & (df >= 1)
    sigma2 = (w * resid**2).sum(axis=1) / np.maximum(df, 1)
    se = np.sqrt(np.maximum(sigma2 * inverse[:, 2, 2], 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.abs(beta[:, 2]) / se
        p = 2 * stats.t.sf(t, np.maximum(df, 1))
    p = np.where(se > 0, p, np.where(beta[:, 2] != 0, 0.0, 1.0))
    lo = np.nanmin(np.where(mask, u, np.nan), axis=1)
    hi = np.nanmax(np.where(mask, u, np.nan), axis=1)
    grid = lo[:, None] + (hi - lo)[:, None] * np.linspace(0.0, 1.0, 51)[None, :]
    quad = beta[:, [0]] + beta[:, [1]] * grid + beta[:, [2]] * grid**2
    straight = line[:, [0]] * (1 - grid) + line[:, [1]] * grid
    with np.errstate(divide="ignore", invalid="ignore"):
        pct = 100 * np.max(np.abs(quad - straight) / np.abs(straight), axis=1)
    nan = np.full_like(p, np.nan)
    return np.where(testable, p, nan), np.where(testable, pct, nan), np.sign(beta[:, 2])


@dataclass(frozen=True, slots=True)
class _Spread:
    """A fitted line's uncertainty per row: covariance (m, 2, 2) W², intervals (m, 2, 2) W
    ([coefficient, lo/hi]), one point's error variance (m,) W², degrees of freedom (m,) and
    whether the uncertainty is known (m,)."""

    covariance: Array
    ci: Array
    point_var: Array
    df: NDArray[np.int64]
    known: NDArray[np.bool_]


def _uncertainty(
    u0: Array,
    y0: Array,
    mask: NDArray[np.bool_],
    pinned: NDArray[np.bool_],
    beta: Array,
    w: Array,
    floor: Array,
    confidence: float,
) -> _Spread:
    """Huber's H1 covariance of the line over the points it kept (module docstring), plus the
    meter's rounding; pinned points enter as least-squares ones (ψ(z) = z)."""
    resid = np.where(mask, y0 - (beta[:, :1] * (1 - u0) + beta[:, 1:] * u0), 0.0)
    # Points the bisquare rejected carry no information: the covariance and the degrees of
    # freedom count only the points still used, so a rejection widens the intervals.
    used = mask & (w > 0)
    n_used = np.maximum(used.sum(axis=1), 1)
    scale = robust_scale(resid, mask, y0, floor)
    z = resid / scale[:, None]
    psi, dpsi = bisquare_psi(z)
    psi, dpsi = np.where(pinned, z, psi), np.where(pinned, 1.0, dpsi)
    mean_dpsi = np.where(used, dpsi, 0.0).sum(axis=1) / n_used
    var_dpsi = (np.where(used, (dpsi - mean_dpsi[:, None]) ** 2, 0.0)).sum(axis=1) / n_used
    mean_dpsi = np.maximum(mean_dpsi, 1e-3)
    k_factor = 1 + (2 / n_used) * var_dpsi / mean_dpsi**2
    df = n_used - 2
    with np.errstate(divide="ignore", invalid="ignore"):
        psi2 = np.where(used, psi**2, 0.0).sum(axis=1) / df
        factor = k_factor**2 * psi2 / mean_dpsi**2 * scale**2 + floor**2  # + rounding, GUM
    _, xtx_inv = solve_line(u0, y0, used.astype(np.float64))
    covariance = factor[:, None, None] * xtx_inv
    se = np.sqrt(np.maximum(np.diagonal(covariance, axis1=1, axis2=2), 0.0))
    t = stats.t.ppf(0.5 + confidence / 2, np.maximum(df, 1))
    # Fewer than 3 distinct levels kept: the line passes exactly through them and the residuals
    # say nothing about its uncertainty, which is then unknown (infinite), not zero.
    known = (df > 0) & (distinct(u0, used) >= 3)
    half = np.where(known[:, None], t[:, None] * se, np.inf)
    ci = np.stack([beta - half, beta + half], axis=-1)
    return _Spread(covariance=covariance, ci=ci, point_var=factor, df=df, known=known)


def fit_linear_batch(
    utilisation: ArrayLike,
    power_w: ArrayLike,
    *,
    confidence: float = 0.95,
    curvature_alpha: float = CURVATURE_ALPHA,
    curvature_tolerance_pct: float = CURVATURE_TOLERANCE_PCT,
    idle: ArrayLike | None = None,
    step_alpha: float = STEP_ALPHA,
    step_tolerance_pct: float = STEP_TOLERANCE_PCT,
    resolution_w: float | None = None,
) -> BatchFit:
    """Fit the §5.1 line to m data sets at once, robustly (see the module docstring).

    Parameters
    ----------
    utilisation : (m, k) array_like, fraction in [0, 1]
        Measured utilisation of each point; NaN marks a missing point (ragged data sets).
    power_w : (m, k) array_like, W
        Measured power of each point; NaN marks a missing point.
    confidence : float
        Level of the intervals (0.95 → 95 %).
    curvature_alpha, curvature_tolerance_pct : float
        Significance level of the quadratic term, and the departure (in % of power) that makes
        a significant curvature material.
    idle : (m, k) array_like of bool, optional
        The active-idle points (the node measured with no load started); by default the points
        at u = 0 exactly. They are tested for a step against the line through the other points
        (:mod:`eams.calibrate.idlestep`) and never rejected as outliers.
    step_alpha, step_tolerance_pct : float
        Significance level of the idle step, and the size (in % of measured idle) that makes a
        significant step material.
    resolution_w : float, optional
        The meter's reading resolution (W). Its variance resolution²/12, that of a quantised
        reading (GUM, JCGM 100:2008, F.2.2.1), is added to each point's error variance in the
        covariance, and the residual scale is at least resolution/√12: scatter cannot show an
        error that rounding hides (a 1 W meter reading a steady 80.4 W says 80 every time).

    Returns
    -------
    BatchFit

    Raises
    ------
    FitError
        If the shapes differ or are not 2-D (``idle``: not that of ``utilisation``). Content
        is not checked here (that is :func:`eams.calibrate.fit.fit_linear`'s job): a row with
        fewer than two distinct levels gives NaN/inf.
    """
    u = np.asarray(utilisation, dtype=np.float64)
    y = np.asarray(power_w, dtype=np.float64)
    if u.ndim != 2 or u.shape != y.shape:
        raise FitError(f"utilisation {u.shape} and power_w {y.shape} must be equal (m, k) arrays")
    mask = ~(np.isnan(u) | np.isnan(y))
    u0, y0 = np.where(mask, u, 0.0), np.where(mask, y, 0.0)
    if idle is None:
        at_idle = mask & (u0 == 0)
    else:
        at_idle = np.asarray(idle, dtype=bool)
        if at_idle.shape != u.shape:
            raise FitError(f"idle {at_idle.shape} must have the shape of utilisation {u.shape}")
        at_idle = at_idle & mask
    floor = np.full(u.shape[0], (resolution_w or 0.0) / np.sqrt(12.0))
    # The line through the loaded levels, and the idle level tested against it.
    loaded = mask & ~at_idle
    none = np.zeros_like(mask)
    beta_l, w_l = robust_line(u0, y0, loaded, none, floor)
    spread_l = _uncertainty(u0, y0, loaded, none, beta_l, w_l, floor, confidence)
    step = idle_step(
        y0,
        at_idle,
        beta_l[:, 0],
        np.where(spread_l.known, spread_l.covariance[:, 0, 0], np.inf),
        spread_l.point_var,
        spread_l.df,
        alpha=step_alpha,
        tolerance_pct=step_tolerance_pct,
    )
    # Without a step, the line through every point, the idle level never rejected.
    beta_f, w_f = robust_line(u0, y0, mask, at_idle, floor)
    spread_f = _uncertainty(u0, y0, mask, at_idle, beta_f, w_f, floor, confidence)
    stepped = step.found
    beta = np.where(stepped[:, None], beta_l, beta_f)
    w = np.where(stepped[:, None], np.where(loaded, w_l, 0.0), w_f)
    covariance = np.where(stepped[:, None, None], spread_l.covariance, spread_f.covariance)
    ci = np.where(stepped[:, None, None], spread_l.ci, spread_f.ci)

    resid = np.where(mask, y0 - (beta[:, :1] * (1 - u0) + beta[:, 1:] * u0), 0.0)
    n = mask.sum(axis=1)
    ss_res = (resid**2).sum(axis=1)
    n_safe = np.maximum(n, 1)
    y_mean = y0.sum(axis=1) / n_safe
    ss_tot = (np.where(mask, y0 - y_mean[:, None], 0.0) ** 2).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        r2 = np.where(ss_tot > 0, 1 - ss_res / ss_tot, np.where(ss_res == 0, 1.0, 0.0))
    fitted = np.where(stepped[:, None], loaded, mask)
    p_curve, pct_curve, sign = _curvature(u0, y0, w, fitted, beta)
    bent = (p_curve < curvature_alpha) & (pct_curve > curvature_tolerance_pct)
    return BatchFit(
        p_idle_w=beta[:, 0],
        p_max_w=beta[:, 1],
        p_idle_ci_w=ci[:, 0, :],
        p_max_ci_w=ci[:, 1, :],
        covariance_w2=covariance,
        r2=r2,
        rmse_w=np.sqrt(ss_res / n_safe),
        residuals_w=np.where(mask, resid, np.nan),
        weights=np.where(mask, w, np.nan),
        n_points=n,
        curvature_p=p_curve,
        curvature_pct=pct_curve,
        curvature_sign=sign,
        idle_step_w=step.step_w,
        idle_step_pct=step.step_pct,
        idle_step_p=step.p_value,
        idle_stepped=stepped,
        linear_ok=~bent & ~stepped,
    )
