"""Read the points of ``eams calibrate fit FILE``: a CSV with ``utilization`` and ``power_w``."""

from __future__ import annotations

import csv
from pathlib import Path

from eams.calibrate.errors import FitError
from eams.calibrate.fit import FitResult, fit_linear

COLUMNS = ("utilization", "power_w")


def read_points(path: str | Path) -> tuple[list[float], list[float], list[str]]:
    """Read (utilisation, power_w, row labels) from a CSV; other columns are ignored.

    Rows are numbered as a spreadsheet shows them: the header is row 1.

    Raises
    ------
    FitError
        Naming the file, row and column: unreadable file, no header, a missing column, or a
        value that is not a number (an empty cell included).
    """
    path = Path(path)
    try:
        with path.open(newline="") as handle:
            reader = csv.DictReader(handle)
            header = reader.fieldnames or []
            missing = [c for c in COLUMNS if c not in header]
            if missing:
                raise FitError(
                    f"{path}: missing column '{missing[0]}' (row 1 has: "
                    f"{', '.join(header) or 'nothing'})"
                )
            values: tuple[list[float], list[float]] = ([], [])
            labels = []
            for record in reader:
                for column, into in zip(COLUMNS, values, strict=True):
                    text = (record.get(column) or "").strip()
                    try:
                        into.append(float(text))
                    except ValueError:
                        raise FitError(
                            f"{path}: row {reader.line_num}, column '{column}': "
                            f"{text!r} is not a number"
                        ) from None
                labels.append(f"row {reader.line_num}")
    except OSError as exc:
        raise FitError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except (UnicodeDecodeError, csv.Error) as exc:
        raise FitError(f"{path}: not a CSV file: {exc}") from exc
    return values[0], values[1], labels


def fit_csv(path: str | Path, floor_w: float | None = None) -> FitResult:
    """Read a CSV (see :func:`read_points`) and fit it with :func:`~eams.calibrate.fit.fit_linear`.

    Raises
    ------
    FitError
        From either step, prefixed with the file name; a bad value names its row and column
        (NaN, utilisation outside 0–1, power at or below the floor), and a file with fewer than
        3 distinct levels names the ``utilization`` column.
    """
    utilisation, power_w, labels = read_points(path)
    try:
        return fit_linear(utilisation, power_w, floor_w=floor_w, labels=labels, columns=COLUMNS)
    except FitError as exc:
        raise FitError(f"{path}: {exc}") from exc
