"""``eams calibrate show --plot``: power against utilisation, the fitted line and its band."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure  # no pyplot: no GUI backend, no global state

from eams.calibrate.calfile import Calibration
from eams.calibrate.errors import CalibrationError
from eams.calibrate.fit import confidence_band_w

COLUMNS = 3
"""Panels per row: six nodes make a 3 × 2 grid (15 × 8 in), not a 30 × 4 in strip."""


def plot_calibrations(calibrations: Sequence[Calibration], path: str | Path) -> Path:
    """Draw one panel per node and save it as PNG.

    Each panel shows every level's samples (grey), the level means (dots), the fitted line and
    its pointwise 95 % confidence band (:func:`~eams.calibrate.fit.confidence_band_w`);
    measured active idle is a cross at u = 0. Where the node idles off its line, the
    calibrated curve (:class:`~eams.calibrate.model.PowerCurve`) is drawn solid and the line
    dotted.

    Panels are laid out :data:`COLUMNS` to a row, 5 × 4 in each at 100 dpi.

    Returns
    -------
    Path
        The file written.

    Raises
    ------
    CalibrationError
        The file cannot be written (its folder missing included: none is created).
    """
    count = len(calibrations)
    ncols = min(count, COLUMNS)
    nrows = -(-count // ncols)
    fig = Figure(figsize=(5 * ncols, 4 * nrows))
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    for ax in axes[count:]:
        ax.set_visible(False)
    grid = np.linspace(0.0, 1.0, 101)
    for ax, cal in zip(axes, calibrations, strict=False):
        if cal.sweep is not None:
            for level in cal.sweep.levels:
                powers = [s.power_w for s in level.samples if s.power_w is not None]
                if level.utilisation is not None and powers:
                    ax.scatter([level.utilisation] * len(powers), powers, s=6, color="0.7")
        for fitted in cal.fit.levels:
            ax.scatter([fitted.utilisation], [fitted.measured_w], s=30, color="C0", zorder=3)
        if cal.p_idle_ci95_w is not None:
            low, high = confidence_band_w(
                grid, cal.p_idle_w, cal.p_max_w, cal.fit.covariance_w2, cal.fit.n_points
            )
            ax.fill_between(grid, low, high, color="C1", alpha=0.25, label="95 % band")
        curve = cal.model()
        if curve.stepped:
            ax.plot(grid, curve.line.power_w(grid), color="C1", ls=":", label="fitted line")
        label = "calibrated curve (idle step)" if curve.stepped else "fitted line"
        ax.plot(grid, curve.power_w(grid), color="C1", label=label)
        if cal.p_active_idle_w is not None:
            ax.scatter(
                [0.0],
                [cal.p_active_idle_w],
                marker="x",
                s=60,
                color="C3",
                label="measured active idle",
                zorder=4,
            )
        verdict = "linear" if cal.linear_ok else "NOT linear"
        ax.set_title(f"{cal.node}: R² {cal.r2:.3f}, {verdict}")
        ax.set_xlabel("measured utilisation")
        ax.set_ylabel("power (W)")
        ax.set_xlim(-0.02, 1.02)
        ax.legend(loc="upper left", fontsize="small")
    fig.tight_layout()
    path = Path(path)
    try:
        fig.savefig(path, dpi=100, format="png")
    except OSError as exc:
        raise CalibrationError(f"cannot write the plot {path}: {exc.strerror or exc}") from exc
    return path
