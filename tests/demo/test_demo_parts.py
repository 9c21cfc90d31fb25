"""The demo's own parts: virtual nodes, the sweep's virtual load driver, the shared meter and
the fallbacks used when the data folder is absent."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from eams.calibrate import stressng
from eams.calibrate.calfile import Calibration, FitSummary
from eams.calibrate.errors import SweepError
from eams.calibrate.fit import fit_linear
from eams.demo.calibrate import SharedMeter
from eams.demo.fleet import BUILTIN, CORES, DemoNode, demo_fleet
from eams.demo.testbed import BOGO_OPS_PER_CORE_S, VirtualNode, VirtualRunner
from eams.demo.workload import demo_workload, harness_cluster
from eams.procstat import CpuTimes, utilisation_between


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def node() -> tuple[VirtualNode, FakeClock]:
    clock = FakeClock()
    nodes, _ = demo_fleet()
    return VirtualNode(nodes[0], clock=clock), clock


def test_virtual_proc_stat_gives_the_load_over_the_interval(node) -> None:
    virtual, clock = node
    start = CpuTimes.parse(VirtualRunner(virtual).run(["cat", "/proc/stat"]))
    virtual.set_load(0.25)
    clock.now = 2.0
    virtual.set_load(0.75)
    clock.now = 4.0
    end = virtual.cpu_times()
    assert utilisation_between(start, end) == pytest.approx(0.5)


def test_virtual_runner_speaks_the_sweep_contract(node) -> None:
    virtual, clock = node
    runner = VirtualRunner(virtual)
    assert stressng.check_installed(runner).startswith("0.15")
    assert stressng.online_cpus(runner) == CORES
    job = runner.start(stressng.load_command(CORES, 60, 10.0))
    assert virtual.load() == pytest.approx(0.6)
    clock.now = 1.0
    output = job.stop()
    assert virtual.load() == 0.0 and not job.running()
    expected = BOGO_OPS_PER_CORE_S * virtual.spec.speed * CORES * 0.6
    assert stressng.bogo_ops_per_s(output) == pytest.approx(expected, rel=1e-3)
    with pytest.raises(SweepError, match="cannot run 'rm -rf /'"):
        runner.run(["rm", "-rf", "/"])


def test_shared_meter_reads_once_per_interval() -> None:
    class CountingMeter:
        reads = 0

        def read(self) -> int:
            self.reads += 1
            return self.reads

    meter = CountingMeter()
    shared = SharedMeter(meter, max_age_s=60.0)  # type: ignore[arg-type]
    assert [shared.read() for _ in range(6)] == [1] * 6
    assert meter.reads == 1
    assert SharedMeter(meter, max_age_s=0.0).read() == 2  # type: ignore[arg-type]


def test_without_the_data_folder_the_demo_names_the_files_and_uses_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EAMS_DATA_DIR", str(tmp_path))
    nodes, source = demo_fleet()
    wanted = f"specpower/specpower_load_power_table_2023_extract.csv not found in {tmp_path}"
    assert wanted in source
    assert "set EAMS_DATA_DIR" in source  # says how to point the demo at the data
    assert [n.server for n in nodes] == [label for label, _, _ in BUILTIN]
    assert min(min(n.points_w) for n in nodes) > 50  # above the APC outlet floor
    assert len({round(n.speed, 3) for n in nodes}) == 6  # the speeds differ
    cluster = harness_cluster(nodes, [_calibration(n) for n in nodes])
    workload, text = demo_workload(cluster, quick=True)
    assert f"alibaba_v2017_batch_task_head20000.csv not found in {tmp_path}" in text
    assert workload.size > 0


def _calibration(node: DemoNode) -> Calibration:
    fit = fit_linear(np.linspace(0, 1, 11), np.asarray(node.points_w))
    return Calibration(
        node=node.name,
        created_at=datetime.now(UTC),
        meter="snmp://public@127.0.0.1:161",
        outlet=1,
        fit=FitSummary.from_result(fit),
        p_active_idle_w=node.points_w[0],
        speed=node.speed,
    )
