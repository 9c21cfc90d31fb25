"""Real sweeps on this machine: real stress-ng, real /proc/stat, power from the PDU simulator
over SNMP following this machine's measured utilisation through a hidden line.

This machine is shared: other work may keep it busy, even saturated. The sweeps here pass
``--allow-contention`` (refusing a contended sweep has its own tests,
``test_sweep_contention.py``) and the line's recovery is checked by
:func:`~tests.calibrate.conftest.recovered_or_refused`: recovered where the utilisation spanned
enough, refused with the span where it did not.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from eams.calibrate.errors import SweepError
from eams.calibrate.sweep import SweepPlan, SweepProgress, run_sweep
from eams.cli import cli
from eams.meter.blocking import BlockingMeter
from eams.meter.simulator import PduSimulator
from tests.calibrate.conftest import (
    HIDDEN,
    SpyRunner,
    bin_without,
    group_alive,
    recovered_or_refused,
)

pytestmark = pytest.mark.integration

SHORT = SweepPlan((0, 50, 100), settle_s=2.0, measure_s=1.0, sample_s=0.25, allow_contention=True)
"""For what the load does (stops, repeats, keeps levels), not what it measures."""


@pytest.mark.usefixtures("stress_ng")
def test_cli_sweep_recovers_the_hidden_line_within_its_intervals(
    pdu: PduSimulator, tmp_path: Path
) -> None:
    out = tmp_path / "calibration" / "here.json"
    args = ["calibrate", "sweep", "--node", "here", "--meter", pdu.url, "--outlet", "1"]
    args += ["--levels", "0,25,50,75,100", "--settle-s", "3", "--measure-s", "1.5"]
    args += ["--sample-s", "0.2", "--allow-contention", "--out", str(out)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code in (0, 1), f"{result.output}\n{result.exception!r}"
    sweep, cal = recovered_or_refused(result.exception, out, "here")
    assert sweep.complete and sweep.target == "local"
    assert [lv.commanded_pct for lv in sweep.levels] == [0, 25, 50, 75, 100]
    assert sweep.floor_w == 50.0 and sweep.stress_ng_version[0].isdigit()
    for level in sweep.levels:
        assert level.utilisation is not None
        assert 1 <= len(level.samples) <= 1.5 / 0.2 + 1  # fewer when reads are slow (busy box)
        stamps = [s.read_at for s in level.samples]
        assert stamps == sorted(stamps) and stamps[0] >= level.started_at
        assert all(HIDDEN.p_idle_w - 1 <= s.power_w <= HIDDEN.p_max_w + 1 for s in level.samples)
        assert (level.bogo_ops_per_s is None) == (level.commanded_pct == 0)
    if cal is None:
        return  # refused: other work saturated this machine (checked above)
    assert cal.meter.startswith("snmp://***@127.0.0.1:") and cal.outlet == 1
    assert cal.speed == 1.0 and cal.speed_reference.reference == "self"

    png = tmp_path / "here.png"
    show = ["calibrate", "show", str(out), "--plot", str(png)]
    shown = CliRunner().invoke(cli, show, env={"COLUMNS": "200"})
    assert shown.exit_code == 0 and "here" in shown.output
    assert ("(contended)" in shown.output) == bool(sweep.contention and sweep.contention.findings)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.usefixtures("stress_ng")
def test_meter_dropping_out_for_good_stops_cleanly_keeping_partial_data(
    pdu: PduSimulator, meter: BlockingMeter
) -> None:
    runner = SpyRunner()

    def progress(event: SweepProgress) -> None:
        if event.index == 1 and event.phase == "measuring":
            pdu.stop()

    with pytest.raises(SweepError, match="meter failed at level 50 % on all 2") as info:
        run_sweep(
            runner, meter, node="here", meter_url=pdu.url, outlet=1, plan=SHORT, progress=progress
        )
    partial = info.value.partial
    assert partial is not None and not partial.complete
    assert [lv.commanded_pct for lv in partial.levels] == [0]
    assert "meter failed" in partial.stop_reason
    assert len(runner.jobs) == 2  # the level was tried twice
    assert not any(job.running() or group_alive(job.pid) for job in runner.jobs)


@pytest.mark.usefixtures("stress_ng")
def test_meter_dropping_out_briefly_repeats_the_level(
    pdu: PduSimulator, meter: BlockingMeter
) -> None:
    runner = SpyRunner()
    dropped, back = threading.Event(), threading.Event()

    def progress(event: SweepProgress) -> None:
        if event.index == 1 and event.phase == "measuring" and not dropped.is_set():
            dropped.set()
            pdu.stop()  # that attempt's next read fails after its deadline (~2.5 s)
        elif event.phase == "repeating" and dropped.is_set() and not back.is_set():
            back.set()  # back before the repeat starts, however slow this box is
            pdu.start()

    record = run_sweep(
        runner, meter, node="here", meter_url=pdu.url, outlet=1, plan=SHORT, progress=progress
    )
    assert record.complete and dropped.is_set() and back.is_set()
    assert record.levels[1].attempts == 2  # others may repeat too when this box is busy
    assert len(runner.jobs) == sum(lv.attempts for lv in record.levels[1:])
    assert not any(group_alive(job.pid) for job in runner.jobs)


@pytest.mark.usefixtures("stress_ng")
def test_ctrl_c_stops_the_load_and_keeps_the_levels_done(
    pdu: PduSimulator, meter: BlockingMeter
) -> None:
    runner = SpyRunner()

    def progress(event: SweepProgress) -> None:
        if event.index == 2 and event.phase == "measuring":
            raise KeyboardInterrupt  # where Ctrl-C lands: the sweep's own thread

    with pytest.raises(SweepError, match=r"interrupted \(Ctrl-C\)") as info:
        run_sweep(
            runner, meter, node="here", meter_url=pdu.url, outlet=1, plan=SHORT, progress=progress
        )
    assert [lv.commanded_pct for lv in info.value.partial.levels] == [0, 50]
    assert runner.jobs and not any(group_alive(job.pid) for job in runner.jobs)


def test_stress_ng_missing_on_the_node_is_a_clear_error(
    pdu: PduSimulator, meter: BlockingMeter, tmp_path: Path
) -> None:
    path = bin_without(tmp_path, "stress-ng", ("cat", "getconf", "sh"))
    runner = SpyRunner({"PATH": path})
    with pytest.raises(SweepError, match="stress-ng is not installed on the node"):
        run_sweep(runner, meter, node="here", meter_url=pdu.url, outlet=1, plan=SHORT)
    assert runner.jobs == []


def test_an_outlet_the_meter_lacks_is_named(pdu: PduSimulator, meter: BlockingMeter) -> None:
    with pytest.raises(SweepError, match="has no outlet 7 \\(has 1, 2\\)") as info:
        run_sweep(SpyRunner(), meter, node="here", meter_url=pdu.url, outlet=7, plan=SHORT)
    assert info.value.partial is not None and info.value.partial.levels == []


def test_cli_keeps_partial_data_when_the_sweep_stops(pdu: PduSimulator, tmp_path: Path) -> None:
    out = tmp_path / "here.json"
    args = ["calibrate", "sweep", "--node", "here", "--meter", pdu.url, "--outlet", "9"]
    result = CliRunner().invoke(cli, [*args, "--levels", "0,50,100", "--out", str(out)])
    assert isinstance(result.exception, SweepError)
    assert "no outlet 9" in str(result.exception)
    assert not out.exists() and not (tmp_path / "here.partial.json").exists()  # nothing measured


def test_bad_plans_are_refused() -> None:
    for levels in ((0, 50, 150), (0, 50, 50), ()):
        with pytest.raises(SweepError, match="levels"):
            SweepPlan(levels)
    with pytest.raises(SweepError, match="measure_s must be positive"):
        SweepPlan(measure_s=0)
