"""Readers of the public cluster traces in ``cluster_traces/`` (see the data PROVENANCE.md).

* ``alibaba-gpu-2023``: alibaba/clusterdata ``cluster-trace-gpu-v2023`` pod list. One pod per
  row; arrival = ``creation_time``, duration = ``deletion_time − scheduled_time`` (s), cpu =
  ``cpu_milli`` / 1000, memory = ``memory_mib``. Rows without ``scheduled_time`` never ran (the
  trace's Pending pods) and are left out, counted. The public traces carry no tenant column, so a
  pod's tenant is a stable hash (CRC-32) of its name modulo the tenant count.
* ``alibaba-2017-batch``: alibaba/clusterdata ``cluster-trace-v2017`` ``batch_task`` table. Only
  ``Terminated`` tasks have a run time; each becomes one pod of one instance's size (cpu =
  ``number_of_cpus_requested_per_instance_in_the_task`` / 100, schema.csv), duration =
  ``task_end_time − task_create_time``, tenant = ``job_id`` modulo the tenant count. Its memory is
  normalised to an undisclosed machine size, so these pods request no memory here.

Both traces stamp times in whole seconds, so a duration of 0 s means "under one second" and is
replayed as 1 s. A negative duration, a non-numeric value or a missing column is refused with a
:class:`TraceError` naming the file, the line and the column.
"""

from __future__ import annotations

import csv
import zlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from eams.datasets import data_dir, missing_hint
from eams.scheduler.bench.errors import TraceError
from eams.scheduler.bench.manifest import TraceSpec
from eams.scheduler.bench.workload import from_arrays, synthetic
from eams.scheduler.policies.base import Workload

DEFAULT_PATHS = {
    "alibaba-gpu-2023": "cluster_traces/alibaba_gpu_v2023_openb_pod_list_default.csv",
    "alibaba-2017-batch": "cluster_traces/alibaba_v2017_batch_task_head20000.csv",
}
TIME_RESOLUTION_S = 1.0

GPU_COLUMNS = (
    "name",
    "cpu_milli",
    "memory_mib",
    "creation_time",
    "deletion_time",
    "scheduled_time",
)
BATCH_COLUMNS = (
    "task_create_time",
    "task_end_time",
    "job_id",
    "status",
    "number_of_cpus_requested_per_instance_in_the_task",
)


def _rows(path: Path, required: tuple[str, ...]) -> Iterator[tuple[int, dict[str, str]]]:
    try:
        handle = path.open(newline="")
    except OSError as exc:
        raise TraceError(
            f"cannot read trace {path}: {exc.strerror or exc}{missing_hint(path)}"
        ) from exc
    with handle:
        reader = csv.reader(handle)
        header = [h.strip() for h in next(reader, [])]
        missing = [c for c in required if c not in header]
        if missing:
            raise TraceError(f"{path}: missing column(s) {', '.join(missing)} in the header")
        for line, values in enumerate(reader, start=2):
            yield line, dict(zip(header, (v.strip() for v in values), strict=False))


def _number(path: Path, line: int, row: dict[str, str], column: str) -> float:
    text = row.get(column, "")
    try:
        return float(text)
    except ValueError:
        raise TraceError(f"{path}:{line}: column {column} is not a number: {text!r}") from None


def _duration(path: Path, line: int, start: float, end: float, what: str) -> float:
    if end < start:
        raise TraceError(f"{path}:{line}: negative duration {end - start:g} s ({what})")
    return max(end - start, TIME_RESOLUTION_S)


def read_gpu2023(path: Path) -> tuple[list[str], list[list[float]], int]:
    """Rows of the GPU-2023 pod list: names, [arrival, cpu, mem, duration] and the count of
    never-scheduled pods left out."""
    names, rows, never_ran = [], [], 0
    for line, row in _rows(path, GPU_COLUMNS):
        if row["scheduled_time"] == "":
            never_ran += 1
            continue
        created = _number(path, line, row, "creation_time")
        started = _number(path, line, row, "scheduled_time")
        ended = _number(path, line, row, "deletion_time")
        cpu = _number(path, line, row, "cpu_milli") / 1000.0
        if cpu <= 0:
            raise TraceError(f"{path}:{line}: cpu_milli must be > 0, got {row['cpu_milli']!r}")
        duration = _duration(path, line, started, ended, "deletion_time − scheduled_time")
        names.append(row["name"])
        rows.append([created, cpu, _number(path, line, row, "memory_mib"), duration])
    return names, rows, never_ran


def read_batch2017(path: Path) -> tuple[list[str], list[list[float]], int]:
    """Rows of the 2017 batch_task table: names, [arrival, cpu, job_id, duration] and the
    count of tasks left out because they did not terminate."""
    names, rows, skipped = [], [], 0
    for line, row in _rows(path, BATCH_COLUMNS):
        if row["status"] != "Terminated":
            skipped += 1
            continue
        created = _number(path, line, row, "task_create_time")
        ended = _number(path, line, row, "task_end_time")
        cpu = _number(path, line, row, BATCH_COLUMNS[4]) / 100.0
        if cpu <= 0:
            raise TraceError(f"{path}:{line}: cpu request must be > 0, got {cpu * 100:g}")
        duration = _duration(path, line, created, ended, "task_end_time − task_create_time")
        names.append(f"task-{line}")
        rows.append([created, cpu, _number(path, line, row, "job_id"), duration])
    return names, rows, skipped


def load_workload(spec: TraceSpec, seed: int) -> Workload:
    """Build the workload a manifest's ``trace`` section describes (seeded).

    Raises
    ------
    TraceError
        If the trace is unreadable, lacks a column, or has a bad row (named by its line).
    """
    if spec.source == "synthetic":
        return synthetic(spec.synthetic, n_tenants=spec.tenants, classes=spec.classes, seed=seed)
    path = data_dir() / (spec.path or DEFAULT_PATHS[spec.source])
    reader = read_gpu2023 if spec.source == "alibaba-gpu-2023" else read_batch2017
    names, rows, _ = reader(path)
    if not rows:
        raise TraceError(f"{path}: no usable rows")
    table = np.asarray(rows, dtype=float)
    if spec.source == "alibaba-gpu-2023":
        tenant = np.array([zlib.crc32(n.encode()) for n in names], dtype=np.int64)
        mem = table[:, 2]
    else:
        tenant = table[:, 2].astype(np.int64)
        mem = np.zeros(len(names))
    return from_arrays(
        names,
        table[:, 0],
        table[:, 1],
        mem,
        table[:, 3],
        tenant,
        n_tenants=spec.tenants,
        quotas=spec.tenant_quotas,
        classes=spec.classes,
        seed=seed,
        max_pods=spec.max_pods,
        max_duration_s=spec.max_duration_s,
    )
