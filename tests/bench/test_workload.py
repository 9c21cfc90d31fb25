"""Traces (real files and bad ones), the synthetic generator and ρ rescaling."""

import numpy as np
import pytest

from eams.scheduler.bench.errors import LoadError, TraceError
from eams.scheduler.bench.manifest import SyntheticSpec, TraceSpec
from eams.scheduler.bench.traces import read_batch2017, read_gpu2023
from eams.scheduler.bench.workload import offered_load, rescale_to_rho, synthetic
from tests.bench.conftest import tiny_workload

GPU_HEADER = "name,cpu_milli,memory_mib,num_gpu,creation_time,deletion_time,scheduled_time\n"


def test_gpu_trace_missing_column_is_refused_naming_it(tmp_path) -> None:
    path = tmp_path / "pods.csv"
    path.write_text("name,cpu_milli,creation_time\np,1000,0\n")
    with pytest.raises(TraceError, match=r"missing column\(s\) memory_mib, deletion_time"):
        read_gpu2023(path)


def test_gpu_trace_negative_duration_is_refused_naming_the_row(tmp_path) -> None:
    path = tmp_path / "pods.csv"
    path.write_text(GPU_HEADER + "a,1000,10,0,0,100,5\nb,2000,10,0,50,40,60\n")
    with pytest.raises(TraceError, match=r"pods.csv:3: negative duration -20 s"):
        read_gpu2023(path)


def test_gpu_trace_non_number_names_row_and_column(tmp_path) -> None:
    path = tmp_path / "pods.csv"
    path.write_text(GPU_HEADER + "a,lots,10,0,0,100,5\n")
    with pytest.raises(TraceError, match=r":2: column cpu_milli is not a number: 'lots'"):
        read_gpu2023(path)


def test_batch_trace_negative_duration_is_refused(tmp_path) -> None:
    path = tmp_path / "tasks.csv"
    path.write_text(
        "task_create_time, task_end_time, job_id, task_id,number_of_instances, status, "
        "number_of_cpus_requested_per_instance_in_the_task,normalized_memory\n"
        "10,20,1,1,1,Terminated,50,0.1\n30,0,1,2,1,Running,50,0.1\n40,35,2,3,1,Terminated,100,0.1\n"
    )
    with pytest.raises(TraceError, match=r"tasks.csv:4: negative duration -5 s"):
        read_batch2017(path)


def test_real_gpu_trace_reads_with_never_scheduled_pods_left_out(shared_data) -> None:
    names, rows, never_ran = read_gpu2023(
        shared_data / "cluster_traces/alibaba_gpu_v2023_openb_pod_list_default.csv"
    )
    assert len(names) + never_ran == 8152 and never_ran > 0
    table = np.asarray(rows)
    assert (table[:, 3] >= 1).all() and (table[:, 1] > 0).all()


def test_real_batch_trace_reads_terminated_tasks(shared_data) -> None:
    names, rows, skipped = read_batch2017(
        shared_data / "cluster_traces/alibaba_v2017_batch_task_head20000.csv"
    )
    assert len(names) + skipped == 20000 and len(names) > 10000
    assert (np.asarray(rows)[:, 3] >= 1).all()


@pytest.mark.parametrize("rho", [0.2, 0.7, 1.0, 1.6])
def test_rescaling_hits_the_target_rho(rho: float) -> None:
    w = synthetic(SyntheticSpec(pods=300), n_tenants=3, classes=[], seed=5)
    scaled = rescale_to_rho(w, total_cores=200.0, rho=rho)
    assert offered_load(scaled, 200.0) == pytest.approx(rho, rel=1e-12)
    assert scaled.arrival_s[0] == 0.0
    gaps, new_gaps = np.diff(w.arrival_s), np.diff(scaled.arrival_s)
    assert np.allclose(new_gaps / gaps, new_gaps[0] / gaps[0])  # burst pattern kept


def test_unreachable_rho_is_a_clear_error() -> None:
    simultaneous = tiny_workload([5.0, 5.0, 5.0], [1, 1, 1], [10, 10, 10])
    with pytest.raises(LoadError, match=r"ρ = 0.8 cannot be reached: .*arrive at one instant"):
        rescale_to_rho(simultaneous, 10.0, 0.8)
    ok = tiny_workload([0.0, 5.0], [1, 1], [10, 10])
    with pytest.raises(LoadError, match="finite and > 0"):
        rescale_to_rho(ok, 10.0, 0.0)


def test_synthetic_is_seeded_and_quotas_follow_demand() -> None:
    a = synthetic(SyntheticSpec(pods=200), n_tenants=4, classes=[], seed=1)
    b = synthetic(SyntheticSpec(pods=200), n_tenants=4, classes=[], seed=1)
    c = synthetic(SyntheticSpec(pods=200), n_tenants=4, classes=[], seed=2)
    assert np.array_equal(a.duration_s, b.duration_s) and not np.array_equal(a.cpu, c.cpu)
    demand = np.bincount(a.tenant, weights=a.work_core_s, minlength=4)
    assert np.allclose(a.quotas, demand / demand.sum())


def test_trace_spec_caps_durations_and_counts_them(shared_data) -> None:
    from eams.scheduler.bench.traces import load_workload

    w = load_workload(TraceSpec(source="alibaba-gpu-2023", max_duration_s=3600), seed=1)
    assert w.duration_s.max() == 3600 and w.capped > 0
