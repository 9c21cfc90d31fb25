"""Errors of the calibrate package::

EamsError
└── CalibrationError
    ├── ModelError             a power model with impossible values or utilisation
    ├── FitError               the data cannot be fitted (names the row and column)
    ├── CalibrationFileError   a calibration file is malformed or of a newer schema (names
    │                          the field)
    └── SweepError             a sweep could not run or was stopped (names node and level)
"""

from eams.errors import EamsError


class CalibrationError(EamsError):
    """Base class of every calibration failure."""


class ModelError(CalibrationError, ValueError):
    """A power model with non-finite or impossible values, or a utilisation outside [0, 1]."""


class FitError(CalibrationError, ValueError):
    """The data cannot be fitted; the message names the row and column at fault."""


class CalibrationFileError(CalibrationError, ValueError):
    """A calibration file is malformed, of another node, or of a newer schema."""


class SweepError(CalibrationError):
    """A sweep failed; partial data, when any, is kept and the message says where.

    Attributes
    ----------
    partial : object or None
        The :class:`eams.calibrate.sweep.SweepRecord` of the levels measured before the failure,
        or ``None`` when none was.
    """

    def __init__(self, message: str, partial: object | None = None) -> None:
        super().__init__(message)
        self.partial = partial
