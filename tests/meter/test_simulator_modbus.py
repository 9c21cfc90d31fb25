"""The simulated Eastron meter on a pty, read through ``open_meter`` with the serial driver."""

import asyncio
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from eams.meter.open import open_meter
from eams.meter.simulator import LinearCurve, PduSimulator, SimulatorError, VirtualOutlet
from eams.meter.simulator.modbus import ModbusMeterSimulator

EAMS = str(Path(sys.executable).with_name("eams"))
CURVES = [LinearCurve(12.0, 48.0), LinearCurve(30.0, 90.0), LinearCurve(20.0, 70.0)]


@pytest.fixture
def sim() -> Iterator[PduSimulator]:
    outlets = [VirtualOutlet(f"node{n}", c) for n, c in enumerate(CURVES, start=1)]
    with PduSimulator(outlets) as simulator:
        yield simulator


async def _read(url: str):
    meter = open_meter(url, timeout_s=2.0)  # generous: the machine is shared
    try:
        return await meter.read()
    finally:
        await meter.close()


def test_sdm120_follows_its_virtual_node(ptys, sim):
    with ModbusMeterSimulator(sim, [2], ptys[0], model="sdm120", unit=3):
        url = f"serial://{ptys[1]}?protocol=sdm120&unit=3"
        idle = asyncio.run(_read(url)).outlet(1)
        sim.set_load(2, 0.5)
        busy = asyncio.run(_read(url))
        truth = sim.state(2)
    assert idle.power_w == pytest.approx(CURVES[1].power_w(0.0), rel=1e-6)
    assert busy.outlet(1).power_w == pytest.approx(truth.power_w, rel=1e-6)
    assert busy.outlet(1).current_a == pytest.approx(truth.current_a, rel=1e-6)
    assert busy.outlet(1).voltage_v == pytest.approx(sim.voltage_v)
    assert 0 < busy.outlet(1).energy_wh <= truth.energy_wh * (1 + 1e-6)
    assert busy.total_power_w == pytest.approx(truth.power_w, rel=1e-6)


def test_sdm630_phases_are_three_outlets(ptys, sim):
    for outlet, load in ((1, 1.0), (2, 0.25), (3, 0.5)):
        sim.set_load(outlet, load)
    with ModbusMeterSimulator(sim, [1, 2, 3], ptys[0], model="sdm630"):
        reading = asyncio.run(_read(f"serial://{ptys[1]}?protocol=sdm630"))
    truth = [sim.state(n).power_w for n in (1, 2, 3)]
    assert [o.power_w for o in reading.outlets] == pytest.approx(truth, rel=1e-6)
    assert reading.total_power_w == pytest.approx(sum(truth), rel=1e-6)


def test_outlet_count_must_fit_the_model(ptys, sim):
    with pytest.raises(SimulatorError, match="sdm630 has 3 outlet"):
        ModbusMeterSimulator(sim, [1], ptys[0], model="sdm630")


def test_simulate_command_serves_the_modbus_meter_too(ptys):
    process = subprocess.Popen(
        [EAMS, "meter", "simulate", "--outlets", "2", "--curve", "linear:20:80",
         "--modbus-device", str(ptys[0]), "--modbus-outlet", "2"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        lines = [process.stdout.readline().strip() for _ in range(3)]
        assert lines[2] == f"modbus: sdm120 on {ptys[0]}", (lines, process.stderr.read())
        reading = asyncio.run(_read(f"serial://{ptys[1]}?protocol=sdm120"))
        assert reading.outlet(1).power_w == pytest.approx(20.0)
        process.send_signal(signal.SIGTERM)
        assert process.wait(10) == 0
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(10)
        process.stdout.close()
        process.stderr.close()
