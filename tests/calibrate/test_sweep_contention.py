"""Contention (issue 16, item 6): a sweep beside other work is refused, or kept and flagged.

Before: a sweep beside a one-core busy loop measured u = 0.54 at the idle level and 1,842
bogo-ops/s at full load (3,312–3,422 quiet) and wrote speed 0.54 instead of 0.97, silently.
Real stress-ng beside a real busy loop, real ``/proc/stat``, the PDU simulator over SNMP.
"""

from __future__ import annotations

import re
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from eams.calibrate.calfile import Calibration, FitSummary, save_calibration
from eams.calibrate.contention import IDLE_BUSY_MAX, LOAD_SHARE_MIN, STEAL_MAX, ContentionWatch
from eams.calibrate.errors import SweepError
from eams.calibrate.fit import fit_linear
from eams.calibrate.stressng import load_cpu_share
from eams.calibrate.sweep import SweepPlan, run_sweep
from eams.cli import cli
from eams.meter.blocking import BlockingMeter
from eams.meter.simulator import PduSimulator
from eams.procstat import PROC_STAT, CpuTimes, steal_between
from tests.calibrate.conftest import HIDDEN, SpyRunner, group_alive

pytestmark = pytest.mark.integration

BusyLoop = list[subprocess.Popen[bytes]]


@pytest.mark.usefixtures("stress_ng")
def test_sweep_beside_a_busy_loop_is_refused_at_the_idle_level(
    pdu: PduSimulator, meter: BlockingMeter, busy_loop: BusyLoop
) -> None:
    runner = SpyRunner()
    plan = SweepPlan((0, 50, 100), settle_s=2.0, measure_s=1.0, sample_s=0.25)
    with pytest.raises(SweepError) as info:
        run_sweep(runner, meter, node="here", meter_url=pdu.url, outlet=1, plan=plan)
    message = str(info.value)
    found = re.search(
        r"stopped at level 0 %: contention: the node was (\d+) % busy at the idle", message
    )
    assert found, message
    assert "--allow-contention" in message and "speed" in message
    assert runner.jobs == []  # refused before any load was started
    partial = info.value.partial
    assert partial is not None and [lv.commanded_pct for lv in partial.levels] == [0]
    idle = partial.levels[0].utilisation
    assert idle is not None and idle > IDLE_BUSY_MAX and int(found.group(1)) == round(idle * 100)
    assert partial.contention is not None and partial.contention.idle_utilisation == idle


