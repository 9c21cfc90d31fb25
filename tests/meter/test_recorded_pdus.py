"""THE recorded-PDU test: every walk in ``pdu_snmp/snmprec`` is served by one snmpsim, read
through ``open_meter`` (auto-detected driver, pysnmp, GETBULK), and each power, current,
voltage and energy value we report is checked against LibreNMS's decoded value for the same
OID (``librenms_expected_json``, the oracle: read here only, never at runtime).

Oracle units: LibreNMS gives W, A, V and kWh (``power_consumed``); we give Wh.
"""

from __future__ import annotations

import asyncio
import json
import re
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from eams.meter.blocking import BlockingMeter
from eams.meter.check import check_reading
from eams.meter.reading import Reading
from eams.meter.snmp.client import oid_in_subtree
from eams.meter.snmp.fake import FakeSnmpClient
from eams.meter.snmp.meter import SnmpMeter
from eams.meter.snmp.registry import detect, family
from eams.meter.url import parse_meter_url
from tests.meter.conftest import recordings_dir

#: recording → the driver auto-detection must pick.
EXPECTED_DRIVER = {
    "apc-cpdu": "apc_cpdu",
    "apc-epdu_epdu1116s": "apc_epdu",
    "apc_ap7900b": "apc_rpdu2",
    "apc_ap8959eu3": "apc_rpdu2",
    "apc_apdu9959eu3": "apc_rpdu2",
    "cyberpower_pdu81005": "cyberpower_epdu",
    "eatonpdu_2": "eaton_epdu",
    "eatonpdu_dbq": "eaton_pu_sw",
    "enlogic-pdu_v2": "enlogic_pdu",
    "gude-epc_8031": "gude_epc",
    "panduit_g5-p32g13m": "panduit_g5",
    "raritan-pdu": "raritan_pdu",
    "raritan-pdu_px2": "raritan_pdu2",
    "raritan-pdu_px4": "raritan_pdu2",
    "schleifenbauer_dpm27e": "schleifenbauer",
    "sentry3_3phase": "sentry3",
    "sentry3_switched": "sentry3",
    "sentry4": "sentry4",
    "vertiv-pdu_mg02e4w1": "vertiv_v5",
}

#: The one recording with nothing metered that we read: Eaton's G1 switched ePDU (.534.6.6.6),
#: whose walk holds outlet switch states (LibreNMS discovers no sensor on it either). Reading it
#: gives every outlet's state and no power, current or energy: null, never zeros.
METERS_NOTHING = {"eatonpdu_dbq"}

#: Recordings that publish no *active* power, so only currents (and energy) can be checked:
#: - sentry3_switched: a Switched CDU meters outlet/infeed current only (Sentry3-MIB).
#: - raritan-pdu and schleifenbauer_dpm27e: LibreNMS labels a column "power" that the vendor
#:   MIB defines as apparent power (PDU-MIB outletEntry 8 = outletApparentPower, VA;
#:   SCHLEIFENBAUER-DATABUS-MIB sdbDevOutMtEntry 10 = sdbDevOutMtPowerVoltAmpere, VA). The
#:   active-power columns (outletEntry 7, sdbDevOutMtEntry 11) are absent from the walks, so
#:   our outlet power_w is None there, and we must never report those VA columns as W.
NO_ACTIVE_POWER = {
    "sentry3_switched": None,
    "raritan-pdu": "1.3.6.1.4.1.13742.4.1.2.2.1.8",
    "schleifenbauer_dpm27e": "1.3.6.1.4.1.31034.12.1.1.2.7.2.1.10",
}

#: Where the oracle names an OID that is not in the walk, our OID → the oracle's. LibreNMS's
#: Enlogic discovery appends the row index twice (pduUnitStatusActivePower.1.1); the recording
#: holds only pduUnitStatusActivePower.1, whose value (1120 W) is the one LibreNMS shows.
ORACLE_OID_ALIAS = {
    "enlogic-pdu_v2": {"1.3.6.1.4.1.38446.1.2.4.1.4.1": "1.3.6.1.4.1.38446.1.2.4.1.4.1.1"},
}

#: Values we report that LibreNMS does not decode, so the oracle cannot check them: listed here
#: so none goes unchecked silently (the test fails when this set changes). Their scale is the
#: vendor MIB's (``pdu_snmp/mibs``, quoted in profiles.yaml); outlet power where the oracle has
#: none is checked against the device total by ``test_outlet_sum_agrees_with_the_total``.
#: - apc-cpdu: LibreNMS reads no energy (pduOutletMeteredStatusResettableEnergy,
#:   pduUnitStatusEnergy: tenths of kWh).
#: - cyberpower_pdu81005: LibreNMS reads no ePDU2OutletMeteredStatusTable (Load: tenths of A,
#:   ActivePower: W, Energy: tenths of kWh).
#: - eatonpdu_2: no energy in LibreNMS (outletWh, inputTotalWh: Wh); it reads the feed's
#:   inputWatts (1589 W) where our total is inputTotalWatts (1584 W).
#: - enlogic-pdu_v2: no pduUnitStatusEnergy (tenths of kWh) in LibreNMS.
#: - raritan-pdu: LibreNMS reads inlet current and voltage only, not inletActivePower (W) or
#:   inletActiveEnergy (Wh).
#: - sentry4: no st4InputCordEnergy (tenths of kWh) in LibreNMS.
UNVERIFIED = {
    "apc-cpdu": {(True, "energy_wh"), (False, "energy_wh")},
    "cyberpower_pdu81005": {(True, "power_w"), (True, "current_a"), (True, "energy_wh")},
    "eatonpdu_2": {(True, "energy_wh"), (False, "energy_wh"), (False, "power_w")},
    "enlogic-pdu_v2": {(False, "energy_wh")},
    "raritan-pdu": {(False, "power_w"), (False, "energy_wh")},
    "sentry4": {(False, "energy_wh")},
}

