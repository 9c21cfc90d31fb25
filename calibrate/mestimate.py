"""Robust straight lines of many data sets at once: the M-estimation behind the fit.

Pure numpy, no I/O. :func:`robust_line` fits each row's line P(u) = P_idle·(1 − u) + P_max·u
by iteratively reweighted least squares ending in Tukey's bisquare, from two starts, one kept
(the method and its sources are in :mod:`eams.calibrate.robust`, which adds the uncertainty
and the verdicts); the batched linear algebra and the robust scale are shared with it.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

BISQUARE_C = 4.685
MAD_TO_SIGMA = 1.4826  # 1 / Φ⁻¹(3/4): MAD → σ at normal errors
HUBER_C = 1.345
_FIXED_SCALE_ITERATIONS = 15
_BREAKDOWN_RATIO = 3.0
_GROSS_Z = 10.0
_ITERATIONS = 50
_THEIL_SEN_MAX_POINTS = 1000

Array = NDArray[np.float64]


def solve_wls(x: Array, y: Array, w: Array) -> tuple[Array, Array]:
    """Batched weighted least squares: returns (beta (m, p), (XᵀWX)⁻¹ (m, p, p))."""
    xw = x * w[..., None]
    gram = np.einsum("mki,mkj->mij", xw, x)
    ridge = 1e-12 * np.trace(gram, axis1=1, axis2=2)[:, None, None] * np.eye(x.shape[2])
    inverse = np.linalg.inv(gram + ridge)
    beta = np.einsum("mij,mj->mi", inverse, np.einsum("mki,mk->mi", xw, y))
    return beta, inverse


def solve_line(u: Array, y: Array, w: Array) -> tuple[Array, Array]:
    """:func:`solve_wls` for the basis (1 − u, u) in closed form (2 × 2), ~10× faster."""
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


def robust_scale(residuals: Array, mask: NDArray[np.bool_], y: Array, floor: Array) -> Array:
    """1.4826·(1 + 5/(n − 2))·median|r| per row: the normalised MAD with Rousseeuw & Leroy's
    finite-sample factor (*Robust Regression and Outlier Detection*, 1987, p. 202), which
    keeps the intervals' coverage near 95 % down to 4 levels."""
    n = mask.sum(axis=1)
    scale = MAD_TO_SIGMA * (1 + 5 / np.maximum(n - 2, 1)) * _masked_median(np.abs(residuals), mask)
    mean_abs = np.where(mask, np.abs(y), 0.0).sum(axis=1) / np.maximum(n, 1)
    return np.maximum(np.maximum(scale, floor), 1e-9 * np.maximum(1.0, mean_abs))


def distinct(values: Array, mask: NDArray[np.bool_]) -> NDArray[np.int64]:
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
    u: Array,
    y: Array,
    mask: NDArray[np.bool_],
    pinned: NDArray[np.bool_],
    beta: Array,
    floor: Array,
    *,
    huber_start: bool,
) -> tuple[Array, Array]:
    """Iterate to the bisquare fit from ``beta``; returns (beta (m, 2), weights (m, k)).

    ``huber_start``: first take Huber steps re-estimating the scale (stable at few points, but
    a wild point at high leverage drags it); otherwise take bisquare steps at the start's scale
    held fixed (a high-breakdown start then keeps wild points out). ``pinned`` points (within
    ``mask``) keep weight 1 throughout: measurements that are never rejected.
    """
    start_scale = robust_scale(y - _line_at(u, beta), mask, y, floor)[:, None]
    for _ in range(_FIXED_SCALE_ITERATIONS):
        resid = y - _line_at(u, beta)
        if huber_start:
            z = resid / robust_scale(resid, mask, y, floor)[:, None]
            w = np.where(mask, np.minimum(1.0, HUBER_C / np.maximum(np.abs(z), 1e-12)), 0.0)
        else:
            w = _bisquare_weights(resid / start_scale, mask)
        beta, _ = solve_line(u, y, np.where(pinned, 1.0, w))
    scale_y = np.maximum(1.0, np.abs(y).max(axis=1))[:, None]
    for _ in range(_ITERATIONS):
        resid = y - _line_at(u, beta)
        w = _bisquare_weights(resid / robust_scale(resid, mask, y, floor)[:, None], mask)
        w = np.where(pinned, 1.0, w)
        previous, (beta, _) = beta, solve_line(u, y, w)
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
    scale_s = robust_scale(y - _line_at(u, beta_s), mask, y, floor)
    scale_r = robust_scale(y - _line_at(u, beta_r), mask, y, floor)
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


def bisquare_psi(z: Array) -> tuple[Array, Array]:
    """Tukey's ψ(z) = z(1 − (z/c)²)² and ψ'(z) = (1 − (z/c)²)(1 − 5(z/c)²) for |z| < c."""
    t = (z / BISQUARE_C) ** 2
    inside = t < 1
    psi = np.where(inside, z * (1 - t) ** 2, 0.0)
    dpsi = np.where(inside, (1 - t) * (1 - 5 * t), 0.0)
    return psi, dpsi


def robust_line(
    u0: Array, y0: Array, mask: NDArray[np.bool_], pinned: NDArray[np.bool_], floor: Array
) -> tuple[Array, Array]:
    """The bisquare line of each row over ``mask`` from both starts, one kept (:func:`_choose`);
    ``pinned`` points are never rejected. Returns (beta (m, 2), weights (m, k))."""
    start = solve_line(u0, y0, mask.astype(np.float64))[0]
    return _choose(
        _irls(u0, y0, mask, pinned, start, floor, huber_start=True),
        _irls(u0, y0, mask, pinned, _theil_sen(u0, y0, mask), floor, huber_start=False),
        mask,
        u0,
        y0,
        floor,
    )
