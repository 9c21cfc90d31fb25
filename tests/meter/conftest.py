"""One snmpsim for the whole meter test session: every recording of the reference data plus
the crafted fixtures, v2c (community = file base name) and one SNMPv3 authPriv user."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.servers.pty import socat_pty_pair
from tests.servers.snmpsim import SnmpSim, snmpsim

FIXTURES = Path(__file__).parent / "fixtures"

V3_USER = "eams-test"
V3_AUTH_KEY = "auth-key-0123"
V3_PRIV_KEY = "priv-key-4567"


def recordings_dir(shared_data: Path) -> Path:
    """Where the recorded PDU walks live in the reference data."""
    return shared_data / "pdu_snmp" / "snmprec"


@pytest.fixture(scope="session")
def snmp_agent(shared_data: Path) -> Iterator[SnmpSim]:
    """snmpsim serving all recordings and ``tests/meter/fixtures/*.snmprec`` on loopback."""
    files = sorted(recordings_dir(shared_data).glob("*.snmprec")) + sorted(
        FIXTURES.glob("*.snmprec")
    )
    with snmpsim(
        files,
        v3_user=V3_USER,
        v3_auth_key=V3_AUTH_KEY,
        v3_priv_key=V3_PRIV_KEY,
        v3_auth_proto="SHA",
        v3_priv_proto="AES",
    ) as agent:
        yield agent


@pytest.fixture
def ptys(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """A socat pty pair ``(ttyA, ttyB)`` (the peer opens ttyA); skips when socat is missing."""
    try:
        with socat_pty_pair(tmp_path) as pair:
            yield pair
    except FileNotFoundError as exc:
        pytest.skip(str(exc))
