"""The simulator's Wake-on-LAN port: magic packets on one loopback UDP socket, matched to the
virtual nodes by MAC (as every NIC on one link sees every broadcast and keeps its own)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from eams.meter.errors import BadMagicPacket
from eams.meter.wol import parse_magic_packet

log = logging.getLogger(__name__)


class WakeProtocol(asyncio.DatagramProtocol):
    """Pass the MAC of each magic packet received to ``on_packet``; ignore other datagrams.

    Parameters
    ----------
    on_packet : callable
        Called with the target MAC (``aa:bb:cc:dd:ee:ff``) of every well-formed packet, on the
        simulator's event-loop thread. A SecureOn password, if any, is not checked.
    """

    def __init__(self, on_packet: Callable[[str], None]) -> None:
        self._on_packet = on_packet

    def datagram_received(self, data: bytes, addr: tuple[str | object, int]) -> None:
        try:
            packet = parse_magic_packet(data)
        except BadMagicPacket as exc:
            log.info("Wake-on-LAN port: ignored %d bytes from %s: %s", len(data), addr, exc)
            return
        self._on_packet(packet.mac)