FIELD_CLASS = {
    "power_w": "power",
    "current_a": "current",
    "voltage_v": "voltage",
    "energy_wh": "power_consumed",
}
TO_OURS = {"power_consumed": 1000.0}  # kWh → Wh


#: The outlet number LibreNMS puts at the start of an outlet sensor's description:
#: "1 Test Name" (APC cPDU), "2 OUTLET2" (Raritan PX2/PX4), "Outlet A1: name" (Eaton).
ORACLE_OUTLET_NUMBER = re.compile(r"(?:Outlet [A-Z])?(\d+)(?:\b|:)")


def _oracle(shared_data: Path, name: str) -> dict[str, tuple[str, float, str]]:
    path = shared_data / "pdu_snmp" / "librenms_expected_json" / f"{name}.json"
    doc = json.loads(path.read_text())
    sensors = ((doc.get("sensors") or {}).get("discovery") or {}).get("sensors") or []
    return {
        s["sensor_oid"].lstrip("."): (
            s["sensor_class"],
            float(s["sensor_current"]),
            s["sensor_descr"] or "",
        )
        for s in sensors
        if s["sensor_class"] in FIELD_CLASS.values() and s["sensor_current"] is not None
    }


def _value(reading, outlet: int | None, field: str) -> float | None:
    if outlet is None:
        return {"power_w": reading.total_power_w, "energy_wh": reading.total_energy_wh}[field]
    row = reading.outlet(outlet)
    assert row is not None, f"outlet {outlet} has a source but no row"
    return getattr(row, field)


def test_every_recording_has_an_expectation(shared_data: Path) -> None:
    names = {p.stem for p in recordings_dir(shared_data).glob("*.snmprec")}
    assert names == set(EXPECTED_DRIVER), "add new recordings to EXPECTED_DRIVER"


@pytest.mark.parametrize("name", sorted(EXPECTED_DRIVER))
def test_auto_detection_picks_the_family(shared_data: Path, name: str) -> None:
    fake = FakeSnmpClient.from_file(recordings_dir(shared_data) / f"{name}.snmprec")
    sys_descr = fake.values.get("1.3.6.1.2.1.1.1.0")
    fam = detect(str(fake.values["1.3.6.1.2.1.1.2.0"]), str(sys_descr or ""))
    assert fam.name == EXPECTED_DRIVER[name]


@pytest.mark.integration
@pytest.mark.parametrize("name", sorted(EXPECTED_DRIVER))
def test_recording_matches_librenms(snmp_agent, shared_data: Path, name: str) -> None:
    with BlockingMeter(snmp_agent.url(name), timeout_s=3.0, retries=2) as meter:
        reading = meter.read()
        decoded = meter.meter.last_decoded
    if name in METERS_NOTHING:
        assert reading.total_power_w is None and reading.total_energy_wh is None
        assert reading.outlets and all(o.state is not None for o in reading.outlets)
        assert not [k for k in decoded.sources if k[1] != "state"], decoded.sources
        return
    assert reading.driver == EXPECTED_DRIVER[name]
    assert decoded.problems == [], decoded.problems
    oracle = _oracle(shared_data, name)
    checked: dict[str, int] = {f: 0 for f in FIELD_CLASS}
    matched: set[str] = set()
    unverified: set[tuple[bool, str]] = set()  # (per outlet?, field)
    for (outlet, field), oids in decoded.sources.items():
        if field == "state":  # checked by test_recorded_states.py
            continue
        ours = _value(reading, outlet, field)
        alias = ORACLE_OID_ALIAS.get(name, {})
        terms = [oracle.get(alias.get(oid, oid)) for oid in oids]
        if any(t is None or t[0] != FIELD_CLASS[field] for t in terms):
            unverified.add((outlet is not None, field))  # LibreNMS does not decode it
            continue
        expected = sum(t[1] for t in terms) * TO_OURS.get(FIELD_CLASS[field], 1.0)
        where = f"{name} outlet {outlet} {field} from {oids}"
        if float(expected).is_integer() and float(ours).is_integer():
            assert ours == expected, where
        else:
            assert ours == pytest.approx(expected, rel=0.005), where
        if outlet is not None:  # the value sits on the right outlet, not only the right OID
            descr, label = terms[0][2], reading.outlet(outlet).name
            assert label is None or label in descr, (where, label, descr)
            number = ORACLE_OUTLET_NUMBER.match(descr)
            assert number is None or int(number.group(1)) == outlet, (where, descr)
        checked[field] += 1
        matched.update(oids)
    assert unverified == UNVERIFIED.get(name, set()), f"{name}: values without an oracle"
    # Coverage: every oracle sensor in an outlet column we read (same sensor type) is reported.
    fam = family(reading.driver)
    for field, reader in fam.outlets.items():
        for spec in reader.specs:
            for oid, (cls, _, _) in oracle.items():
                in_column = oid_in_subtree(oid, spec.oid) and (
                    spec.suffix is None or oid.endswith(f".{spec.suffix}")
                )
                if in_column and cls == FIELD_CLASS[field]:
                    assert oid in matched, f"{name}: {oid} ({cls}) not reported"
    if name in NO_ACTIVE_POWER:
        assert checked["current_a"] > 0, f"{name}: no current checked"
        va_column = NO_ACTIVE_POWER[name]
        if va_column:
            used = [o for (_, f), oids in decoded.sources.items() if f == "power_w" for o in oids]
            assert not any(oid_in_subtree(o, va_column) for o in used)
    else:
        assert checked["power_w"] > 0, f"{name}: no power value checked against LibreNMS"


