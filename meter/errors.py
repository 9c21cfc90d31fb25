"""Errors of the meter package::

EamsError
└── MeterError                 every failure names the host/port (or device) and what failed
    ├── BadMeterUrl            the meter URL does not parse or names an unknown scheme/option
    ├── MeterUnreachable       connection refused, no route, closed port, device absent
    ├── MeterTimeout           no answer within the deadline (timeout × (retries + 1) + slack)
    ├── MeterAuthError         wrong community (seen as a timeout by v2c), v3 key or user
    ├── UnknownDevice          no driver matches sysObjectID/sysDescr, or --driver is unknown
    └── MeterProtocolError     the device answered, but wrongly: noSuchObject, a string where a
                               number belongs, a CRC error, a truncated frame
"""

from eams.errors import EamsError


class MeterError(EamsError):
    """Base class of every meter failure."""


class BadMeterUrl(MeterError, ValueError):
    """The meter URL is malformed; the message names the part that is wrong."""


class MeterUnreachable(MeterError):
    """The meter could not be reached at all (refused, no route, missing serial device)."""


class MeterTimeout(MeterError):
    """The meter did not answer within the read deadline."""


class MeterAuthError(MeterError):
    """The meter refused our credentials (SNMPv3 key/user, or a community it rejects)."""


class UnknownDevice(MeterError):
    """No driver fits the device, or the driver named by the operator does not exist."""


class MeterProtocolError(MeterError):
    """The device answered with something that is not a valid reading."""
