"""The PDU simulator as a real SNMP agent: read back with net-snmp tools and pysnmp."""

import asyncio
import math
import shutil
import socket
import subprocess

import pytest
from pysnmp.hlapi.v3arch.asyncio import (
    CommunityData,
    ContextData,
    ObjectIdentity,
    ObjectType,
    SnmpEngine,
    UdpTransportTarget,
    UsmUserData,
    bulk_walk_cmd,
    get_cmd,
    usmAesCfb128Protocol,
    usmHMACSHAAuthProtocol,
)

from eams.meter.simulator import (
    LinearCurve,
    PduSimulator,
    SimulatorError,
    VirtualOutlet,
)
from eams.meter.simulator.apc_rpdu2 import RPDU2, RPDU2_OUTLET_METERED_STATUS, SYS_OBJECT_ID

CURVES = [LinearCurve(10.0, 45.0), LinearCurve(60.0, 210.0), LinearCurve(35.0, 95.0)]
STATUS = ".".join(map(str, RPDU2_OUTLET_METERED_STATUS))
DEVICE_STATUS = ".".join(map(str, (*RPDU2, 4, 3, 1)))
V3 = ("eamsuser", "authkey-123", "privkey-456")


class ManualClock:
    """A monotonic clock the test advances, so energy can be checked over simulated hours."""

    def __init__(self) -> None:
        self.now_s = 1000.0

    def __call__(self) -> float:
        return self.now_s


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def sim(clock: ManualClock):
    outlets = [VirtualOutlet(f"node{n}", c) for n, c in enumerate(CURVES, start=1)]
    simulator = PduSimulator(
        outlets,
        community="sim-public",
        v3_user=V3[0],
        v3_auth_key=V3[1],
        v3_priv_key=V3[2],
        clock=clock,
    )
    with simulator:
        yield simulator


async def _walk(port: int, oid: str, auth=None) -> dict[str, object]:
    engine = SnmpEngine()
    target = await UdpTransportTarget.create(("127.0.0.1", port), timeout=3, retries=1)
    result = {}
    async for error, status, _, var_binds in bulk_walk_cmd(
        engine,
        auth or CommunityData("sim-public"),
        target,
        ContextData(),
        0,
        25,
        ObjectType(ObjectIdentity(oid)),
        lexicographicMode=False,
    ):
        assert error is None and not status, (error, status)
        for name, value in var_binds:
            result[str(name)] = value
    engine.close_dispatcher()
    return result


async def _get(port: int, oids: list[str], auth=None, timeout_s: float = 3.0):
    engine = SnmpEngine()
    target = await UdpTransportTarget.create(("127.0.0.1", port), timeout=timeout_s, retries=0)
    answer = await get_cmd(
        engine,
        auth or CommunityData("sim-public"),
        target,
        ContextData(),
        *[ObjectType(ObjectIdentity(o)) for o in oids],
    )
    engine.close_dispatcher()
    return answer


def _column(table: dict[str, object], column: int) -> list[int]:
    prefix = f"{STATUS}.{column}."
    rows = sorted((int(k[len(prefix) :]), v) for k, v in table.items() if k.startswith(prefix))
    return [int(v) if not isinstance(v, bytes) else v for _, v in rows]


def test_outlet_table_follows_load_through_curves(sim: PduSimulator):
    loads = [0.0, 0.5, 1.0]
    for outlet, load in enumerate(loads, start=1):
        sim.set_load(outlet, load)
    table = asyncio.run(_walk(sim.port, STATUS))
    assert len(table) == 13 * len(CURVES)  # the walk stays inside the table
    expected_w = [c.power_w(u) for c, u in zip(CURVES, loads, strict=True)]
    assert _column(table, 7) == [round(p) for p in expected_w]
    assert _column(table, 6) == [round(p / (230 * 0.95) * 10) for p in expected_w]
    names = [
        str(v) for _, v in sorted((k, v) for k, v in table.items() if k.startswith(f"{STATUS}.3."))
    ]
    assert names == ["node1", "node2", "node3"]
    truth = [sim.state(n).power_w for n in (1, 2, 3)]
    assert truth == pytest.approx(expected_w)


def test_energy_integrates_power_over_time(sim: PduSimulator, clock: ManualClock):
    sim.set_load(2, 1.0)  # 210 W
    clock.now_s += 1800
    sim.set_load(2, 0.0)  # 60 W
    clock.now_s += 3600
    expected_wh = [10.0 * 1.5, 210.0 * 0.5 + 60.0 * 1.0, 35.0 * 1.5]
    assert [sim.state(n).energy_wh for n in (1, 2, 3)] == pytest.approx(expected_wh)
    table = asyncio.run(_walk(sim.port, STATUS))
    assert _column(table, 11) == [math.floor(e / 100) for e in expected_wh]  # tenths of kWh
    device = asyncio.run(_walk(sim.port, DEVICE_STATUS))
    assert int(device[f"{DEVICE_STATUS}.9.1"]) == math.floor(sum(expected_wh) / 100)
    assert int(device[f"{DEVICE_STATUS}.5.1"]) == round((10 + 60 + 35) / 10)  # 0.01 kW


