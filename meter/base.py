"""The one interface every meter driver implements."""

from __future__ import annotations

from typing import Protocol

from eams.meter.reading import Reading
from eams.meter.url import MeterUrl


class Meter(Protocol):
    """A connected meter. Drivers are asyncio-based (pysnmp 7 is).

    ``read`` returns every outlet at one instant and never hangs: it is bounded by a deadline of
    timeout × (retries + 1) plus slack, and raises a :class:`~eams.meter.errors.MeterError`
    subclass naming host/port and the OID or register on failure. Reads may run concurrently.
    An SNMP meter is used in one event loop, from its first read until ``close()``
    (:class:`~eams.meter.errors.WrongEventLoop` otherwise).
    """

    url: MeterUrl

    async def read(self) -> Reading:
        """Read all outlets (and the device total where offered) in one call."""
        ...

    async def close(self) -> None:
        """Release sockets, serial ports and engines. Idempotent."""
        ...
