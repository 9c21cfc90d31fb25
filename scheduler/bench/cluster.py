"""Building the simulated cluster (:class:`eams.scheduler.policies.base.Cluster`): N
heterogeneous nodes with measured power curves from SPECpower.

Each node is one of ``server_models`` real servers drawn (seeded) from the SPECpower_ssj2008
extract, filtered to single-node results with ``min_cores``–``max_cores`` cores and hardware
available in ``hw_year_from``–``hw_year_to``. From the result row the node takes

* ``cores`` and memory (``memory_gb``);
* its measured power curve (active idle, 10 % … 100 %), see
  :mod:`eams.scheduler.policies.base.power`;
* its speed: ssj_ops per core at 100 % load relative to the median of the drawn models, so one
  *reference core-second* of work takes ``1 / speed`` seconds on one of its cores.
"""

from __future__ import annotations

import csv
import itertools
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from eams.datasets import data_dir, missing_hint
from eams.kube.taints import Taint
from eams.scheduler.bench.errors import ClusterError
from eams.scheduler.bench.manifest import ClusterSpec
from eams.scheduler.policies.base import Cluster, NodeMeta, PowerCurves

SPECPOWER_CSV = "specpower/specpower_load_power_table_2023_extract.csv"
_WATT_COLUMNS = [f"watts_{p}pct" for p in range(10, 101, 10)]


@dataclass(frozen=True)
class ServerModel:
    """One SPECpower result usable as a node type."""

    label: str
    cores: int
    memory_mib: float
    points_w: tuple[float, ...]  # active idle, 10 % … 100 %
    ops_per_core: float


def _year(text: str) -> int | None:
    match = re.search(r"(\d{4})", text)
    return int(match.group(1)) if match else None


def read_server_models(spec: ClusterSpec, path: Path | None = None) -> list[ServerModel]:
    """Single-node SPECpower results matching ``spec``'s core and year filters.

    Raises
    ------
    ClusterError
        If the file is absent or no row matches the filter.
    """
    path = path or data_dir() / SPECPOWER_CSV
    try:
        with path.open(newline="") as handle:
            rows = list(csv.DictReader(handle))
    except OSError as exc:
        raise ClusterError(
            f"cannot read SPECpower results {path}: {exc.strerror or exc}{missing_hint(path)}"
        ) from exc
    models = []
    for row in rows:
        try:
            cores = int(row["cores"])
            points = [float(row["watts_active_idle"])] + [float(row[c]) for c in _WATT_COLUMNS]
            ops = float(row["ssj_ops_100pct"])
            memory_mib = float(row["memory_gb"]) * 1024.0
        except (KeyError, ValueError):
            continue  # incomplete result rows are not usable as node types
        year = _year(row.get("hw_avail", ""))
        if (
            row.get("nodes") != "1"
            or not spec.min_cores <= cores <= spec.max_cores
            or year is None
            or not spec.hw_year_from <= year <= spec.hw_year_to
            or ops <= 0
            or min(points) <= 0
            or any(b < a for a, b in itertools.pairwise(points))
        ):
            continue
        models.append(ServerModel(row["system"], cores, memory_mib, tuple(points), ops / cores))
    if not models:
        raise ClusterError(
            f"no single-node SPECpower result in {path} has {spec.min_cores}–{spec.max_cores} "
            f"cores and hardware from {spec.hw_year_from}–{spec.hw_year_to}"
        )
    return models


def build_cluster(spec: ClusterSpec, seed: int, models: list[ServerModel] | None = None) -> Cluster:
    """Draw a cluster of ``spec.nodes`` nodes (seeded; the same seed gives the same cluster).

    Parameters
    ----------
    spec : ClusterSpec
    seed : int
    models : list of ServerModel, optional
        Node types to draw from; default :func:`read_server_models` on the real data.
    """
    rng = np.random.default_rng([seed, 1])
    pool = models if models is not None else read_server_models(spec)
    picks = rng.choice(len(pool), size=min(spec.server_models, len(pool)), replace=False)
    chosen = [pool[i] for i in sorted(picks)]
    kind = rng.integers(0, len(chosen), size=spec.nodes)
    ref_ops = float(np.median([m.ops_per_core for m in chosen]))
    points = np.array([chosen[k].points_w for k in kind], dtype=float)
    curves = PowerCurves(points)
    p_idle, p_max = curves.linear_fit()
    meta = [NodeMeta() for _ in range(spec.nodes)]
    for group in spec.groups:
        members = rng.random(spec.nodes) < group.fraction
        taints = tuple(Taint(t.key, t.value, t.effect) for t in group.taints)
        for n in np.flatnonzero(members):
            meta[n] = NodeMeta({**meta[n].labels, **group.labels}, meta[n].taints + taints)
    return Cluster(
        names=[f"node-{i:04d}" for i in range(spec.nodes)],
        cores=np.array([chosen[k].cores for k in kind], dtype=float),
        mem_mib=np.array([chosen[k].memory_mib for k in kind], dtype=float),
        max_pods=np.full(spec.nodes, spec.max_pods_per_node, dtype=np.int64),
        speed=np.array([chosen[k].ops_per_core / ref_ops for k in kind], dtype=float),
        curves=curves,
        p_idle_w=p_idle,
        p_max_w=p_max,
        power_cap_w=points[:, -1] * spec.power_cap_ratio,
        meta=meta,
        server=[chosen[k].label for k in kind],
        p_wake_w=points[:, 0].copy(),  # measured active idle: Calibration.wake_power_w
    )
