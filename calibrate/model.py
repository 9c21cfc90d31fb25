"""The node power model: the study's §5.1 line P(u) = P_idle + (P_max − P_idle)·u, and the
calibrated curve, which is that line except where the node measurably idles off it."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import overload

import numpy as np
from numpy.typing import ArrayLike, NDArray

from eams.calibrate.errors import ModelError

_U_SLACK = 1e-9  # float noise around the ends of [0, 1] is not an error


@dataclass(frozen=True, slots=True)
class LinearPowerModel:
    """A node's power as a straight line in CPU utilisation (study §5.1, DESIGN.md §3).

    Parameters
    ----------
    p_idle_w : float
        Power of the line at u = 0 (W). This is the line's intercept, not necessarily the
        measured active idle (see :attr:`eams.calibrate.calfile.Calibration.wake_power_w`).
    p_max_w : float
        Power of the line at u = 1 (W), all online CPUs busy.

    Raises
    ------
    ModelError
        If either value is not finite, ``p_idle_w`` is negative, or ``p_max_w < p_idle_w``.
    """

    p_idle_w: float
    p_max_w: float

    def __post_init__(self) -> None:
        if not (math.isfinite(self.p_idle_w) and math.isfinite(self.p_max_w)):
            raise ModelError(
                f"power model needs finite values, got p_idle_w={self.p_idle_w}, "
                f"p_max_w={self.p_max_w}"
            )
        if self.p_idle_w < 0:
            raise ModelError(f"p_idle_w={self.p_idle_w} W is negative")
        if self.p_max_w < self.p_idle_w:
            raise ModelError(
                f"p_max_w={self.p_max_w} W is below p_idle_w={self.p_idle_w} W: power would "
                "fall with load"
            )

    @property
    def dynamic_w(self) -> float:
        """P_max − P_idle (W): the power that load adds from idle to full (study §5.1)."""
        return self.p_max_w - self.p_idle_w

    @overload
    def power_w(self, utilisation: float) -> float: ...

    @overload
    def power_w(self, utilisation: ArrayLike) -> NDArray[np.float64]: ...

    def power_w(self, utilisation: ArrayLike) -> float | NDArray[np.float64]:
        """Power at utilisation ``u`` (W), vectorised.

        Parameters
        ----------
        utilisation : float or array_like of any shape
            Fraction of all online CPUs busy, in [0, 1]. NaN (unknown) gives NaN (unknown).

        Returns
        -------
        float or ndarray of the same shape
            P_idle + (P_max − P_idle)·u, in watts.

        Raises
        ------
        ModelError
            If a utilisation is outside [0, 1] (a percentage passed by mistake, say).
        """
        u = _checked_utilisation(utilisation)
        power = self.p_idle_w + self.dynamic_w * u
        return float(power) if power.ndim == 0 else power


def _checked_utilisation(utilisation: ArrayLike) -> NDArray[np.float64]:
    """``utilisation`` as a float array clipped to [0, 1] (NaN kept); ModelError outside it."""
    u = np.asarray(utilisation, dtype=np.float64)
    known = u[~np.isnan(u)]
    if known.size and (known.min() < -_U_SLACK or known.max() > 1 + _U_SLACK):
        bad = known[(known < -_U_SLACK) | (known > 1 + _U_SLACK)][0]
        raise ModelError(f"utilisation {bad:g} is outside [0, 1]")
    return np.clip(u, 0.0, 1.0)


@dataclass(frozen=True, slots=True)
class PowerCurve:
    """A node's calibrated power curve: the line, with the measured idle step where there is one.

    Many servers idle well below the straight line through their loaded levels: package sleep
    states save power only while *every* core is idle, so power steps up between active idle
    and the lowest load (:mod:`eams.calibrate.idlestep`; common in SPECpower_ssj2008 results,
    where the line's intercept misses measured idle by a median 14 %, issue 3). Where the
    idle-step test found such a step (significant and material), the curve is

    - P(0) = the measured active idle A,
    - P(u) = A + (L(u1) − A)·u/u1 for 0 ≤ u < u1, linear interpolation to the line,
    - P(u) = L(u) = P_idle + (P_max − P_idle)·u for u ≥ u1,

    with u1 the measured utilisation of the sweep's lowest loaded level: below it nothing was
    measured but the idle, so the curve interpolates between the two measurements (as
    SPECpower's own curves do between their levels). Without a step the curve *is* the line.
    Between active idle and u1 the curve is steeper than the line, so it is concave: the power
    at a window's mean utilisation may exceed the window's mean power there (Jensen), by at most
    the step times the spread of u inside the window.

    Parameters
    ----------
    line : LinearPowerModel
        The fitted line (through the loaded levels when there is a step).
    p_active_idle_w : float or None
        The measured active idle A (W); ``None`` (with ``u_step``): no step, the line.
    u_step : float or None
        u1, utilisation of the lowest loaded level, in (0, 1]; ``None`` with no step.

    Raises
    ------
    ModelError
        Only one of ``p_active_idle_w`` and ``u_step`` given, A not finite or negative, A above
        P_max, or u1 outside (0, 1].
    """

    line: LinearPowerModel
    p_active_idle_w: float | None = None
    u_step: float | None = None

    def __post_init__(self) -> None:
        a, u1 = self.p_active_idle_w, self.u_step
        if (a is None) != (u1 is None):
            raise ModelError(
                f"a stepped curve needs both p_active_idle_w and u_step, got {a} and {u1}"
            )
        if a is None or u1 is None:
            return
        if not (math.isfinite(a) and 0 <= a <= self.line.p_max_w):
            raise ModelError(
                f"p_active_idle_w={a} W must be finite, ≥ 0 and at most "
                f"p_max_w={self.line.p_max_w} W"
            )
        if not (math.isfinite(u1) and 0 < u1 <= 1):
            raise ModelError(f"u_step={u1} is outside (0, 1]")

    @property
    def stepped(self) -> bool:
        """True when the curve steps from the measured active idle to the line."""
        return self.u_step is not None

    @property
    def p_max_w(self) -> float:
        """P(1) (W): the line at full load, whatever the idle step."""
        return self.line.p_max_w

    @overload
    def power_w(self, utilisation: float) -> float: ...

    @overload
    def power_w(self, utilisation: ArrayLike) -> NDArray[np.float64]: ...

    def power_w(self, utilisation: ArrayLike) -> float | NDArray[np.float64]:
        """Power at utilisation ``u`` (W), vectorised; the contract of
        :meth:`LinearPowerModel.power_w` (NaN gives NaN; ModelError outside [0, 1])."""
        line_w = self.line.power_w(utilisation)
        if self.p_active_idle_w is None or self.u_step is None:
            return line_w
        u = _checked_utilisation(utilisation)
        a, u1 = self.p_active_idle_w, self.u_step
        at_u1_w = self.line.power_w(u1)
        power = np.where(u < u1, a + (at_u1_w - a) * u / u1, line_w)
        return float(power) if power.ndim == 0 else power

    def sensitivities(
        self, utilisation: ArrayLike
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """∂P/∂P_idle, ∂P/∂P_max and ∂P/∂A at each utilisation (dimensionless), vectorised.

        P is linear in its three parameters, so P(u) = P_idle·∂P/∂P_idle + P_max·∂P/∂P_max +
        A·∂P/∂A exactly. On the line (u ≥ u1, or no step) they are (1 − u, u, 0); below u1,
        where P = A + (L(u1) − A)·u/u1 and L(u1) = P_idle·(1 − u1) + P_max·u1, they are
        ((1 − u1)·u/u1, u, 1 − u/u1).

        Parameters
        ----------
        utilisation : float or array_like of any shape
            In [0, 1]; NaN gives NaN.

        Returns
        -------
        (ndarray, ndarray, ndarray)
            Each of the shape of ``utilisation`` (0-d for a scalar).

        Raises
        ------
        ModelError
            If a utilisation is outside [0, 1].
        """
        u = _checked_utilisation(utilisation)
        if self.u_step is None:
            return 1 - u, u, np.where(np.isnan(u), np.nan, 0.0)
        u1 = self.u_step
        below = u < u1
        d_idle = np.where(below, (1 - u1) * u / u1, 1 - u)
        d_active = np.where(below, 1 - u / u1, np.where(np.isnan(u), np.nan, 0.0))
        return d_idle, u.copy(), d_active


def wake_power(p_active_idle_w: float | None, p_idle_w: float) -> tuple[float, str]:
    """Which idle power to charge for waking an empty node (the study's §5.1 wake term), and why.

    The measured active idle applies when there is one: real servers step up from idle to
    low load, so the line's intercept often misses measured idle (SPECpower: by a median 14 %,
    issue 3). Without a measurement at u = 0 the intercept is all there is.

    Returns
    -------
    (float, str)
        The power (W) and one sentence saying which value applies.
    """
    if p_active_idle_w is None:
        return p_idle_w, (
            f"No measurement at u = 0: waking an empty node is charged the line's intercept "
            f"P_idle = {p_idle_w:.1f} W."
        )
    gap_pct = 100 * (p_idle_w - p_active_idle_w) / p_active_idle_w
    return p_active_idle_w, (
        f"Waking an empty node is charged the measured active idle {p_active_idle_w:.1f} W; "
        f"the line's intercept {p_idle_w:.1f} W differs from it by {gap_pct:+.1f} % and is used "
        "only for the load-dependent part."
    )
