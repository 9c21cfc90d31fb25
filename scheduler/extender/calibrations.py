"""Per-node power calibrations for the extender, read once from a folder
(:func:`eams.calibrate.calfolder.load_calibration_folder`: ``*.partial.json`` skipped, the node
name from the calibration)."""

from __future__ import annotations

from pathlib import Path

from eams.calibrate.calfile import Calibration
from eams.calibrate.calfolder import load_calibration_folder
from eams.calibrate.errors import CalibrationFileError
from eams.scheduler.extender.errors import ExtenderConfigError


def load_calibrations(folder: Path) -> dict[str, Calibration]:
    """Node name → calibration, for every calibration file in ``folder``; empty if it holds
    none.

    Raises
    ------
    ExtenderConfigError
        ``calibrations_dir: …``: a file cannot be read, or two files calibrate the same node;
        names the file(s).
    """
    try:
        return {node: cal for node, (_, cal) in load_calibration_folder(folder).items()}
    except CalibrationFileError as exc:
        raise ExtenderConfigError(f"calibrations_dir: {exc}") from exc
