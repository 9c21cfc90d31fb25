"""The fleet's calibrated models, read from a directory of calibration files (``NODE.json``)."""

from __future__ import annotations

from pathlib import Path

from eams.calibrate.calfile import Calibration
from eams.calibrate.calfolder import load_calibration_folder
from eams.calibrate.errors import CalibrationFileError, ModelError
from eams.calibrate.wallpower.errors import RunMismatchError
from eams.calibrate.wallpower.nodes import NodeModel

Z95 = 1.959964
"""Two-sided 95 % quantile of the standard normal: a 95 % CI half-width / Z95 = σ."""


def node_model(calibration: Calibration, source: str = "") -> NodeModel:
    """A node's calibrated curve with σ of P_idle and P_max from the calibration's 95 %
    intervals, and σ of the active idle (:attr:`Calibration.p_active_idle_sd_w`) where the
    curve steps to it."""
    idle_ci, max_ci = calibration.p_idle_ci95_w, calibration.p_max_ci95_w
    if idle_ci is None or max_ci is None:
        raise ModelError("the fit has no 95 % intervals of P_idle and P_max (VT-5 needs them)")
    lo_i, hi_i = idle_ci
    lo_m, hi_m = max_ci
    model = calibration.model()
    return NodeModel(
        node=calibration.node,
        model=model,
        p_idle_sd_w=(hi_i - lo_i) / 2 / Z95,
        p_max_sd_w=(hi_m - lo_m) / 2 / Z95,
        p_active_idle_sd_w=calibration.p_active_idle_sd_w if model.stepped else None,
        source=source,
    )


def load_fleet(directory: Path) -> dict[str, NodeModel]:
    """Every ``*.json`` calibration in ``directory`` (``*.partial.json`` sweeps are skipped).

    Parameters
    ----------
    directory : Path

    Returns
    -------
    dict of str to NodeModel
        Keyed by the file's ``node`` field.

    Raises
    ------
    RunMismatchError
        The directory does not exist or holds no calibration.
    CalibrationFileError
        A file is malformed (naming it and the field), two files claim one node (naming
        both), or a model is impossible (P_max below P_idle, negative P_idle), naming the file.
    """
    if not directory.is_dir():
        raise RunMismatchError(f"calibration directory {directory} does not exist")
    fleet: dict[str, NodeModel] = {}
    for node, (path, calibration) in load_calibration_folder(directory).items():
        try:
            fleet[node] = node_model(calibration, str(path))
        except ModelError as exc:  # a well-formed file whose line is impossible
            raise CalibrationFileError(f"{path}: {exc}") from exc
    if not fleet:
        raise RunMismatchError(f"no calibration file (NODE.json) in {directory}")
    return fleet
