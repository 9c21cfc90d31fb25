"""The node power-state machine on its own (``VirtualPdu``, no SNMP): transitions at their
times, and energy integrated piecewise even when one read spans several transitions."""

from __future__ import annotations

import pytest

from eams.meter.simulator import LinearCurve, NodePower, SimulatorError, VirtualOutlet
from eams.meter.simulator.pdu import VirtualPdu
from tests.meter.test_simulator_agent import ManualClock

CURVE = LinearCurve(40.0, 90.0)


def _pdu(power: NodePower, clock: ManualClock, reboot_off_s: float = 5.0) -> VirtualPdu:
    return VirtualPdu([VirtualOutlet("n1", CURVE, power)], reboot_off_s=reboot_off_s, clock=clock)


def test_a_reboot_read_once_at_the_end_integrates_each_phase() -> None:
    clock = ManualClock()
    pdu = _pdu(NodePower(boot_s=30.0, boot_power_w=70.0), clock, reboot_off_s=5.0)
    pdu.set_load(1, 1.0)  # 90 W running
    pdu.switch_outlet(1, "reboot")
    assert (pdu.state(1).state, pdu.state(1).node) == ("off", "off")
    clock.now_s += 5.0 + 30.0 + 10.0  # off 5 s, boot 30 s, run 10 s: one read at the end
    truth = pdu.state(1)
    assert (truth.state, truth.node, truth.power_w) == ("on", "running", 90.0)
    assert truth.energy_wh == pytest.approx((0 * 5 + 70.0 * 30 + 90.0 * 10) / 3600)


def test_default_boot_and_wake_draws_come_from_the_curve() -> None:
    clock = ManualClock()
    pdu = _pdu(NodePower(wake_s=4.0, suspend_s=0.0), clock)
    pdu.switch_outlet(1, "off")
    pdu.switch_outlet(1, "on")
    assert pdu.state(1).power_w == CURVE.power_w(0.5)  # booting: the curve at 50 %
    clock.now_s += 30.0
    pdu.suspend(1)
    assert pdu.state(1).node == "suspended"
    assert pdu.wake(pdu.mac(1).upper()) == [1]  # any MAC spelling
    assert (pdu.state(1).node, pdu.state(1).power_w) == ("waking", CURVE.power_w(0.5))
    assert pdu.wake(pdu.mac(1)) == []  # already waking: ignored


def test_a_command_during_a_reboot_cancels_its_power_on() -> None:
    clock = ManualClock()
    pdu = _pdu(NodePower(), clock, reboot_off_s=5.0)
    pdu.switch_outlet(1, "reboot")
    pdu.switch_outlet(1, "off")
    clock.now_s += 60.0
    assert pdu.state(1).state == "off"
    pdu.switch_outlet(1, "on")
    pdu.switch_outlet(1, "on")  # already on: keeps booting, does not restart the boot
    clock.now_s += 30.0
    assert pdu.state(1).node == "running"


def test_bad_parameters_and_requests_are_refused() -> None:
    with pytest.raises(ValueError, match=r"NodePower\.suspend_w must be finite and >= 0"):
        NodePower(suspend_w=-1.0)
    pdu = _pdu(NodePower(), ManualClock())
    with pytest.raises(SimulatorError, match="action 'toggle' is not one of on, off, reboot"):
        pdu.switch_outlet(1, "toggle")
    with pytest.raises(SimulatorError, match="no outlet 2"):
        pdu.switch_outlet(2, "off")
    with pytest.raises(SimulatorError, match="reboot_off_s=-1"):
        VirtualPdu([VirtualOutlet("n", CURVE)], reboot_off_s=-1)
