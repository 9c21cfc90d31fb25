"""Watts Up? PRO: the recorded captures decoded, and replayed byte for byte over a pty pair."""

import asyncio
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import serial

from eams.meter.errors import MeterProtocolError, MeterTimeout
from eams.meter.serial import open_serial_meter
from eams.meter.serial.wattsup import START_LOGGING, decode_record, split_records

CAPTURES = ("wattsup_pro_raw_fan.raw", "wattsup_pro_raw_iphone4_charging.raw")


def _expected(record: bytes) -> dict[str, float]:
    """Decode a record independently of the driver: the field order and scaling of the
    protocol-strings file (W/10, V/10, A/1000) and WH in tenths of Wh."""
    fields = record.decode().strip("\x00\r\n;").split(",")[3:]
    return {
        "power_w": int(fields[0]) / 10,
        "voltage_v": int(fields[1]) / 10,
        "current_a": int(fields[2]) / 1000,
        "energy_wh": int(fields[3]) / 10,
    }


@pytest.mark.parametrize("capture", CAPTURES)
def test_every_recorded_record_decodes(shared_data: Path, capture: str):
    data = (shared_data / "power_meters" / capture).read_bytes()
    records, rest = split_records(data)
    assert rest == b""
    # one record per CR LF-terminated line of the capture (some lines hold NULs or two records)
    assert len(records) == data.count(b"#d,")
    for record in records:
        decoded = decode_record(record, capture)
        for name, value in _expected(record).items():
            assert getattr(decoded, name) == pytest.approx(value)


@pytest.fixture
def peer(ptys) -> Iterator[serial.Serial]:
    with serial.Serial(str(ptys[0]), timeout=1) as port:
        yield port


def _open(ptys, timeout_s: float = 1.0):
    return open_serial_meter(f"serial://{ptys[1]}?protocol=wattsup", timeout_s=timeout_s)


def test_replayed_capture_gives_the_newest_record(shared_data: Path, ptys, peer):
    data = (shared_data / "power_meters" / CAPTURES[0]).read_bytes()
    lines = data.split(b"\n")[:40]
    meter = _open(ptys)
    try:
        assert peer.read(len(START_LOGGING)) == START_LOGGING  # the meter was told to log
        peer.write(b"\n".join(lines) + b"\n")
        peer.flush()
        time.sleep(0.5)  # let socat carry every byte across before the read drains them
        reading = asyncio.run(meter.read())
    finally:
        asyncio.run(meter.close())
    newest = split_records(b"\n".join(lines))[0][-1]
    outlet = reading.outlet(1)
    for name, value in _expected(newest).items():
        assert getattr(outlet, name) == pytest.approx(value)
    assert reading.total_power_w == outlet.power_w
    assert reading.driver == "wattsup"


def test_read_waits_for_the_next_record(shared_data: Path, ptys, peer):
    record = split_records((shared_data / "power_meters" / CAPTURES[1]).read_bytes())[0][-1]
    delayed = threading.Timer(0.3, lambda: (peer.write(record + b"\r\n"), peer.flush()))
    meter = _open(ptys)
    delayed.start()
    try:
        reading = asyncio.run(meter.read())
    finally:
        delayed.join()
        asyncio.run(meter.close())
    assert reading.outlet(1).energy_wh == pytest.approx(_expected(record)["energy_wh"])


def test_truncated_record_is_a_protocol_error(ptys, peer):
    meter = _open(ptys)
    try:
        peer.write(b"#d,-,18,416,1190;\r\n")
        peer.flush()
        with pytest.raises(MeterProtocolError, match=r"ttyB.*truncated frame, 2 fields where 18"):
            asyncio.run(meter.read())
    finally:
        asyncio.run(meter.close())


def test_silent_meter_is_a_timeout(ptys, peer):
    meter = _open(ptys, timeout_s=0.2)
    try:
        with pytest.raises(MeterTimeout, match="ttyB"):
            asyncio.run(meter.read())
    finally:
        asyncio.run(meter.close())


def test_scaled_fields_carry_no_float_noise():
    fields = ["416", "1190", "350", "2"] + ["0"] * 14
    record = decode_record(f"#d,-,18,{','.join(fields)};".encode(), "test")
    assert (record.power_w, record.voltage_v, record.current_a) == (41.6, 119.0, 0.35)
    assert record.energy_wh == 0.2


def test_a_garbled_field_is_none_and_named():
    fields = ["4x6", "1190", "350", "2"] + ["0"] * 14
    record = decode_record(f"#d,-,18,{','.join(fields)};".encode(), "ttyB")
    assert record.power_w is None and record.voltage_v == 119.0
    assert record.problems == ("ttyB: field W = '4x6' is not a number",)


def test_garbled_field_over_the_line_is_null_and_listed(ptys, peer):
    meter = _open(ptys)
    try:
        fields = ["416", "1190", "?", "2"] + ["0"] * 14
        peer.write(f"#d,-,18,{','.join(fields)};\r\n".encode())
        peer.flush()
        reading = asyncio.run(meter.read())
        assert reading.outlet(1).current_a is None and reading.outlet(1).power_w == 41.6
        assert meter.last_problems == [f"{ptys[1]} (Watts Up? PRO): field A = '?' is not a number"]
    finally:
        asyncio.run(meter.close())
