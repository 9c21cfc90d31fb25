"""The PDU simulator: a real SNMP agent (pysnmp 7 command responder) on loopback whose outlet
power follows each virtual node's load through that node's power curve.

The agent runs its own asyncio event loop on a private thread, so synchronous code (tests, the
``eams meter simulate`` command, the demo) can drive it with plain calls. Every request is
answered from a snapshot of all outlets computed at request time (reused for at most
:data:`SNAPSHOT_MAX_AGE_S`, so the several GETNEXT steps of one GETBULK see one instant).
"""

from __future__ import annotations

import asyncio
import bisect
import socket
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from pysnmp.carrier.asyncio.dgram import udp
from pysnmp.entity import config, engine
from pysnmp.entity.rfc3413 import cmdrsp, context
from pysnmp.proto.api import v2c
from pysnmp.smi.instrum import AbstractMibInstrumController

from eams.meter.simulator.apc_rpdu2 import OID, OutletInstant, PduInstant, apc_rpdu2_objects
from eams.meter.simulator.errors import SimulatorError
from eams.meter.simulator.load import LoadSource
from eams.meter.simulator.outlets import OutletSlot, OutletState, VirtualOutlet

SNAPSHOT_MAX_AGE_S = 0.05
"""How long one computed snapshot answers requests (s); set_load invalidates it at once."""

START_TIMEOUT_S = 5.0


class _SnapshotInstrum(AbstractMibInstrumController):
    """Answers GET and GETNEXT (GETBULK is GETNEXT repeated) from a sorted object snapshot."""

    def __init__(self, snapshot: Callable[[], tuple[list[OID], dict[OID, object]]]) -> None:
        self._snapshot = snapshot

    def read_variables(self, *var_binds, **context):
        oids, objects = self._snapshot()
        answer = []
        for name, _ in var_binds:
            oid = tuple(name)
            value = objects.get(oid)
            if value is None:
                # noSuchInstance when the column exists, noSuchObject otherwise (RFC 3416 §4.2.1)
                i = bisect.bisect_left(oids, oid[:-1])
                column_exists = i < len(oids) and oids[i][: len(oid) - 1] == oid[:-1]
                value = v2c.NoSuchInstance() if column_exists else v2c.NoSuchObject()
            answer.append((v2c.ObjectIdentifier(oid), value))
        return answer

    def read_next_variables(self, *var_binds, **context):
        oids, objects = self._snapshot()
        answer = []
        for name, _ in var_binds:
            i = bisect.bisect_right(oids, tuple(name))
            if i < len(oids):
                answer.append((v2c.ObjectIdentifier(oids[i]), objects[oids[i]]))
            else:
                answer.append((name, v2c.EndOfMibView()))
        return answer


