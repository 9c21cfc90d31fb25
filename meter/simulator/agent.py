"""The PDU simulator: a real SNMP agent (pysnmp 7 command responder) on loopback serving a
:class:`~eams.meter.simulator.pdu.VirtualPdu` as an APC rPDU2 switched, metered-by-outlet PDU,
and a Wake-on-LAN port its suspended nodes listen on.

The agent runs its own asyncio event loop on a private thread, so synchronous code (tests, the
``eams meter simulate`` command, the demo) can drive it with plain calls. Every request is
answered from a snapshot of all outlets computed at request time (reused for at most
:data:`SNAPSHOT_MAX_AGE_S`, so the several GETNEXT steps of one GETBULK see one instant).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from pysnmp.entity import engine
from pysnmp.smi import error as smi_error

from eams.meter.simulator.apc_rpdu2 import (
    COMMANDS,
    OID,
    OutletInstant,
    PduInstant,
    apc_rpdu2_objects,
    command_outlet,
)
from eams.meter.simulator.engine import build_engine
from eams.meter.simulator.errors import SimulatorError
from eams.meter.simulator.instrum import Prepare, SnapshotInstrum
from eams.meter.simulator.outlets import VirtualOutlet
from eams.meter.simulator.pdu import VirtualPdu
from eams.meter.simulator.wake import WakeProtocol
from eams.meter.snmp.dispatch import close_engine

log = logging.getLogger(__name__)

SNAPSHOT_MAX_AGE_S = 0.05
"""How long one computed snapshot answers requests (s); every change invalidates it at once."""

START_TIMEOUT_S = 5.0


def _bind_udp(host: str, port: int, what: str) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise SimulatorError(
            f"cannot bind UDP {host}:{port} for {what}: {exc.strerror or exc}"
        ) from exc
    return sock


class PduSimulator(VirtualPdu):
    """A simulated APC rPDU2 switched, metered-by-outlet PDU serving SNMP on loopback.

    Parameters
    ----------
    outlets : sequence of VirtualOutlet
        Outlet 1 is ``outlets[0]``; each feeds one virtual node (curve, power states, MAC).
    host : str
        Address to bind (loopback by default), for SNMP and Wake-on-LAN.
    port : int
        SNMP UDP port; 0 picks a free one (read it back from :attr:`port`).
    community : str
        SNMP v2c community that reads (a SET with it is answered noAccess); other communities
        are ignored, as a real agent does.
    write_community : str or None
        v2c community that reads and writes (switches outlets); ``None``: none.
    voltage_v, power_factor, reboot_off_s, clock
        As :class:`~eams.meter.simulator.pdu.VirtualPdu`.
    v3_user, v3_auth_key, v3_priv_key : str, optional
        Also accept SNMPv3 authPriv (HMAC-SHA-96 / AES-128-CFB, RFC 3414/3826) for this user,
        with read and write access.
    metering_floor_a : float, optional
        Imitate APC's squelch (rpdu2g firmware ≥ 6.0.9 reports outlets drawing under 0.3 A
        as 0 A and 0 W; Schneider Electric FAQ FA156074): served power and current are 0
        below this current. Off by default; the energy counters and :meth:`state` keep the
        true values.
    wol_port : int
        UDP port of the Wake-on-LAN listener on ``host`` (0: a free one, see
        :attr:`wol_port`): a magic packet for a node's MAC wakes it from suspend or soft-off.

    Raises
    ------
    SimulatorError
        As :class:`VirtualPdu`, or a v3 user given without both keys of at least 8
        characters (RFC 3414).
    """

    def __init__(
        self,
        outlets: Sequence[VirtualOutlet],
        host: str = "127.0.0.1",
        port: int = 0,
        community: str = "public",
        *,
        write_community: str | None = "private",
        voltage_v: float = 230.0,
        power_factor: float = 0.95,
        reboot_off_s: float = 5.0,
        v3_user: str | None = None,
        v3_auth_key: str | None = None,
        v3_priv_key: str | None = None,
        metering_floor_a: float | None = None,
        wol_port: int = 0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(
            outlets,
            voltage_v=voltage_v,
            power_factor=power_factor,
            reboot_off_s=reboot_off_s,
            clock=clock,
        )
        self._v3: tuple[str, str, str] | None = None
        if v3_user:
            if not (v3_auth_key and v3_priv_key and min(map(len, (v3_auth_key, v3_priv_key))) >= 8):
                raise SimulatorError("SNMPv3 keys must both be given, at least 8 characters")
            self._v3 = (v3_user, v3_auth_key, v3_priv_key)
        self._host, self._port, self._wol_port = host, port, wol_port
        self._community, self._write_community = community, write_community
        self._floor_a = metering_floor_a
        self._started_at = datetime.now(UTC).strftime("%m/%d/%Y %H:%M:%S")
        self._cache: tuple[float, list[OID], dict[OID, object]] | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._engine: engine.SnmpEngine | None = None

    # --- the served object tree ------------------------------------------------------------

    def _changed(self) -> None:
        self._cache = None

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
                reboot_off_s=self._reboot_off_s,
                outlets=[
                    OutletInstant(
                        name=slot.outlet.name,
                        power_w=metered_w(slot.power_w),
                        current_a=metered_w(slot.power_w) / denominator,
                        energy_wh=slot.energy_wh,
                        peak_power_w=slot.peak_power_w,
                        switched_on=slot.relay_on,
                        command_pending=slot.reboot_pending,
                    )
                    for slot in self._outlets
                ],
            )
            objects = apc_rpdu2_objects(instant)
            oids = sorted(objects)
            self._cache = (now, oids, objects)
            return oids, objects

    def _writer(self, oid: OID) -> Prepare | None:
        """rPDU2OutletSwitchedControlCommand.N is the one writable object."""
        outlet = command_outlet(oid)
        if outlet is None or not 1 <= outlet <= self.outlet_count:
            return None

        def prepare(value: int) -> Callable[[], None]:
            if value not in COMMANDS:
                raise smi_error.WrongValueError()
            return lambda: self.switch_outlet(outlet, COMMANDS[value])

        return prepare

    # --- the agent -------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The bound SNMP UDP port (after :meth:`start`; the requested one before)."""
        return self._port

    @property
    def wol_port(self) -> int:
        """The bound Wake-on-LAN UDP port (after :meth:`start`; the requested one before)."""
        return self._wol_port

    @property
    def url(self) -> str:
        """``snmp://COMMUNITY@HOST:PORT`` (reads only): what :func:`open_meter` takes."""
        return f"snmp://{self._community}@{self._host}:{self._port}"

    @property
    def write_url(self) -> str | None:
        """``snmp://WRITE_COMMUNITY@HOST:PORT`` (reads and switches), if there is one."""
        if self._write_community is None:
            return None
        return f"snmp://{self._write_community}@{self._host}:{self._port}"

    @property
    def v3_url(self) -> str | None:
        """``snmpv3://USER@HOST:PORT?auth=SHA&priv=AES`` when a v3 user is configured."""
        if self._v3 is None:
            return None
        return f"snmpv3://{self._v3[0]}@{self._host}:{self._port}?auth=SHA&priv=AES"

    def _on_magic_packet(self, mac: str) -> None:
        woken = self.wake(mac)
        log.info("magic packet for %s: %s", mac, f"woke outlet(s) {woken}" if woken else "no-op")

    def _run(
        self,
        socks: tuple[socket.socket, socket.socket],
        ready: threading.Event,
        failure: list[Exception],
    ) -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        self._loop = loop
        wake_transport = None
        try:
            instrum = SnapshotInstrum(self._snapshot, self._writer)
            self._engine = build_engine(
                loop,
                socks[0],
                instrum,
                community=self._community,
                write_community=self._write_community,
                v3=self._v3,
            )
            endpoint = loop.create_datagram_endpoint(
                lambda: WakeProtocol(self._on_magic_packet), sock=socks[1]
            )
            wake_transport, _ = loop.run_until_complete(endpoint)
            loop.call_soon(ready.set)
            loop.run_forever()
        except Exception as exc:  # reported to start(), which raises it in the caller's thread
            failure.append(exc)
            ready.set()
        finally:
            if wake_transport is not None:
                wake_transport.close()
            if self._engine is not None:  # requests already read are not left to a traceback
                loop.run_until_complete(close_engine(self._engine))
            loop.run_until_complete(asyncio.sleep(0))
            loop.close()

    def start(self) -> PduSimulator:
        """Bind the SNMP and Wake-on-LAN ports and start answering on a private thread.

        Returns
        -------
        PduSimulator
            ``self``, so ``sim = PduSimulator(...).start()`` works.

        Raises
        ------
        SimulatorError
            If already started, a port cannot be bound, or the engine fails to start.
        """
        if self._thread is not None:
            raise SimulatorError("the simulator is already running")
        snmp_sock = _bind_udp(self._host, self._port, "SNMP")
        try:
            wol_sock = _bind_udp(self._host, self._wol_port, "Wake-on-LAN")
        except SimulatorError:
            snmp_sock.close()
            raise
        self._port, self._wol_port = snmp_sock.getsockname()[1], wol_sock.getsockname()[1]
        ready = threading.Event()
        failure: list[Exception] = []
        self._thread = threading.Thread(
            target=self._run,
            args=((snmp_sock, wol_sock), ready, failure),
            name=f"pdu-sim:{self._port}",
            daemon=True,
        )
        self._thread.start()
        if not ready.wait(START_TIMEOUT_S) or failure:
            self.stop()
            snmp_sock.close()
            wol_sock.close()
            raise SimulatorError(
                f"SNMP agent on {self._host}:{self._port} did not start: "
                f"{failure[0] if failure else 'timeout'}"
            )
        return self

    def stop(self) -> None:
        """Stop answering and release the ports. Idempotent."""
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
