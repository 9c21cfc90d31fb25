"""The fitted line as data, declared once for the fit and the calibration file.

:class:`FitSummary` is what a calibration file stores under ``fit`` (schema 1, its fields in
the file's order); :class:`FitResult`, what :func:`eams.calibrate.fit.fit_linear` returns, is
that plus the per-point diagnostics the file does not keep; :class:`LevelFit` is one level of
either. Pydantic v2 models, checked when built; no scipy here, so loading a calibration (the
agent, the extender) does not import the fit.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from eams.calibrate.model import LinearPowerModel, wake_power

Watts = Annotated[float, Field(allow_inf_nan=False)]
"""A finite power (W)."""
Fraction = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]
"""A finite fraction in [0, 1]."""


class StrictModel(BaseModel):
    """Base of the calibration file's models: immutable, and an unknown field is refused."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class LevelFit(StrictModel):
    """The fitted line against the data at one distinct utilisation level.

    Attributes
    ----------
    utilisation : float
        The level (fraction).
    n_points : int
        Points at this level (replicates).
    measured_w, model_w : float
        Mean measured power and the line's power at this level (W).
    error_w, error_pct : float
        Model − measured (W, and % of measured).
    weight : float
        Mean robust weight of the level's points (0: not used by the line — an outlier, or
        the active-idle level when it steps off the line, which ``linear_reason`` then says).
    """

    utilisation: Fraction
    n_points: Annotated[int, Field(ge=1)]
    measured_w: Watts
    model_w: Watts
    error_w: Watts
    error_pct: Watts
    weight: Fraction


class FitSummary(StrictModel):
    """One node's fitted line, its uncertainty and its verdicts: the ``fit`` of a calibration
    file (see :func:`eams.calibrate.fit.fit_linear` for how each is obtained).

    Attributes
    ----------
    p_idle_w, p_max_w : float
        The line at u = 0 and u = 1 (W).
    p_idle_ci95_w, p_max_ci95_w : (float, float) or None
        Confidence intervals [lo, hi] (W) at the fit's confidence (95 % by default); ``None``
        when the uncertainty is unknown (fewer than 3 distinct levels kept after rejection).
    covariance_w2 : ((float, float), (float, float))
        Covariance of (P_idle, P_max) in W² (see :func:`eams.calibrate.fit.confidence_band_w`).
    r2, rmse_w : float
        R² and RMSE (W) of the line over all points.
    n_points, n_levels : int
        Points and distinct utilisation levels (at least 3 each).
    linear_ok : bool
        False when a straight line is the wrong model; ``linear_reason`` says why in words.
    curvature_p_value : float or None
        p-value of the quadratic-term test (``None`` when there are too few levels to test).
    method : str
        The fitting method in words.
    levels : tuple of LevelFit
        Model error per distinct level, in increasing utilisation.
    """

    p_idle_w: Watts
    p_max_w: Watts
    p_idle_ci95_w: tuple[float, float] | None
    p_max_ci95_w: tuple[float, float] | None
    covariance_w2: tuple[tuple[float, float], tuple[float, float]]
    r2: float
    rmse_w: Annotated[float, Field(ge=0)]
    n_points: Annotated[int, Field(ge=3)]
    n_levels: Annotated[int, Field(ge=3)]
    linear_ok: bool
    linear_reason: str
    curvature_p_value: float | None = None
    method: str
    levels: tuple[LevelFit, ...]

    @classmethod
    def from_result(cls, result: FitSummary) -> FitSummary:
        """The part of a fit that a file stores: a :class:`FitResult` without its diagnostics."""
        return cls.model_validate(result.model_dump(include=set(cls.model_fields)))

    def model(self) -> LinearPowerModel:
        """The fitted line as a :class:`~eams.calibrate.model.LinearPowerModel` (the
        calibrated curve, with an idle step, is :meth:`Calibration.model
        <eams.calibrate.calfile.Calibration.model>`).

        Raises
        ------
        ModelError
            If the fitted line is impossible (P_idle < 0 or P_max < P_idle).
        """
        return LinearPowerModel(self.p_idle_w, self.p_max_w)


class FitResult(FitSummary):
    """What :func:`eams.calibrate.fit.fit_linear` returns: every attribute of
    :class:`FitSummary`, plus the diagnostics a calibration file does not keep.

    Attributes
    ----------
    curvature_pct : float or None
        How far the best quadratic departs from the line within the measured range (% of
        power); ``None`` when there are too few levels to test.
    residuals_w, weights : tuple of float
        Per point, measured − fitted (W), and the robust weight (0 = rejected outlier).
    p_active_idle_w : float or None
        Mean measured power of the active-idle points (those at u = 0 exactly unless the
        caller named them), if any (W).
    idle_step_w, idle_step_p_value : float or None
        The idle-step test (:mod:`eams.calibrate.idlestep`): measured active idle − the line
        through the loaded levels at u = 0 (W), and its p-value; ``None`` when not tested.
        A significant and material step makes ``linear_ok`` false (``linear_reason`` says
        so); the line is then the loaded one and the idle level's weight 0 (not used by the
        line, not rejected as an outlier).
    confidence : float
        Level of the intervals.
    """

    curvature_pct: float | None
    residuals_w: tuple[float, ...]
    weights: tuple[float, ...]
    p_active_idle_w: float | None
    idle_step_w: float | None = None
    idle_step_p_value: float | None = None
    confidence: float = 0.95

    def to_json(self) -> dict[str, Any]:
        """The ``eams calibrate fit --json`` object (issue 3).

        Keys: ``p_idle_w``, ``p_max_w``, ``p_idle_ci95_w`` [lo, hi], ``p_max_ci95_w`` [lo, hi],
        ``r2``, ``rmse_w``, ``n_points``, ``linear_ok``, ``method``, plus ``n_levels``,
        ``linear_reason``, ``curvature_p_value``, ``p_active_idle_w``, ``idle_step_w``,
        ``idle_step_p_value``, ``wake_power_w``, ``wake_power_note`` and ``levels`` (per
        level: utilisation, n_points, measured_w, model_w, error_w, error_pct, weight).
        Missing values are ``null``.
        """
        wake_w, note = wake_power(self.p_active_idle_w, self.p_idle_w)
        return {
            "p_idle_w": self.p_idle_w,
            "p_max_w": self.p_max_w,
            "p_idle_ci95_w": None if self.p_idle_ci95_w is None else list(self.p_idle_ci95_w),
            "p_max_ci95_w": None if self.p_max_ci95_w is None else list(self.p_max_ci95_w),
            "r2": self.r2,
            "rmse_w": self.rmse_w,
            "n_points": self.n_points,
            "linear_ok": self.linear_ok,
            "method": self.method,
            "n_levels": self.n_levels,
            "linear_reason": self.linear_reason,
            "curvature_p_value": self.curvature_p_value,
            "p_active_idle_w": self.p_active_idle_w,
            "idle_step_w": self.idle_step_w,
            "idle_step_p_value": self.idle_step_p_value,
            "wake_power_w": wake_w,
            "wake_power_note": note,
            "levels": [level.model_dump() for level in self.levels],
        }
