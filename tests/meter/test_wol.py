"""Wake-on-LAN magic packets: the bytes against the published format (AMD "Magic Packet
Technology", 1995: six 0xFF, then the MAC sixteen times; SecureOn password appended), MAC and
password parsing, and the datagram as a real UDP socket on loopback receives it."""

from __future__ import annotations

import socket

import pytest

from eams.meter.errors import BadMacAddress, BadMagicPacket, WolError
from eams.meter.wol import (
    DEFAULT_ADDRESS,
    DEFAULT_PORT,
    format_mac,
    magic_packet,
    parse_mac,
    parse_magic_packet,
    parse_password,
    send_magic_packet,
)

MAC_HEX = "001b21a0c3f4"
#: The packet written out by hand from the format, not by the code under test.
PUBLISHED = bytes.fromhex("ff" * 6 + MAC_HEX * 16)


@pytest.mark.parametrize(
    "text",
    [
        "00:1b:21:a0:c3:f4",
        "00-1B-21-A0-C3-F4",
        "001b.21a0.c3f4",
        "001B21A0C3F4",
        " 0:1b:21:a0:c3:f4 ",
    ],
)
def test_every_usual_mac_form_parses_to_the_same_bytes(text: str) -> None:
    assert parse_mac(text) == bytes.fromhex(MAC_HEX)
    assert format_mac(parse_mac(text)) == "00:1b:21:a0:c3:f4"


@pytest.mark.parametrize(
    "text",
    ["", "00:1b:21:a0:c3", "00:1b:21:a0:c3:f4:55", "00:1b-21:a0:c3:f4", "00:1b:21:a0:c3:g4",
     "001b21a0c3f", "001.b21a.0c3f4", "100:1b:21:a0:c3:f4", "node3"],
)  # fmt: skip
def test_a_malformed_mac_is_one_clear_error(text: str) -> None:
    with pytest.raises(BadMacAddress, match="is not a MAC address; write it as aa:bb:cc:dd:ee:ff"):
        parse_mac(text)


def test_the_packet_is_the_published_format_byte_for_byte() -> None:
    assert magic_packet("00:1b:21:a0:c3:f4") == PUBLISHED
    assert magic_packet(bytes.fromhex(MAC_HEX)) == PUBLISHED
    assert len(PUBLISHED) == 102


def test_secureon_passwords_are_appended() -> None:
    six = magic_packet("00:1b:21:a0:c3:f4", password="01:02:03:04:05:06")
    assert six == PUBLISHED + bytes([1, 2, 3, 4, 5, 6])
    four = magic_packet("00:1b:21:a0:c3:f4", password="192.168.1.7")
    assert four == PUBLISHED + bytes([192, 168, 1, 7])
    assert parse_password("192.168.1.7") == bytes([192, 168, 1, 7])
    with pytest.raises(BadMacAddress, match="4 or 6 bytes"):
        magic_packet("00:1b:21:a0:c3:f4", password=b"12345")
    with pytest.raises(BadMacAddress, match="is not a SecureOn password"):
        parse_password("1.2.3.256")


def test_parse_reads_back_what_was_built_and_rejects_the_rest() -> None:
    assert parse_magic_packet(PUBLISHED).mac == "00:1b:21:a0:c3:f4"
    assert parse_magic_packet(PUBLISHED).password is None
    assert parse_magic_packet(PUBLISHED + b"\x01\x02\x03\x04").password == b"\x01\x02\x03\x04"
    with pytest.raises(BadMagicPacket, match="not 101"):
        parse_magic_packet(PUBLISHED[:-1])
    with pytest.raises(BadMagicPacket, match="six 0xFF"):
        parse_magic_packet(b"\x00" + PUBLISHED[1:])
    broken = PUBLISHED[:-1] + b"\x00"  # last repetition differs
    with pytest.raises(BadMagicPacket, match="repetitions of the packet differ"):
        parse_magic_packet(broken)


def test_the_defaults_are_the_limited_broadcast_and_the_discard_port() -> None:
    assert (DEFAULT_ADDRESS, DEFAULT_PORT) == ("255.255.255.255", 9)


def test_a_unicast_datagram_captured_on_loopback_is_the_published_packet() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as receiver:
        receiver.bind(("127.0.0.1", 0))
        receiver.settimeout(5)
        port = receiver.getsockname()[1]
        sent = send_magic_packet("00-1b-21-a0-c3-f4", address="127.0.0.1", port=port)
        data, (source, _) = receiver.recvfrom(2048)
    assert data == sent == PUBLISHED
    assert source == "127.0.0.1"


def test_a_broadcast_needs_so_broadcast_and_the_sender_sets_it() -> None:
    """Linux routes 127.255.255.255 as the loopback broadcast: a datagram to it is refused
    (EACCES) unless the sender set SO_BROADCAST, and reaches a socket bound to any address."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as receiver:
        receiver.bind(("", 0))
        receiver.settimeout(5)
        port = receiver.getsockname()[1]
        with (
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as plain,
            pytest.raises(PermissionError),  # the control: without SO_BROADCAST
        ):
            plain.sendto(PUBLISHED, ("127.255.255.255", port))
        send_magic_packet("00:1b:21:a0:c3:f4", address="127.255.255.255", port=port)
        data, _ = receiver.recvfrom(2048)
    assert data == PUBLISHED


def test_bad_inputs_send_nothing_and_say_why() -> None:
    with pytest.raises(BadMacAddress):
        send_magic_packet("not-a-mac", address="127.0.0.1", port=9)
    with pytest.raises(WolError, match="outside 1-65535"):
        send_magic_packet("00:1b:21:a0:c3:f4", address="127.0.0.1", port=70000)
    with pytest.raises(WolError, match="cannot send the magic packet for 00:1b:21:a0:c3:f4"):
        send_magic_packet("00:1b:21:a0:c3:f4", address="no-such-host.invalid", port=9)


@pytest.mark.parametrize("text", ["ff:ff:ff:ff:ff:ff", "01:00:5e:00:00:fb", "33:33:00:00:00:01"])
def test_a_group_address_names_no_nic_and_is_refused(text: str) -> None:
    with pytest.raises(BadMacAddress, match=r"is a group \(multicast or broadcast\) address"):
        magic_packet(text)
    assert parse_mac(text)  # well-formed: only the magic packet's target must be a NIC's own
