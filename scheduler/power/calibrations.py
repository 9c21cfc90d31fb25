"""The power manager's calibrations folder (``--calibrations``): one calibration per node, whose
line, speed and measured sleep state the policy reads through
:func:`eams.calibrate.powerstates.figures.node_figures`.
"""

from __future__ import annotations

from pathlib import Path

from eams.calibrate.calfile import Calibration
from eams.calibrate.calfolder import load_calibration_folder
from eams.calibrate.errors import CalibrationFileError
from eams.scheduler.power.errors import ManagerConfigError


def read_folder(folder: str | Path) -> dict[str, Calibration]:
    """Node name → calibration, from every calibration file of ``folder``
    (:func:`eams.calibrate.calfolder.load_calibration_folder`).

    Raises
    ------
    ManagerConfigError
        ``--calibrations``: not a folder, a file that does not load, or a node calibrated by
        two files (names them).
    """
    try:
        return {node: cal for node, (_, cal) in load_calibration_folder(folder).items()}
    except CalibrationFileError as exc:
        raise ManagerConfigError(f"--calibrations: {exc}") from exc
