"""Outlet states in the recorded walks, read through snmpsim like any PDU (``open_meter``,
auto-detection, GETBULK) and checked, outlet by outlet, against an oracle: LibreNMS's decoded
state sensors where it has them, else the recorded raw value read by the MIB's enumeration
(written out here from the MIB, independently of ``profiles.yaml``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from eams.cli import cli
from eams.meter.blocking import BlockingMeter
from eams.meter.snmp.fake import parse_snmprec
from tests.meter.conftest import recordings_dir
from tests.meter.test_recorded_pdus import EXPECTED_DRIVER

pytestmark = pytest.mark.integration

#: recording → (LibreNMS sensor_type, index of the outlet number in the sensor OID from the end)
LIBRENMS_STATES = {
    "apc-cpdu": ("PowerNet-MIB::pduOutletSwitchedStatusState", 1),
    "apc_ap7900b": ("sPDUOutletCtl", 1),
    "apc_ap8959eu3": ("sPDUOutletCtl", 1),
    "apc_apdu9959eu3": ("sPDUOutletCtl", 1),
    "gude-epc_8031": ("epc8031PortState", 1),
    "raritan-pdu_px4": ("PDU2-MIB::outletSensorMeasurementsTable", 2),  # ....outlet.14
}
#: LibreNMS state descriptions → ours (others, e.g. outletReboot, read as None).
LIBRENMS_WORDS = {
    "on": "on",
    "outleton": "on",
    "off": "off",
    "off/unused": "off",
    "outletoff": "off",
}

#: recording → (state column, MIB enumeration, first index) where LibreNMS has no state sensor.
MIB_STATES = {
    # CPS-MIB ePDU2OutletSwitchedStatusState: outletStatusOn(1), outletStatusOff(2)
    "cyberpower_pdu81005": ("1.3.6.1.4.1.3808.1.1.6.6.1.4.1.5", {1: "on", 2: "off"}, 1),
    # EATON-EPDU-MIB outletControlStatus: off(0), on(1), pendingOff(2), pendingOn(3)
    "eatonpdu_2": ("1.3.6.1.4.1.534.6.6.7.6.6.1.2.0", {0: "off", 1: "on"}, 1),
    # NUT eaton-pdu-revelation-mib.c outlet status: off(0), on(1), cycling(2); rows from 0
    "eatonpdu_dbq": ("1.3.6.1.4.1.534.6.6.6.1.2.2.1.3", {0: "off", 1: "on"}, 0),
}


def _librenms(shared_data: Path, name: str) -> dict[int, str | None]:
    sensor_type, position = LIBRENMS_STATES[name]
    path = shared_data / "pdu_snmp" / "librenms_expected_json" / f"{name}.json"
    discovery = json.loads(path.read_text())["sensors"]["discovery"]
    words = {
        s["state_value"]: LIBRENMS_WORDS.get(s["state_descr"].lower())
        for s in discovery["state_indexes"]
        if s["state_name"] == sensor_type
    }
    return {
        int(s["sensor_oid"].split(".")[-position]): words[int(s["sensor_current"])]
        for s in discovery["sensors"]
        if s["sensor_type"] == sensor_type
    }


def _recorded(shared_data: Path, name: str) -> dict[int, str | None]:
    column, enumeration, first = MIB_STATES[name]
    values = parse_snmprec((recordings_dir(shared_data) / f"{name}.snmprec").read_text())
    rows = sorted(
        (int(oid.rsplit(".", 1)[1]), v) for oid, v in values.items() if oid.startswith(column + ".")
    )
    return {index - first + 1: enumeration.get(int(v)) for index, v in rows}  # type: ignore[arg-type]


@pytest.mark.parametrize("name", sorted(EXPECTED_DRIVER))
def test_every_recorded_state_is_read_and_only_those(snmp_agent, shared_data, name) -> None:
    with BlockingMeter(snmp_agent.url(name), timeout_s=3.0, retries=2) as meter:
        reading = meter.read()
    ours = {o.outlet: o.state for o in reading.outlets}
    if name in LIBRENMS_STATES:
        expected: dict[int, str | None] = dict(_librenms(shared_data, name))
    elif name in MIB_STATES:
        expected = _recorded(shared_data, name)
    else:  # no state object in the walk: every state is null, never a guess
        assert set(ours.values()) <= {None}, ours
        return
    assert ours == expected
    assert None not in ours.values()


def test_the_oracles_hold_both_states(shared_data) -> None:
    """Not every outlet is on: the comparison above fails on a swapped enumeration."""
    for name in ("gude-epc_8031", "apc_ap8959eu3"):
        assert set(_librenms(shared_data, name).values()) == {"on", "off"}, name


def test_meter_read_json_carries_the_states(snmp_agent, shared_data) -> None:
    result = CliRunner().invoke(
        cli,
        ["meter", "read", snmp_agent.url("gude-epc_8031"), "--json", "--timeout-s", "3"],
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    states = {o["outlet"]: o["state"] for o in doc["outlets"]}
    assert states == _librenms(shared_data, "gude-epc_8031")
    assert sorted(set(states.values())) == ["off", "on"]
    assert all(o["power_w"] is None for o in doc["outlets"])  # relay ports: metered as a total
    assert doc["total_power_w"] is not None
