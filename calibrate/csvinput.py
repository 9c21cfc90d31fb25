"""Read the points of ``eams calibrate fit FILE``: a CSV with a utilisation and a power column.

The CSVs people have: the header may spell ``utilisation`` (as every other part of EAMS writes
it) or ``utilization``, in any letter case, with spaces around names and values, and with the
byte-order mark that Excel's "CSV UTF-8" puts first. What cannot be a sweep is refused, naming
the file and, where there is one, the row: a row with more fields than the header, a file with
no data rows, power that falls as load rises, and points that lie exactly on a line (they leave
no scatter to size the 95 % intervals with, which would come out zero wide).

A CSV's rows are single readings, and PDUs read in whole watts or tenths: when most rows of a
level read the same value their residuals are exactly 0 and the robust (MAD) scale would be 0,
giving zero-wide intervals and rejecting a reading 1 W off. So the readings' resolution is
inferred (:func:`csv_resolution_w`) and passed to the fit, which floors the scale at the
uniform quantisation error resolution/√12 (GUM, JCGM 100:2008, F.2.2.1).
"""

from __future__ import annotations

import csv
from pathlib import Path

from eams.calibrate.calfile import smallest_step_w
from eams.calibrate.errors import FitError
from eams.calibrate.fit import FitResult, fit_linear

UTILISATION = ("utilisation", "utilization")
"""Accepted names of the utilisation column (fraction 0–1), compared ignoring case and spaces."""
POWER = "power_w"
"""Name of the power column (W), compared the same way."""
EXACT_RMSE_W = 1e-6
"""A fit whose RMSE is below this (1 µW, far under any meter's resolution) has no scatter."""
MAX_RESOLUTION_W = 1.0
"""The coarsest reading resolution assumed for a CSV: outlet meters read in whole watts (APC
rPDU2 ``rPDU2OutletMeteredStatusPower``, PowerNet-MIB) or finer. A short CSV whose distinct
values are far apart shows no step that small, and would otherwise overstate it."""


def csv_resolution_w(power_w: list[float]) -> float | None:
    """The readings' resolution (W): the smallest step between distinct values, at most
    :data:`MAX_RESOLUTION_W`; ``None`` with fewer than two distinct values.

    Like a sweep's (:func:`eams.calibrate.calfile.reading_resolution_w`) it can only overstate
    the true step (a finer one never seen), which widens the intervals, never narrows them.
    """
    step = smallest_step_w(power_w)
    return None if step is None else min(step, MAX_RESOLUTION_W)


def _columns(header: list[str], path: Path) -> tuple[str, str]:
    """The header's own spelling of the utilisation and the power column."""
    by_name: dict[str, list[str]] = {}
    for name in header:
        by_name.setdefault(name.strip().lower(), []).append(name)
    shown = ", ".join(name.strip() for name in header) or "nothing"
    found = [n for key in UTILISATION for n in by_name.get(key, [])]
    if not found:
        raise FitError(
            f"{path}: missing column 'utilisation' (or 'utilization'); row 1 has: {shown}"
        )
    if len(found) > 1:
        raise FitError(f"{path}: row 1 has {len(found)} utilisation columns ({shown}); keep one")
    power = by_name.get(POWER, [])
    if len(power) != 1:
        what = "missing column" if not power else f"{len(power)} columns named"
        raise FitError(f"{path}: {what} '{POWER}'; row 1 has: {shown}")
    return found[0], power[0]


def read_points(path: str | Path) -> tuple[list[float], list[float], list[str], tuple[str, str]]:
    """Read (utilisation, power_w, row labels, column names) from a CSV.

    Columns other than the two are ignored. Rows are numbered as a spreadsheet shows them: the
    header is row 1. Column names are returned as the file spells them (for messages).

    Raises
    ------
    FitError
        Naming the file, row and column: unreadable file, no header, a missing or repeated
        column, a row with more fields than the header, no data rows, or a value that is not a
        number (an empty cell included).
    """
    path = Path(path)
    try:
        with path.open(newline="", encoding="utf-8-sig") as handle:  # -sig: drops Excel's BOM
            reader = csv.DictReader(handle, skipinitialspace=True)
            header = list(reader.fieldnames or [])
            columns = _columns(header, path)
            values: tuple[list[float], list[float]] = ([], [])
            labels = []
            for record in reader:
                extra = record.get(None)  # type: ignore[call-overload]  # fields past the header
                if extra:
                    raise FitError(
                        f"{path}: row {reader.line_num} has {len(header) + len(extra)} fields, "
                        f"the header {len(header)}: a stray comma, or a decimal comma (write "
                        "0.5, not 0,5)"
                    )
                for column, into in zip(columns, values, strict=True):
                    text = (record.get(column) or "").strip()
                    try:
                        into.append(float(text))
                    except ValueError:
                        raise FitError(
                            f"{path}: row {reader.line_num}, column '{column.strip()}': "
                            f"{text!r} is not a number"
                        ) from None
                labels.append(f"row {reader.line_num}")
    except OSError as exc:
        raise FitError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except (UnicodeDecodeError, csv.Error) as exc:
        raise FitError(f"{path}: not a CSV file: {exc}") from exc
    if not labels:
        raise FitError(f"{path}: no data rows (only the header)")
    return values[0], values[1], labels, (columns[0].strip(), columns[1].strip())


def fit_csv(path: str | Path, floor_w: float | None = None) -> FitResult:
    """Read a CSV (see :func:`read_points`) and fit it with :func:`~eams.calibrate.fit.fit_linear`.

    Raises
    ------
    FitError
        From either step, prefixed with the file name; a bad value names its row and column
        (NaN, utilisation outside 0–1, power at or below the floor), and a file with fewer than
        3 distinct levels names the utilisation column. Also when the fitted power falls with
        load (P_max < P_idle) or the points lie exactly on the line (zero scatter: the 95 %
        intervals would have zero width).

    The readings' resolution (:func:`csv_resolution_w`) floors the fit's residual scale.
    """
    utilisation, power_w, labels, columns = read_points(path)
    try:
        result = fit_linear(
            utilisation,
            power_w,
            floor_w=floor_w,
            labels=labels,
            columns=columns,
            resolution_w=csv_resolution_w(power_w),
        )
    except FitError as exc:
        raise FitError(f"{path}: {exc}") from exc
    if result.p_max_w < result.p_idle_w:
        raise FitError(
            f"{path}: power falls as load rises (P_max {result.p_max_w:.2f} W < P_idle "
            f"{result.p_idle_w:.2f} W): not one node's load sweep; check that '{columns[0]}' "
            f"and '{columns[1]}' are the right columns"
        )
    if not result.rmse_w > EXACT_RMSE_W:
        raise FitError(
            f"{path}: the {result.n_points} points lie exactly on a line, so they leave no "
            "scatter to size the 95 % intervals with (they would be zero wide); give the "
            "measured samples, several per level, not the line's values"
        )
    return result