@pytest.mark.usefixtures("stress_ng")
def test_allowed_contention_is_kept_recorded_and_shown(
    pdu: PduSimulator, meter: BlockingMeter, busy_loop: BusyLoop, tmp_path: Path
) -> None:
    runner = SpyRunner()
    plan = SweepPlan(
        (0, 50, 100), settle_s=2.0, measure_s=1.5, sample_s=0.25, allow_contention=True
    )
    record = run_sweep(runner, meter, node="here", meter_url=pdu.url, outlet=1, plan=plan)
    assert record.complete and not any(group_alive(job.pid) for job in runner.jobs)
    contention = record.contention
    assert contention is not None
    full = record.levels[-1]
    assert full.bogo_ops_per_s is not None
    # the loop took part of the workers' CPU at full load: measured, and named with the rate
    share = contention.full_load_cpu_share
    assert share is not None and 0 < share < LOAD_SHARE_MIN
    assert any(
        f"got {share * 100:.0f} % of the CPU time" in f and f"{full.bogo_ops_per_s:,.0f} bogo" in f
        for f in contention.findings
    ), contention.findings
    assert any("busy at the idle level" in f for f in contention.findings)

    # the file keeps it and `eams calibrate show` flags it (the line is fitted to the hidden
    # curve here: on a machine this busy the sweep's own levels may not span enough to fit)
    u = np.linspace(0, 1, 5)
    line = FitSummary.from_result(fit_linear(u, HIDDEN.p_idle_w + 100 * u))
    calibration = Calibration(
        node="here",
        created_at=datetime.now(UTC),
        meter=pdu.url,
        outlet=1,
        fit=line,
        p_active_idle_w=None,
        speed=0.54,
        sweep=record,
    )
    path = save_calibration(calibration, tmp_path / "here.json")
    shown = CliRunner().invoke(cli, ["calibrate", "show", str(path)], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert "0.540 (contended)" in shown.output
    note = " ".join(shown.output.split())  # rich wraps long lines
    assert "here: calibrated under contention, speed suspect:" in note
    assert f"got {share * 100:.0f} % of the CPU time" in note


@pytest.mark.usefixtures("stress_ng")
def test_cli_refusal_is_one_error_with_the_figures_and_the_override(
    pdu: PduSimulator, busy_loop: BusyLoop, tmp_path: Path
) -> None:
    out = tmp_path / "here.json"
    args = ["calibrate", "sweep", "--node", "here", "--meter", pdu.url, "--outlet", "1"]
    args += ["--levels", "0,50,100", "--settle-s", "2", "--measure-s", "1", "--sample-s", "0.25"]
    result = CliRunner().invoke(cli, [*args, "--out", str(out)])
    assert isinstance(result.exception, SweepError), result.output
    message = str(result.exception)
    assert "contention: the node was" in message and "--allow-contention" in message
    assert f"partial data in {tmp_path / 'here.partial.json'}" in message
    assert not out.exists()


def test_load_share_from_stress_ngs_own_metrics() -> None:
    # rows stress-ng 0.15 printed on this machine, 2 workers at 100 % for 5 s: at load average
    # 2.8 from other work, and beside a one-core busy loop
    busy = "stress-ng: metrc: [17746] cpu   13659  5.00  8.39  0.02  2731.32  1623.14\n"
    beside = "stress-ng: metrc: [17810] cpu    9342  5.00  5.97  0.00  1866.90  1562.50\n"
    assert load_cpu_share(busy, 2, 100) == pytest.approx(0.841)
    assert load_cpu_share(beside, 2, 100) == pytest.approx(0.597)
    assert load_cpu_share(beside, 2, 50) == pytest.approx(1.194)  # half the time asked
    assert load_cpu_share("stress-ng: info: [1] killed\n", 2, 100) is None
    assert load_cpu_share(busy, 2, 0) is None


def test_each_sign_and_its_limit() -> None:
    quiet = ContentionWatch()
    quiet.add(0, 0.03, 0.0, None, None)
    quiet.add(100, 1.0, 0.01, 0.98, 3376.0)
    assert quiet.findings() == [] and quiet.summary().findings == []
    busy = ContentionWatch()
    busy.add(0, 0.54, 0.0, None, None)
    busy.add(50, 0.9, STEAL_MAX + 0.07, 1.0, 1700.0)
    busy.add(100, 1.0, 0.02, 0.55, 1842.0)
    found = busy.findings()
    assert found == [
        "the node was 54 % busy at the idle level, before any load was started (idle is at "
        "most 10 %)",
        "stress-ng's workers got 55 % of the CPU time they asked for at full load (1,842 "
        "bogo-ops/s; on an idle node at least 90 %), so the speed is low by about as much",
        "the hypervisor stole 12 % of the CPU time at the 50 % level (limit 5 %)",
    ]
    summary = busy.summary()
    assert summary.steal_max == pytest.approx(0.12) and summary.idle_utilisation == 0.54


def test_steal_is_read_from_proc_stat() -> None:
    before = CpuTimes.parse("cpu  100 0 50 800 10 0 5 20 0 0\n")
    after = CpuTimes.parse("cpu  200 0 60 880 10 0 5 70 0 0\n")
    assert (before.steal_ticks, after.steal_ticks) == (20, 70)
    assert steal_between(before, after) == pytest.approx(50 / 240)  # of 240 ticks, 50 stolen
    assert steal_between(after, before) is None  # backwards: unknown, not 0
    here = steal_between(CpuTimes.read(PROC_STAT), CpuTimes.read(PROC_STAT))
    assert here is None or 0.0 <= here <= 1.0
