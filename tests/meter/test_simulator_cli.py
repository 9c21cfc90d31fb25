"""``eams meter simulate`` as a user runs it: a real process, its URLs, its control endpoint,
switching an outlet with ``eams meter switch`` and waking a suspended node by Wake-on-LAN."""

import asyncio
import os
import signal
import subprocess
import sys
import time
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
from eams.meter.wol import send_magic_packet

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


@pytest.mark.parametrize("curve", ["linear:50:10", "linear:60:inf", "linear:nan:100", "linear:abc"])
def test_simulate_rejects_a_bad_curve(curve):
    # linear:60:inf used to start, then fail every SNMP request with an OverflowError traceback
    result = CliRunner().invoke(simulate, ["--curve", curve])
    assert result.exit_code == 2
    assert "linear:P_IDLE_W:P_MAX_W" in result.output and "finite" in result.output
    assert "LinearCurve" not in result.output and "p_idle_w" not in result.output
    assert "convert string to float" not in result.output


def test_simulate_serves_a_v3_user_read_by_the_driver(monkeypatch):
    from eams.meter.blocking import BlockingMeter
    from eams.meter.errors import MeterAuthError

    keys = {"EAMS_SNMP_AUTH_KEY": "sim-auth-key", "EAMS_SNMP_PRIV_KEY": "sim-priv-key"}
    argv = [EAMS, "meter", "simulate", "--outlets", "2", "--curve", "linear:60:90"]
    process = subprocess.Popen(
        [*argv, "--v3-user", "ops"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **keys},
    )
    try:
        lines = [process.stdout.readline().strip() for _ in range(3)]
        assert lines[2].startswith("v3: snmpv3://ops@127.0.0.1:"), process.stderr.read()
        v3_url = lines[2].removeprefix("v3: ")
        for env, value in keys.items():
            monkeypatch.setenv(env, value)
        with BlockingMeter(v3_url, timeout_s=3.0) as meter:
            reading = meter.read()
        assert reading.driver == "apc_rpdu2"
        assert [o.power_w for o in reading.outlets] == [60.0, 60.0]
        # refused by the agent; 3 s because a loaded agent answers late
        monkeypatch.setenv("EAMS_SNMP_PRIV_KEY", "wrong-priv-key")
        with (
            BlockingMeter(v3_url, timeout_s=3.0, retries=0) as meter,
            pytest.raises(MeterAuthError, match="credentials refused"),
        ):
            meter.read()
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(10)
        process.stdout.close()
        process.stderr.close()


def test_simulate_v3_without_keys_is_one_line(monkeypatch):
    monkeypatch.delenv("EAMS_SNMP_AUTH_KEY", raising=False)
    argv = [EAMS, "meter", "simulate", "--v3-user", "ops"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "eams: error: --v3-user needs EAMS_SNMP_AUTH_KEY and EAMS_SNMP_PRIV_KEY set to keys "
        "of at least 8 characters"
    ]


def _wait_node(control: str, outlet: int, node: str, timeout_s: float = 20.0) -> dict:
    deadline = time.monotonic() + timeout_s
    while True:
        row = httpx.get(control, timeout=5).json()[outlet - 1]
        if row["node"] == node:
            return row
        assert time.monotonic() < deadline, row
        time.sleep(0.05)


def test_simulate_switches_suspends_and_wakes_its_nodes():
    argv = [EAMS, "meter", "simulate", "--outlets", "2", "--curve", "linear:20:80"]
    timing = ["boot_s=0.3", "wake_s=0.3", "suspend_s=0", "suspend_w=2.5"]
    argv += ["--reboot-off-s", "0.5", *(f"--node-power={t}" for t in timing)]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = [process.stdout.readline().strip() for _ in range(4)]
        assert lines[2].startswith("write: snmp://private@127.0.0.1:"), process.stderr.read()
        control = lines[1].removeprefix("control: ")
        host, _, port = lines[3].removeprefix("wol: ").partition(":")
        write_url = lines[2].removeprefix("write: ")
        switched = subprocess.run(
            [EAMS, "meter", "switch", write_url, "--outlet", "2", "reboot", "--yes"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert switched.returncode == 0, switched.stderr
        assert "reboot done; state read back: on" in switched.stdout
        assert _wait_node(control, 2, "running")["power_w"] == 20.0  # booted again
        answer = httpx.put(f"{control}/1/node", json={"action": "suspend"}, timeout=5)
        assert answer.status_code == 200, answer.text
        asleep = _wait_node(control, 1, "suspended")
        assert asleep["power_w"] == 2.5
        send_magic_packet(asleep["mac"], address=host, port=int(port))
        assert _wait_node(control, 1, "running")["power_w"] == 20.0
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(10)
        process.stdout.close()
        process.stderr.close()


def test_simulate_rejects_an_unknown_node_power_parameter():
    result = CliRunner().invoke(simulate, ["--node-power", "boot_time=3"])
    assert result.exit_code == 2
    assert "unknown parameter 'boot_time'" in result.output
    result = CliRunner().invoke(simulate, ["--node-power", "off_w=-1"])
    assert result.exit_code == 2 and "must be finite and >= 0" in result.output
