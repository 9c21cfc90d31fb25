"""The team's meter drivers read the simulator: ``open_meter(sim.url)`` and ``BlockingMeter``."""

import asyncio

import pytest

from eams.meter.blocking import BlockingMeter
from eams.meter.open import open_meter
from eams.meter.simulator import LinearCurve, PduSimulator, VirtualOutlet

CURVES = [LinearCurve(40.0, 160.0), LinearCurve(80.0, 300.0), LinearCurve(60.0, 120.0)]


class ManualClock:
    def __init__(self) -> None:
        self.now_s = 0.0

    def __call__(self) -> float:
        return self.now_s


async def _read(url: str, **kwargs):
    meter = open_meter(url, timeout_s=3.0, **kwargs)  # generous: the machine is shared
    try:
        return await meter.read()
    finally:
        await meter.close()


@pytest.mark.parametrize("driver", [None, "apc_rpdu2"])
def test_open_meter_reads_simulated_power_and_energy(driver):
    clock = ManualClock()
    outlets = [VirtualOutlet(f"node{n}", c) for n, c in enumerate(CURVES, start=1)]
    with PduSimulator(outlets, clock=clock) as sim:
        for outlet, load in ((1, 0.25), (2, 1.0), (3, 0.5)):
            sim.set_load(outlet, load)
        clock.now_s += 2 * 3600.0
        first = asyncio.run(_read(sim.url, driver=driver))
        clock.now_s += 3600.0
        second = asyncio.run(_read(sim.url, driver=driver))
        truth = [sim.state(n) for n in (1, 2, 3)]
    assert first.driver == "apc_rpdu2"
    assert [o.name for o in first.outlets] == ["node1", "node2", "node3"]
    for reading in (first, second):
        for outlet, state in zip(reading.outlets, truth, strict=True):
            assert outlet.power_w == pytest.approx(state.power_w, abs=0.5)  # whole watts
            assert outlet.current_a == pytest.approx(state.current_a, abs=0.05)  # tenths of A
    # energy counts up (device resolution 100 Wh) and matches P × t to within one step
    for before, after, state in zip(first.outlets, second.outlets, truth, strict=True):
        assert after.energy_wh > before.energy_wh
        assert state.energy_wh - 100.0 < after.energy_wh <= state.energy_wh
    assert second.total_power_w == pytest.approx(sum(s.power_w for s in truth), abs=5.0)


def test_blocking_meter_follows_a_load_change():
    with (
        PduSimulator([VirtualOutlet("n1", CURVES[1])]) as sim,
        BlockingMeter(sim.url, timeout_s=3.0) as meter,
    ):
        idle = meter.read().outlet(1).power_w
        sim.set_load(1, 1.0)
        busy = meter.read().outlet(1).power_w
    assert (idle, busy) == (pytest.approx(80.0, abs=0.5), pytest.approx(300.0, abs=0.5))


def test_metering_floor_reads_as_below_floor():
    # 40 W at 230 V, PF 0.95 is 0.18 A: squelched to 0 like an APC outlet under 0.3 A
    with PduSimulator([VirtualOutlet("small", CURVES[0])], metering_floor_a=0.3) as sim:
        idle = asyncio.run(_read(sim.url)).outlet(1)
        sim.set_load(1, 1.0)  # 160 W, 0.73 A: metered
        busy = asyncio.run(_read(sim.url)).outlet(1)
        truth = sim.state(1)
    assert (idle.power_w, idle.current_a, idle.below_floor) == (0.0, 0.0, True)
    assert busy.power_w == pytest.approx(truth.power_w, abs=0.5)
    assert not busy.below_floor


def test_an_outlet_switched_off_reads_an_exact_0_w_not_below_floor():
    # an open relay draws nothing: 0 W is a reading, unlike the 0 W of an outlet under the floor
    with PduSimulator([VirtualOutlet("n1", CURVES[0]), VirtualOutlet("n2", CURVES[0])]) as sim:
        sim.switch_outlet(1, "off")  # outlet 2 stays on at 40 W: under APC's 50 W floor
        reading = asyncio.run(_read(sim.url))
    off, soft = reading.outlet(1), reading.outlet(2)
    assert (off.state, off.power_w, off.below_floor) == ("off", 0.0, False)
    assert soft.state == "on" and soft.below_floor
