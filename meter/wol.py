"""Wake-on-LAN: build, parse and send the magic packet that wakes a sleeping node.

The format is AMD's (white paper "Magic Packet Technology", publication 20213, rev. A, 1995):
a synchronisation stream of six ``0xFF`` bytes, then sixteen repetitions of the target NIC's
48-bit MAC address. Carried, as every common tool does (``wakeonlan``, ``etherwake -b`` over
IP), as the whole payload of one UDP datagram to a broadcast or unicast address, port 9
(discard, RFC 863) by default. NICs with SecureOn take a 4- or 6-byte password appended to the
packet (ethtool(8) ``wol s`` / ``sopass xx:yy:zz:aa:bb:cc``; ether-wake(8) ``-p``, written as
six hex octets or as four dotted decimals).

Used by the PDU simulator (whose suspended nodes wake on it) and by the power commands.
"""

from __future__ import annotations

import re
import socket
from dataclasses import dataclass

from eams.meter.errors import BadMacAddress, BadMagicPacket, WolError

MAC_LENGTH = 6
"""Bytes in an IEEE 802 MAC-48 address."""
SYNC_STREAM = b"\xff" * 6
"""The synchronisation stream that opens a magic packet (AMD 20213)."""
MAC_REPEATS = 16
"""How many times the MAC follows the synchronisation stream (AMD 20213)."""
PASSWORD_LENGTHS = (4, 6)
"""SecureOn password lengths in bytes (ethtool ``sopass``: 6; ether-wake ``-p``: 4 or 6)."""
PACKET_LENGTH = len(SYNC_STREAM) + MAC_REPEATS * MAC_LENGTH
"""102 bytes: a magic packet without a password."""
DEFAULT_ADDRESS = "255.255.255.255"
"""The limited broadcast address (RFC 919): every host on the local link."""
DEFAULT_PORT = 9
"""UDP discard port (RFC 863), the customary Wake-on-LAN port (7, echo, is the other)."""

_SEPARATED = re.compile(r"^[0-9A-Fa-f]{1,2}([:-])(?:[0-9A-Fa-f]{1,2}\1){4}[0-9A-Fa-f]{1,2}$")
_DOTTED = re.compile(r"^[0-9A-Fa-f]{4}\.[0-9A-Fa-f]{4}\.[0-9A-Fa-f]{4}$")
_BARE = re.compile(r"^[0-9A-Fa-f]{12}$")
_MAC_FORMS = "aa:bb:cc:dd:ee:ff, aa-bb-cc-dd-ee-ff, aabb.ccdd.eeff or aabbccddeeff"


def parse_mac(text: str) -> bytes:
    """The 6 bytes of a MAC address written in one of the usual forms.

    Parameters
    ----------
    text : str
        ``aa:bb:cc:dd:ee:ff`` (octets of one or two hex digits), ``aa-bb-cc-dd-ee-ff``,
        ``aabb.ccdd.eeff`` (Cisco) or ``aabbccddeeff``; case does not matter.

    Returns
    -------
    bytes
        Six bytes, first octet first.

    Raises
    ------
    BadMacAddress
        If ``text`` is none of those forms (the message shows them).
    """
    raw = text.strip() if isinstance(text, str) else ""
    if _SEPARATED.match(raw):
        return bytes(int(octet, 16) for octet in re.split("[:-]", raw))
    if _DOTTED.match(raw) or _BARE.match(raw):
        return bytes.fromhex(raw.replace(".", ""))
    raise BadMacAddress(f"{text!r} is not a MAC address; write it as {_MAC_FORMS}")


def parse_nic_mac(text: str) -> bytes:
    """The 6 bytes of a NIC's own (unicast) MAC address, the only kind a magic packet can name.

    Raises
    ------
    BadMacAddress
        If ``text`` is malformed (as :func:`parse_mac`) or a group address: the I/G bit, the
        least significant bit of the first octet, set (IEEE Std 802-2014, clause 8: multicast, and
        ``ff:ff:ff:ff:ff:ff``, the broadcast address), which no NIC answers to as its own.
    """
    mac = parse_mac(text)
    if mac[0] & 0x01:
        raise BadMacAddress(
            f"{text!r} is a group (multicast or broadcast) address, not a NIC's own: a magic "
            "packet must name the sleeping NIC's unicast MAC"
        )
    return mac


def format_mac(mac: bytes) -> str:
    """``aa:bb:cc:dd:ee:ff`` (lower case) for 6 bytes; raises BadMacAddress for another length."""
    if len(mac) != MAC_LENGTH:
        raise BadMacAddress(f"a MAC address has {MAC_LENGTH} bytes, not {len(mac)}: {mac!r}")
    return ":".join(f"{octet:02x}" for octet in mac)


