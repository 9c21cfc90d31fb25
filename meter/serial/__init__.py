"""Serial meters: Eastron SDM120/SDM630 (Modbus-RTU) and the Watts Up? PRO logging protocol.

One entry point, :func:`open_serial_meter`, for ``serial://DEVICE?protocol=...`` URLs.
"""

from __future__ import annotations

from eams.meter.base import Meter
from eams.meter.errors import BadMeterUrl
from eams.meter.serial.eastron import EastronMeter
from eams.meter.serial.wattsup import WattsUpMeter
from eams.meter.url import MeterUrl, parse_meter_url

__all__ = ["EastronMeter", "WattsUpMeter", "open_serial_meter"]


def open_serial_meter(url: MeterUrl | str, *, timeout_s: float = 1.0, retries: int = 1) -> Meter:
    """Open the serial meter named by ``url``.

    Parameters
    ----------
    url : MeterUrl or str
        ``serial://DEVICE?protocol=sdm120|sdm630|wattsup&baudrate=9600&unit=1`` (DEVICE is a
        path such as ``/dev/ttyUSB0``, or a pyserial URL handler).
    timeout_s : float
        Seconds to wait for one reply (Modbus) or one record (Watts Up).
    retries : int
        Retries after the first try; a read is bounded by timeout × (retries + 1) + slack
        (per Modbus request).

    Returns
    -------
    Meter
        :class:`EastronMeter` or :class:`WattsUpMeter`, its device already open.

    Raises
    ------
    BadMeterUrl
        The URL does not parse or is not ``serial://``.
    MeterUnreachable
        The serial device cannot be opened.
    """
    parsed = parse_meter_url(url) if isinstance(url, str) else url
    if parsed.scheme != "serial":
        raise BadMeterUrl(f"{parsed.redacted()}: not a serial:// URL")
    if parsed.options["protocol"] == "wattsup":
        return WattsUpMeter(parsed, timeout_s=timeout_s, retries=retries)
    return EastronMeter(parsed, timeout_s=timeout_s, retries=retries)
