"""Switching as data (``profiles.yaml`` ``switch``): every family switches or says why not,
every switch OID names its MIB object, malformed entries are refused, state values decode, and
the plans built on recorded walks (in memory, no network) set what the vendor's MIB says."""

from __future__ import annotations

import asyncio
from importlib import resources
from pathlib import Path

import pytest
import yaml

from eams.meter.errors import ReadBackDiffers, SwitchUnsupported, UnknownDevice, UnknownOutlet
from eams.meter.snmp.fake import FakeSnmpClient
from eams.meter.snmp.meter import SnmpMeter
from eams.meter.snmp.registry import _family, families
from eams.meter.snmp.switch import SwitchResult, switch_outlet
from eams.meter.snmp.switchspec import StateSpec
from eams.meter.url import parse_meter_url
from tests.meter.conftest import recordings_dir

URL = parse_meter_url("snmp://private@192.0.2.1:161")  # never contacted: fake transport


def _switch(shared_data: Path, name: str, outlet: int, action: str, **kw) -> SwitchResult:
    fake = FakeSnmpClient.from_file(recordings_dir(shared_data) / f"{name}.snmprec")
    return asyncio.run(switch_outlet(SnmpMeter(URL, fake), outlet, action, **kw))


def test_every_family_switches_or_says_why_not() -> None:
    for fam in families().values():
        assert bool(fam.switch) != bool(fam.no_switch), fam.name
        for spec in fam.switch:
            assert {"on", "off"} <= set(spec.actions), fam.name
            assert set(spec.state.on).isdisjoint(spec.state.off), fam.name


def test_every_switch_oid_is_commented_with_its_mib_object() -> None:
    text = resources.files("eams.meter.snmp").joinpath("profiles.yaml").read_text("utf-8")
    in_switch, lines = False, []
    for line in text.splitlines():
        indent = len(line) - len(line.lstrip())
        if line.strip() and indent <= 2:
            in_switch = line.startswith("  switch:")
        elif in_switch and "oid:" in line:
            lines.append(line)
    assert len(lines) > 50
    uncommented = [line for line in lines if "#" not in line]
    assert not uncommented, uncommented


STATE = {"oid": "1.2", "on_values": 1, "off_values": 2}
ON, OFF = {"oid": "1.3", "value": 1}, {"oid": "1.3", "value": 2}


@pytest.mark.parametrize(
    ("switch", "message"),
    [
        ([{"state": STATE, "set_on": ON}], r"missing \['set_off'\]"),
        ([{"state": {"oid": "1.2", True: 1, False: 2}, "set_on": ON, "set_off": OFF}],
         "unknown key"),  # what YAML makes of on: / off:
        ([{"state": {**STATE, "on_values": "yes"}, "set_on": ON, "set_off": OFF}],
         "expected an integer"),
        ([{"state": STATE, "set_on": {"oid": "1.3"}, "set_off": OFF}], r"missing \['value'\]"),
    ],
)  # fmt: skip
def test_a_malformed_switch_entry_is_refused_naming_where(switch, message) -> None:
    with pytest.raises(UnknownDevice, match=message):
        _family("x", {"sys_object_id": [".1.2"], "source": "s", "switch": switch})


def test_a_family_must_switch_or_say_why_not() -> None:
    with pytest.raises(UnknownDevice, match=r"either 'switch'.*or 'no_switch'"):
        _family("x", {"sys_object_id": [".1.2"], "source": "s"})


def test_state_values_decode_and_transitions_read_as_none() -> None:
    sentry3 = families()["sentry3"].switch[0].state
    assert [sentry3.decode(v) for v in (0, 1, 2, 3, 5, None)] == [
        "off",
        "on",
        None,
        None,
        None,
        None,
    ]
    raritan = StateSpec("1.2", on=(7,), off=(8,), suffix=14)
    walked = {"1.2": [("1.2.1.3.14", 7), ("1.2.1.3.5", 1), ("1.2.1.4.14", 8)]}
    assert raritan.rows(walked) == {(1, 3): ("1.2.1.3.14", 7), (1, 4): ("1.2.1.4.14", 8)}
    assert raritan.oid_at((1, 3)) == "1.2.1.3.14"


