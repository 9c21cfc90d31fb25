"""Errors of the PDU simulator::

MeterError
└── SimulatorError        the simulator cannot start (port in use) or was misused
    └── SpecPowerError    a SPECpower table is absent or a row is malformed
"""

from eams.meter.errors import MeterError


class SimulatorError(MeterError):
    """The simulator could not start or was given an outlet it does not have."""


class SpecPowerError(SimulatorError, ValueError):
    """A SPECpower results file is missing or malformed; the message names file, line, column."""