def test_load_source_is_polled_at_each_request(sim: PduSimulator):
    values = iter([0.25, None, 0.75, 0.75])  # the last is read by set_load
    sim.set_load_source(3, lambda: next(values))
    assert sim.state(3).power_w == pytest.approx(CURVES[2].power_w(0.25))
    assert sim.state(3).power_w == pytest.approx(CURVES[2].power_w(0.25))  # None keeps it
    assert sim.state(3).power_w == pytest.approx(CURVES[2].power_w(0.75))
    sim.set_load(3, 0.0)  # detaches the source
    assert sim.state(3).utilisation == 0.0


@pytest.mark.skipif(shutil.which("snmpbulkwalk") is None, reason="net-snmp tools absent")
def test_net_snmp_walk_and_get_see_an_apc_rpdu2(sim: PduSimulator):
    sim.set_load(1, 1.0)
    base = ["-v2c", "-c", "sim-public", "-On", "-t", "2", f"127.0.0.1:{sim.port}"]
    walk = subprocess.run(
        ["snmpbulkwalk", *base, STATUS + ".7"], capture_output=True, text=True, timeout=10
    )
    assert walk.returncode == 0, walk.stderr
    powers = [int(line.rsplit(":", 1)[1]) for line in walk.stdout.splitlines()]
    assert powers == [round(CURVES[0].power_w(1.0)), round(CURVES[1].power_w(0)), 35]
    get = subprocess.run(
        ["snmpget", *base, "1.3.6.1.2.1.1.2.0", f"{STATUS}.7.9", "1.3.6.1.2.1.1.9.0"],
        capture_output=True,
        text=True,
        timeout=10,
    )
    lines = get.stdout.splitlines()
    assert lines[0].endswith("." + ".".join(map(str, SYS_OBJECT_ID)))
    assert "No Such Instance" in lines[1]
    assert "No Such Object" in lines[2]


def test_wrong_community_gets_no_answer(sim: PduSimulator):
    error, *_ = asyncio.run(
        _get(sim.port, ["1.3.6.1.2.1.1.2.0"], CommunityData("wrong"), timeout_s=0.3)
    )
    assert error is not None and "timeout" in str(error).lower()


def test_v3_auth_priv_with_right_and_wrong_keys(sim: PduSimulator):
    sim.set_load(1, 0.5)
    good = UsmUserData(
        V3[0], V3[1], V3[2], authProtocol=usmHMACSHAAuthProtocol, privProtocol=usmAesCfb128Protocol
    )
    error, status, _, var_binds = asyncio.run(_get(sim.port, [f"{STATUS}.7.1"], good))
    assert error is None and not status
    assert int(var_binds[0][1]) == round(CURVES[0].power_w(0.5))
    bad = UsmUserData(
        V3[0],
        V3[1],
        "wrong-priv-key",
        authProtocol=usmHMACSHAAuthProtocol,
        privProtocol=usmAesCfb128Protocol,
    )
    error, *_ = asyncio.run(_get(sim.port, [f"{STATUS}.7.1"], bad, timeout_s=0.5))
    assert error is not None


def test_misuse_is_reported(sim: PduSimulator):
    with pytest.raises(SimulatorError, match="no outlet 4"):
        sim.set_load(4, 0.5)
    with pytest.raises(SimulatorError, match="already running"):
        sim.start()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as taken:
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        other = PduSimulator([VirtualOutlet("x", CURVES[0])], port=port)
        with pytest.raises(SimulatorError, match=f"cannot bind UDP 127.0.0.1:{port}"):
            other.start()


def test_public_names_are_pinned():
    import eams.meter.simulator as simulator

    assert sorted(simulator.__all__) == [
        "HostCpuLoad", "LinearCurve", "MeasuredCurve", "ModbusMeterSimulator", "NodePower",
        "OutletState",
        "PduSimulator", "SimulatorError", "SpecPowerError", "SpecPowerRow", "VirtualOutlet",
        "load_specpower",
    ]  # fmt: skip
    assert all(hasattr(simulator, name) for name in simulator.__all__)


def test_stop_releases_the_port():
    sim = PduSimulator([VirtualOutlet("x", CURVES[0])]).start()
    port = sim.port
    sim.stop()
    sim.stop()  # idempotent
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as again:
        again.bind(("127.0.0.1", port))
