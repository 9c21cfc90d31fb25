"""Real parts for the sweep tests: the PDU simulator over SNMP, whose outlet 1 follows this
machine's measured utilisation through a hidden straight line, and sshd on loopback."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from eams.calibrate.runners import LocalJob, LocalRunner
from eams.meter.blocking import BlockingMeter
from eams.meter.simulator import HostCpuLoad, LinearCurve, PduSimulator, VirtualOutlet
from tests.servers.sshd import SshServer, sshd

HIDDEN = LinearCurve(p_idle_w=80.0, p_max_w=180.0)  # above the APC 50 W outlet floor
"""The node's true power curve, known to the simulator and to the assertions only."""


def _need(program: str) -> None:
    if shutil.which(program) is None and not Path(program).exists():
        pytest.skip(f"{program} is not installed (apt-get install it; CI has it)")


@pytest.fixture
def pdu() -> Iterator[PduSimulator]:
    """The PDU simulator on a free loopback port; outlet 1 follows HostCpuLoad()."""
    sim = PduSimulator([VirtualOutlet("node", HIDDEN), VirtualOutlet("other", HIDDEN)])
    sim.start()
    sim.set_load_source(1, HostCpuLoad())
    try:
        yield sim
    finally:
        sim.stop()


@pytest.fixture
def meter(pdu: PduSimulator) -> Iterator[BlockingMeter]:
    """The real SNMP meter reading the simulator."""
    with BlockingMeter(pdu.url, timeout_s=1.0, retries=1) as m:
        yield m


@pytest.fixture(scope="module")
def ssh_server() -> Iterator[SshServer]:
    """sshd on loopback, key auth for the current user."""
    _need("/usr/sbin/sshd")
    with sshd() as server:
        yield server


@pytest.fixture
def stress_ng() -> None:
    """Skip (loudly) only where stress-ng is truly absent."""
    _need("stress-ng")


class SpyRunner(LocalRunner):
    """A real LocalRunner that remembers the jobs it started, so a test can prove they ended."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        super().__init__(env)
        self.jobs: list[LocalJob] = []

    def start(self, argv: list[str]) -> LocalJob:  # type: ignore[override]
        job = super().start(argv)
        self.jobs.append(job)
        return job


def group_alive(pgid: int) -> bool:
    """True while any process of process group ``pgid`` is still running (zombies excluded)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def process_alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def bin_without(tmp_path: Path, missing: str, keep: tuple[str, ...]) -> str:
    """A PATH directory holding links to ``keep`` programs and not to ``missing``."""
    folder = tmp_path / f"bin-without-{missing}"
    folder.mkdir()
    for program in keep:
        found = shutil.which(program)
        assert found is not None, program
        os.symlink(found, folder / program)
    return str(folder)
