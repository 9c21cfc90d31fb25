"""Errors of the calibrate package::

EamsError
└── CalibrationError
    ├── FitError               the data cannot be fitted (names the row and column)
    ├── CalibrationFileError   a calibration file is malformed or of a newer schema (names
    │                          the field)
    └── SweepError             a sweep could not run or was stopped (names node and level)
"""

from eams.errors import EamsError


class CalibrationError(EamsError):
    """Base class of every calibration failure."""


class FitError(CalibrationError, ValueError):
    """The data cannot be fitted; the message names the row and column at fault."""


class CalibrationFileError(CalibrationError, ValueError):
    """A calibration file is malformed, of another node, or of a newer schema."""


class SweepError(CalibrationError):
    """A sweep failed; partial data, when any, is kept and the message says where."""
