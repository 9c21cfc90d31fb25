"""Errors of the meter package::

EamsError
└── MeterError                 every failure names the host/port (or device) and what failed
    ├── BadMeterUrl            the meter URL does not parse or names an unknown scheme/option
    ├── MeterUnreachable       connection refused, no route, closed port, device absent
    ├── MeterTimeout           no answer within the deadline (timeout × (retries + 1) + slack)
    ├── MeterAuthError         wrong community (seen as a timeout by v2c), v3 key or user
    ├── UnknownDevice          no driver matches sysObjectID/sysDescr, or --driver is unknown
    ├── MeterProtocolError     the device answered, but wrongly: noSuchObject, a string where a
    │                          number belongs, a CRC error, a truncated frame
    ├── WrongEventLoop         an SNMP meter used from an event loop other than its own
    ├── SwitchError            an outlet switch was not done, or not confirmed (names the outlet)
    │   ├── NotConfirmed       the operator did not confirm (no --yes): nothing was sent
    │   ├── UnknownOutlet      the PDU has no such outlet
    │   ├── SwitchUnsupported  the family, the model or the meter cannot switch outlets
    │   ├── WriteRefused       the agent refused the SET: a read-only community or user
    │   │                      (noAccess, notWritable, authorizationError) or the value
    │   └── ReadBackDiffers    the state read back after the wait is not the one asked for
    └── WolError               a Wake-on-LAN packet could not be built, parsed or sent
        ├── BadMacAddress      a MAC address (or SecureOn password) does not parse
        └── BadMagicPacket     a datagram is not a magic packet
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


class WrongEventLoop(MeterError, RuntimeError):
    """An SNMP meter was read or closed from an event loop other than the one it first read in.

    Its pysnmp engine (socket, timers) lives on that loop until ``close()``; the message says
    what to do: one meter per event loop, or :class:`~eams.meter.blocking.BlockingMeter`.
    """


class SwitchError(MeterError):
    """An outlet switch was not done or not confirmed; the message names PDU and outlet."""


class NotConfirmed(SwitchError):
    """Switching power needs the operator's explicit confirmation (``--yes``); nothing was sent."""


class UnknownOutlet(SwitchError, ValueError):
    """The PDU has no outlet with that number; the message lists the ones it has."""


class SwitchUnsupported(SwitchError):
    """The family has no switching objects, this model or outlet publishes none, or the meter
    is not a PDU (serial meters only measure)."""


class WriteRefused(SwitchError):
    """The agent answered the SET with an error status (read-only community or user, a value
    it does not accept, an object it does not have); the message gives the status's name."""


class ReadBackDiffers(SwitchError):
    """After the SET, the outlet state read back within the wait is not the one asked for."""


class WolError(MeterError):
    """A Wake-on-LAN magic packet could not be built, parsed or sent."""


class BadMacAddress(WolError, ValueError):
    """A MAC address or SecureOn password is malformed; the message shows the accepted forms."""


class BadMagicPacket(WolError, ValueError):
    """A datagram is not a Wake-on-LAN magic packet; the message says what is wrong."""
