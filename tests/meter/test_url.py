"""Meter URLs: every malformed form is a ``BadMeterUrl`` naming what is wrong, never another
exception (a ValueError from urllib or a ZeroDivisionError from pymodbus was a traceback)."""

from __future__ import annotations

import pytest

from eams.meter.errors import BadMeterUrl
from eams.meter.open import open_meter
from eams.meter.url import parse_meter_url


@pytest.mark.parametrize(
    ("url", "match"),
    [
        ("snmp://", "no host"),
        ("snmp://h:99999", "outside 1-65535"),
        ("snmp://h:0", "outside 1-65535"),
        ("snmp://h:abc", "not a number"),
        ("snmp://public@[::1", "Invalid IPv6 URL"),
        ("snmp://h:161/some/path", "no path or fragment"),
        ("snmp://h:161#frag", "no path or fragment"),
        ("snmp://h?x=1", "unknown option"),
        ("snmpv3://h", "needs a user"),
        ("snmpv3://u@h?auth=FOO", "auth='FOO' is not one of"),
        ("serial:///dev/null?protocol=foo", "protocol=foo is not one of"),
        ("serial:///dev/null", r"protocol=\(missing\)"),
        ("serial://?protocol=sdm120", "no serial device"),
        ("serial:///dev/null?protocol=sdm120&baudrate=0", "baudrate='0' is not a whole number"),
        ("serial:///dev/null?protocol=sdm120&baudrate=9k6", "baudrate='9k6'"),
        ("serial:///dev/null?protocol=sdm120&unit=0", "unit='0' is not a whole number in 1-247"),
        ("serial:///dev/null?protocol=sdm120&unit=300", "unit='300'"),
        ("http://x", "unknown scheme 'http'"),
        ("garbage", "unknown scheme ''"),
        ("", "unknown scheme ''"),
    ],
)
def test_bad_urls_are_bad_meter_url(url: str, match: str) -> None:
    with pytest.raises(BadMeterUrl, match=match):
        parse_meter_url(url)
    with pytest.raises(BadMeterUrl):
        open_meter(url)


def test_defaults_and_ipv6() -> None:
    assert parse_meter_url("snmp://10.0.0.5") == parse_meter_url("snmp://public@10.0.0.5:161")
    v6 = parse_meter_url("snmp://c@[::1]:1161")
    assert (v6.host, v6.port, v6.community) == ("::1", 1161, "c")
    assert v6.redacted() == "snmp://***@[::1]:1161"
    assert parse_meter_url(v6.redacted().replace("***", "c")) == v6
    serial = parse_meter_url("serial:///dev/ttyUSB0?protocol=SDM630&unit=247")
    assert serial.options == {"protocol": "sdm630", "baudrate": "9600", "unit": "247"}
