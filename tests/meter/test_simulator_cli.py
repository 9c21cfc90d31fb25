"""``eams meter simulate`` as a user runs it: a real process, its URL, its control endpoint."""

import asyncio
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from pysnmp.hlapi.v3arch.asyncio import (
    CommunityData,
    ContextData,
    ObjectIdentity,
    ObjectType,
    SnmpEngine,
    UdpTransportTarget,
    get_cmd,
)

from eams.meter.simulator.apc_rpdu2 import RPDU2_OUTLET_METERED_STATUS
from eams.meter.simulator.cli import simulate

EAMS = str(Path(sys.executable).with_name("eams"))
POWER_OID = ".".join(map(str, (*RPDU2_OUTLET_METERED_STATUS, 7)))


async def _outlet_power_w(url: str, outlet: int) -> int:
    community, _, hostport = url.removeprefix("snmp://").partition("@")
    host, _, port = hostport.partition(":")
    engine = SnmpEngine()
    target = await UdpTransportTarget.create((host, int(port)), timeout=3, retries=1)
    error, status, _, var_binds = await get_cmd(
        engine,
        CommunityData(community),
        target,
        ContextData(),
        ObjectType(ObjectIdentity(f"{POWER_OID}.{outlet}")),
    )
    engine.close_dispatcher()
    assert error is None and not status
    return int(var_binds[0][1])


@pytest.fixture
def simulate_process():
    process = subprocess.Popen(
        [EAMS, "meter", "simulate", "--outlets", "2", "--curve", "linear:20:80"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = process.stdout.readline().strip()
        control = process.stdout.readline().strip().removeprefix("control: ")
        yield process, url, control
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(10)
        process.stdout.close()
        process.stderr.close()


def test_simulate_serves_and_takes_load_changes(simulate_process):
    process, url, control = simulate_process
    assert url.startswith("snmp://public@127.0.0.1:"), process.stderr.read()
    assert asyncio.run(_outlet_power_w(url, 2)) == 20
    answer = httpx.put(f"{control}/2/load", json={"utilisation": 0.5}, timeout=5)
    assert answer.status_code == 200
    assert answer.json()["power_w"] == pytest.approx(50.0)
    assert asyncio.run(_outlet_power_w(url, 2)) == 50
    listing = httpx.get(control, timeout=5).json()
    assert [o["utilisation"] for o in listing] == [0.0, 0.5]
    for body, path, status in [
        ({"utilisation": 1.5}, "/2/load", 400),
        ({"load": 0.5}, "/2/load", 400),
        ({"utilisation": 0.5}, "/3/load", 404),
    ]:
        answer = httpx.put(f"{control}{path}", json=body, timeout=5)
        assert answer.status_code == status, answer.text
        assert answer.json()["error"]
    process.send_signal(signal.SIGTERM)
    assert process.wait(10) == 0


def test_simulate_rejects_a_bad_curve():
    result = CliRunner().invoke(simulate, ["--curve", "linear:50:10"])
    assert result.exit_code == 2
    assert "linear:P_IDLE_W:P_MAX_W" in result.output
