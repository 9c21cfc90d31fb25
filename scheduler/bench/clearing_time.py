"""Clearing time and value of the engine against the solvers a user would pick instead, on
the same batch, in the same run (``eams bench auction``, ``benchmarks/auction_bench.py``).

Per batch kind (:data:`eams.scheduler.bench.auction_batches.KINDS`): ``clear`` (bids and
clearing) and ``solve`` (the clearing on the bid matrix) timed ``repeats`` times, CPU and wall;
then the references of :mod:`.reference_solvers` on the same allowed values: single-slot
batches the exact OR-tools min-cost flow (and ``linear_sum_assignment`` as a sanity check),
mixed sizes CP-SAT and HiGHS MILP at each budget and the LP relaxation by OR-tools min-cost
flow. The *best bound* is the lowest upper bound on the optimum any of them proved (the
engine's own certificate included); the engine's value is reported against it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import asdict, replace
from typing import TypeVar

import numpy as np

from eams.scheduler.auction import solve
from eams.scheduler.auction.inputs import allowed
from eams.scheduler.bench import reference_solvers as ref
from eams.scheduler.bench.auction_batches import batch

T = TypeVar("T")
BUDGETS_S = (0.05, 0.2, 1.0)  # the MILP/CP-SAT budgets (issue 18)


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


def compare(
    kind: str,
    n_pods: int,
    n_nodes: int,
    slots: int,
    seed: int = 0,
    repeats: int = 20,
    budgets_s: tuple[float, ...] = BUDGETS_S,
    lsa: bool = True,
    method: str = "auto",
) -> dict:
    """The engine and the reference solvers on one batch of ``kind``.

    Parameters
    ----------
    kind : str
        A key of :data:`~eams.scheduler.bench.auction_batches.KINDS`.
    n_pods, n_nodes, slots : int ≥ 1
        The batch size (``slots`` free slots per node where the kind uses it).
    seed : int
    repeats : int ≥ 1
        Timed clearings (median, p99).
    budgets_s : tuple of float
        CP-SAT and HiGHS MILP budgets, seconds (mixed sizes; empty: skip them).
    lsa : bool
        Also run ``linear_sum_assignment`` (single-slot sanity check; ~1.4 s at 500 × 8,000).
    method : str
        ``AuctionParams.method`` for the engine.

    Returns
    -------
    dict
        ``eams``: the engine's figures (times in ms, value, ``gap_bound``, J·ε, method…);
        ``references``: one dict per reference solve (:class:`.reference_solvers.Solved`);
        ``best_bound`` and ``best_bound_by``; ``gap_to_best_bound_pct`` (the engine's value
        below the best bound; 0 when no pod fits and both are 0);
        ``pods_that_fit`` (pods with at least one allowed node); single-slot
        ``within_j_epsilon`` (against the min-cost flow's optimum) and
        ``speedup_vs_flow_cpu``; ``load_avg`` (1-minute load before and after).
    """
    load_before = os.getloadavg()[0]
    b = batch(kind, n_pods, n_nodes, slots, seed)
    params = replace(b.params, method=method)
    d, cap = b.pods.slots, b.nodes.slots
    clear_wall, clear_cpu, _ = _times_ms(
        lambda: solve(b.bids(), d, cap, params, b.feasible), repeats
    )  # what clear() does: the bids, then solve (the non-rank-one kind's bids are its own)
    solve_wall, solve_cpu, c = _times_ms(
        lambda: solve(b.values, d, cap, params, b.feasible), repeats
    )
    values = allowed(b.values, d, cap, b.feasible)
    refs = [ref.ortools_flow(values, d, cap)]
    if b.single_slot and lsa:
        refs.append(ref.lsa_optimum(values, cap))
    if not b.single_slot and budgets_s:
        refs += ref.cp_sat(values, d, cap, list(budgets_s))
        refs += [ref.highs_milp(values, d, cap, budget) for budget in budgets_s]
    j_eps = n_pods * c.epsilon
    own_bound = c.value + (c.gap_bound if c.gap_bound is not None else j_eps)
    bounds = [(r.bound, r.solver) for r in refs if r.bound is not None]
    bounds.append((own_bound, "eams certificate"))
    best_bound, best_by = min(bounds)
    # A best bound of 0: nothing can be placed (no pod fits), and the engine placed nothing.
    gap_pct = 100.0 * (best_bound - c.value) / best_bound if best_bound else 0.0
    figures = {
        "kind": kind,
        "pods": n_pods,
        "nodes": n_nodes,
        "pod_slots_total": int(d.sum()),
        "free_slots_total": int(cap.sum()),
        "pods_that_fit": int(np.isfinite(values).any(axis=1).sum()),
        "seed": seed,
        "repeats": repeats,
        "eams": {
            "method": str(c.method),
            "clear_cpu_ms_median": float(np.median(clear_cpu)),
            "clear_cpu_ms_p99": float(np.percentile(clear_cpu, 99)),
            "clear_ms_median": float(np.median(clear_wall)),
            "solve_cpu_ms_median": float(np.median(solve_cpu)),
            "solve_ms_median": float(np.median(solve_wall)),
            "value": c.value,
            "gap_bound": c.gap_bound,
            "j_epsilon": j_eps,
            "rounds": c.rounds,
            "phases": c.phases,
            "polish_rounds": c.polish_rounds,
            "converged": c.converged,
            "fell_back": c.fell_back,
            "assigned": int((c.assignment >= 0).sum()),
        },
        "references": [asdict(r) for r in refs],
        "best_bound": best_bound,
        "best_bound_by": best_by,
        "gap_to_best_bound_pct": gap_pct,
        "versions": ref.versions(),
    }
    if b.single_slot:
        optimum = refs[0].value
        figures["within_j_epsilon"] = bool(optimum is not None and c.value >= optimum - j_eps)
        flow_ms = refs[0].build_ms + refs[0].solve_cpu_ms  # building the network counts too
        figures["speedup_vs_flow_cpu"] = flow_ms / float(np.median(clear_cpu))
    figures["load_avg"] = [load_before, os.getloadavg()[0]]
    return figures
