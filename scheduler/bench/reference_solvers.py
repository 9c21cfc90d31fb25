"""The solvers a user would pick instead of the auction, on the same bids: what
``eams bench auction`` compares the engine with, in the same run.

* OR-tools min-cost flow (``ortools.graph``, ``SimpleMinCostFlow``) on *every* allowed (pod,
  node) pair, built by the network of :func:`eams.scheduler.auction.flow.min_cost_flow`:
  exact for single-slot pods; for pods of several slots it solves the per-slot LP relaxation
  (a pod of d slots supplies d units), whose optimum is the LP bound of the batch.
* CP-SAT (OR-tools ``ortools.sat``) and HiGHS MILP (``scipy.optimize.milp``) on the full
  generalised assignment model: a binary x_jn per allowed pair, Σ_n x_jn ≤ 1 per pod,
  Σ_j d_j·x_jn ≤ K_n per node, maximise Σ v_jn·x_jn, each with a wall-clock budget; each
  reports the best value it found (None: no feasible solution in the budget) and its best
  bound on the optimum.
* scipy's ``linear_sum_assignment`` on the slot-expanded values: a sanity check of the
  single-slot optimum only.

Building a model is timed apart from solving it; the budgets apply to the solve.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy
from ortools.sat.python import cp_model
from scipy.optimize import Bounds, LinearConstraint, linear_sum_assignment, milp
from scipy.sparse import coo_array

from eams.scheduler.auction.flow import min_cost_flow

CP_SAT_WORKERS = 2  # the machine's cores
CP_SAT_SCALE = 1e6  # CP-SAT needs integer objective coefficients: value × 10⁶


@dataclass(frozen=True)
class Solved:
    """One reference solve.

    Attributes
    ----------
    solver : str
        Its name and budget, e.g. ``"cp-sat 0.2 s"``.
    value : float or None
        The best value found (None: no feasible solution).
    bound : float or None
        Its proven upper bound on the optimum (None: none).
    build_ms, solve_ms : float
        Wall milliseconds to build the model and to solve it.
    solve_cpu_ms : float
        CPU milliseconds of the solve (all threads of this process).
    """

    solver: str
    value: float | None
    bound: float | None
    build_ms: float
    solve_ms: float
    solve_cpu_ms: float


def _pairs(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The allowed (pod, node) pairs of an allowed-values matrix (−inf = not allowed)."""
    pod, node = np.nonzero(np.isfinite(values))
    return pod, node


def _clock() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def _since(start: tuple[float, float]) -> tuple[float, float]:
    wall, cpu = _clock()
    return (wall - start[0]) * 1e3, (cpu - start[1]) * 1e3


def ortools_flow(values: np.ndarray, demand: np.ndarray, capacity: np.ndarray) -> Solved:
    """OR-tools min-cost flow on every allowed pair: the optimum for single-slot pods, the LP
    relaxation's optimum (an upper bound, ``value`` None) for pods of several slots.

    Parameters
    ----------
    values : (J, N) float, allowed values (−inf where the pod may not go)
    demand : (J,) int ≥ 1
    capacity : (N,) int ≥ 0
    """
    start = _clock()
    pod, node = _pairs(values)
    gain = values[pod, node] / demand[pod]
    build_ms, _ = _since(start)
    start = _clock()
    flow = min_cost_flow(demand, capacity, pod, node, gain, float(gain.max(initial=1.0)))
    solve_ms, solve_cpu_ms = _since(start)
    if flow is None:
        return Solved("or-tools min-cost flow", None, None, build_ms, solve_ms, solve_cpu_ms)
    total = float((flow.units * flow.gain).sum())
    single = bool((demand == 1).all())
    return Solved(
        "or-tools min-cost flow" if single else "or-tools min-cost flow (LP relaxation)",
        total if single else None,
        total,
        build_ms,
        solve_ms,
        solve_cpu_ms,
    )