#: Recordings publishing both per-outlet power and a device total, and the sum's gap (W).
BOTH = {
    "apc-cpdu": 255.0 - 258.0,
    "cyberpower_pdu81005": 220.0 - 216.0,
    "eatonpdu_2": 1568.0 - 1584.0,
    "raritan-pdu_px2": 0.0,
    "raritan-pdu_px4": 584.0 - 590.0,
}


@pytest.mark.parametrize("name", sorted(EXPECTED_DRIVER))
def test_outlet_sum_agrees_with_the_total(shared_data: Path, name: str) -> None:
    """Outlet power the oracle cannot check (CyberPower) is checked against the device total:
    a wrong scale (tenths, kW) would be off by 10× or more, far outside ±5 %."""
    fake = FakeSnmpClient.from_file(recordings_dir(shared_data) / f"{name}.snmprec")
    meter = SnmpMeter(parse_meter_url("snmp://public@192.0.2.1"), fake)  # in memory, no I/O
    result = check_reading(asyncio.run(meter.read()))
    if name not in BOTH:
        assert result.gap_w is None, f"{name}: publishes both; add it to BOTH"
        return
    assert result.ok, result.summary()
    assert result.gap_w == pytest.approx(BOTH[name], abs=1e-6)


def _float_or_null(value: object) -> bool:
    return value is None or (isinstance(value, float) and not isinstance(value, bool))


@pytest.mark.parametrize("name", sorted(EXPECTED_DRIVER))
def test_json_contract_holds_for_every_recording(shared_data: Path, name: str) -> None:
    """The issue-2 ``--json`` object: its keys and types on every outlet of every device."""
    fake = FakeSnmpClient.from_file(recordings_dir(shared_data) / f"{name}.snmprec")
    reading = asyncio.run(SnmpMeter(parse_meter_url("snmp://c@192.0.2.1"), fake).read())
    doc = json.loads(json.dumps(reading.to_json()))
    assert {"meter", "read_at", "total_power_w", "outlets"} <= set(doc)
    assert isinstance(doc["meter"], str) and "c@" not in doc["meter"]
    read_at = datetime.fromisoformat(doc["read_at"])
    assert doc["read_at"].endswith("Z") and read_at.utcoffset() == timedelta(0)
    assert _float_or_null(doc["total_power_w"]) and _float_or_null(doc["total_energy_wh"])
    numbers = [o["outlet"] for o in doc["outlets"]]
    assert numbers == list(range(1, len(numbers) + 1)), numbers
    for outlet in doc["outlets"]:
        assert {"outlet", "name", "power_w", "current_a", "voltage_v", "energy_wh"} <= set(outlet)
        assert outlet["state"] in ("on", "off", None), outlet
        assert type(outlet["outlet"]) is int
        assert outlet["name"] is None or (isinstance(outlet["name"], str) and outlet["name"])
        for key in ("power_w", "current_a", "voltage_v", "energy_wh"):
            assert _float_or_null(outlet[key]), (outlet["outlet"], key, outlet[key])


def test_a_naive_read_at_is_refused() -> None:
    with pytest.raises(ValueError, match="timezone-aware UTC"):
        Reading(meter="m", read_at=datetime(2026, 1, 1), driver="x")
    with pytest.raises(ValueError, match="timezone-aware UTC"):
        Reading(meter="m", read_at=datetime.now(timezone(timedelta(hours=1))), driver="x")
    utc = Reading(meter="m", read_at=datetime(2026, 1, 1, tzinfo=UTC), driver="x")
    assert utc.to_json()["read_at"] == "2026-01-01T00:00:00Z"
