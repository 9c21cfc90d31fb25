"""Measured power curves of simulated nodes and their linear fits (study §5.1).

Each simulated node gets the curve of one real server from SPECpower_ssj2008
(``specpower/specpower_load_power_table_2023_extract.csv``): average power at active idle and at
10 %, 20 % … 100 % target load (SPECpower_ssj2008 Run and Reporting Rules §2.5.2). Energy in the
simulator is integrated on this piecewise-linear *measured* curve; the schedulers that need a
power model (MILP, PEAKS, EAMS) only see the straight line fitted to it, so the linear model's
error shows up in the results exactly as it would on a metered cluster.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from eams.calibrate.fit import fit_linear_batch

LEVELS = np.linspace(0.0, 1.0, 11)
"""Utilisation points of a SPECpower curve: active idle, 10 % … 100 % (fractions)."""


@dataclass(frozen=True)
class PowerCurves:
    """Piecewise-linear power curves of N nodes on the common utilisation grid :data:`LEVELS`.

    Parameters
    ----------
    points_w : (N, 11) float, watts
        Measured power at u = 0, 0.1 … 1.0 for each node.
    """

    points_w: NDArray[np.float64]

    def power_w(self, node: int, utilisation: float) -> float:
        """Power (W) of ``node`` at ``utilisation`` (fraction, clipped to [0, 1])."""
        u = min(1.0, max(0.0, utilisation))
        return float(np.interp(u, LEVELS, self.points_w[node]))

    def power_all_w(self, utilisation: NDArray[np.float64]) -> NDArray[np.float64]:
        """Power (W) of every node, shape (N,), at ``utilisation`` (N,) fractions in [0, 1]."""
        u = np.clip(utilisation, 0.0, 1.0) * 10.0
        lo = np.minimum(np.floor(u).astype(int), 9)
        frac = u - lo
        rows = np.arange(self.points_w.shape[0])
        return self.points_w[rows, lo] * (1 - frac) + self.points_w[rows, lo + 1] * frac

    def linear_fit(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The study §5.1 line fitted to each node's 11 points by the calibration fit
        (:func:`eams.calibrate.fit.fit_linear_batch`, robust), as a metered node would get.

        Returns
        -------
        p_idle_w, p_max_w : (N,) float, watts
        """
        u = np.broadcast_to(LEVELS, self.points_w.shape)
        fit = fit_linear_batch(u, self.points_w)
        return np.asarray(fit.p_idle_w, dtype=float), np.asarray(fit.p_max_w, dtype=float)
