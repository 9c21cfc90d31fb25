"""Bad input, answered cleanly: wrong community, SNMPv3 keys, closed/black-holed ports,
noSuchObject, strings where numbers belong, unknown devices; and SNMPv3 authPriv that works.

Every failure must be a MeterError subclass naming host:port and the OID, within the deadline.
"""

from __future__ import annotations

import asyncio
import socket
import time

import pytest

from eams.meter.blocking import BlockingMeter
from eams.meter.errors import (
    BadMeterUrl,
    MeterAuthError,
    MeterError,
    MeterProtocolError,
    MeterTimeout,
    MeterUnreachable,
    UnknownDevice,
)
from eams.meter.open import open_meter
from eams.meter.snmp.client import SnmpClient, deadline_s, oid_in_subtree
from eams.meter.url import AUTH_KEY_ENV, PRIV_KEY_ENV, parse_meter_url
from tests.meter.conftest import V3_AUTH_KEY, V3_PRIV_KEY, V3_USER

pytestmark = pytest.mark.integration

TIMEOUT_S, RETRIES = 0.2, 1  # for targets that never answer
#: For reads that must succeed: generous, the test machine may be loaded.
PATIENT = {"timeout_s": 3.0, "retries": 2}
#: Seconds allowed beyond the deadline for thread/engine start-up on a loaded machine. Not a
#: speed goal: it only tells "gave up near the deadline" from "hung" (pysnmp alone, without our
#: deadline, would retry for timeout × (retries + 1) per request and a broken loop forever).
STARTUP_SLACK_S = 5.0


def _read(url: str, **kwargs) -> object:
    with BlockingMeter(url, **kwargs) as meter:
        return meter.read()


def _v3_url(agent, context: str = "apc_ap8959eu3") -> str:
    return f"snmpv3://{V3_USER}@{agent.host}:{agent.port}?auth=SHA&priv=AES&context={context}"


def test_wrong_community_is_a_timeout_that_says_so(snmp_agent) -> None:
    url = f"snmp://not-a-community@{snmp_agent.host}:{snmp_agent.port}"
    started = time.monotonic()
    with pytest.raises(MeterTimeout) as info:
        _read(url, timeout_s=TIMEOUT_S, retries=RETRIES)
    elapsed = time.monotonic() - started
    message = str(info.value)
    assert "wrong community or host down" in message
    assert f"{snmp_agent.host}:{snmp_agent.port}" in message
    assert "1.3.6.1.2.1.1.2.0" in message  # the OID it was asking for
    assert elapsed < deadline_s(TIMEOUT_S, RETRIES) + STARTUP_SLACK_S


def test_v3_auth_priv_reads(snmp_agent, monkeypatch) -> None:
    monkeypatch.setenv(AUTH_KEY_ENV, V3_AUTH_KEY)
    monkeypatch.setenv(PRIV_KEY_ENV, V3_PRIV_KEY)
    reading = _read(_v3_url(snmp_agent), **PATIENT)
    assert reading.driver == "apc_rpdu2"
    assert reading.total_power_w == 270.0
    assert reading.meter.startswith(f"snmpv3://{V3_USER}@")


@pytest.mark.parametrize(
    ("auth_key", "priv_key"),
    [("wrong-auth-key-1", V3_PRIV_KEY), (V3_AUTH_KEY, "wrong-priv-key-2")],
    ids=["wrong-auth-key", "wrong-priv-key"],
)
def test_v3_wrong_key_is_an_auth_error(snmp_agent, monkeypatch, auth_key, priv_key) -> None:
    monkeypatch.setenv(AUTH_KEY_ENV, auth_key)
    monkeypatch.setenv(PRIV_KEY_ENV, priv_key)
    with pytest.raises(MeterAuthError) as info:
        _read(_v3_url(snmp_agent), **PATIENT)  # the agent's report answers: no retry is sent
    assert f"{snmp_agent.host}:{snmp_agent.port}" in str(info.value)


def test_v3_without_keys_is_a_bad_url(snmp_agent, monkeypatch) -> None:
    monkeypatch.delenv(AUTH_KEY_ENV, raising=False)
    monkeypatch.delenv(PRIV_KEY_ENV, raising=False)
    with pytest.raises(BadMeterUrl, match=AUTH_KEY_ENV):
        open_meter(_v3_url(snmp_agent))


def test_closed_port_fails_within_the_deadline() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # Nobody listens now: the kernel answers ICMP port unreachable.
    started = time.monotonic()
    with pytest.raises((MeterTimeout, MeterUnreachable)) as info:
        _read(f"snmp://public@127.0.0.1:{port}", timeout_s=TIMEOUT_S, retries=RETRIES)
    assert time.monotonic() - started < deadline_s(TIMEOUT_S, RETRIES) + STARTUP_SLACK_S
    assert f"127.0.0.1:{port}" in str(info.value)


