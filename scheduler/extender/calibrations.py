"""Per-node power calibrations for the extender, read once from a folder.

Each file is one :class:`eams.calibrate.calfile.Calibration` (``calibrate`` writes them with
``save_calibration``); the node name comes from the calibration, not the file name.
"""

from __future__ import annotations

from pathlib import Path

from eams.calibrate.calfile import Calibration, load_calibration
from eams.errors import EamsError
from eams.scheduler.extender.errors import ExtenderConfigError

# ``eams calibrate sweep`` leaves unfinished sweeps beside the calibrations as NAME.partial.json.
PARTIAL_SUFFIX = ".partial.json"


def load_calibrations(folder: Path) -> dict[str, Calibration]:
    """Load every calibration file in ``folder`` (not recursive).

    Parameters
    ----------
    folder : Path
        Folder of ``NAME.json`` calibration files (``*.partial.json`` sweeps are skipped).

    Returns
    -------
    dict of str to Calibration
        Node name → calibration; empty if the folder holds none.

    Raises
    ------
    ExtenderConfigError
        A file cannot be read, or two files calibrate the same node; names the file(s).
    """
    found: dict[str, Calibration] = {}
    origin: dict[str, Path] = {}
    for path in sorted(Path(folder).iterdir()):
        if path.suffix != ".json" or path.name.endswith(PARTIAL_SUFFIX) or not path.is_file():
            continue
        try:
            calibration = load_calibration(path)
        except EamsError as exc:
            raise ExtenderConfigError(f"calibrations_dir: {path}: {exc}") from exc
        if calibration.node in found:
            raise ExtenderConfigError(
                f"calibrations_dir: node {calibration.node!r} calibrated twice "
                f"({origin[calibration.node].name}, {path.name})"
            )
        found[calibration.node] = calibration
        origin[calibration.node] = path
    return found
