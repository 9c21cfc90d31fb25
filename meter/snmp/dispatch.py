"""Closing a pysnmp engine without a traceback for the datagrams its loop has already read.

An asyncio datagram transport hands each datagram to pysnmp's dispatcher through
``loop.call_soon``, so a datagram read in the loop's turn before ``close_dispatcher()`` is
delivered one turn after it, to a transport the dispatcher no longer knows: pysnmp raises
``CarrierError: Unregistered transport`` and asyncio logs it with a traceback. On a loaded
machine that is what a late answer (one that comes after its request timed out) does when the
meter closes just then, and what a request does when the simulator stops just then.
:func:`close_engine` stops reading first, lets what was read reach the engine while its
transport is still registered (the engine drops an answer it no longer waits for, RFC 3412
§7.2.10; a request is processed, its reply no longer sent), and only then closes the dispatcher.
"""

from __future__ import annotations

import asyncio

from pysnmp.carrier.asyncio.dgram import udp
from pysnmp.entity import config
from pysnmp.entity.engine import SnmpEngine


async def close_engine(engine: SnmpEngine) -> None:
    """Close ``engine``'s UDP transport, deliver what it has read, then close its dispatcher.

    Call it in the event loop the engine runs on. An engine that never opened a transport
    is closed at once.
    """
    transport = config.get_transport(engine, udp.DOMAIN_NAME)
    if transport is not None:
        transport.close_transport()  # the socket reads nothing more
        await asyncio.sleep(0)  # the loop's queued deliveries run before this task resumes
    engine.close_dispatcher()
