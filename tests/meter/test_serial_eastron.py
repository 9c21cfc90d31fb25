"""Eastron SDM120/SDM630 over Modbus-RTU: a real pymodbus server on one end of a socat pty pair,
our driver on the other; plus a raw peer that answers with a bad CRC or a truncated frame."""

import asyncio
import json
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
import serial
from pymodbus.client import ModbusSerialClient
from pymodbus.framer import FramerType
from pymodbus.framer.rtu import FramerRTU
from pymodbus.server import ModbusSerialServer
from pymodbus.simulator import DataType, SimData, SimDevice

from eams.meter.errors import MeterProtocolError, MeterTimeout, MeterUnreachable
from eams.meter.serial import open_serial_meter
from eams.meter.serial.eastron import register_map

FLOAT32 = ModbusSerialClient.DATATYPE.FLOAT32
REGISTER_SPAN = 0x200


class ModbusPeer:
    """A pymodbus RTU server on its own event-loop thread, serving one unit's input registers."""

    def __init__(self, device: Path, unit: int, registers: list[int]) -> None:
        self._loop = asyncio.new_event_loop()
        simdevice = SimDevice(
            unit, simdata=[SimData(0, values=registers, datatype=DataType.REGISTERS)]
        )

        async def start() -> ModbusSerialServer:
            server = ModbusSerialServer(
                simdevice, framer=FramerType.RTU, port=str(device), baudrate=9600
            )
            await server.serve_forever(background=True)
            return server

        self._server = self._loop.run_until_complete(start())
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self._server.shutdown(), self._loop).result(5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()


@pytest.fixture
def modbus_peer(ptys) -> Iterator[Callable[[int, list[int]], None]]:
    peers = []

    def start(unit: int, registers: list[int]) -> None:
        peers.append(ModbusPeer(ptys[0], unit, registers))

    yield start
    for peer in peers:
        peer.stop()


def _registers_for(model: str, rng: np.random.Generator) -> tuple[list[int], dict[int, float]]:
    """Input registers holding a random float32 at every address the model's map uses."""
    registers = [0] * REGISTER_SPAN
    values = {}
    regmap = register_map(model)
    for spec in (*regmap.outlets.values(), regmap.total):
        for register in spec.values():
            value = float(np.float32(rng.uniform(0.1, 5000.0)))
            values[register.address] = value
            registers[register.address : register.address + 2] = (
                ModbusSerialClient.convert_to_registers(value, FLOAT32)
            )
    return registers, values


@pytest.mark.parametrize("model", ["sdm120", "sdm630"])
def test_reads_every_mapped_register_in_si_units(ptys, modbus_peer, model):
    registers, values = _registers_for(model, np.random.default_rng(20261129))
    modbus_peer(7, registers)
    meter = open_serial_meter(f"serial://{ptys[1]}?protocol={model}&unit=7", timeout_s=2.0)
    try:
        reading = asyncio.run(meter.read())
    finally:
        asyncio.run(meter.close())
    regmap = register_map(model)
    assert [o.outlet for o in reading.outlets] == sorted(regmap.outlets)
    for outlet in reading.outlets:
        spec = regmap.outlets[outlet.outlet]
        for name in ("voltage_v", "current_a", "power_w", "energy_wh"):
            register = spec[name]
            expected = values[register.address] * register.scale
            assert getattr(outlet, name) == pytest.approx(expected, rel=1e-9), (outlet, name)
    assert reading.total_power_w == pytest.approx(values[regmap.total["power_w"].address])
    assert reading.total_energy_wh == pytest.approx(
        values[regmap.total["energy_wh"].address] * 1000.0
    )
    assert reading.driver == model and reading.accuracy_pct == 1.0
    assert reading.read_at.tzinfo is not None


def test_nan_register_is_none_not_zero(ptys, modbus_peer):
    registers, _ = _registers_for("sdm120", np.random.default_rng(1))
    power = register_map("sdm120").outlets[1]["power_w"].address
    registers[power : power + 2] = ModbusSerialClient.convert_to_registers(float("nan"), FLOAT32)
    modbus_peer(1, registers)
    meter = open_serial_meter(f"serial://{ptys[1]}?protocol=sdm120", timeout_s=2.0)
    try:
        reading = asyncio.run(meter.read())
    finally:
        asyncio.run(meter.close())
    assert reading.outlets[0].power_w is None
    assert reading.outlets[0].voltage_v is not None


def test_modbus_exception_reply_names_registers(ptys, modbus_peer):
    modbus_peer(1, [0] * 20)  # too few registers: the server answers "illegal data address"
    meter = open_serial_meter(f"serial://{ptys[1]}?protocol=sdm120", timeout_s=2.0)
    try:
        with pytest.raises(MeterProtocolError, match=r"input registers 30001-30074.*exception"):
            asyncio.run(meter.read())
    finally:
        asyncio.run(meter.close())


def test_silent_line_is_a_timeout(ptys):
    # nobody on the other end of the pty pair: the request goes out, nothing comes back
    meter = open_serial_meter(f"serial://{ptys[1]}?protocol=sdm120&unit=9", timeout_s=0.2)
    try:
        with pytest.raises(MeterTimeout, match=rf"{ptys[1]} unit 9.*no answer"):
            asyncio.run(meter.read())
    finally:
        asyncio.run(meter.close())


def _raw_peer(device: Path, corrupt: Callable[[bytes], bytes]) -> threading.Thread:
    """Answer one 0x04 request with ``corrupt(valid reply)``.

    The port is opened before returning: pyserial flushes input on open, so a request sent
    earlier would be lost.
    """
    port = serial.Serial(str(device), timeout=5)

    def serve() -> None:
        with port:
            request = port.read(8)
            if len(request) == 8:
                count = int.from_bytes(request[4:6], "big")
                body = bytes([request[0], 0x04, 2 * count]) + bytes(2 * count)
                port.write(corrupt(body + FramerRTU.compute_CRC(body).to_bytes(2, "big")))
                port.flush()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize(
    ("corrupt", "message"),
    [
        (lambda frame: frame[:-2] + bytes([frame[-2] ^ 0xFF, frame[-1]]), "CRC error"),
        (lambda frame: frame[:40], "truncated frame, 40 of 153 bytes"),
    ],
    ids=["crc", "truncated"],
)
def test_bad_frames_are_protocol_errors(ptys, corrupt, message):
    peer = _raw_peer(ptys[0], corrupt)
    meter = open_serial_meter(f"serial://{ptys[1]}?protocol=sdm120", timeout_s=1.0, retries=0)
    try:
        with pytest.raises(
            MeterProtocolError, match=rf"{ptys[1]} unit 1, input registers.*{message}"
        ):
            asyncio.run(meter.read())
    finally:
        asyncio.run(meter.close())
    peer.join(5)


def test_absent_device_is_unreachable(tmp_path: Path):
    with pytest.raises(MeterUnreachable, match=r"cannot open serial device .*: no such device"):
        open_serial_meter(f"serial://{tmp_path}/ttyNONE?protocol=sdm630")


def test_a_file_that_is_no_serial_port_says_so():
    with pytest.raises(MeterUnreachable, match="/dev/null: not a serial port"):
        open_serial_meter("serial:///dev/null?protocol=sdm120")


EAMS = str(Path(sys.executable).with_name("eams"))


def test_cli_reads_a_serial_meter_as_json(ptys, modbus_peer):
    registers, values = _registers_for("sdm630", np.random.default_rng(5))
    modbus_peer(1, registers)
    result = subprocess.run(
        [EAMS, "meter", "read", f"serial://{ptys[1]}?protocol=sdm630", "--json"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    regmap = register_map("sdm630")
    assert [o["outlet"] for o in answer["outlets"]] == [1, 2, 3]
    assert [o["power_w"] for o in answer["outlets"]] == pytest.approx(
        [values[regmap.outlets[n]["power_w"].address] for n in (1, 2, 3)]
    )
    assert answer["total_power_w"] == pytest.approx(values[regmap.total["power_w"].address])


def test_cli_names_an_absent_device_in_one_line(tmp_path: Path):
    result = subprocess.run(
        [EAMS, "meter", "read", f"serial://{tmp_path}/ttyNONE?protocol=sdm120"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 1
    assert len(result.stderr.strip().splitlines()) == 1
    assert f"{tmp_path}/ttyNONE" in result.stderr and "Traceback" not in result.stderr


def test_public_names_are_pinned():
    import eams.meter.serial as serial_meters

    assert sorted(serial_meters.__all__) == ["EastronMeter", "WattsUpMeter", "open_serial_meter"]


#: What each quantity of registers.yaml must be in the vendor register table (Parameter
#: column; ``{n}`` = phase), so the peer tests above do not only check the map against itself.
CSV_PARAMETER = {
    "sdm120": {
        "voltage_v": "Voltage",
        "current_a": "Current",
        "power_w": "Active power",
        "energy_wh": "Import active energy",
        "total_power_w": "Active power",
        "total_energy_wh": "Import active energy",
    },
    "sdm630": {
        "voltage_v": "Phase {n} Voltage",
        "current_a": "Phase {n} Current",
        "power_w": "Phase {n} Power",
        "energy_wh": "L{n} Import kWh",
        "total_power_w": "Total System Power",
        "total_energy_wh": "Total Import kWh",
    },
}
UNIT_SCALE = {"Volts": 1.0, "Amps": 1.0, "Watts": 1.0, "kWh": 1000.0}  # device unit -> V, A, W, Wh


@pytest.mark.parametrize("model", ["sdm120", "sdm630"])
def test_register_map_matches_the_vendor_table(shared_data: Path, model: str) -> None:
    import csv

    path = shared_data / "power_meters" / f"eastron_{model}_registers.csv"
    with path.open(newline="") as handle:
        table = {int(row["Register"]): row for row in csv.DictReader(handle)}
    regmap = register_map(model)
    specs = [(n, name, reg) for n, q in regmap.outlets.items() for name, reg in q.items()]
    specs += [(None, f"total_{name}", reg) for name, reg in regmap.total.items()]
    assert len(specs) == (6 if model == "sdm120" else 14)
    for n, name, register in specs:
        row = table[register.register]
        assert row["Parameter"] == CSV_PARAMETER[model][name].format(n=n), (n, name)
        assert row["Data Type"] == "Float" and row["Length"] == "4", (n, name)
        assert register.scale == UNIT_SCALE[row["Units"]], (n, name, row["Units"])
