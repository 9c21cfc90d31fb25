"""Power curves, the SPECpower loader and the host-CPU load source of the PDU simulator."""

import csv
from pathlib import Path

import numpy as np
import pytest

from eams.meter.simulator import (
    HostCpuLoad,
    LinearCurve,
    MeasuredCurve,
    SpecPowerError,
    load_specpower,
)
from eams.meter.simulator.curves import SPECPOWER_CSV


def test_linear_curve_interpolates_and_clips():
    curve = LinearCurve(p_idle_w=12.0, p_max_w=52.0)
    assert curve.power_w(0.25) == pytest.approx(12.0 + 40.0 * 0.25)
    assert curve.power_w(-0.5) == curve.power_w(0.0) == 12.0
    assert curve.power_w(3.0) == curve.power_w(1.0) == 52.0


@pytest.mark.parametrize(("idle", "peak"), [(-1.0, 10.0), (30.0, 20.0)])
def test_linear_curve_rejects_bad_parameters(idle, peak):
    with pytest.raises(ValueError, match="p_idle_w"):
        LinearCurve(idle, peak)


@pytest.mark.parametrize(
    ("u", "p"),
    [([0.0], [1.0]), ([0.0, 0.5, 0.4], [1, 2, 3]), ([0.0, 1.5], [1, 2]), ([0, 1], [1, -2])],
)
def test_measured_curve_rejects_bad_points(u, p):
    with pytest.raises(ValueError, match="MeasuredCurve"):
        MeasuredCurve(u, p)


def test_specpower_loader_reads_every_row_verbatim(shared_data: Path):
    path = shared_data / SPECPOWER_CSV
    with path.open(newline="") as handle:
        records = list(csv.DictReader(handle))
    rows = load_specpower()
    assert len(rows) == len(records)
    for row, record in zip(rows[::50], records[::50], strict=True):
        assert row.system == record["system"]
        assert row.watts_active_idle == float(record["watts_active_idle"])
        assert row.watts[-1] == float(record["watts_100pct"])
        assert row.ssj_ops[0] == float(record["ssj_ops_10pct"])


def test_measured_curve_from_specpower_goes_through_every_level(shared_data: Path):
    rows = load_specpower(shared_data / SPECPOWER_CSV)
    for row in rows[::70]:
        curve = MeasuredCurve.from_specpower(row)
        assert curve.power_w(0.0) == pytest.approx(row.watts_active_idle)
        assert curve.power_w(1.0) == pytest.approx(row.watts[-1])
        for ops, watts in zip(row.ssj_ops, row.watts, strict=True):
            assert curve.power_w(ops / row.ssj_ops[-1]) == pytest.approx(watts)
        # between two levels the curve is the straight line joining them
        u10 = row.ssj_ops[0] / row.ssj_ops[-1]
        mid = curve.power_w(u10 / 2)
        assert mid == pytest.approx((row.watts_active_idle + row.watts[0]) / 2)
        assert np.all(np.diff(curve.utilisation) > 0)


def test_specpower_loader_names_file_line_and_column(tmp_path: Path):
    header = ["system", "nodes", "watts_active_idle"]
    header += [f"watts_{p}pct" for p in range(10, 101, 10)]
    header += [f"ssj_ops_{p}pct" for p in range(10, 101, 10)]
    good = ["A", "1", "50"] + ["100"] * 10 + [str(k) for k in range(1, 11)]
    bad = list(good)
    bad[header.index("watts_40pct")] = "n/a"
    path = tmp_path / "spec.csv"
    with path.open("w", newline="") as handle:
        csv.writer(handle).writerows([header, good, bad])
    with pytest.raises(SpecPowerError, match=r"spec\.csv:3: column 'watts_40pct'"):
        load_specpower(path)
    with pytest.raises(SpecPowerError, match=r"absent\.csv"):
        load_specpower(tmp_path / "absent.csv")


def _proc_stat(user: int, idle: int) -> str:
    return f"cpu  {user} 0 0 {idle} 0 0 0 0 0 0\ncpu0 {user} 0 0 {idle} 0 0 0 0 0 0\n"


def test_host_cpu_load_is_busy_share_since_previous_call(tmp_path: Path):
    stat = tmp_path / "stat"
    stat.write_text(_proc_stat(user=100, idle=900))
    load = HostCpuLoad(stat)
    stat.write_text(_proc_stat(user=100 + 30, idle=900 + 70))
    assert load() == pytest.approx(30 / 100)
    stat.write_text(_proc_stat(user=130 + 90, idle=970 + 10))
    assert load() == pytest.approx(90 / 100)
    assert load() is None  # no tick elapsed: unknown, not 0


def test_host_cpu_load_reads_this_machine():
    value = HostCpuLoad()()
    assert value is None or 0.0 <= value <= 1.0
