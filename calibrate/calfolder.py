"""A folder of calibration files, one per node: how the extender, the power manager and the
wall-power check all read ``--calibrations DIR`` (one rule, one set of messages).

Every ``*.json`` file directly in the folder is a :class:`~eams.calibrate.calfile.Calibration`;
``*.partial.json`` (what ``eams calibrate sweep`` keeps of a sweep that stopped early) and
other files are skipped. The node name comes from the calibration, not the file name.
"""

from __future__ import annotations

from pathlib import Path

from eams.calibrate.calfile import Calibration, load_calibration
from eams.calibrate.errors import CalibrationFileError

PARTIAL_SUFFIX = ".partial.json"
"""Unfinished sweeps ``eams calibrate sweep`` leaves beside the calibrations."""


def load_calibration_folder(folder: str | Path) -> dict[str, tuple[Path, Calibration]]:
    """Node name → (its file, its calibration), for every calibration file in ``folder``.

    Parameters
    ----------
    folder : str or Path
        Folder of ``NAME.json`` calibration files (not recursive).

    Returns
    -------
    dict of str to (Path, Calibration)
        In file-name order; empty when the folder holds none (callers that need one say so).

    Raises
    ------
    CalibrationFileError
        ``folder`` is not a folder; a file does not load (the message names the file and the
        field); or two files calibrate one node (names both).
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise CalibrationFileError(f"{folder}: not a folder")
    found: dict[str, tuple[Path, Calibration]] = {}
    for path in sorted(folder.glob("*.json")):
        if path.name.endswith(PARTIAL_SUFFIX) or not path.is_file():
            continue
        calibration = load_calibration(path)
        if calibration.node in found:
            first = found[calibration.node][0]
            raise CalibrationFileError(
                f"{folder}: {first.name} and {path.name} both calibrate node {calibration.node!r}"
            )
        found[calibration.node] = (path, calibration)
    return found
