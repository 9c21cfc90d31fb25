"""``eams meter switch`` through the real console entry point (a subprocess): what it prints,
``--dry-run``, and every refusal as one ``eams: error:`` line with exit 1 and nothing switched:
no ``--yes``, unknown outlet, read-only community, a family without switching, a metered-only
model, a read-back that differs, no answer."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from eams.meter.simulator import LinearCurve, NodePower, PduSimulator, VirtualOutlet

pytestmark = pytest.mark.integration

EAMS = str(Path(sys.executable).parent / "eams")
PATIENT = ["--timeout-s", "3", "--retries", "2"]


@pytest.fixture(scope="module")
def sim():
    outlets = [
        VirtualOutlet(f"node{n}", LinearCurve(40, 90), NodePower(boot_s=600)) for n in (1, 2)
    ]
    with PduSimulator(outlets, write_community="private") as simulator:
        yield simulator


def _eams(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EAMS, *args], capture_output=True, text=True, timeout=120)


def _one_error_line(result: subprocess.CompletedProcess[str], *needles: str) -> str:
    assert result.returncode == 1, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("eams: error: "), result.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def test_switch_prints_the_state_read_back(sim) -> None:
    result = _eams("meter", "switch", sim.write_url, "--outlet", "2", "off", "--yes", *PATIENT)
    assert result.returncode == 0, result.stderr
    assert '(apc_rpdu2) outlet 2 "node2": off done; state read back: off after' in result.stdout
    assert "1.3.6.1.4.1.318.1.1.26.9.2.3.1.5.2" in result.stdout
    assert "private" not in result.stdout  # the community is a secret: redacted
    assert sim.state(2).state == "off"
    back = _eams("meter", "switch", sim.write_url, "--outlet", "2", "on", "--yes", *PATIENT)
    assert back.returncode == 0 and sim.state(2).node == "booting"


def test_dry_run_prints_what_would_be_set_and_sets_nothing(sim) -> None:
    result = _eams(
        "meter", "switch", sim.write_url, "--outlet", "1", "reboot", "--dry-run", *PATIENT
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        f'snmp://***@127.0.0.1:{sim.port} (apc_rpdu2) outlet 1 "node1" reads on; reboot would',
        "  SET 1.3.6.1.4.1.318.1.1.26.9.2.4.1.5.1 = 3",
        "  then read 1.3.6.1.4.1.318.1.1.26.9.2.3.1.5.1 until it reads off then on",
        "dry run: nothing was set",
    ]
    assert sim.state(1).node == "running"


def test_without_yes_nothing_is_sent(sim) -> None:
    result = _eams("meter", "switch", sim.write_url, "--outlet", "1", "off")
    _one_error_line(result, "not switching outlet 1 off", "add --yes", "--dry-run")
    assert sim.state(1).state == "on"


def test_an_unknown_outlet_is_named_with_the_ones_there_are(sim) -> None:
    result = _eams("meter", "switch", sim.write_url, "--outlet", "5", "off", "--yes", *PATIENT)
    _one_error_line(result, "no outlet 5; this PDU has outlets: 1, 2")


def test_a_read_only_community_is_refused_with_the_reason(sim) -> None:
    result = _eams("meter", "switch", sim.url, "--outlet", "1", "off", "--yes", *PATIENT)
    _one_error_line(result, "refused (noAccess)", "no write access", "write community")
    assert sim.state(1).state == "on"


def test_no_answer_is_a_timeout(udp_port: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as hole:  # bound, never answers
        hole.bind(("127.0.0.1", udp_port))
        url = f"snmp://private@127.0.0.1:{udp_port}"
        result = _eams(
            "meter", "switch", url, "--outlet", "1", "off", "--yes", "--timeout-s", "0.3"
        )
    _one_error_line(result, f"127.0.0.1:{udp_port}", "no answer")


def test_devices_that_cannot_switch_say_so(snmp_agent) -> None:
    panduit = _eams("meter", "switch", snmp_agent.url("panduit_g5-p32g13m"), "--outlet", "1",
                    "off", "--yes", *PATIENT)  # fmt: skip
    _one_error_line(panduit, "panduit_g5", "cannot switch outlets", "no Panduit MIB")
    px2 = _eams("meter", "switch", snmp_agent.url("raritan-pdu_px2"), "--outlet", "3", "off",
                "--yes", *PATIENT)  # fmt: skip
    _one_error_line(px2, "outlet 3 publishes no switch state", "metered only")


def test_a_switch_that_does_not_take_is_an_error(snmp_agent) -> None:
    """snmpsim acknowledges a SET and changes nothing, like a PDU whose relay does not move."""
    url = snmp_agent.url("gude-epc_8031")  # port 1 is off in the recording
    result = _eams("meter", "switch", url, "--outlet", "1", "on", "--yes", "--wait-s", "0.5",
                   *PATIENT)  # fmt: skip
    _one_error_line(result, "asked on", "did not read on within 0.5 s", "(read: off)")