def cp_sat(
    values: np.ndarray, demand: np.ndarray, capacity: np.ndarray, budgets_s: list[float]
) -> list[Solved]:
    """CP-SAT on the full model (built once), solved with each budget in ``budgets_s``
    seconds and ``CP_SAT_WORKERS`` workers.

    No allowed pair is the empty model, optimum 0, reported without a solve as for
    :func:`highs_milp` (on a loaded machine CP-SAT could spend a 50 ms budget starting its
    workers and report no bound).
    """
    start = _clock()
    pod, node = _pairs(values)
    if pod.size == 0:
        build_ms, _ = _since(start)
        return [Solved(f"cp-sat {b:g} s", 0.0, 0.0, build_ms, 0.0, 0.0) for b in budgets_s]
    model = cp_model.CpModel()
    x = [model.new_bool_var("") for _ in range(pod.size)]
    for key, coeffs in ((pod, None), (node, demand[pod])):
        order = np.argsort(key, kind="stable")
        for group in np.split(order, np.flatnonzero(np.diff(key[order])) + 1):
            if group.size == 0:
                continue
            chosen = [x[i] for i in group.tolist()]
            if coeffs is None:  # a pod on at most one node
                model.add(sum(chosen) <= 1)
            else:  # a node within its free slots
                weighted = cp_model.LinearExpr.weighted_sum(chosen, coeffs[group].tolist())
                model.add(weighted <= int(capacity[node[group[0]]]))
    weights = np.rint(values[pod, node] * CP_SAT_SCALE).astype(np.int64).tolist()
    model.maximize(cp_model.LinearExpr.weighted_sum(x, weights))
    build_ms, _ = _since(start)
    results = []
    for budget_s in budgets_s:
        solver = cp_model.CpSolver()
        solver.parameters.max_time_in_seconds = budget_s
        solver.parameters.num_workers = CP_SAT_WORKERS
        start = _clock()
        status = solver.solve(model)
        solve_ms, solve_cpu_ms = _since(start)
        value = None
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            chosen_pairs = np.array([solver.boolean_value(v) for v in x], dtype=bool)
            value = float(values[pod[chosen_pairs], node[chosen_pairs]].sum())
        bound = None
        if status != cp_model.UNKNOWN:  # rounding moved each coefficient by ≤ 0.5·10⁻⁶
            bound = solver.best_objective_bound / CP_SAT_SCALE + 0.5 / CP_SAT_SCALE * len(values)
        name = f"cp-sat {budget_s:g} s"
        results.append(Solved(name, value, bound, build_ms, solve_ms, solve_cpu_ms))
    return results


def highs_milp(
    values: np.ndarray, demand: np.ndarray, capacity: np.ndarray, budget_s: float
) -> Solved:
    """HiGHS MILP (``scipy.optimize.milp``) on the full model with ``budget_s`` seconds.

    No allowed pair (no pod fits any node) is a model without variables, which ``milp``
    refuses: its optimum is 0 (nothing placed), reported as value and bound without a solve.
    """
    start = _clock()
    pod, node = _pairs(values)
    name = f"highs milp {budget_s:g} s"
    if pod.size == 0:
        build_ms, _ = _since(start)
        return Solved(name, 0.0, 0.0, build_ms, 0.0, 0.0)
    n_pods, n_nodes = values.shape
    k = np.arange(pod.size)
    v_max = float(values[pod, node].max(initial=1.0))
    constraints = [
        LinearConstraint(coo_array((np.ones(k.size), (pod, k)), shape=(n_pods, k.size)), 0, 1),
        LinearConstraint(
            coo_array((demand[pod].astype(float), (node, k)), shape=(n_nodes, k.size)),
            0,
            capacity,
        ),
    ]
    build_ms, _ = _since(start)
    start = _clock()
    result = milp(
        -values[pod, node] / v_max,
        constraints=constraints,
        integrality=np.ones(k.size),
        bounds=Bounds(0, 1),
        options={"time_limit": budget_s},
    )
    solve_ms, solve_cpu_ms = _since(start)
    value = None
    if result.x is not None:
        chosen = result.x > 0.5
        value = float(values[pod[chosen], node[chosen]].sum())
    dual = getattr(result, "mip_dual_bound", None)
    bound = None if dual is None or not np.isfinite(dual) else -float(dual) * v_max
    return Solved(name, value, bound, build_ms, solve_ms, solve_cpu_ms)


def lsa_optimum(values: np.ndarray, capacity: np.ndarray) -> Solved:
    """scipy's ``linear_sum_assignment`` on the slot-expanded values (single-slot pods; a
    disallowed pair is worth 0, as leaving the pod out): the sanity check."""
    start = _clock()
    expanded = np.repeat(np.where(np.isfinite(values), values, 0.0), capacity, axis=1)
    build_ms, _ = _since(start)
    start = _clock()
    rows, cols = linear_sum_assignment(expanded, maximize=True)
    solve_ms, solve_cpu_ms = _since(start)
    best = float(expanded[rows, cols].sum())
    return Solved("linear_sum_assignment", best, best, build_ms, solve_ms, solve_cpu_ms)


def versions() -> dict[str, str]:
    """The reference solvers' versions, for the figures."""
    from importlib.metadata import version

    return {"ortools": version("ortools"), "scipy": scipy.__version__, "highs": _highs()}


def _highs() -> str:
    try:
        from scipy.optimize._highspy import _core  # scipy's bundled HiGHS

        return (
            f"{_core.HIGHS_VERSION_MAJOR}.{_core.HIGHS_VERSION_MINOR}.{_core.HIGHS_VERSION_PATCH}"
        )
    except (ImportError, AttributeError):
        return "unknown"
