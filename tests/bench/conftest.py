"""Hand-made tiny clusters and workloads for the harness tests."""

from __future__ import annotations

import numpy as np

from eams.scheduler.policies.base import Cluster, NodeMeta, PodConstraints, PowerCurves, Workload


def tiny_cluster(
    cores: list[float],
    *,
    speed: list[float] | None = None,
    points_w: list[list[float]] | None = None,
    mem_mib: list[float] | None = None,
    meta: list[NodeMeta] | None = None,
) -> Cluster:
    """A cluster of len(cores) nodes; default curve 50 W idle → 150 W full, straight."""
    n = len(cores)
    pts = np.array(points_w if points_w else [list(np.linspace(50, 150, 11))] * n, dtype=float)
    curves = PowerCurves(pts)
    p_idle, p_max = curves.linear_fit()
    return Cluster(
        names=[f"n{i}" for i in range(n)],
        cores=np.asarray(cores, dtype=float),
        mem_mib=np.asarray(mem_mib if mem_mib else [1e6] * n, dtype=float),
        max_pods=np.full(n, 110, dtype=np.int64),
        speed=np.asarray(speed if speed else [1.0] * n, dtype=float),
        curves=curves,
        p_idle_w=p_idle,
        p_max_w=p_max,
        power_cap_w=pts[:, -1],
        meta=meta if meta else [NodeMeta() for _ in range(n)],
        server=["test"] * n,
    )


def tiny_workload(
    arrival_s: list[float],
    cpu: list[float],
    duration_s: list[float],
    *,
    mem_mib: list[float] | None = None,
    tenant: list[int] | None = None,
    profile: list[int] | None = None,
    profiles: list[PodConstraints] | None = None,
    quotas: list[float] | None = None,
) -> Workload:
    """A workload of len(cpu) pods (arrival order as given)."""
    j = len(cpu)
    tenants = tenant if tenant else [0] * j
    m = max(tenants) + 1
    return Workload(
        names=[f"p{i}" for i in range(j)],
        arrival_s=np.asarray(arrival_s, dtype=float),
        cpu=np.asarray(cpu, dtype=float),
        mem_mib=np.asarray(mem_mib if mem_mib else [0.0] * j, dtype=float),
        duration_s=np.asarray(duration_s, dtype=float),
        tenant=np.asarray(tenants, dtype=np.int64),
        profile=np.asarray(profile if profile else [0] * j, dtype=np.int64),
        profiles=profiles if profiles else [PodConstraints()],
        quotas=np.asarray(quotas if quotas else [1.0 / m] * m, dtype=float),
    )
