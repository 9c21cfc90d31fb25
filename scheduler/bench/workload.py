"""Building workloads (:class:`eams.scheduler.policies.base.Workload`): pods with arrival times,
cpu and memory requests, durations and tenants.

A workload comes from a trace (:mod:`.traces`) or from :func:`synthetic`, and is then
rescaled in time to an offered load ρ (study §5.4):

    ρ = λ · E[c·t] / ΣC_n,   λ = J / T

with J pods arriving over a window of T seconds, c the cpu request (cores), t the duration on a
reference core (speed 1) and ΣC_n the cluster's cores. Rescaling multiplies every arrival time by
one factor, which keeps the trace's burst pattern and sets T = Σ c·t / (ρ ΣC_n).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
from numpy.typing import NDArray

from eams.kube.taints import Toleration
from eams.scheduler.bench.errors import LoadError
from eams.scheduler.bench.manifest import PodClass, SyntheticSpec
from eams.scheduler.policies.base import PodConstraints, Workload


def from_arrays(
    names: list[str],
    arrival_s: NDArray[np.float64],
    cpu: NDArray[np.float64],
    mem_mib: NDArray[np.float64],
    duration_s: NDArray[np.float64],
    tenant: NDArray[np.int64],
    *,
    n_tenants: int,
    quotas: list[float] | None,
    classes: list[PodClass],
    seed: int,
    max_pods: int | None = None,
    max_duration_s: float | None = None,
) -> Workload:
    """Assemble a :class:`Workload`: sort by arrival, cut to ``max_pods``, cap durations,
    draw pod constraint classes (seeded) and set tenant quotas.

    Quotas default to each tenant's share of the offered work (so Jain's index measures whether
    each tenant got the share it asked for); explicit ``quotas`` are normalised to sum 1.
    """
    order = np.argsort(arrival_s, kind="stable")
    if max_pods is not None:
        order = order[:max_pods]
    duration = np.asarray(duration_s, dtype=float)[order]
    capped = 0
    if max_duration_s is not None:
        capped = int((duration > max_duration_s).sum())
        duration = np.minimum(duration, max_duration_s)
    cpu_sel = np.asarray(cpu, dtype=float)[order]
    tenant_sel = np.asarray(tenant, dtype=np.int64)[order] % n_tenants
    rng = np.random.default_rng([seed, 2])
    profiles = [PodConstraints()]
    profile = np.zeros(len(order), dtype=np.int64)
    draw = rng.random(len(order))
    low = 0.0
    for cls in classes:
        profiles.append(
            PodConstraints(
                tuple(Toleration(t.key, t.operator, t.value, t.effect) for t in cls.tolerations),
                tuple(sorted(cls.node_selector.items())),
            )
        )
        profile[(draw >= low) & (draw < low + cls.fraction)] = len(profiles) - 1
        low += cls.fraction
    if quotas is not None:
        share = np.asarray(quotas, dtype=float)
        if share.shape != (n_tenants,) or np.any(share <= 0):
            raise LoadError(f"tenant_quotas needs {n_tenants} positive values, got {quotas}")
    else:
        share = np.bincount(tenant_sel, weights=cpu_sel * duration, minlength=n_tenants)
        share = np.where(share > 0, share, np.nan)
    return Workload(
        names=[names[i] for i in order],
        arrival_s=np.asarray(arrival_s, dtype=float)[order],
        cpu=cpu_sel,
        mem_mib=np.asarray(mem_mib, dtype=float)[order],
        duration_s=duration,
        tenant=tenant_sel,
        profile=profile,
        profiles=profiles,
        quotas=share / np.nansum(share),
        capped=capped,
    )


def synthetic(
    spec: SyntheticSpec, *, n_tenants: int, classes: list[PodClass], seed: int
) -> Workload:
    """A synthetic workload: Poisson arrivals (unit rate, rescaled later), cpu uniform over
    ``spec.cpu_choices``, lognormal durations with median ``duration_median_s`` and log-sd
    ``duration_sigma``, memory ``mem_mib_per_core`` per core, tenants uniform."""
    rng = np.random.default_rng([seed, 3])
    j = spec.pods
    cpu = rng.choice(np.asarray(spec.cpu_choices, dtype=float), size=j)
    return from_arrays(
        [f"synth-{i:06d}" for i in range(j)],
        np.cumsum(rng.exponential(1.0, size=j)),
        cpu,
        cpu * spec.mem_mib_per_core,
        spec.duration_median_s * np.exp(spec.duration_sigma * rng.standard_normal(j)),
        rng.integers(0, n_tenants, size=j),
        n_tenants=n_tenants,
        quotas=None,
        classes=classes,
        seed=seed,
    )


def offered_load(workload: Workload, total_cores: float) -> float:
    """ρ of ``workload`` as it stands: Σ c·t / (T · ΣC), T = last − first arrival (s).

    Raises
    ------
    LoadError
        If fewer than two pods arrive at distinct times (no arrival rate exists).
    """
    span = float(workload.arrival_s[-1] - workload.arrival_s[0]) if workload.size else 0.0
    if span <= 0:
        raise LoadError(
            f"ρ is undefined: the {workload.size} pods of this workload arrive at one instant"
        )
    return float(workload.work_core_s.sum()) / (span * total_cores)


def subset(workload: Workload, keep: NDArray[np.bool_]) -> Workload:
    """The pods where ``keep`` (J,) is True, in the same order."""
    return replace(
        workload,
        names=[n for n, k in zip(workload.names, keep, strict=True) if k],
        arrival_s=workload.arrival_s[keep],
        cpu=workload.cpu[keep],
        mem_mib=workload.mem_mib[keep],
        duration_s=workload.duration_s[keep],
        tenant=workload.tenant[keep],
        profile=workload.profile[keep],
    )


def rescale_factor(workload: Workload, total_cores: float, rho: float) -> float:
    """The factor by which arrival times (measured from the first) must be multiplied so that
    :func:`offered_load` equals ``rho``.

    Raises
    ------
    LoadError
        If ``rho`` is not a finite positive number, or the workload has no arrival span to
        rescale (no pod, or every pod arrives at the same instant), naming the requested ρ.
    """
    if not (math.isfinite(rho) and rho > 0):
        raise LoadError(f"ρ = {rho} cannot be reached: offered load must be finite and > 0")
    try:
        current = offered_load(workload, total_cores)
    except LoadError as exc:
        raise LoadError(f"ρ = {rho} cannot be reached: {exc}") from exc
    return current / rho


def rescale_to_rho(workload: Workload, total_cores: float, rho: float) -> Workload:
    """Scale arrival times so that :func:`offered_load` equals ``rho``; the first arrival is t=0.

    Raises
    ------
    LoadError
        As :func:`rescale_factor`.
    """
    factor = rescale_factor(workload, total_cores, rho)
    return replace(workload, arrival_s=(workload.arrival_s - workload.arrival_s[0]) * factor)
