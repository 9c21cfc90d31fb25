"""A client's pysnmp engine: bound to one event loop, closed without a traceback.

A pysnmp engine's UDP socket and timer task live on the event loop that opened them.
:class:`LoopEngine` builds the engine on the first request, before any ``await`` (so
concurrent first requests share it), remembers that loop, and refuses any other loop with
:class:`~eams.meter.errors.WrongEventLoop` at once: pysnmp would send from the old loop's
socket, which nothing reads any more, and time out.

An asyncio datagram transport hands each datagram to pysnmp's dispatcher through
``loop.call_soon``, so a datagram read in the loop's turn before ``close_dispatcher()`` is
delivered one turn after it, to a transport the dispatcher no longer knows: pysnmp raises
``CarrierError: Unregistered transport`` and asyncio logs it with a traceback. On a loaded
machine that is what a late answer (one that comes after its request timed out) does when the
meter closes just then, and what a request does when the simulator stops just then.
:func:`close_engine` stops reading first, lets what was read reach the engine while its
transport is still registered (the engine drops an answer it no longer waits for, RFC 3412
§7.2.10; a request is processed, its reply no longer sent), and only then closes the dispatcher.

The client asks by numeric OID only, so its engine never loads a MIB module by name and
needs no ASN.1 MIB compiler. pysnmp builds pysmi's one on an engine's first request anyway
(0.5 s of CPU for its grammar), and that build's ``ast.literal_eval`` calls, run beside another
thread's, fail on CPython 3.11.7 with ``SystemError: AST constructor recursion depth mismatch``
(CPython gh-106905): it failed CI as a MeterProtocolError. :func:`new_engine` gives the engine
:class:`NoMibCompiler` instead.
"""

from __future__ import annotations

import asyncio

from pysnmp.carrier.asyncio.dgram import udp
from pysnmp.entity import config
from pysnmp.entity.engine import SnmpEngine
from pysnmp.smi.error import MibNotFoundError

from eams.meter.errors import WrongEventLoop


class NoMibCompiler:
    """The MIB compiler of an engine that asks by numeric OID: it compiles nothing.

    pysnmp calls ``compile`` only to load a MIB module by name that is not already a pysnmp
    Python module (``MibBuilder.load_modules``), which this client never asks for.
    """

    def compile(self, *mib_names: str, **_options: object) -> dict[str, str]:
        """Refuse: raises ``pysnmp.smi.error.MibNotFoundError`` naming ``mib_names``."""
        raise MibNotFoundError(
            f"{', '.join(mib_names)}: this client asks by numeric OID and compiles no MIB"
        )


def new_engine() -> SnmpEngine:
    """A pysnmp engine that never builds pysmi's MIB compiler (see the module docstring)."""
    engine = SnmpEngine()
    engine.get_mib_builder().set_mib_compiler(NoMibCompiler(), "")
    return engine


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


class LoopEngine:
    """At most one open pysnmp engine, owned by the event loop of its first use until closed.

    Parameters
    ----------
    meter : str
        The meter's redacted URL, for the messages.
    """

    def __init__(self, meter: str) -> None:
        self.meter = meter
        self._engine: SnmpEngine | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def current(self) -> SnmpEngine | None:
        """The open engine, or ``None`` before the first request and after ``close()``."""
        return self._engine

    def get(self) -> SnmpEngine:
        """The open engine, built now in the running loop if there is none; no ``await``.

        Raises
        ------
        WrongEventLoop
            If the engine is open in another event loop (nothing is sent).
        """
        loop = asyncio.get_running_loop()
        if self._engine is None:
            self._engine, self._loop = new_engine(), loop
        elif loop is not self._loop:
            raise self._wrong_loop(closing=False)
        return self._engine

    async def close(self) -> None:
        """Close the open engine (:func:`close_engine`); then any loop may build the next.

        Idempotent.

        Raises
        ------
        WrongEventLoop
            If the engine is open in another event loop.
        """
        engine = self._engine
        if engine is None:
            return
        if asyncio.get_running_loop() is not self._loop:
            raise self._wrong_loop(closing=True)
        self._engine = self._loop = None
        await close_engine(engine)

    def _wrong_loop(self, *, closing: bool) -> WrongEventLoop:
        ended = self._loop is not None and self._loop.is_closed()
        state = "which has ended" if ended else "which is still open"
        fix = (
            "close it in the event loop that read it, before that loop ends"
            if closing
            else "its SNMP engine lives there until close()"
        )
        return WrongEventLoop(
            f"{self.meter}: this meter first read in another event loop ({state}); {fix}; "
            f"open one meter per event loop (open_meter in the coroutine that reads it) or, "
            f"from synchronous code, use BlockingMeter"
        )
