"""Power curves of virtual nodes: power (W) as a function of CPU utilisation (0–1).

Two shapes: :class:`LinearCurve` (the study's model, DESIGN.md §5: P(u) = P_idle +
(P_max − P_idle)·u) and :class:`MeasuredCurve` (piecewise linear through measured points, e.g. one
SPECpower_ssj2008 result, which is usually not a straight line).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from eams.datasets import data_file
from eams.meter.simulator.errors import SpecPowerError

SPECPOWER_CSV = "specpower/specpower_load_power_table_2023_extract.csv"
"""The SPECpower extract under :func:`eams.datasets.data_dir` (see its PROVENANCE.md)."""

SPECPOWER_LEVELS_PCT = (10, 20, 30, 40, 50, 60, 70, 80, 90, 100)
"""Target-load levels of SPECpower_ssj2008 (SPECpower_ssj2008 Run and Reporting Rules §2.5.2):
active idle, then 10 %..100 % of the calibrated maximum throughput."""


def _clip_utilisation(utilisation: float) -> float:
    return min(1.0, max(0.0, float(utilisation)))


@dataclass(frozen=True, slots=True)
class LinearCurve:
    """P(u) = p_idle_w + (p_max_w − p_idle_w)·u, u clipped to [0, 1].

    Parameters
    ----------
    p_idle_w : float
        Power at 0 % utilisation (W), ≥ 0.
    p_max_w : float
        Power at 100 % utilisation (W), ≥ ``p_idle_w``.

    Raises
    ------
    ValueError
        If ``p_idle_w < 0``, ``p_max_w < p_idle_w`` or either is not finite.
    """

    p_idle_w: float
    p_max_w: float

    def __post_init__(self) -> None:
        if not (0 <= self.p_idle_w <= self.p_max_w and math.isfinite(self.p_max_w)):
            raise ValueError(
                "LinearCurve needs finite 0 <= p_idle_w <= p_max_w, "
                f"got {self.p_idle_w}, {self.p_max_w}"
            )

    def power_w(self, utilisation: float) -> float:
        """Power (W) at ``utilisation`` (fraction, clipped to [0, 1])."""
        u = _clip_utilisation(utilisation)
        return self.p_idle_w + (self.p_max_w - self.p_idle_w) * u


class MeasuredCurve:
    """Piecewise-linear power curve through measured (utilisation, power) points.

    Parameters
    ----------
    utilisation : sequence of float, shape (K,), K ≥ 2
        Strictly increasing utilisation fractions in [0, 1].
    power_w : sequence of float, shape (K,)
        Measured power (W) at each utilisation, ≥ 0.

    Notes
    -----
    Outside the measured range the curve is held flat at the end points (``numpy.interp``).

    Raises
    ------
    ValueError
        If the shapes differ, K < 2, a value is not finite, utilisation is not strictly
        increasing inside [0, 1], or a power is negative.
    """

    __slots__ = ("_power_w", "_utilisation", "label")

    def __init__(
        self,
        utilisation: Sequence[float] | NDArray[np.floating],
        power_w: Sequence[float] | NDArray[np.floating],
        label: str | None = None,
    ) -> None:
        u = np.asarray(utilisation, dtype=float)
        p = np.asarray(power_w, dtype=float)
        where = f" ({label})" if label else ""
        if u.ndim != 1 or u.shape != p.shape or u.size < 2:
            raise ValueError(f"MeasuredCurve{where}: need two 1-D arrays of equal length ≥ 2")
        if not (np.isfinite(u).all() and np.isfinite(p).all()):
            raise ValueError(f"MeasuredCurve{where}: utilisation and power must be finite")
        if u[0] < 0 or u[-1] > 1 or np.any(np.diff(u) <= 0):
            raise ValueError(
                f"MeasuredCurve{where}: utilisation must increase strictly inside [0, 1]"
            )
        if np.any(p < 0):
            raise ValueError(f"MeasuredCurve{where}: power_w must be ≥ 0")
        self._utilisation = u
        self._power_w = p
        self.label = label

    @property
    def utilisation(self) -> np.ndarray:
        """The curve's utilisation points, shape (K,) (a copy)."""
        return self._utilisation.copy()

    @property
    def points_w(self) -> np.ndarray:
        """The curve's power points (W), shape (K,) (a copy)."""
        return self._power_w.copy()

    def power_w(self, utilisation: float) -> float:
        """Power (W) at ``utilisation`` (fraction, clipped to [0, 1]), linearly interpolated."""
        u = _clip_utilisation(utilisation)
        return float(np.interp(u, self._utilisation, self._power_w))

    @classmethod
    def from_specpower(cls, row: SpecPowerRow) -> MeasuredCurve:
        """The curve of one SPECpower_ssj2008 result.

        Utilisation at a target level is that level's ssj_ops divided by ssj_ops at 100 %
        (the achieved, not the targeted, load); active idle is utilisation 0.

        Parameters
        ----------
        row : SpecPowerRow
            One result, as returned by :func:`load_specpower`.

        Returns
        -------
        MeasuredCurve
            11 points: active idle and the ten target levels.

        Raises
        ------
        ValueError
            If the row's throughput does not increase strictly with the level.
        """
        ops = np.asarray(row.ssj_ops, dtype=float)
        utilisation = np.concatenate(([0.0], ops / ops[-1]))
        power = np.concatenate(([row.watts_active_idle], row.watts))
        return cls(utilisation, power, label=row.system)

    def __repr__(self) -> str:
        return f"MeasuredCurve({self.label or ''!s}, {self._utilisation.size} points)"


