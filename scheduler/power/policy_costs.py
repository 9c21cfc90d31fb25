"""The numbers the power policy decides by: efficiency, break-even, expected idle time, and
what waking a node for a pod costs (study §5.1's wake term with measured sleep states).

* **Efficiency** — the market's own ranking: :meth:`EnergyModel.work_per_joule` (reference
  core-seconds per joule, ``c·s / ΔP``) of the reserve pod on an empty node, with the one model
  both use (:func:`above_sleep_floor`: the wake term ``P_wake − P_sleep``, the power an awake
  empty node draws over sleeping) — exactly the extender's bid for that pod before priority
  and headroom (``eams.scheduler.auction.bids``, ``Nodes.p_sleep_w``), so the nodes kept awake
  are the ones the market would fill. Without a reserve, a pod that fills the node.
* **Break-even** — sleeping for an idle stretch of T seconds costs ``E_suspend + E_wake +
  P_sleep·(T − t_suspend − t_wake)`` against ``P_idle·T`` for staying awake, so it pays when
  ``T ≥ T_be = (E_suspend + E_wake − P_sleep·(t_suspend + t_wake)) / (P_idle − P_sleep)``, and
  never below ``t_suspend + t_wake`` (the cycle must fit). The ski-rental break-even of power
  management (Irani, Shukla and Gupta, "Online strategies for dynamic power management in
  systems with multiple power-saving states", ACM TECS 2003).
* **Expected idle time** — the empirical mean residual life of the fleet's recent idle gaps:
  for a node idle for τ, ``E[G − τ | G > τ]`` over the gaps seen; with no gap longer than τ
  (or none yet), τ itself (a gap that has lasted τ is expected to last about as long again).
* **Wake cost** — the same model for an asleep node: ``(P_wake − P_sleep)·t`` for the pod's
  runtime over sleeping (DESIGN.md §5b) plus the one-off ``E_wake``. (Whether a pod should
  *wait* for a wake when an awake node could take it is the market's call, priced with the
  same model: ``auction.bids.wake_values``, ``eams.scheduler.extender.wakes``.)
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from eams.calibrate.energy import EnergyModel
from eams.scheduler.power.policy_fleet import FleetState


def work_per_joule(fleet: FleetState, pod_cores: float) -> NDArray[np.float64]:
    """Each node's work per joule for a pod of ``pod_cores`` cores placed on it empty (module
    docstring; ≤ 0 cores: a pod filling each node), reference core-seconds per joule, (N,)."""
    model = above_sleep_floor(fleet, sleep_measured(fleet))
    cores = np.minimum(pod_cores, fleet.cores) if pod_cores > 0 else fleet.cores
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.nan_to_num(model.work_per_joule(cores, True), nan=0.0, posinf=np.inf)


def sleep_measured(fleet: FleetState) -> NDArray[np.bool_]:
    """(N,) bool: every sleep-state figure is measured and sleeping draws less than idling."""
    known = np.isfinite(fleet.sleep_power_w) & np.isfinite(fleet.wake_time_s)
    known &= np.isfinite(fleet.wake_energy_j) & np.isfinite(fleet.suspend_time_s)
    known &= np.isfinite(fleet.suspend_energy_j)
    return known & (fleet.p_idle_w > np.nan_to_num(fleet.sleep_power_w, nan=np.inf))


def break_even_s(fleet: FleetState, measured: NDArray[np.bool_]) -> NDArray[np.float64]:
    """T_be per node (s), ``inf`` where sleeping cannot pay (``measured``, (N,) bool, is
    :func:`sleep_measured`)."""
    ok = measured
    cycle_s = fleet.suspend_time_s + fleet.wake_time_s
    extra_j = fleet.suspend_energy_j + fleet.wake_energy_j - fleet.sleep_power_w * cycle_s
    saved_w = fleet.p_idle_w - fleet.sleep_power_w
    with np.errstate(invalid="ignore", divide="ignore"):
        t_be = np.maximum(extra_j / saved_w, cycle_s)
    return np.where(ok, t_be, np.inf)


def expected_idle_s(elapsed_s: NDArray[np.float64], gaps_s: NDArray[np.float64]):
    """Expected remaining idle time of nodes idle for ``elapsed_s`` (M,), from the closed idle
    gaps ``gaps_s`` (G,) (module docstring); shape (M,), s."""
    elapsed_s = np.asarray(elapsed_s, dtype=float)
    if gaps_s.size == 0:
        return elapsed_s.copy()
    longer = gaps_s[None, :] > elapsed_s[:, None]
    count = longer.sum(axis=1)
    residual = np.where(longer, gaps_s[None, :] - elapsed_s[:, None], 0.0).sum(axis=1)
    return np.where(count > 0, residual / np.maximum(count, 1), elapsed_s)


def idle_recheck_s(elapsed_s: NDArray[np.float64], gaps_s: NDArray[np.float64], t_be_s):
    """The idle time (M,) at which :func:`expected_idle_s` can next rise to ``t_be_s``: the next
    gap length above ``elapsed_s`` (the conditional mean jumps there) or, past every gap, T_be
    itself."""
    elapsed_s = np.asarray(elapsed_s, dtype=float)
    longest = gaps_s.max(initial=0.0)
    beyond = np.maximum(longest, t_be_s)
    if gaps_s.size == 0:
        return np.broadcast_to(beyond, elapsed_s.shape).astype(float)
    above = np.where(gaps_s[None, :] > elapsed_s[:, None], gaps_s[None, :], np.inf)
    return np.minimum(above.min(axis=1), beyond)


def above_sleep_floor(fleet: FleetState, measured: NDArray[np.bool_]) -> EnergyModel:
    """The §5.1 model of every node measured above its sleep floor: P_sleep where the sleep
    state is ``measured`` (0 elsewhere), the calibration's wake power P_wake (P_idle where
    unknown) — the extender's model too (``Nodes.p_sleep_w``, ``Market.wake_model``)."""
    p_wake_w = fleet.p_idle_w if fleet.p_wake_w is None else fleet.p_wake_w
    p_wake_w = np.where(np.isnan(p_wake_w), fleet.p_idle_w, p_wake_w)
    floor_w = np.where(measured, fleet.sleep_power_w, 0.0)
    return EnergyModel(
        fleet.p_idle_w,
        fleet.p_max_w,
        fleet.cores,
        fleet.speed,
        p_wake_w=p_wake_w,
        p_sleep_w=np.minimum(floor_w, p_wake_w),
    )


def run_energy_j(model: EnergyModel, pod_cores: float, runtime_ref_s: float, nodes, empty):
    """ΔE of one pod on ``nodes`` (M,) above the sleep floor, J; ``empty`` (M,) bool charges the
    (P_wake − P_sleep)·t wake term (a node the pod keeps from sleeping)."""
    assert model.p_wake_w is not None and model.p_sleep_w is not None  # above_sleep_floor's
    sub = EnergyModel(
        model.p_idle_w[nodes],
        model.p_max_w[nodes],
        model.cores[nodes],
        model.speed[nodes],
        p_wake_w=model.p_wake_w[nodes],
        p_sleep_w=model.p_sleep_w[nodes],
    )
    return sub.marginal_energy_j(pod_cores, runtime_ref_s, empty)


def wake_cost_j(fleet: FleetState, model: EnergyModel, pod_cores, runtime_ref_s, nodes):
    """What waking each of ``nodes`` (M,) for one pod costs: E_wake + ΔE above the floor, J."""
    return fleet.wake_energy_j[nodes] + run_energy_j(
        model, pod_cores, runtime_ref_s, nodes, np.ones(len(nodes), dtype=bool)
    )
