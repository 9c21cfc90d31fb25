"""Demo stage 3, workload: the trace and the harness's view of the six-node testbed.

The workload is the head of the Alibaba 2017 batch-task trace (``cluster_traces/``, read by
:func:`eams.scheduler.bench.traces.load_workload`), arrival times rescaled to an offered load ρ
(:data:`RHO`).
Without the data folder the demo names the file and uses the harness's synthetic workload of
the same shape. The harness's cluster is the testbed: the six nodes, their hidden curves as the
measured power, and P_idle, P_max and speed from the calibration files the demo just wrote (the
LeastAllocated plug-in scores on it; :mod:`eams.demo.live` places the pods).
"""

from __future__ import annotations

from typing import Final

import numpy as np

from eams.calibrate.calfile import Calibration
from eams.datasets import data_file, not_found
from eams.demo.fleet import MEMORY_MIB, DemoNode
from eams.scheduler.bench.manifest import SyntheticSpec, TraceSpec
from eams.scheduler.bench.traces import DEFAULT_PATHS, load_workload
from eams.scheduler.bench.workload import rescale_to_rho, subset, synthetic
from eams.scheduler.policies.base import Cluster, NodeMeta, PowerCurves, Workload

TRACE: Final = "alibaba-2017-batch"
RHO = {True: (0.3,), False: (0.8,)}
"""Offered loads ρ run (quick, full), the band the report leads with first: the full demo runs
the study's contended band (0.7–1.0, where AR-3 is claimed), three times for the spread between
runs (ρ 0.3 beside it was dropped for that time, issue 35); the quick demo runs ρ 0.3 alone
(fewer pods keep the contended band's queue too short to matter)."""
PODS = {True: 40, False: 200}  # quick, full: few enough that loads change about once per sample
MAX_DURATION_S = 600.0
SEED = 1


def missing_trace(quick: bool) -> str | None:
    """Said before anything runs when the trace is missing: which file, and what replaces it
    (:func:`demo_workload`); ``None`` when the trace is there."""
    if data_file(DEFAULT_PATHS[TRACE]) is not None:
        return None
    return (
        f"{not_found(DEFAULT_PATHS[TRACE])}: the runs will place {PODS[quick]} synthetic "
        "pods instead of the trace's first tasks"
    )


def harness_cluster(nodes: list[DemoNode], calibrations: list[Calibration]) -> Cluster:
    """The harness's view of the testbed: hidden curves measured, the rest calibrated.

    Parameters
    ----------
    nodes : list of DemoNode, length 6
        Hidden curves (W at 0, 10, ..., 100 % load) and cores.
    calibrations : list of Calibration, same order
        P_idle, P_max (W) and speed from the demo's sweeps (speed 1.0 when absent).

    Returns
    -------
    Cluster
        Power caps :attr:`DemoNode.power_cap_w`, as the agents publish them.
    """
    points = np.array([n.points_w for n in nodes], dtype=float)
    return Cluster(
        names=[n.name for n in nodes],
        cores=np.array([n.cores for n in nodes], dtype=float),
        mem_mib=np.full(len(nodes), MEMORY_MIB),
        max_pods=np.full(len(nodes), 110, dtype=np.int64),
        speed=np.array([c.speed or 1.0 for c in calibrations]),
        curves=PowerCurves(points),
        p_idle_w=np.array([c.p_idle_w for c in calibrations]),
        p_max_w=np.array([c.p_max_w for c in calibrations]),
        power_cap_w=np.array([n.power_cap_w for n in nodes]),
        meta=[NodeMeta() for _ in nodes],
        server=[n.server for n in nodes],
    )


def demo_workload(cluster: Cluster, quick: bool, rho: float) -> tuple[Workload, str]:
    """The trace head rescaled to offered load ``rho``, and a sentence on where it came from.

    Parameters
    ----------
    cluster : Cluster
        Pods larger than its largest node are left out; its total cores set ρ.
    quick : bool
        :data:`PODS` pods (40 quick, 200 full).
    rho : float
        Offered load ρ (Σ c·t over span × cores).

    Returns
    -------
    (Workload, str)
        The first pods of the Alibaba 2017 batch trace (``cluster_traces/``), or, without the
        data folder, the harness's synthetic workload; the str names which (and the missing
        file).
    """
    pods = PODS[quick]
    if data_file(DEFAULT_PATHS[TRACE]) is not None:
        spec = TraceSpec(source=TRACE, max_pods=pods, max_duration_s=MAX_DURATION_S)
        workload = load_workload(spec, SEED)
        source = f"first {pods} tasks of {DEFAULT_PATHS[TRACE]}"
    else:
        synthetic_spec = SyntheticSpec(pods=pods, cpu_choices=[0.5, 1, 2], duration_median_s=60)
        workload = synthetic(synthetic_spec, n_tenants=4, classes=[], seed=SEED)
        source = f"{not_found(DEFAULT_PATHS[TRACE])}: {pods} synthetic pods"
    fits = workload.cpu <= cluster.cores.max()  # pods larger than a node never run
    if not fits.all():
        workload = subset(workload, fits)
        source += f" ({int((~fits).sum())} larger than a node left out)"
    workload = rescale_to_rho(workload, cluster.total_cores, rho)
    return workload, f"{source}, arrivals rescaled to offered load ρ = {rho:g}"