@dataclass(frozen=True, slots=True)
class SpecPowerRow:
    """One SPECpower_ssj2008 result (the columns of the shared extract).

    Attributes
    ----------
    result_url, hardware_vendor, system : str
        Where the result is published and what was measured.
    nodes : int
        Number of nodes measured together (power is for all of them).
    watts_active_idle : float
        Average power at active idle (W).
    watts : tuple of float, shape (10,)
        Average power (W) at 10 %, 20 % … 100 % target load (:data:`SPECPOWER_LEVELS_PCT`).
    ssj_ops : tuple of float, shape (10,)
        Throughput (ssj_ops) at the same levels.
    """

    result_url: str
    hardware_vendor: str
    system: str
    nodes: int
    watts_active_idle: float
    watts: tuple[float, ...]
    ssj_ops: tuple[float, ...]


def _float(record: dict[str, str], column: str, where: str) -> float:
    try:
        value = float(record[column])
    except (KeyError, TypeError, ValueError):
        raise SpecPowerError(f"{where}: column {column!r} is missing or not a number") from None
    if not np.isfinite(value) or value < 0:
        raise SpecPowerError(f"{where}: column {column!r} = {value} is not a finite value ≥ 0")
    return value


def load_specpower(path: Path | str | None = None) -> list[SpecPowerRow]:
    """Read a SPECpower results table (the shared extract's columns).

    Parameters
    ----------
    path : Path or str, optional
        The CSV file; by default :data:`SPECPOWER_CSV` in the shared data folder.

    Returns
    -------
    list of SpecPowerRow
        In file order.

    Raises
    ------
    SpecPowerError
        If the file is absent or unreadable, or a row lacks a numeric power or throughput
        column (naming the file, line and column).
    """
    if path is None:
        path = data_file(SPECPOWER_CSV)
        if path is None:
            raise SpecPowerError(f"{SPECPOWER_CSV} not found in the data folder (EAMS_DATA_DIR)")
    path = Path(path)
    rows = []
    try:
        with path.open(newline="") as handle:
            for line, record in enumerate(csv.DictReader(handle), start=2):
                where = f"{path}:{line}"
                rows.append(
                    SpecPowerRow(
                        result_url=record.get("result_url") or "",
                        hardware_vendor=record.get("hardware_vendor") or "",
                        system=record.get("system") or "",
                        nodes=int(_float(record, "nodes", where)),
                        watts_active_idle=_float(record, "watts_active_idle", where),
                        watts=tuple(
                            _float(record, f"watts_{p}pct", where) for p in SPECPOWER_LEVELS_PCT
                        ),
                        ssj_ops=tuple(
                            _float(record, f"ssj_ops_{p}pct", where) for p in SPECPOWER_LEVELS_PCT
                        ),
                    )
                )
    except OSError as exc:
        raise SpecPowerError(f"{path}: {exc.strerror or exc}") from exc
    return rows
