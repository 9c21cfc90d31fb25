"""``eams meter read`` / ``check``: the --json contract of issue 2, the table, and one-line
errors with a non-zero exit (through the real console entry point, in a subprocess)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from eams.cli import cli, main

pytestmark = pytest.mark.integration

EAMS = str(Path(sys.executable).parent / "eams")
#: Generous per-answer wait for reads that must succeed: the test machine may be loaded.
PATIENT = ["--timeout-s", "3", "--retries", "2"]
TOP_KEYS = {
    "meter",
    "read_at",
    "driver",
    "total_power_w",
    "total_energy_wh",
    "accuracy_pct",
    "floor_w",
    "outlets",
}
OUTLET_KEYS = {
    "outlet",
    "name",
    "power_w",
    "current_a",
    "voltage_v",
    "energy_wh",
    "below_floor",
    "state",
}


def test_read_json_has_the_contract_shape(snmp_agent) -> None:
    result = CliRunner().invoke(
        cli, ["meter", "read", snmp_agent.url("eatonpdu_2"), "--json", *PATIENT]
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert set(doc) == TOP_KEYS
    assert doc["meter"] == f"snmp://***@{snmp_agent.host}:{snmp_agent.port}"  # no community
    assert doc["read_at"].endswith("Z")
    assert doc["driver"] == "eaton_epdu"
    assert isinstance(doc["total_power_w"], float)
    assert len(doc["outlets"]) == 24
    first = doc["outlets"][0]
    assert set(first) == OUTLET_KEYS
    assert first["outlet"] == 1
    assert first["name"] == "Power strip + s-rw-lab-rack"
    assert first["power_w"] == 80.0
    assert first["current_a"] == pytest.approx(0.79)
    assert first["voltage_v"] is None  # not in the recording: null, never 0
    assert first["state"] == "on"  # outletControlStatus.0.1 = on(1) in the recording
    assert [o["outlet"] for o in doc["outlets"]] == list(range(1, 25))


def test_read_table_is_readable(snmp_agent) -> None:
    result = CliRunner().invoke(
        cli, ["meter", "read", snmp_agent.url("raritan-pdu_px2"), *PATIENT], terminal_width=140
    )
    assert result.exit_code == 0, result.output
    assert "raritan_pdu2" in result.output
    assert "OUTLET10" in result.output
    assert "total" in result.output


def test_check_compares_outlets_with_the_total(snmp_agent) -> None:
    result = CliRunner().invoke(cli, ["meter", "check", snmp_agent.url("apc-cpdu"), *PATIENT])
    # 40 outlets sum to 255 W against the unit's 258 W: within the assumed ±5 %.
    assert result.exit_code == 0, result.output
    assert "OK" in result.output
    assert "255.0 W" in result.output and "258.0 W" in result.output


def test_check_without_outlet_power_says_why(snmp_agent) -> None:
    result = CliRunner().invoke(
        cli, ["meter", "check", snmp_agent.url("vertiv-pdu_mg02e4w1"), *PATIENT]
    )
    assert result.exit_code == 1
    assert "no per-outlet power" in result.output


def test_check_with_a_failed_outlet_cannot_check(snmp_agent) -> None:
    # outlet 2's power is a string: the sum of the other two is not compared with the total
    result = CliRunner().invoke(cli, ["meter", "check", snmp_agent.url("string_power"), *PATIENT])
    assert result.exit_code == 1
    assert "cannot check: no power value for outlet(s) 2" in result.stdout
    assert "MISMATCH" not in result.stdout
    assert "eams: warning: 1.3.6.1.4.1.318.1.1.26.9.4.3.1.7.2" in result.stderr


def _one_error_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("eams: error: ")
    return lines[0]


def test_error_through_the_console_script_is_one_line(snmp_agent) -> None:
    url = f"snmp://wrong@127.0.0.1:{snmp_agent.port}"
    argv = [EAMS, "meter", "read", url, "--timeout-s", "0.2", "--retries", "0"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    line = _one_error_line(done.stderr)
    assert "wrong community or host down" in line
    assert f"127.0.0.1:{snmp_agent.port}" in line


@pytest.mark.parametrize(
    ("args", "expected", "status"),
    [  # 2: the command line is wrong; 1: the device answered something we cannot use
        (["ftp://127.0.0.1"], "unknown scheme", 2),
        (["snmp://unknown_vendor@127.0.0.1:{port}"], "no driver for sysObjectID", 1),
        (["snmp://apc-cpdu@127.0.0.1:{port}", "--driver", "nope"], "unknown driver 'nope'", 2),
        (["snmp://no_such_object@127.0.0.1:{port}"], "no value decodes", 1),
    ],
    ids=["bad-url", "unknown-device", "unknown-driver", "no-such-object"],
)
def test_errors_are_one_line_on_stderr(
    snmp_agent, monkeypatch, capsys, args, expected, status
) -> None:
    argv = ["eams", "meter", "read", *(a.format(port=snmp_agent.port) for a in args), *PATIENT]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as info:
        main()
    assert info.value.code == status
    captured = capsys.readouterr()
    assert captured.out == ""
    assert expected in _one_error_line(captured.err)


def test_a_value_that_failed_is_null_and_warned_once(snmp_agent) -> None:
    result = CliRunner().invoke(
        cli, ["meter", "read", snmp_agent.url("string_power"), "--json", *PATIENT]
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert [o["power_w"] for o in doc["outlets"]] == [110.0, None, 0.0]
    warnings = [line for line in result.stderr.splitlines() if line.startswith("eams: warning")]
    assert warnings == [
        "eams: warning: 1.3.6.1.4.1.318.1.1.26.9.4.3.1.7.2: '152 W' is not a number"
    ]
