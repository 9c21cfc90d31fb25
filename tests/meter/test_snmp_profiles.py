"""Decoding rules of ``profiles.yaml`` on in-memory agents (no network): decimal digits,
sensor-type suffixes, candidates, "not available" codes, row filters, outlet numbering, the
metering floor, and the check of outlet sum against the total."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from eams.meter.check import check_reading
from eams.meter.errors import UnknownDevice
from eams.meter.reading import OutletReading, Reading
from eams.meter.snmp.client import SnmpClient
from eams.meter.snmp.fake import FakeSnmpClient, parse_snmprec
from eams.meter.snmp.meter import SnmpMeter
from eams.meter.snmp.registry import detect, families
from eams.meter.url import parse_meter_url

URL = parse_meter_url("snmp://public@192.0.2.1:161")  # never contacted: fake transport


def _read(values: dict, driver: str) -> tuple[Reading, list[str]]:
    meter = SnmpMeter(URL, FakeSnmpClient(values), driver=driver)
    return asyncio.run(meter.read()), meter.last_problems


def test_every_family_loads_and_names_a_source() -> None:
    fams = families()
    assert len(fams) >= 15
    for fam in fams.values():
        assert fam.sys_object_ids, fam.name
        assert fam.source, fam.name
        assert fam.outlets or fam.total or fam.switch, fam.name
        assert bool(fam.switch) != bool(fam.no_switch), fam.name  # switches, or says why not


def test_longest_prefix_wins() -> None:
    assert detect("1.3.6.1.4.1.13742.6", "").name == "raritan_pdu2"
    assert detect(".1.3.6.1.4.1.13742.4", "").name == "raritan_pdu"
    assert detect("1.3.6.1.4.1.1718.4.1", "").name == "sentry4"
    assert detect("1.3.6.1.4.1.534.6.6.7", "").name == "eaton_epdu"
    with pytest.raises(UnknownDevice):
        detect("1.3.6.1.4.1.13742", "")  # shorter than every prefix
    with pytest.raises(UnknownDevice):
        detect("1.3.6.1.4.1.1718.40", "")  # 1718.4 is not a prefix of 1718.40


def test_raritan_decimal_digits_and_sensor_types() -> None:
    base, digits = "1.3.6.1.4.1.13742.6.5.4.3.1.4.1", "1.3.6.1.4.1.13742.6.3.5.4.1.7.1"
    values = {
        f"{base}.1.1": 1234,
        f"{digits}.1.1": 3,  # rmsCurrent 1.234 A
        f"{base}.1.4": 2301,
        f"{digits}.1.4": 1,  # rmsVoltage 230.1 V
        f"{base}.1.5": 284,
        f"{digits}.1.5": 0,  # activePower 284 W
        f"{base}.1.8": 98765,
        f"{digits}.1.8": 0,  # activeEnergy 98765 Wh
        f"{base}.2.5": 7,
        f"{digits}.2.5": 0,
        "1.3.6.1.4.1.13742.6.3.5.3.1.3.1.1": "web-1",
        "1.3.6.1.4.1.13742.6.3.5.3.1.3.1.2": "",
    }
    reading, problems = _read(values, "raritan_pdu2")
    one, two = reading.outlets
    assert (one.outlet, one.name, one.current_a, one.voltage_v) == (1, "web-1", 1.234, 230.1)
    assert (one.power_w, one.energy_wh) == (284.0, 98765.0)
    assert (two.outlet, two.name, two.power_w, two.current_a) == (2, None, 7.0, None)
    assert problems == []


def test_candidates_fall_back_and_minus_one_is_not_available() -> None:
    values = {
        "1.3.6.1.4.1.318.1.1.26.4.3.1.5.1": -1,  # rPDU2DeviceStatusPower: not supported
        "1.3.6.1.4.1.318.1.1.26.4.3.1.9.1": -1,
        "1.3.6.1.4.1.318.1.1.12.1.16.0": 312,  # rPDUIdentDevicePowerWatts
    }
    reading, problems = _read(values, "apc_rpdu2")
    assert reading.total_power_w == 312.0
    assert reading.total_energy_wh is None  # -1 → None, never 0
    assert problems == []


def test_a_negative_value_is_none_and_recorded() -> None:
    watts = "1.3.6.1.4.1.534.6.6.7.6.5.1.3.0"  # Eaton outletWatts: negative = not available
    values = {f"{watts}.1": 80, f"{watts}.2": -2, f"{watts}.3": 0}
    reading, problems = _read(values, "eaton_epdu")
    assert [o.power_w for o in reading.outlets] == [80.0, None, 0.0]
    assert problems == [f"{watts}.2: -2 is negative, not a measurement"]


def test_apc_scaling_and_floor() -> None:
    col = "1.3.6.1.4.1.318.1.1.26.9.4.3.1"
    values = {
        f"{col}.4.1": 1,
        f"{col}.6.1": 4,
        f"{col}.7.1": 92,
        f"{col}.11.1": 17,
        f"{col}.4.2": 2,
        f"{col}.6.2": 0,
        f"{col}.7.2": 0,
        f"{col}.11.2": 0,
        "1.3.6.1.4.1.318.1.1.26.4.3.1.5.1": 9,  # hundredths of kW
    }
    reading, _ = _read(values, "apc_rpdu2")
    busy, idle = reading.outlets
    assert (busy.current_a, busy.power_w, busy.energy_wh) == (0.4, 92.0, 1700.0)
    assert not busy.below_floor
    assert idle.power_w == 0.0 and idle.below_floor  # 0 W under APC's 50 W floor
    assert reading.total_power_w == 90.0
    assert (reading.floor_w, reading.accuracy_pct) == (50.0, 3.0)


def test_ordinal_numbering_and_empty_slots() -> None:
    col = "1.3.6.1.4.1.1718.3.2.3.1"  # Sentry3 outletTable: tower.infeed.outlet
    values = {f"{col}.7.1.1.1": 10, f"{col}.7.1.1.2": 20, f"{col}.7.1.2.1": 30}
    reading, _ = _read(values, "sentry3")
    assert [(o.outlet, o.current_a) for o in reading.outlets] == [(1, 0.1), (2, 0.2), (3, 0.3)]
    cpdu = "1.3.6.1.4.1.318.1.1.32.5.9.1"
    values = {f"{cpdu}.2.1.1": 1, f"{cpdu}.6.1.1": 5, f"{cpdu}.2.1.2": 0, f"{cpdu}.6.1.2": 0}
    reading, _ = _read(values, "apc_cpdu")
    assert [o.outlet for o in reading.outlets] == [1]  # number 0 = no outlet in that slot


def test_row_filter_keeps_phase_rows_only() -> None:
    col = "1.3.6.1.4.1.3808.1.1.3.2.3.1.1.7"  # ePDULoadStatusActivePower: phase 1, bank 1
    reading, _ = _read({f"{col}.1": 216, f"{col}.2": 216}, "cyberpower_epdu")
    assert reading.total_power_w == 216.0  # not 432: the bank is part of the phase


def test_snmprec_parser_types() -> None:
    values = parse_snmprec("1.2.3|2|-5\n1.2.4|66|7\n1.2.5|4|text\n1.2.6|4x|414243\n1.2.7|6|1.3.6\n")
    assert values == {"1.2.3": -5, "1.2.4": 7, "1.2.5": "text", "1.2.6": "ABC", "1.2.7": "1.3.6"}
    with pytest.raises(ValueError, match="line 1"):
        parse_snmprec("garbage")


def test_bulk_answer_is_filed_per_column_and_stops_at_subtree_end() -> None:
    class Name(str):
        pass

    found = {"1.1": [], "1.2": []}
    cursor = {"1.1": "1.1", "1.2": "1.2"}
    answer = [
        (Name("1.1.1"), 10),
        (Name("1.2.1"), 20),
        (Name("1.1.2"), 11),
        (Name("1.3.1"), 99),  # 1.2 ends: next column's OID
        (Name("1.10.1"), 5),
        (Name("1.3.2"), 98),  # 1.1 ends: 1.10 is not under 1.1
    ]
    left = SnmpClient._absorb(["1.1", "1.2"], answer, found, cursor)
    assert left == []
    assert found == {"1.1": [("1.1.1", 10), ("1.1.2", 11)], "1.2": [("1.2.1", 20)]}


def _reading(outlets: list[float], total: float | None, accuracy: float | None) -> Reading:
    return Reading(
        meter="snmp://***@h:161",
        read_at=datetime.now(UTC),
        driver="x",
        outlets=tuple(OutletReading(i + 1, power_w=p) for i, p in enumerate(outlets)),
        total_power_w=total,
        accuracy_pct=accuracy,
    )


def test_check_reading_band() -> None:
    ok = check_reading(_reading([100.0, 200.0], 305.0, 3.0))
    assert ok.ok and ok.gap_w == -5.0 and ok.allowed_w == pytest.approx(0.03 * 605.0)
    bad = check_reading(_reading([100.0, 200.0], 400.0, 3.0))
    assert not bad.ok and "MISMATCH" in bad.summary()
    assumed = check_reading(_reading([100.0], 100.0, None))
    assert assumed.assumed and assumed.accuracy_pct == 5.0
    missing = check_reading(_reading([], 100.0, 3.0))
    assert not missing.ok and "no per-outlet power" in missing.summary()


def test_check_reading_refuses_a_partial_outlet_sum() -> None:
    # outlet 2 failed to read: 110 W of 260 W is no evidence of a mismatch
    partial = check_reading(_reading([110.0, None, 150.0], 260.0, 3.0))
    assert not partial.ok and partial.gap_w is None
    assert "cannot check: no power value for outlet(s) 2" in partial.summary()


def test_a_total_missing_a_row_is_none_not_a_partial_sum() -> None:
    cord_power = "1.3.6.1.4.1.1718.4.1.3.3.1.3"  # st4InputCordActivePower, summed over cords
    values = {
        "1.3.6.1.2.1.1.2.0": "1.3.6.1.4.1.1718.4",
        f"{cord_power}.1.1": 1701,
        f"{cord_power}.2.1": "n/a",  # the second cord's value does not decode
        "1.3.6.1.4.1.1718.4.1.3.3.1.10.1.1": 8937,  # st4InputCordEnergy (tenths of kWh)
        "1.3.6.1.4.1.1718.4.1.3.3.1.10.2.1": 25659,
    }
    reading, problems = _read(values, "sentry4")
    assert reading.total_power_w is None
    assert reading.total_energy_wh == 3459600.0
    assert any(p.startswith("total power_w: not summed") for p in problems), problems
    values[f"{cord_power}.2.1"] = 1265
    assert _read(values, "sentry4")[0].total_power_w == 2966.0


def test_meter_package_public_names() -> None:
    import eams.meter

    assert sorted(eams.meter.__all__) == [
        "BadMacAddress",
        "BadMagicPacket",
        "BadMeterUrl",
        "BlockingMeter",
        "MeterAuthError",
        "MeterError",
        "MeterProtocolError",
        "MeterTimeout",
        "MeterUnreachable",
        "MeterUrl",
        "NotConfirmed",
        "OutletReading",
        "ReadBackDiffers",
        "Reading",
        "SwitchError",
        "SwitchUnsupported",
        "UnknownDevice",
        "UnknownOutlet",
        "WolError",
        "WriteRefused",
        "WrongEventLoop",
        "open_meter",
        "parse_meter_url",
    ]
    assert all(hasattr(eams.meter, name) for name in eams.meter.__all__)


def test_daisy_chained_units_are_numbered_in_order() -> None:
    col = "1.3.6.1.4.1.534.6.6.7.6.5.1.3"  # outletWatts.strapping.outlet: two units
    values = {f"{col}.0.1": 10, f"{col}.0.2": 20, f"{col}.1.1": 30}
    reading, _ = _read(values, "eaton_epdu")
    assert [(o.outlet, o.power_w) for o in reading.outlets] == [(1, 10.0), (2, 20.0), (3, 30.0)]


def test_snmp_package_public_names() -> None:
    import eams.meter.snmp

    assert sorted(eams.meter.snmp.__all__) == [
        "Family",
        "SnmpMeter",
        "SwitchPlan",
        "SwitchResult",
        "detect",
        "families",
        "family",
        "switch_outlet",
    ]
