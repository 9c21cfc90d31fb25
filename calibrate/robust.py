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
cannot move the line. Two starts are iterated and one kept per data set (:func:`_choose`):

- *smooth*: least squares, then Huber steps (c = 1.345; Huber, *Robust Statistics*, 1981) —
  stable at few points, but one wild point at high leverage (a bad idle reading with 5–6
  levels) drags it;
- *resistant*: the Theil–Sen line (Sen, JASA 63, 1968; up to 29 % wild points cannot move
  it), then bisquare steps at its residual scale held fixed.

The scale is the normalised median absolute residual (1.4826·MAD) with Rousseeuw & Leroy's
finite-sample factor 1 + 5/(n − 2). Coefficient covariance: Huber's H1 estimate (Huber 1981,
§7.6, eq. 6.5; the ``cov="H1"`` of statsmodels' RLM) over the points kept; intervals use
Student's t with (points kept − 2) degrees of freedom. Measured coverage on normal noise
(``tests/calibrate/test_fit.py``): 95 % at 4 points, 93 % at 5–6, 94–95 % at 8–11.

Non-linearity: a quadratic term is added (weighted least squares with the robust weights). The
line is the wrong model when that term is significant (two-sided t-test, p < 0.01) *and*
material (the quadratic departs from the line by more than 5 % of the line's power somewhere in
the measured range). Significance alone is not enough: with many samples a meter finds
curvature far too small to matter to a scheduler.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from eams.calibrate.errors import FitError

