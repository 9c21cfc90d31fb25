"""The idle-step test: does the measured active idle lie on the line through the loaded levels?

Many real servers idle far below the straight line their loaded levels follow: package sleep
states save power only while *every* core is idle, so power steps up between active idle and
the lowest load (common in SPECpower_ssj2008 results). Such a step is not curvature — a
quadratic term through the loaded levels may be insignificant — and the idle reading is a
measurement, not an outlier. So the line is fitted to the loaded levels alone and the idle
level is tested against it: the measured idle mean m (n_idle points) and the line's intercept
a differ by d = m − a, whose variance when the idle level does lie on the line is that of a
new observation's mean at u = 0, σ²/n_idle + var(a) (the prediction interval of straight-line
regression; Draper & Smith, *Applied Regression Analysis*, ch. 1), with σ² the robust fit's
per-point error variance and var(a) its intercept variance (:mod:`eams.calibrate.robust`).
The step is *significant* when |d| / √(σ²/n_idle + var(a)) exceeds Student's t at
:data:`STEP_ALPHA` (two-sided, the loaded fit's degrees of freedom), and *material* when |d|
exceeds :data:`STEP_TOLERANCE_PCT` of the measured idle — the same two thresholds as the
curvature test, for the same reason (a long sweep finds steps too small to matter to a
scheduler). Loaded levels far from a straight line widen σ and so the interval: a step is
then harder to establish, and the curvature test speaks instead.

Pure numpy/scipy, vectorised over m data sets (rows).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import stats

STEP_ALPHA = 0.01
STEP_TOLERANCE_PCT = 5.0

Array = NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class IdleStep:
    """The idle-step test of m data sets (every array has m rows).

    Attributes
    ----------
    step_w : (m,) float, W
        Measured idle mean − the loaded line at u = 0; NaN without an idle point.
    step_pct : (m,) float
        ``step_w`` in % of the measured idle; NaN without an idle point.
    p_value : (m,) float
        Two-sided p-value of the step; NaN when it cannot be tested (no idle point, or the
        loaded levels leave the line's uncertainty unknown).
    found : (m,) bool
        The step is significant and material: the straight line is the wrong model at idle.
    """

    step_w: Array
    step_pct: Array
    p_value: Array
    found: NDArray[np.bool_]


def idle_step(
    power_w: Array,
    idle: NDArray[np.bool_],
    intercept_w: Array,
    intercept_var_w2: Array,
    point_var_w2: Array,
    df: NDArray[np.int64],
    *,
    alpha: float = STEP_ALPHA,
    tolerance_pct: float = STEP_TOLERANCE_PCT,
) -> IdleStep:
    """Test each data set's idle level against its loaded line (see the module docstring).

    Parameters
    ----------
    power_w : (m, k) float, W
        The points' power (values outside ``idle`` are not read).
    idle : (m, k) bool
        The active-idle points.
    intercept_w, intercept_var_w2 : (m,) float, W and W²
        The loaded line at u = 0 and its variance; a non-finite variance means unknown.
    point_var_w2 : (m,) float, W²
        One point's error variance in the loaded fit.
    df : (m,) int
        Degrees of freedom of the loaded fit (points it kept − 2).
    alpha, tolerance_pct : float
        Significance level, and the size (% of measured idle) that makes a step material.

    Returns
    -------
    IdleStep
    """
    n_idle = idle.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        idle_w = np.where(idle, power_w, 0.0).sum(axis=1) / n_idle
        step_w = np.where(n_idle > 0, idle_w - intercept_w, np.nan)
        step_pct = 100 * np.abs(step_w) / idle_w
        se_w = np.sqrt(point_var_w2 / n_idle + intercept_var_w2)
        testable = (n_idle > 0) & (df >= 1) & np.isfinite(se_w)
        t = np.abs(step_w) / np.where(testable, se_w, 1.0)
        p = np.where(testable, 2 * stats.t.sf(t, np.maximum(df, 1)), np.nan)
    found = testable & (p < alpha) & (step_pct > tolerance_pct)
    return IdleStep(step_w=step_w, step_pct=step_pct, p_value=p, found=found)
