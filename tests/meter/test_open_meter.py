"""``open_meter`` dispatch and argument checks (no I/O happens before the first read)."""

from __future__ import annotations

import pytest

from eams.meter.errors import BadMeterUrl, UnknownDevice
from eams.meter.open import open_meter
from eams.meter.snmp.meter import SnmpMeter


def test_snmp_urls_open_an_snmp_meter_without_io() -> None:
    meter = open_meter("snmp://public@192.0.2.7:1161", driver="apc_rpdu2", timeout_s=0.5)
    assert isinstance(meter, SnmpMeter)
    assert meter.family is not None and meter.family.name == "apc_rpdu2"
    assert meter.client.timeout_s == 0.5 and meter.client.retries == 1


@pytest.mark.parametrize(
    ("url", "kwargs", "error", "match"),
    [
        ("snmp://h", {"timeout_s": 0}, BadMeterUrl, "timeout_s must be > 0"),
        ("snmp://h", {"retries": -1}, BadMeterUrl, "retries >= 0"),
        ("serial:///dev/ttyUSB0?protocol=sdm120", {"driver": "apc_rpdu2"}, BadMeterUrl, "SNMP"),
        ("snmp://h", {"driver": "nope"}, UnknownDevice, "unknown driver 'nope'"),
        ("http://h", {}, BadMeterUrl, "unknown scheme"),
    ],
)
def test_bad_arguments_are_refused(url, kwargs, error, match) -> None:
    with pytest.raises(error, match=match):
        open_meter(url, **kwargs)