def test_black_holed_agent_does_not_hang() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))  # receives, never answers
        port = sock.getsockname()[1]
        started = time.monotonic()
        with pytest.raises(MeterTimeout):
            _read(f"snmp://public@127.0.0.1:{port}", timeout_s=TIMEOUT_S, retries=RETRIES)
        assert time.monotonic() - started < deadline_s(TIMEOUT_S, RETRIES) + STARTUP_SLACK_S
        sock.settimeout(0)
        assert sock.recv(2048), "the request should have reached the black hole"


def test_no_such_object_everywhere_is_a_protocol_error(snmp_agent) -> None:
    with pytest.raises(MeterProtocolError, match="no value decodes") as info:
        _read(snmp_agent.url("no_such_object"), **PATIENT)
    assert "1.3.6.1.4.1.318" in str(info.value)  # names the OIDs it looked under


def test_get_of_a_missing_object_is_none(snmp_agent) -> None:
    async def go() -> dict:
        client = SnmpClient(parse_meter_url(snmp_agent.url("apc_ap8959eu3")), **PATIENT)
        try:
            return await client.get(["1.3.6.1.2.1.1.2.0", "1.3.6.1.4.1.318.9.9.9.0"])
        finally:
            await client.close()

    answer = asyncio.run(go())
    assert answer == {
        "1.3.6.1.2.1.1.2.0": "1.3.6.1.4.1.318.1.3.4.6",
        "1.3.6.1.4.1.318.9.9.9.0": None,
    }


def test_a_string_where_a_number_belongs_is_none_and_recorded(snmp_agent) -> None:
    with BlockingMeter(snmp_agent.url("string_power"), **PATIENT) as meter:
        reading = meter.read()
        problems = meter.meter.last_problems
    assert [o.power_w for o in reading.outlets] == [110.0, None, 0.0]
    assert reading.outlet(2).current_a == pytest.approx(0.7)  # the rest of the row survives
    assert reading.total_power_w == 210.0
    assert len(problems) == 1
    assert "1.3.6.1.4.1.318.1.1.26.9.4.3.1.7.2" in problems[0]
    assert "'152 W' is not a number" in problems[0]


def test_nothing_but_strings_is_a_protocol_error(snmp_agent) -> None:
    with pytest.raises(MeterProtocolError, match="is not a number"):
        _read(snmp_agent.url("all_strings"), **PATIENT)


def test_unknown_device_names_its_sys_object_id(snmp_agent) -> None:
    with pytest.raises(UnknownDevice, match=r"1\.3\.6\.1\.4\.1\.99999\.1\.2.*--driver"):
        _read(snmp_agent.url("unknown_vendor"), **PATIENT)


def test_driver_override_skips_detection(snmp_agent) -> None:
    # The Eaton recording read as APC: detection skipped, nothing of APC's there.
    url = snmp_agent.url("eatonpdu_2")
    with (
        BlockingMeter(url, driver="apc_rpdu2", **PATIENT) as meter,
        pytest.raises(MeterProtocolError, match="apc_rpdu2"),
    ):
        meter.read()
    with pytest.raises(UnknownDevice, match="no-such-driver"):
        open_meter(snmp_agent.url("eatonpdu_2"), driver="no-such-driver")


def test_walk_stays_inside_the_subtree_across_many_requests(snmp_agent) -> None:
    column = "1.3.6.1.4.1.318.1.1.32.5.9.1.6"  # pduOutletMeteredStatusActivePower, 64 rows

    async def go() -> tuple[list, int]:
        url = parse_meter_url(snmp_agent.url("apc-cpdu"))
        client = SnmpClient(url, max_repetitions=5, **PATIENT)
        try:
            walked = await client.walk([column, "1.3.6.1.2.1.1.2"])
            return walked[column], client.requests
        finally:
            await client.close()

    rows, requests = asyncio.run(go())
    assert len(rows) == 64
    assert all(oid_in_subtree(oid, column) for oid, _ in rows)
    assert [oid.rsplit(".", 1)[1] for oid, _ in rows] == [str(i) for i in range(1, 65)]
    assert requests == 13  # ceil(64 / 5) + the one that crosses the subtree's end


def test_blocking_meter_after_close_refuses(snmp_agent) -> None:
    meter = BlockingMeter(snmp_agent.url("apc_ap8959eu3"), **PATIENT)
    meter.close()
    meter.close()  # idempotent
    with pytest.raises(MeterError, match="closed"):
        meter.read()