BISQUARE_C = 4.685
MAD_TO_SIGMA = 1.4826  # 1 / Φ⁻¹(3/4): MAD → σ at normal errors
HUBER_C = 1.345
_FIXED_SCALE_ITERATIONS = 15
_BREAKDOWN_RATIO = 3.0
_GROSS_Z = 10.0
_ITERATIONS = 50
_THEIL_SEN_MAX_POINTS = 1000
CURVATURE_ALPHA = 0.01
CURVATURE_TOLERANCE_PCT = 5.0
METHOD = (
    "robust IRLS ending in Tukey bisquare c=4.685 (least-squares/Huber start, or Theil-Sen "
    "when wild points dragged it; MAD scale); H1 covariance over kept points, Student-t CIs; "
    "quadratic-term curvature test"
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
    linear_ok : (m,) bool
        False when the curvature is both significant and material.
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
    linear_ok: NDArray[np.bool_]


def _solve_wls(x: Array, y: Array, w: Array) -> tuple[Array, Array]:
    """Batched weighted least squares: returns (beta (m, p), (XᵀWX)⁻¹ (m, p, p))."""
    xw = x * w[..., None]
    gram = np.einsum("mki,mkj->mij", xw, x)
    ridge = 1e-12 * np.trace(gram, axis1=1, axis2=2)[:, None, None] * np.eye(x.shape[2])
    inverse = np.linalg.inv(gram + ridge)
    beta = np.einsum("mij,mj->mi", inverse, np.einsum("mki,mk->mi", xw, y))
    return beta, inverse


def _solve_line(u: Array, y: Array, w: Array) -> tuple[Array, Array]:
    """:func:`_solve_wls` for the basis (1 − u, u) in closed form (2 × 2), ~10× faster."""
    v = 1 - u
    a, b, c = (w * v * v).sum(axis=1), (w * v * u).sum(axis=1), (w * u * u).sum(axis=1)
    ridge = 1e-12 * (a + c)
    a, c = a + ridge, c + ridge
    det = a * c - b * b
    with np.errstate(divide="ignore", invalid="ignore"):
        inverse = np.stack([np.stack([c, -b], -1), np.stack([-b, a], -1)], -2) / det[:, None, None]
    rhs = np.stack([(w * v * y).sum(axis=1), (w * u * y).sum(axis=1)], -1)
    return np.einsum("mij,mj->mi", inverse, rhs), inverse


def _masked_median(values: Array, mask: NDArray[np.bool_]) -> Array:
    """Median of each row over ``mask`` (NaN for an empty row); numpy's nanmedian is ~100×
    slower on small rows."""
    ordered = np.sort(np.where(mask, values, np.inf), axis=1)
    n = mask.sum(axis=1)
    lo = np.take_along_axis(ordered, np.maximum((n - 1) // 2, 0)[:, None], axis=1)[:, 0]
    hi = np.take_along_axis(ordered, np.maximum(n // 2, 0)[:, None], axis=1)[:, 0]
    with np.errstate(invalid="ignore"):
        return np.where(n > 0, (lo + hi) / 2, np.nan)


def _robust_scale(residuals: Array, mask: NDArray[np.bool_], y: Array, floor: Array) -> Array:
    """1.4826·(1 + 5/(n − 2))·median|r| per row: the normalised MAD with Rousseeuw & Leroy's
    finite-sample factor (*Robust Regression and Outlier Detection*, 1987, p. 202), which
    keeps the intervals' coverage near 95 % down to 4 levels."""
    n = mask.sum(axis=1)
    scale = MAD_TO_SIGMA * (1 + 5 / np.maximum(n - 2, 1)) * _masked_median(np.abs(residuals), mask)
    mean_abs = np.where(mask, np.abs(y), 0.0).sum(axis=1) / np.maximum(n, 1)
    return np.maximum(np.maximum(scale, floor), 1e-9 * np.maximum(1.0, mean_abs))


def _distinct(values: Array, mask: NDArray[np.bool_]) -> NDArray[np.int64]:
    """Number of distinct values of each row over ``mask``."""
    ordered = np.sort(np.where(mask, values, np.inf), axis=1)
    finite = np.isfinite(ordered)
    return finite[:, 0] + ((ordered[:, 1:] != ordered[:, :-1]) & finite[:, 1:]).sum(axis=1)


def _theil_sen(u: Array, y: Array, mask: NDArray[np.bool_]) -> Array:
    """The Theil–Sen line (Sen, JASA 63, 1968) as (P_idle, P_max) per row: the median of the
    pairwise slopes, then the median intercept. Its 29 % breakdown point gives the M-estimation
    a start that a few wild readings cannot drag away. Rows longer than
    :data:`_THEIL_SEN_MAX_POINTS` use an evenly strided subset (it is only a start)."""
    k = u.shape[1]
    if k > _THEIL_SEN_MAX_POINTS:
        keep = np.linspace(0, k - 1, _THEIL_SEN_MAX_POINTS).astype(int)
        u, y, mask = u[:, keep], y[:, keep], mask[:, keep]
        k = _THEIL_SEN_MAX_POINTS
    i, j = np.triu_indices(k, 1)
    du, dy = u[:, j] - u[:, i], y[:, j] - y[:, i]
    ok = mask[:, i] & mask[:, j] & (du != 0)
    slope = _masked_median(np.where(ok, dy / np.where(ok, du, 1.0), 0.0), ok)
    slope = np.where(np.isnan(slope), 0.0, slope)
    intercept = _masked_median(y - slope[:, None] * u, mask)
    return np.stack([intercept, intercept + slope], axis=-1)


def _bisquare_weights(z: Array, mask: NDArray[np.bool_]) -> Array:
    """Tukey's bisquare weight (1 − (z/c)²)² for |z| < c, else 0 (and 0 where masked)."""
    return np.where(mask & (np.abs(z) < BISQUARE_C), (1 - (z / BISQUARE_C) ** 2) ** 2, 0.0)


def _line_at(u: Array, beta: Array) -> Array:
    return beta[:, :1] * (1 - u) + beta[:, 1:] * u


def _irls(
    u: Array, y: Array, mask: NDArray[np.bool_], beta: Array, floor: Array, *, huber_start: bool
) -> tuple[Array, Array]:
    """Iterate to the bisquare fit from ``beta``; returns (beta (m, 2), weights (m, k)).

    ``huber_start``: first take Huber steps re-estimating the scale (stable at few points, but
    a wild point at high leverage drags it); otherwise take bisquare steps at the start's scale
    held fixed (a high-breakdown start then keeps wild points out).
    """
    start_scale = _robust_scale(y - _line_at(u, beta), mask, y, floor)[:, None]
    for _ in range(_FIXED_SCALE_ITERATIONS):
        resid = y - _line_at(u, beta)
        if huber_start:
            z = resid / _robust_scale(resid, mask, y, floor)[:, None]
            w = np.where(mask, np.minimum(1.0, HUBER_C / np.maximum(np.abs(z), 1e-12)), 0.0)
        else:
            w = _bisquare_weights(resid / start_scale, mask)
        beta, _ = _solve_line(u, y, w)
    scale_y = np.maximum(1.0, np.abs(y).max(axis=1))[:, None]
    for _ in range(_ITERATIONS):
        resid = y - _line_at(u, beta)
        w = _bisquare_weights(resid / _robust_scale(resid, mask, y, floor)[:, None], mask)
        previous, (beta, _) = beta, _solve_line(u, y, w)
        if np.all(np.abs(beta - previous) <= 1e-9 * scale_y):
            break
    return beta, w


def _choose(
    smooth: tuple[Array, Array],
    resistant: tuple[Array, Array],
    mask: NDArray[np.bool_],
    u: Array,
    y: Array,
    floor: Array,
) -> tuple[Array, Array]:
    """Per row, the fit from the least-squares/Huber start (``smooth``), unless wild points
    dragged it: then the Theil–Sen-started fit (``resistant``).

    Dragged means: its residual scale is over :data:`_BREAKDOWN_RATIO` times the resistant
    fit's, *and* the resistant fit kept at least 4 points and every point it rejected lies over
    :data:`_GROSS_Z` standard deviations (of the points kept) off its line. The second test
    matters at 4–6 points, where the resistant fit can also drop a good point that is merely
    2–3 σ off, fit the rest almost exactly and so show a tiny scale; the smooth fit is right to
    keep such a point.
    """
    (beta_s, w_s), (beta_r, w_r) = smooth, resistant
    scale_s = _robust_scale(y - _line_at(u, beta_s), mask, y, floor)
    scale_r = _robust_scale(y - _line_at(u, beta_r), mask, y, floor)
    resid_r = y - _line_at(u, beta_r)
    kept, dropped = mask & (w_r > 0), mask & (w_r == 0)
    sd_kept = np.sqrt(
        np.where(kept, resid_r**2, 0.0).sum(axis=1) / np.maximum(kept.sum(axis=1) - 2, 1)
    )
    gross = (
        dropped.any(axis=1)
        & (kept.sum(axis=1) >= 4)
        & np.all(~dropped | (np.abs(resid_r) > _GROSS_Z * sd_kept[:, None]), axis=1)
    )
    broke = ((scale_s > _BREAKDOWN_RATIO * scale_r) & gross)[:, None]
    return np.where(broke, beta_r, beta_s), np.where(broke, w_r, w_s)


def _bisquare_psi(z: Array) -> tuple[Array, Array]:
    """Tukey's ψ(z) = z(1 − (z/c)²)² and ψ'(z) = (1 − (z/c)²)(1 − 5(z/c)²) for |z| < c."""
    t = (z / BISQUARE_C) ** 2
    inside = t < 1
    psi = np.where(inside, z * (1 - t) ** 2, 0.0)
    dpsi = np.where(inside, (1 - t) * (1 - 5 * t), 0.0)
    return psi, dpsi


def _curvature(
    u: Array, y: Array, w: Array, mask: NDArray[np.bool_], line: Array
) -> tuple[Array, Array, Array]:
    """Quadratic-term test: (p-value, largest departure in %, sign of the u² coefficient)."""
    x2 = np.stack([np.ones_like(u), u, u * u], axis=-1)
    beta, inverse = _solve_wls(x2, y, w)
    resid = np.where(mask, y - np.einsum("mki,mi->mk", x2, beta), 0.0)
    used = (w > 0) & mask
    df = used.sum(axis=1) - 3
    testable = (_distinct(u, used) >= 4) & (df >= 1)
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


def fit_linear_batch(
    utilisation: ArrayLike,
    power_w: ArrayLike,
    *,
    confidence: float = 0.95,
    curvature_alpha: float = CURVATURE_ALPHA,
    curvature_tolerance_pct: float = CURVATURE_TOLERANCE_PCT,
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
        If the shapes differ or are not 2-D. Content is not checked here (that is
        :func:`eams.calibrate.fit.fit_linear`'s job): a row with fewer than two distinct
        levels gives NaN/inf.
    """
    u = np.asarray(utilisation, dtype=np.float64)
    y = np.asarray(power_w, dtype=np.float64)
    if u.ndim != 2 or u.shape != y.shape:
        raise FitError(f"utilisation {u.shape} and power_w {y.shape} must be equal (m, k) arrays")
    mask = ~(np.isnan(u) | np.isnan(y))
    u0, y0 = np.where(mask, u, 0.0), np.where(mask, y, 0.0)
    floor = np.full(u.shape[0], (resolution_w or 0.0) / np.sqrt(12.0))
    beta, w = _choose(
        _irls(
            u0, y0, mask, _solve_line(u0, y0, mask.astype(np.float64))[0], floor, huber_start=True
        ),
        _irls(u0, y0, mask, _theil_sen(u0, y0, mask), floor, huber_start=False),
        mask,
        u0,
        y0,
        floor,
    )
    resid = np.where(mask, y0 - (beta[:, :1] * (1 - u0) + beta[:, 1:] * u0), 0.0)
    n = mask.sum(axis=1)
    # Points the bisquare rejected carry no information: the covariance and the degrees of
    # freedom count only the points still used, so a rejection widens the intervals.
    used = mask & (w > 0)
    n_used = np.maximum(used.sum(axis=1), 1)
    scale = _robust_scale(resid, mask, y0, floor)
    psi, dpsi = _bisquare_psi(resid / scale[:, None])
    mean_dpsi = np.where(used, dpsi, 0.0).sum(axis=1) / n_used
    var_dpsi = (np.where(used, (dpsi - mean_dpsi[:, None]) ** 2, 0.0)).sum(axis=1) / n_used
    mean_dpsi = np.maximum(mean_dpsi, 1e-3)
    k_factor = 1 + (2 / n_used) * var_dpsi / mean_dpsi**2
    df = n_used - 2
    with np.errstate(divide="ignore", invalid="ignore"):
        psi2 = np.where(used, psi**2, 0.0).sum(axis=1) / df
        factor = k_factor**2 * psi2 / mean_dpsi**2 * scale**2 + floor**2  # + rounding, GUM
    _, xtx_inv = _solve_line(u0, y0, used.astype(np.float64))
    covariance = factor[:, None, None] * xtx_inv
    se = np.sqrt(np.maximum(np.diagonal(covariance, axis1=1, axis2=2), 0.0))
    t = stats.t.ppf(0.5 + confidence / 2, np.maximum(df, 1))
    # Fewer than 3 distinct levels kept: the line passes exactly through them and the residuals
    # say nothing about its uncertainty, which is then unknown (infinite), not zero.
    known = (df > 0) & (_distinct(u0, used) >= 3)
    half = np.where(known[:, None], t[:, None] * se, np.inf)
    ci = np.stack([beta - half, beta + half], axis=-1)

    ss_res = (resid**2).sum(axis=1)
    n_safe = np.maximum(n, 1)
    y_mean = y0.sum(axis=1) / n_safe
    ss_tot = (np.where(mask, y0 - y_mean[:, None], 0.0) ** 2).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        r2 = np.where(ss_tot > 0, 1 - ss_res / ss_tot, np.where(ss_res == 0, 1.0, 0.0))
    p_curve, pct_curve, sign = _curvature(u0, y0, w, mask, beta)
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
        linear_ok=~bent,
    )
