"""Read per-outlet power at the wall from metered PDUs (SNMP) and serial meters.

One job: turn a meter URL into a :class:`~eams.meter.reading.Reading` in SI units, with a
missing value as ``None``, never 0. See ``meter/README.md`` for the supported devices.
"""

from eams.meter.blocking import BlockingMeter
from eams.meter.errors import (
    BadMeterUrl,
    MeterAuthError,
    MeterError,
    MeterProtocolError,
    MeterTimeout,
    MeterUnreachable,
    UnknownDevice,
)
from eams.meter.open import open_meter
from eams.meter.reading import OutletReading, Reading
from eams.meter.url import MeterUrl, parse_meter_url

__all__ = [
    "BadMeterUrl",
    "BlockingMeter",
    "MeterAuthError",
    "MeterError",
    "MeterProtocolError",
    "MeterTimeout",
    "MeterUnreachable",
    "MeterUrl",
    "OutletReading",
    "Reading",
    "UnknownDevice",
    "open_meter",
    "parse_meter_url",
]
