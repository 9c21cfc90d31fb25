"""Read per-outlet power at the wall from metered PDUs (SNMP) and serial meters.

One job: turn a meter URL into a :class:`~eams.meter.reading.Reading` in SI units, with a
missing value as ``None``, never 0. Switched PDUs also give each outlet's state and switch it
(:func:`eams.meter.snmp.switch_outlet`); :mod:`eams.meter.wol` builds and sends Wake-on-LAN
packets. See ``meter/README.md`` for the supported devices.
"""

from eams.meter.blocking import BlockingMeter
from eams.meter.errors import (
    BadMacAddress,
    BadMagicPacket,
    BadMeterUrl,
    MeterAuthError,
    MeterError,
    MeterProtocolError,
    MeterTimeout,
    MeterUnreachable,
    NotConfirmed,
    ReadBackDiffers,
    SwitchError,
    SwitchUnsupported,
    UnknownDevice,
    UnknownOutlet,
    WolError,
    WriteRefused,
    WrongEventLoop,
)
from eams.meter.open import open_meter
from eams.meter.reading import OutletReading, Reading
from eams.meter.url import MeterUrl, parse_meter_url

__all__ = [
    "BadMacAddress",
    "BadMagicPacket",
    "BadMeterUrl",
    "BlockingMeter",
    "MeterAuthError",
    "MeterError",
    "MeterProtocolError",
    "MeterTimeout",
    "MeterUnreachable",
    "MeterUrl",
    "NotConfirmed",
    "OutletReading",
    "ReadBackDiffers",
    "Reading",
    "SwitchError",
    "SwitchUnsupported",
    "UnknownDevice",
    "UnknownOutlet",
    "WolError",
    "WriteRefused",
    "WrongEventLoop",
    "open_meter",
    "parse_meter_url",
]
