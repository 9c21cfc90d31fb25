"""The simulator's switched outlets over real SNMP (v2c and v3), switched by ``eams meter`` and
cross-checked with net-snmp's ``snmpget``/``snmpset``: off draws 0 W and stops the counter, on
boots for ``boot_s`` at the boot power before the node follows its load again, a reboot is off
then on, and a read-only community is refused the way a real agent refuses it."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import time

import pytest
from click.testing import CliRunner

from eams.cli import cli
from eams.meter.blocking import BlockingMeter
from eams.meter.errors import WriteRefused
from eams.meter.simulator import LinearCurve, NodePower, PduSimulator, VirtualOutlet
from eams.meter.simulator.apc_rpdu2 import CONTROL_COMMAND, RPDU2_OUTLET_SWITCHED
from eams.meter.snmp.client import SnmpClient
from eams.meter.url import parse_meter_url
from tests.meter.test_simulator_agent import ManualClock
from tests.servers.udp_delay_proxy import UdpDelayProxy

pytestmark = pytest.mark.integration

CURVE = LinearCurve(40.0, 90.0)
POWER = NodePower(boot_s=120.0, boot_power_w=70.0)
V3 = ("switcher", "auth-key-789", "priv-key-012")
STATE = ".".join(map(str, (*RPDU2_OUTLET_SWITCHED, 3, 1, 5)))  # rPDU2OutletSwitchedStatusState
COMMAND = ".".join(map(str, CONTROL_COMMAND))  # rPDU2OutletSwitchedControlCommand
NET_SNMP = shutil.which("snmpset") and shutil.which("snmpget")
needs_net_snmp = pytest.mark.skipif(not NET_SNMP, reason="net-snmp tools are not installed")


def _sim(clock=None, reboot_off_s: float = 5.0) -> PduSimulator:
    outlets = [VirtualOutlet(f"node{n}", CURVE, POWER) for n in (1, 2, 3)]
    kwargs = {"clock": clock} if clock is not None else {}
    return PduSimulator(
        outlets,
        community="sim-ro",
        write_community="sim-rw",
        v3_user=V3[0],
        v3_auth_key=V3[1],
        v3_priv_key=V3[2],
        reboot_off_s=reboot_off_s,
        **kwargs,
    )


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def sim(clock: ManualClock):
    with _sim(clock) as simulator:
        yield simulator


def _net_snmp(tool: str, sim: PduSimulator, *args: str, community: str = "sim-rw"):
    argv = [tool, "-v2c", "-c", community, "-On", "-t", "3", "-r", "1", f"127.0.0.1:{sim.port}"]
    return subprocess.run([*argv, *args], capture_output=True, text=True, timeout=30)


def _served_state(sim: PduSimulator, outlet: int) -> int:
    answer = _net_snmp("snmpget", sim, "-Oqv", f"{STATE}.{outlet}", community="sim-ro")
    assert answer.returncode == 0, answer.stderr
    return int(answer.stdout.strip())


def test_off_draws_nothing_and_on_boots_before_following_the_load(sim, clock) -> None:
    sim.set_load(2, 0.5)  # 65 W while running
    with BlockingMeter(sim.write_url, timeout_s=3.0, retries=2) as meter:
        before = meter.read()
        expected = [("on", 40.0), ("on", 65.0), ("on", 40.0)]
        assert [(o.state, o.power_w) for o in before.outlets] == expected
        off = meter.switch(2, "off", poll_s=0.05)
        assert off.sent and off.state == "off" and off.plan.state_before == "on"
        after = meter.read().outlet(2)
        assert (after.state, after.power_w, after.current_a) == ("off", 0.0, 0.0)
        assert sim.state(2).node == "off"
        stopped_wh = sim.state(2).energy_wh
        clock.now_s += 10 * 3600  # ten hours off: the counter does not move, outlet 1's does
        assert sim.state(2).energy_wh == stopped_wh
        assert sim.state(1).energy_wh == pytest.approx(40.0 * 10, rel=1e-3)
        served = meter.read()
        assert served.outlet(2).energy_wh == 0.0 and served.outlet(1).energy_wh == 400.0

        on = meter.switch(2, "on", poll_s=0.05)
        assert on.state == "on" and sim.state(2).node == "booting"
        assert meter.read().outlet(2).power_w == 70.0  # the boot power, not the load's 65 W
        start_wh = sim.state(2).energy_wh
        clock.now_s += 119.0
        assert sim.state(2).node == "booting"
        clock.now_s += 2.0
        truth = sim.state(2)
        assert (truth.node, truth.power_w) == ("running", 65.0)
        assert meter.read().outlet(2).power_w == 65.0
        assert truth.energy_wh - start_wh == pytest.approx((70.0 * 120 + 65.0 * 1) / 3600)


@needs_net_snmp
def test_net_snmp_and_eams_meter_agree_on_what_is_set(sim) -> None:
    answer = _net_snmp("snmpset", sim, f"{COMMAND}.3", "i", "2")  # immediateOff(2)
    assert answer.returncode == 0, answer.stderr
    result = CliRunner().invoke(cli, ["meter", "read", sim.url, "--json", "--timeout-s", "3"])
    outlet3 = [o for o in json.loads(result.stdout)["outlets"] if o["outlet"] == 3]
    assert outlet3[0]["state"] == "off" and outlet3[0]["power_w"] == 0.0
    assert _served_state(sim, 3) == 1  # off(1)
    switched = CliRunner().invoke(
        cli, ["meter", "switch", sim.write_url, "--outlet", "3", "on", "--yes", "--timeout-s", "3"]
    )
    assert switched.exit_code == 0, switched.output
    assert 'outlet 3 "node3": on done; state read back: on' in switched.output
    assert _served_state(sim, 3) == 2  # on(2)
    command = _net_snmp("snmpget", sim, "-Oqv", f"{COMMAND}.3", community="sim-ro")
    assert command.stdout.strip() == "1"  # a GET of the command reads immediateOn(1) when on


@needs_net_snmp
def test_a_v3_user_switches_and_net_snmp_sees_it(sim, monkeypatch) -> None:
    monkeypatch.setenv("EAMS_SNMP_AUTH_KEY", V3[1])
    monkeypatch.setenv("EAMS_SNMP_PRIV_KEY", V3[2])
    with BlockingMeter(sim.v3_url, timeout_s=3.0, retries=2) as meter:
        assert meter.switch(1, "off", poll_s=0.05).state == "off"
        assert _served_state(sim, 1) == 1
        v3 = ["-v3", "-l", "authPriv", "-u", V3[0], "-a", "SHA", "-A", V3[1], "-x", "AES"]
        answer = subprocess.run(
            ["snmpset", *v3, "-X", V3[2], f"127.0.0.1:{sim.port}", f"{COMMAND}.1", "i", "1"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert answer.returncode == 0, answer.stderr
        assert meter.read().outlet(1).state == "on"


@needs_net_snmp
def test_a_read_only_community_is_refused_as_by_a_real_agent(sim) -> None:
    answer = _net_snmp("snmpset", sim, f"{COMMAND}.1", "i", "2", community="sim-ro")
    assert answer.returncode != 0 and "noAccess" in answer.stderr  # net-snmp's own words
    with (
        BlockingMeter(sim.url, timeout_s=3.0, retries=2) as meter,
        pytest.raises(WriteRefused, match=r"refused \(noAccess\): this community has no write"),
    ):
        meter.switch(1, "off")
    assert sim.state(1).state == "on" and _served_state(sim, 1) == 2


@needs_net_snmp
def test_bad_sets_get_the_error_status_a_real_agent_gives(sim) -> None:
    cases = [
        ((f"{STATE}.1", "i", "1"), "notWritable"),  # a read-only object, write community
        ((f"{COMMAND}.1", "i", "9"), "wrongValue"),  # not immediateOn/Off/Reboot
        ((f"{COMMAND}.1", "s", "off"), "wrongType"),
        ((f"{COMMAND}.7", "i", "1"), "noCreation"),  # no outlet 7
    ]
    for args, status in cases:
        answer = _net_snmp("snmpset", sim, *args)
        assert status in answer.stderr, (args, answer.stderr)
    client = SnmpClient(parse_meter_url(sim.write_url), timeout_s=3.0)
    with pytest.raises(WriteRefused, match=r"= 9 refused \(wrongValue\): .*does not accept"):
        asyncio.run(client.set(f"{COMMAND}.1", 9))
    assert [sim.state(n).state for n in (1, 2, 3)] == ["on", "on", "on"]


def test_a_reboot_reads_off_then_on_and_the_node_boots() -> None:
    with _sim(reboot_off_s=1.0) as sim, BlockingMeter(sim.write_url, timeout_s=3.0) as meter:
        result = meter.switch(1, "reboot", poll_s=0.05)
        assert result.state == "on" and result.plan.phases[0].expect == ("off", "on")
        assert sim.state(1).node == "booting"  # powered again, booting for boot_s
        assert [sim.state(n).node for n in (2, 3)] == ["running", "running"]


def test_the_switch_is_timed_by_its_set_not_by_the_plan_or_the_read_back(monkeypatch) -> None:
    """``set_s`` is where a power-state measurement starts a boot's energy window: it holds the
    instant the simulator's relay switched, and leaves out the plan's read before and the
    read-back after, each an SNMP round trip held 0.2 s by a proxy (the whole call, the window
    before, started a boot's window up to 0.6 s early on a busy machine: issue 35)."""
    delay_s = 0.2
    with (
        _sim() as sim,
        UdpDelayProxy(("127.0.0.1", sim.port), delay_s) as proxy,
        BlockingMeter(f"snmp://sim-rw@127.0.0.1:{proxy.port}", timeout_s=3.0) as meter,
    ):
        meter.read()  # the family and the outlets learnt, as the product's switch step does
        switched: list[float] = []
        relay = sim.switch_outlet

        def timed(outlet: int, action: str) -> None:
            switched.append(time.monotonic())
            relay(outlet, action)

        monkeypatch.setattr(sim, "switch_outlet", timed)
        called = time.monotonic()
        result = meter.switch(1, "off", poll_s=0.05)
        returned = time.monotonic()
    assert result.state == "off" and result.set_s is not None and len(switched) == 1
    set_from, set_to = result.set_s
    assert set_from <= switched[0] <= set_to
    assert set_from - called >= delay_s  # the plan's read came first
    assert returned - set_to >= delay_s  # the read-back came after
    assert set_to - set_from < 2 * delay_s  # one SET's round trip