def parse_password(text: str) -> bytes:
    """A SecureOn password: six hex octets (like a MAC) or four dotted decimals (like IPv4).

    Raises
    ------
    BadMacAddress
        If ``text`` is neither form.
    """
    parts = text.strip().split(".") if isinstance(text, str) else []
    if len(parts) == 4 and all(p.isdigit() and int(p) <= 255 for p in parts):
        return bytes(int(p) for p in parts)
    try:
        return parse_mac(text)
    except BadMacAddress:
        raise BadMacAddress(
            f"{text!r} is not a SecureOn password; write 6 bytes as aa:bb:cc:dd:ee:ff or "
            "4 bytes as a.b.c.d"
        ) from None


def _mac_bytes(mac: str | bytes) -> bytes:
    if isinstance(mac, bytes):
        return parse_nic_mac(format_mac(mac))  # checks the length and the I/G bit
    return parse_nic_mac(mac)


def _password_bytes(password: str | bytes | None) -> bytes:
    if password is None:
        return b""
    raw = password if isinstance(password, bytes) else parse_password(password)
    if len(raw) not in PASSWORD_LENGTHS:
        raise BadMacAddress(f"a SecureOn password has 4 or 6 bytes, not {len(raw)}")
    return raw


def magic_packet(mac: str | bytes, password: str | bytes | None = None) -> bytes:
    """The magic packet that wakes the NIC with address ``mac``.

    Parameters
    ----------
    mac : str or bytes
        The target's MAC (any form :func:`parse_mac` takes, or its 6 bytes).
    password : str or bytes, optional
        A SecureOn password (4 or 6 bytes, or text :func:`parse_password` takes), appended.

    Returns
    -------
    bytes
        102 bytes (6 × 0xFF, 16 × MAC), or 106 / 108 with a password.

    Raises
    ------
    BadMacAddress
        For a malformed MAC or password.
    """
    return SYNC_STREAM + _mac_bytes(mac) * MAC_REPEATS + _password_bytes(password)


@dataclass(frozen=True, slots=True)
class MagicPacket:
    """A parsed magic packet.

    Attributes
    ----------
    mac : str
        The target MAC, ``aa:bb:cc:dd:ee:ff``.
    password : bytes or None
        The SecureOn password, if the packet carries one.
    """

    mac: str
    password: bytes | None = None


def parse_magic_packet(data: bytes) -> MagicPacket:
    """Parse one UDP payload as a magic packet (the form :func:`magic_packet` builds).

    Raises
    ------
    BadMagicPacket
        If the length is not 102, 106 or 108 bytes, the synchronisation stream is missing, or
        the sixteen MAC repetitions differ.
    """
    lengths = [PACKET_LENGTH] + [PACKET_LENGTH + n for n in PASSWORD_LENGTHS]
    if len(data) not in lengths:
        raise BadMagicPacket(
            f"a magic packet has {', '.join(map(str, lengths))} bytes, not {len(data)}"
        )
    if not data.startswith(SYNC_STREAM):
        raise BadMagicPacket("a magic packet starts with six 0xFF bytes")
    body = data[len(SYNC_STREAM) : PACKET_LENGTH]
    mac = body[:MAC_LENGTH]
    if body != mac * MAC_REPEATS:
        raise BadMagicPacket("the sixteen MAC repetitions of the packet differ")
    password = data[PACKET_LENGTH:] or None
    return MagicPacket(mac=format_mac(mac), password=password)


def send_magic_packet(
    mac: str | bytes,
    *,
    address: str = DEFAULT_ADDRESS,
    port: int = DEFAULT_PORT,
    password: str | bytes | None = None,
) -> bytes:
    """Send the magic packet for ``mac`` in one UDP datagram (SO_BROADCAST set).

    Parameters
    ----------
    mac : str or bytes
        The target's MAC.
    address : str
        Broadcast (default ``255.255.255.255``, or a subnet's directed broadcast) or unicast
        IPv4 address or host name.
    port : int
        UDP port, 1–65535 (default 9).
    password : str or bytes, optional
        SecureOn password.

    Returns
    -------
    bytes
        The datagram sent.

    Raises
    ------
    BadMacAddress
        For a malformed MAC or password (nothing is sent).
    WolError
        For a port outside 1–65535, or when the address does not resolve or the datagram
        cannot be sent (the message names address:port and the OS reason).
    """
    packet = magic_packet(mac, password)
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise WolError(f"Wake-on-LAN port {port!r} is outside 1-65535")
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
            sock.sendto(packet, (address, port))
    except OSError as exc:
        raise WolError(
            f"cannot send the magic packet for {format_mac(packet[6:12])} to {address}:{port}: "
            f"{exc.strerror or exc}"
        ) from exc
    return packet