class PduSimulator:
    """A simulated APC rPDU2 Metered-by-Outlet PDU serving SNMP on loopback.

    Parameters
    ----------
    outlets : sequence of VirtualOutlet
        Outlet 1 is ``outlets[0]``.
    host : str
        Address to bind (loopback by default).
    port : int
        UDP port; 0 picks a free one (read it back from :attr:`port`).
    community : str
        SNMP v2c community accepted (others are ignored, as a real agent does).
    voltage_v : float
        Outlet RMS voltage (V), used for current = power / (voltage × power factor).
    power_factor : float
        Load power factor in (0, 1].
    v3_user, v3_auth_key, v3_priv_key : str, optional
        Also accept SNMPv3 authPriv (HMAC-SHA-96 / AES-128-CFB, RFC 3414/3826) for this user.
    metering_floor_a : float, optional
        Imitate APC's squelch (rpdu2g firmware ≥ 6.0.9 reports outlets drawing under 0.3 A
        as 0 A and 0 W; Schneider Electric FAQ FA156074): served power and current are 0
        below this current. Off by default; the energy counters and :meth:`state` keep the
        true values.
    clock : callable, optional
        Monotonic seconds; energy integrates over it (tests pass a clock they advance).

    Raises
    ------
    SimulatorError
        If there is no outlet, the voltage or power factor is out of range, or a v3 user is
        given without both keys of at least 8 characters (RFC 3414).

    Notes
    -----
    Energy: each outlet integrates its power over clock time, holding the power constant
    between load changes (exact for loads set with :meth:`set_load`). Load sources are polled
    at each request.
    """

    def __init__(
        self,
        outlets: Sequence[VirtualOutlet],
        host: str = "127.0.0.1",
        port: int = 0,
        community: str = "public",
        *,
        voltage_v: float = 230.0,
        power_factor: float = 0.95,
        v3_user: str | None = None,
        v3_auth_key: str | None = None,
        v3_priv_key: str | None = None,
        metering_floor_a: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not outlets:
            raise SimulatorError("PduSimulator needs at least one outlet")
        if not (voltage_v > 0 and 0 < power_factor <= 1):
            raise SimulatorError(f"bad voltage_v={voltage_v} or power_factor={power_factor}")
        if v3_user and not (
            v3_auth_key and v3_priv_key and min(map(len, (v3_auth_key, v3_priv_key))) >= 8
        ):
            raise SimulatorError("SNMPv3 keys must both be given, at least 8 characters")
        self._outlets = [OutletSlot(o) for o in outlets]
        self._host, self._port, self._community = host, port, community
        self._voltage_v, self._power_factor = voltage_v, power_factor
        self._v3 = (v3_user, v3_auth_key, v3_priv_key) if v3_user else None
        self._floor_a = metering_floor_a
        self._clock = clock
        self._lock = threading.Lock()
        self._t0_s = self._t_s = clock()
        self._started_at = datetime.now(UTC).strftime("%m/%d/%Y %H:%M:%S")
        self._cache: tuple[float, list[OID], dict[OID, object]] | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._engine: engine.SnmpEngine | None = None

    # --- load and ground truth -------------------------------------------------------------

    def _slot(self, outlet: int) -> OutletSlot:
        if not 1 <= outlet <= len(self._outlets):
            raise SimulatorError(f"no outlet {outlet}: this PDU has 1..{len(self._outlets)}")
        return self._outlets[outlet - 1]

    def _advance(self) -> None:
        """Integrate energy up to now, then poll load sources (caller holds the lock)."""
        now = self._clock()
        dt_h = max(0.0, now - self._t_s) / 3600.0
        self._t_s = now
        for slot in self._outlets:
            slot.energy_wh += slot.power_w * dt_h
            if slot.source is not None:
                utilisation = slot.source()
                if utilisation is not None:
                    slot.set_utilisation(utilisation)

    def set_load(self, outlet: int, utilisation: float) -> None:
        """Set outlet ``outlet``'s (1-based) load to ``utilisation`` (clipped to [0, 1]).

        Removes a load source set earlier on that outlet.

        Raises
        ------
        SimulatorError
            If the outlet does not exist.
        """
        slot = self._slot(outlet)
        with self._lock:
            self._advance()
            slot.source = None
            slot.set_utilisation(utilisation)
            self._cache = None

    def set_load_source(self, outlet: int, source: LoadSource | None) -> None:
        """Drive outlet ``outlet`` (1-based) from ``source()`` (polled at each request).

        ``source`` returns utilisation in [0, 1] or ``None`` (keep the previous load), e.g.
        :class:`HostCpuLoad`; ``None`` detaches it.
        """
        slot = self._slot(outlet)
        with self._lock:
            self._advance()
            slot.source = source
            self._cache = None

    def state(self, outlet: int) -> OutletState:
        """Ground truth of outlet ``outlet`` (1-based) now (energy integrated up to now)."""
        slot = self._slot(outlet)
        with self._lock:
            self._advance()
            return OutletState(
                utilisation=slot.utilisation,
                power_w=slot.power_w,
                current_a=slot.power_w / (self._voltage_v * self._power_factor),
                energy_wh=slot.energy_wh,
            )

    @property
    def voltage_v(self) -> float:
        """Outlet RMS voltage (V) the simulator serves."""
        return self._voltage_v

    @property
    def outlet_count(self) -> int:
        """Number of outlets."""
        return len(self._outlets)

    def _snapshot(self) -> tuple[list[OID], dict[OID, object]]:
        with self._lock:
            now = self._clock()
            if self._cache is not None and now - self._cache[0] <= SNAPSHOT_MAX_AGE_S:
                return self._cache[1], self._cache[2]
            self._advance()
            denominator = self._voltage_v * self._power_factor

            def metered_w(power_w: float) -> float:
                squelched = self._floor_a is not None and power_w / denominator < self._floor_a
                return 0.0 if squelched else power_w

            instant = PduInstant(
                uptime_s=now - self._t0_s,
                started_at=self._started_at,
                voltage_v=self._voltage_v,
                power_factor=self._power_factor,
                outlets=[
                    OutletInstant(
                        name=slot.outlet.name,
                        power_w=metered_w(slot.power_w),
                        current_a=metered_w(slot.power_w) / denominator,
                        energy_wh=slot.energy_wh,
                        peak_power_w=slot.peak_power_w,
                    )
                    for slot in self._outlets
                ],
            )
            objects = apc_rpdu2_objects(instant)
            oids = sorted(objects)
            self._cache = (now, oids, objects)
            return oids, objects

    # --- the agent -------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The bound UDP port (after :meth:`start`; the requested one before)."""
        return self._port

    @property
    def url(self) -> str:
        """``snmp://COMMUNITY@HOST:PORT``: what :func:`eams.meter.open.open_meter` takes."""
        return f"snmp://{self._community}@{self._host}:{self._port}"

    @property
    def v3_url(self) -> str | None:
        """``snmpv3://USER@HOST:PORT?auth=SHA&priv=AES`` when a v3 user is configured."""
        if self._v3 is None:
            return None
        return f"snmpv3://{self._v3[0]}@{self._host}:{self._port}?auth=SHA&priv=AES"

    def _configure(self, sock: socket.socket) -> None:
        """Build the SNMP engine on the agent loop (runs inside that loop)."""
        snmp_engine = engine.SnmpEngine()
        transport = udp.UdpAsyncioTransport(loop=self._loop).open_server_mode(sock=sock)
        config.add_transport(snmp_engine, udp.DOMAIN_NAME, transport)
        config.add_v1_system(snmp_engine, "eams-area", self._community)
        config.add_vacm_user(snmp_engine, 2, "eams-area", "noAuthNoPriv", (1, 3, 6))
        if self._v3 is not None:
            user, auth_key, priv_key = self._v3
            config.add_v3_user(
                snmp_engine,
                user,
                config.USM_AUTH_HMAC96_SHA,
                auth_key,
                config.USM_PRIV_CFB128_AES,
                priv_key,
            )
            config.add_vacm_user(snmp_engine, 3, user, "authPriv", (1, 3, 6))
        self._engine = snmp_engine
        snmp_context = context.SnmpContext(snmp_engine)
        snmp_context.unregister_context_name(b"")  # replace the engine's own MIB tree by ours
        snmp_context.register_context_name(v2c.OctetString(""), _SnapshotInstrum(self._snapshot))
        for responder in (
            cmdrsp.GetCommandResponder,
            cmdrsp.NextCommandResponder,
            cmdrsp.BulkCommandResponder,
        ):
            responder(snmp_engine, snmp_context)

    def _run(self, sock: socket.socket, ready: threading.Event, failure: list[Exception]) -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        self._loop = loop
        try:
            self._configure(sock)
            loop.call_soon(ready.set)
            loop.run_forever()
        except Exception as exc:  # reported to start(), which raises it in the caller's thread
            failure.append(exc)
            ready.set()
        finally:
            if self._engine is not None:
                self._engine.close_dispatcher()
            loop.run_until_complete(asyncio.sleep(0))
            loop.close()

    def start(self) -> PduSimulator:
        """Bind the UDP port and start answering on a private thread.

        Returns
        -------
        PduSimulator
            ``self``, so ``sim = PduSimulator(...).start()`` works.

        Raises
        ------
        SimulatorError
            If already started, the port cannot be bound, or the engine fails to start.
        """
        if self._thread is not None:
            raise SimulatorError("the simulator is already running")
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            sock.bind((self._host, self._port))
        except OSError as exc:
            sock.close()
            raise SimulatorError(
                f"cannot bind UDP {self._host}:{self._port}: {exc.strerror or exc}"
            ) from exc
        self._port = sock.getsockname()[1]
        ready = threading.Event()
        failure: list[Exception] = []
        self._thread = threading.Thread(
            target=self._run, args=(sock, ready, failure), name=f"pdu-sim:{self._port}", daemon=True
        )
        self._thread.start()
        if not ready.wait(START_TIMEOUT_S) or failure:
            self.stop()
            sock.close()
            raise SimulatorError(
                f"SNMP agent on {self._host}:{self._port} did not start: "
                f"{failure[0] if failure else 'timeout'}"
            )
        return self

    def stop(self) -> None:
        """Stop answering and release the port. Idempotent."""
        thread, loop = self._thread, self._loop
        if thread is None:
            return
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(loop.stop)
        thread.join(START_TIMEOUT_S)
        self._thread = self._loop = self._engine = None

    def __enter__(self) -> PduSimulator:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
