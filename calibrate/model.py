"""The linear node power model of the study, §5.1: P(u) = P_idle + (P_max − P_idle)·u."""

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
        u = np.asarray(utilisation, dtype=np.float64)
        known = u[~np.isnan(u)]
        if known.size and (known.min() < -_U_SLACK or known.max() > 1 + _U_SLACK):
            bad = known[(known < -_U_SLACK) | (known > 1 + _U_SLACK)][0]
            raise ModelError(f"utilisation {bad:g} is outside [0, 1]")
        power = self.p_idle_w + self.dynamic_w * np.clip(u, 0.0, 1.0)
        return float(power) if power.ndim == 0 else power


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
