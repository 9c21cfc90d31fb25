"""Errors of the wall-power check (VT-5)::

EamsError
└── CalibrationError
    └── WallPowerError             every failure names the run (A or B) and what was wrong
        ├── RunSpecError           a run SPEC does not parse (names the part and the format)
        ├── RunDataError           a run has no usable telemetry in its window, or a record is
        │                          malformed (names the file and line, or the query)
        ├── InfluxUnreachable      the InfluxDB server did not answer (names the URL)
        └── RunMismatchError       the two runs cannot be compared: a node is missing in one,
                                   a node has no calibration, or only one run states its work
"""

from eams.calibrate.errors import CalibrationError


class WallPowerError(CalibrationError):
    """Base class of every wall-power check failure."""


class RunSpecError(WallPowerError, ValueError):
    """A run SPEC is malformed; the message names the part and shows the accepted forms."""


class RunDataError(WallPowerError):
    """A run's telemetry is absent from its window or malformed."""


class InfluxUnreachable(WallPowerError):
    """The InfluxDB server of a run could not be reached or timed out."""


class RunMismatchError(WallPowerError):
    """The two runs (or a run and the calibration) do not describe the same fleet."""
