"""Clearing time of the ε-auction against ``linear_sum_assignment`` on one seeded batch, in the
same run (``eams bench auction``, ``benchmarks/auction_bench.py``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import numpy as np
from scipy.optimize import linear_sum_assignment

from eams.scheduler.auction import AuctionParams, clear, solve
from eams.scheduler.auction.bids import bid_values
from eams.scheduler.bench.auction_batches import random_batch

T = TypeVar("T")


def _times_ms(run: Callable[[], T], repeats: int) -> tuple[list[float], list[float], T]:
    """Wall-clock and CPU (process) milliseconds per call; the machine may be shared, so CPU
    time shows the work even when other processes delay the wall clock. ``repeats`` ≥ 1 (the
    CLI checks it); returns the last call's result."""
    wall: list[float] = []
    cpu: list[float] = []
    result: T | None = None
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        result = run()
        wall.append((time.perf_counter() - start) * 1e3)
        cpu.append((time.process_time() - start_cpu) * 1e3)
    assert result is not None, "repeats must be >= 1"
    return wall, cpu, result


def run_benchmark(
    n_pods: int,
    n_nodes: int,
    slots: int,
    seed: int,
    repeats: int,
    lsa_repeats: int,
    mask_fraction: float,
    cold: bool = False,
    max_pod_slots: int = 1,
    method: str = "auto",
) -> dict:
    """Time ``clear``/``solve`` and a reference on one seeded batch, in the same run.

    ``cold`` turns the warm start off; ``method`` is ``AuctionParams.method``. Single-slot
    pods: the reference is scipy's ``linear_sum_assignment`` on the same bid values expanded
    to one column per slot (a disallowed pair is worth 0, as leaving the pod out).
    ``max_pod_slots`` > 1 (pods of 1..m slots, a generalised assignment problem): the
    reference is the ε-auction (``method="auction"``), with both values and the certified
    ``gap_bound`` (no exact optimum at this size). Returns the figures as a dict (times in ms).
    """
    pods, nodes = random_batch(n_pods, n_nodes, slots, seed=seed, max_pod_slots=max_pod_slots)
    rng = np.random.default_rng(seed + 1)
    feasible = rng.random((n_pods, n_nodes)) >= mask_fraction if mask_fraction > 0 else None
    params = AuctionParams(warm_start=not cold, method=method)
    values = bid_values(pods, nodes, params)
    clear_ms, clear_cpu, _ = _times_ms(lambda: clear(pods, nodes, params, feasible), repeats)
    solve_ms, solve_cpu, result = _times_ms(
        lambda: solve(values, pods.slots, nodes.slots, params, feasible), repeats
    )
    if max_pod_slots > 1:
        auction = AuctionParams(warm_start=not cold, method="auction")
        ref_ms, ref_cpu, ref = _times_ms(
            lambda: solve(values, pods.slots, nodes.slots, auction, feasible), lsa_repeats
        )
        ref_value, ref_name = ref.value, f"auction ({ref.rounds} rounds, {ref.method})"
    else:
        allowed = values if feasible is None else np.where(feasible, values, 0.0)
        expanded = np.repeat(np.where(allowed > 0, allowed, 0.0), nodes.slots, axis=1)
        ref_ms, ref_cpu, (rows, cols) = _times_ms(
            lambda: linear_sum_assignment(expanded, maximize=True), lsa_repeats
        )
        ref_value, ref_name = float(expanded[rows, cols].sum()), "linear_sum_assignment"
    gap = ref_value - result.value
    j_eps = n_pods * result.epsilon
    return {
        "pods": n_pods,
        "nodes": n_nodes,
        "slots": slots,
        "seed": seed,
        "mask_fraction": mask_fraction,
        "warm_start": not cold,
        "max_pod_slots": max_pod_slots,
        "method": result.method,
        "repeats": repeats,
        "clear_ms_median": float(np.median(clear_ms)),
        "clear_ms_p99": float(np.percentile(clear_ms, 99)),
        "solve_ms_median": float(np.median(solve_ms)),
        "solve_ms_p99": float(np.percentile(solve_ms, 99)),
        "clear_cpu_ms_median": float(np.median(clear_cpu)),
        "solve_cpu_ms_median": float(np.median(solve_cpu)),
        "solve_cpu_ms_p99": float(np.percentile(solve_cpu, 99)),
        "rounds": result.rounds,
        "phases": result.phases,
        "converged": result.converged,
        "fell_back": result.fell_back,
        "assigned": int((result.assignment >= 0).sum()),
        "reference": ref_name,
        "lsa_ms_median": float(np.median(ref_ms)),
        "lsa_cpu_ms_median": float(np.median(ref_cpu)),
        "speedup_vs_lsa": float(np.median(ref_ms) / np.median(solve_ms)),
        "speedup_vs_lsa_cpu": float(np.median(ref_cpu) / np.median(solve_cpu)),
        "value": result.value,
        "lsa_value": ref_value,
        "value_gap": gap,
        "j_epsilon": j_eps,
        "gap_within_j_epsilon": bool(gap <= j_eps),
        "gap_bound": result.gap_bound,
    }
