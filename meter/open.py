"""``open_meter``: the one entry point from a meter URL to a :class:`~eams.meter.base.Meter`."""

from __future__ import annotations

from eams.meter.base import Meter
from eams.meter.errors import BadMeterUrl
from eams.meter.url import MeterUrl, parse_meter_url


def open_meter(
    url: str | MeterUrl,
    *,
    driver: str | None = None,
    timeout_s: float = 1.0,
    retries: int = 1,
) -> Meter:
    """Open the meter a URL names; no I/O happens until the first ``read()``.

    Parameters
    ----------
    url : str or MeterUrl
        ``snmp://``, ``snmpv3://`` or ``serial://`` (see :mod:`eams.meter.url`).
    driver : str, optional
        SNMP: a family of ``meter/snmp/profiles.yaml`` (e.g. ``apc_rpdu2``), skipping
        detection from sysObjectID. Not accepted for serial meters (their protocol is in the
        URL).
    timeout_s : float
        Seconds to wait for one answer (> 0).
    retries : int
        Retries after the first try (>= 0). A read is bounded by timeout_s × (retries + 1)
        plus slack per request.

    Returns
    -------
    Meter
        ``async read() -> Reading`` and ``async close()``. An SNMP meter belongs to the event
        loop of its first read until ``close()``: concurrent reads in that loop share one
        engine, a read or close from another loop (a second ``asyncio.run``) raises
        :class:`~eams.meter.errors.WrongEventLoop`. Serial meters are bound to no loop.
        Synchronous callers use :class:`~eams.meter.blocking.BlockingMeter`.

    Raises
    ------
    BadMeterUrl
        For a malformed URL, a bad timeout/retries, ``driver`` with a serial URL, or v3 keys
        missing from the environment.
    UnknownDevice
        If ``driver`` names no known family.
    """
    parsed = url if isinstance(url, MeterUrl) else parse_meter_url(url)
    if not timeout_s > 0 or retries < 0:
        raise BadMeterUrl(
            f"{parsed.redacted()}: timeout_s must be > 0 and retries >= 0 "
            f"(got {timeout_s}, {retries})"
        )
    if parsed.scheme in ("snmp", "snmpv3"):
        from eams.meter.snmp.client import SnmpClient
        from eams.meter.snmp.meter import SnmpMeter

        client = SnmpClient(parsed, timeout_s=timeout_s, retries=retries)
        return SnmpMeter(parsed, client, driver=driver)
    if driver is not None:
        raise BadMeterUrl(f"{parsed.redacted()}: --driver applies to SNMP meters only")
    from eams.meter.serial import open_serial_meter  # built separately; imported when needed

    return open_serial_meter(parsed, timeout_s=timeout_s, retries=retries)