@pytest.mark.parametrize(
    ("name", "outlet", "action", "sets", "expect"),
    [
        # APC AP8959 with the MasterSwitch table only: sPDUOutletCtl reads and writes
        ("apc_ap8959eu3", 3, "off", [("1.3.6.1.4.1.318.1.1.4.4.2.1.3.3", 2)], [("off",)]),
        ("apc_ap8959eu3", 3, "reboot", [("1.3.6.1.4.1.318.1.1.4.4.2.1.3.3", 3)], [("off", "on")]),
        # APC cPDU: other values than rPDU2 (immediateOn(2), immediateReboot(5)), unit.outlet
        ("apc-cpdu", 7, "on", [("1.3.6.1.4.1.318.1.1.32.5.5.1.4.1.7", 2)], [("on",)]),
        ("apc-cpdu", 7, "reboot", [("1.3.6.1.4.1.318.1.1.32.5.5.1.4.1.7", 5)], [("off", "on")]),
        # Eaton G3: one object per command, the value is the delay
        ("eatonpdu_2", 2, "off", [("1.3.6.1.4.1.534.6.6.7.6.6.1.3.0.2", 0)], [("off",)]),
        # Raritan PX4: the state from the onOff sensor, the command in outletSwitchControlTable
        ("raritan-pdu_px4", 5, "reboot", [("1.3.6.1.4.1.13742.6.4.1.2.1.2.1.5", 2)],
         [("off", "on")]),
        # Gude: no reboot command, so off (confirmed) then on
        ("gude-epc_8031", 2, "reboot",
         [("1.3.6.1.4.1.28507.81.1.3.1.2.1.3.2", 0), ("1.3.6.1.4.1.28507.81.1.3.1.2.1.3.2", 1)],
         [("off",), ("on",)]),
        # Eaton G1 (NUT revelation): rows from 0, so outlet 1 is index 0
        ("eatonpdu_dbq", 1, "on", [("1.3.6.1.4.1.534.6.6.6.1.2.2.1.3.0", 1)], [("on",)]),
        ("cyberpower_pdu81005", 8, "on", [("1.3.6.1.4.1.3808.1.1.6.6.1.5.1.5.8", 1)], [("on",)]),
    ],
)  # fmt: skip
def test_a_dry_run_plans_the_vendor_sets(shared_data, name, outlet, action, sets, expect) -> None:
    result = _switch(shared_data, name, outlet, action, dry_run=True)
    assert not result.sent and result.elapsed_s == 0.0
    assert [s for phase in result.plan.phases for s in phase.sets] == sets
    assert [phase.expect for phase in result.plan.phases] == expect
    assert result.state == result.plan.state_before in ("on", "off")
    assert "would" in result.plan.describe()[0]


def test_schleifenbauer_unlocks_before_it_switches() -> None:
    spec = families()["schleifenbauer"].switch[0]
    base = "1.3.6.1.4.1.31034.12.1.1.2.7.3.1"
    assert spec.sets("off", (1, 4)) == [(f"{base}.4.1.4", 1), (f"{base}.2.1.4", 0)]


def test_a_switch_the_device_ignores_is_read_back_as_differing(shared_data) -> None:
    """A recording has no device behind it: the SET (outletControlOffCmd) is stored, the state
    (outletControlStatus) never changes."""
    with pytest.raises(ReadBackDiffers, match=r"asked off, but .*6\.1\.2\.0\.2 did not read off"):
        _switch(shared_data, "eatonpdu_2", 2, "off", wait_s=0.3, poll_s=0.05)


def test_unknown_outlet_unsupported_family_and_metered_only_model(shared_data) -> None:
    with pytest.raises(UnknownOutlet, match=r"no outlet 9; this PDU has outlets: 1, 2, .*, 8"):
        _switch(shared_data, "gude-epc_8031", 9, "off", dry_run=True)
    with pytest.raises(SwitchUnsupported, match=r"Panduit .*cannot switch outlets: no Panduit MIB"):
        _switch(shared_data, "panduit_g5-p32g13m", 1, "off", dry_run=True)
    with pytest.raises(
        SwitchUnsupported, match=r"outlet 2 publishes no switch state .*metered only"
    ):
        _switch(shared_data, "raritan-pdu_px2", 2, "off", dry_run=True)
    with pytest.raises(ValueError, match="not one of on, off, reboot"):
        _switch(shared_data, "gude-epc_8031", 1, "toggle")


def test_state_columns_are_walked_in_full_only_once(shared_data) -> None:
    fake = FakeSnmpClient.from_file(recordings_dir(shared_data) / "raritan-pdu_px4.snmprec")
    walked: list[list[str]] = []
    real_walk = fake.walk

    async def walk(roots):
        walked.append(list(roots))
        return await real_walk(roots)

    fake.walk = walk  # type: ignore[method-assign]
    meter = SnmpMeter(URL, fake)
    first = asyncio.run(meter.read())
    second = asyncio.run(meter.read())
    switching = "1.3.6.1.4.1.13742.6.4.1.2.1.3"  # outletSwitchingState: absent from this walk
    sensors = "1.3.6.1.4.1.13742.6.5.4.3.1.3"  # measurementsOutletSensorState, 17 types/outlet
    assert switching in walked[0] and switching not in walked[1]
    assert sensors in walked[0] and sensors not in walked[1]  # its 36 onOff rows: one GET
    assert [o.state for o in first.outlets] == [o.state for o in second.outlets] == ["on"] * 36
    fake.values[f"{sensors}.1.5.14"] = 8  # outlet 5 switched off: the GET sees it
    assert asyncio.run(meter.read()).outlet(5).state == "off"


def test_yaml_on_and_off_are_booleans_so_the_keys_are_named_otherwise() -> None:
    assert yaml.safe_load("{on: 1, off: 2}") == {True: 1, False: 2}
