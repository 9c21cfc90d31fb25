"""Suspend, soft-off and Wake-on-LAN on the simulator: a suspended node draws P_suspend until a
magic packet for its MAC, sent by ``eams.meter.wol`` to the simulator's loopback UDP port,
wakes it; soft-off draws P_off and a packet boots it; the HTTP control asks the node's OS to
suspend or power off. Power-state timing runs on a clock the test advances."""

from __future__ import annotations

import socket
import time

import httpx
import pytest

from eams.meter.blocking import BlockingMeter
from eams.meter.simulator import LinearCurve, NodePower, PduSimulator, SimulatorError, VirtualOutlet
from eams.meter.simulator.control import ControlServer
from eams.meter.wol import magic_packet, send_magic_packet
from tests.meter.test_simulator_agent import ManualClock

pytestmark = pytest.mark.integration

POWER = NodePower(
    boot_s=30.0,
    boot_power_w=70.0,
    off_w=1.2,
    suspend_w=3.5,
    wake_s=5.0,
    wake_power_w=50.0,
    suspend_s=2.0,
    shutdown_s=10.0,
)
CURVE = LinearCurve(40.0, 90.0)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def sim(clock: ManualClock):
    outlets = [
        VirtualOutlet("node1", CURVE, POWER),
        VirtualOutlet("node2", CURVE, POWER, mac="00:1B:21:A0:C3:F4"),
    ]
    with PduSimulator(outlets, clock=clock) as simulator:
        yield simulator


def _wait_for(sim: PduSimulator, outlet: int, node: str, timeout_s: float = 10.0) -> None:
    """The packet is handled on the agent's thread: wait (bounded) until the node is ``node``."""
    deadline = time.monotonic() + timeout_s
    while sim.state(outlet).node != node:
        assert time.monotonic() < deadline, f"outlet {outlet} is {sim.state(outlet).node}"
        time.sleep(0.02)


def test_each_node_has_its_own_mac() -> None:
    sim = PduSimulator([VirtualOutlet(f"n{i}", CURVE) for i in range(1, 4)])
    macs = [sim.mac(n) for n in (1, 2, 3)]
    assert macs == ["02:ea:a5:00:00:01", "02:ea:a5:00:00:02", "02:ea:a5:00:00:03"]
    assert all(int(m[:2], 16) & 0b10 for m in macs)  # locally administered (U/L bit)
    with pytest.raises(SimulatorError, match="same MAC"):
        PduSimulator([VirtualOutlet("a", CURVE, mac="02:00:00:00:00:01")] * 2)
    with pytest.raises(SimulatorError, match=r"outlet 1 .*is not a MAC address"):
        PduSimulator([VirtualOutlet("a", CURVE, mac="nope")])


def test_a_suspended_node_wakes_on_its_magic_packet(sim, clock) -> None:
    sim.suspend(1)
    assert (sim.state(1).node, sim.state(1).power_w) == ("suspending", 40.0)
    clock.now_s += 2.0
    assert (sim.state(1).node, sim.state(1).power_w) == ("suspended", 3.5)
    with BlockingMeter(sim.url, timeout_s=3.0, retries=2) as meter:
        reading = meter.read()
    assert (reading.outlet(1).state, reading.outlet(1).power_w) == ("on", 4.0)  # outlet on, W
    asleep_wh = sim.state(1).energy_wh
    clock.now_s += 3600.0
    assert sim.state(1).energy_wh - asleep_wh == pytest.approx(3.5)  # one hour at P_suspend

    send_magic_packet(sim.mac(2), address="127.0.0.1", port=sim.wol_port)  # another node's
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as junk:
        junk.sendto(b"\xff" * 6 + b"not a packet", ("127.0.0.1", sim.wol_port))
    sent = send_magic_packet(sim.mac(1), address="127.0.0.1", port=sim.wol_port)
    assert sent == magic_packet(sim.mac(1))
    _wait_for(sim, 1, "waking")
    assert sim.state(1).power_w == 50.0
    assert sim.state(2).node == "running"  # running nodes ignore packets
    clock.now_s += 5.0
    assert (sim.state(1).node, sim.state(1).power_w) == ("running", 40.0)


def test_soft_off_draws_standby_and_a_packet_boots_it(sim, clock) -> None:
    sim.soft_off(2)
    clock.now_s += 10.0
    assert (sim.state(2).node, sim.state(2).power_w, sim.state(2).state) == ("soft_off", 1.2, "on")
    send_magic_packet("00-1b-21-a0-c3-f4", address="127.0.0.1", port=sim.wol_port)
    _wait_for(sim, 2, "booting")
    assert sim.state(2).power_w == 70.0
    clock.now_s += 30.0
    assert sim.state(2).node == "running"


def test_no_power_no_wake(sim, clock) -> None:
    sim.suspend(1)
    clock.now_s += 2.0
    sim.switch_outlet(1, "off")
    send_magic_packet(sim.mac(1), address="127.0.0.1", port=sim.wol_port)
    time.sleep(0.3)
    assert (sim.state(1).node, sim.state(1).power_w) == ("off", 0.0)
    with pytest.raises(SimulatorError, match="node1 is off, not running: cannot suspend"):
        sim.suspend(1)


def test_the_http_control_suspends_and_powers_off_nodes(sim, clock) -> None:
    with ControlServer(sim) as control:
        base = f"{control.url}/outlets"
        answer = httpx.put(f"{base}/1/node", json={"action": "suspend"}, timeout=5)
        assert answer.status_code == 200 and answer.json()["node"] == "suspending"
        clock.now_s += 2.0
        listing = httpx.get(base, timeout=5).json()
        assert [(o["node"], o["state"], o["mac"]) for o in listing] == [
            ("suspended", "on", sim.mac(1)),
            ("running", "on", "00:1b:21:a0:c3:f4"),
        ]
        for path, body, status in [
            ("/1/node", {"action": "suspend"}, 409),  # already asleep
            ("/2/node", {"action": "hibernate"}, 400),
            ("/2/node", ["suspend"], 400),
            ("/3/node", {"action": "soft_off"}, 404),
        ]:
            answer = httpx.put(f"{base}{path}", json=body, timeout=5)
            assert answer.status_code == status, answer.text
            assert answer.json()["error"]
        assert httpx.put(f"{base}/2/load", json={"utilisation": 1.0}, timeout=5).status_code == 200
        assert sim.state(2).power_w == 90.0
