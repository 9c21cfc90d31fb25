"""What running a pod costs a node: the study's §5.1 energy model, vectorised (the one home).

For pod j (c_j cores, work w_j in reference seconds: its runtime at speed 1) on node n (C_n
cores, speed s_n, the calibrated line P_idle_n … P_max_n)::

    t_jn  = w_j / s_n                                                  runtime, s
    ΔP_jn = (P_max_n − P_idle_n) · c_j / C_n  +  1[n empty] · P_wake_n   added power, W
    ΔE_jn = (P_max_n − P_idle_n) · (c_j / C_n) · t_jn  +  1[n empty] · P_wake_n · t_jn   J

The first term is the dynamic power of the pod's share of the cores; the second, the *wake
term*, charges an empty node's idle power for the pod's runtime (the study assumes an empty
node draws nothing until a pod wakes it). The study writes P_idle for both, its line being
exact; a real node's active idle often sits far below the line's intercept (issue 16), so the
wake term's power P_wake_n is the calibration's ``Calibration.wake_power_w`` — the measured
active idle where the sweep measured one, else the intercept (one decision, in
:func:`eams.calibrate.model.wake_power`) — and the dynamic term keeps the line.

Source: study §5.1, DESIGN.md §5; the worked example (a 4-core pod with one reference hour of
work, 32-core nodes: 140 W range at speed 1 → 63,000 J; 220 W range at speed 1.5 → 66,000 J) is
``tests/auction/test_bids.py``.

Users: the auction's bids (``eams.scheduler.auction.bids``), the extender's herding
reservations (expected power, :meth:`EnergyModel.dynamic_power_w`), the MILP baseline (ΔE) and
the PEAKS-style baseline (power jump, :meth:`EnergyModel.dynamic_power_w`). Pure numpy, no I/O and
no input checks: callers pass columns already checked (``auction.Nodes``, the bench's cluster).

Power states (DESIGN.md §5b) change only the wake term, and it has one place here: with the
node columns ``p_sleep_w`` (P_sleep: P_suspend, P_off or 0, what the node draws asleep) and
``wake_energy_j`` (E_wake), :meth:`EnergyModel.wake_power_w` is the power a woken node adds
over its sleep state, P_wake − P_sleep, and :meth:`EnergyModel.marginal_energy_j` adds the
one-off E_wake beside ``wake_power_w · t``::

    ΔE_jn = (P_max_n − P_idle_n)·(c_j/C_n)·t_jn + 1[empty]·((P_wake_n − P_sleep_n)·t_jn + E_wake_n)

Both come from the node's calibration (``Calibration.sleep_power_w``, ``.wake_energy_j``:
``eams calibrate power-states``). Without them (``None``), or where a node's value is NaN
(not measured), the study's assumption holds for that node: asleep it draws 0 W and waking it
costs nothing beyond its idle power, which is the ΔE above with P_sleep = E_wake = 0. E_wake is
the energy the outlet metered from the wake command to the agent reporting again, the sleep
draw over that time included (a few joules more than the excess over staying asleep: the
conservative side).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray


@dataclass(frozen=True, slots=True)
class EnergyModel:
    """The §5.1 energy model of N nodes, one column per parameter.

    Every method broadcasts: pass node columns of shape (N,) and pod values of shape (J, 1)
    for a (J, N) result, or one pod as scalars for (N,), or matching (K,) arrays for K
    (pod, node) pairs.

    Parameters
    ----------
    p_idle_w : (N,) float, watts
        Each node's line at u = 0 (the calibration's ``p_idle_w``).
    p_max_w : (N,) float, watts
        Each node's line at u = 1.
    cores : (N,) float, > 0
        Cores C_n the share c_j / C_n is taken of (allocatable CPU).
    speed : (N,) float, > 0
        Per-core speed s_n relative to the reference (1 = reference).
    p_wake_w : (N,) float, watts, optional
        P_wake: what each empty node draws awake and idle, per second of the pod's runtime:
        the calibration's ``wake_power_w``. ``None``: the line's intercept ``p_idle_w``.
    p_sleep_w : (N,) float, watts, optional
        P_sleep: each node's draw in its sleep state; NaN or ``None``: 0 (the study's
        assumption).
    wake_energy_j : (N,) float, joules, optional
        E_wake: the one-off energy of waking each node; NaN or ``None``: 0.
    """

    p_idle_w: NDArray[np.float64]
    p_max_w: NDArray[np.float64]
    cores: NDArray[np.float64]
    speed: NDArray[np.float64]
    p_wake_w: NDArray[np.float64] | None = None
    p_sleep_w: NDArray[np.float64] | None = None
    wake_energy_j: NDArray[np.float64] | None = None

    def runtime_s(self, reference_s: ArrayLike) -> NDArray[np.float64]:
        """t = w / s: the runtime of work that takes ``reference_s`` seconds at speed 1, s."""
        return np.asarray(reference_s) / self.speed

    def dynamic_power_w(self, pod_cores: ArrayLike) -> NDArray[np.float64]:
        """(P_max − P_idle) · c / C: the power a pod of ``pod_cores`` cores adds to a node
        that is already on, W. Not clipped: a pod wider than the node is excluded by the fit
        check, not here (clip ``pod_cores`` to ``cores`` for a bound on the node's power)."""
        return (self.p_max_w - self.p_idle_w) * (np.asarray(pod_cores) / self.cores)

    def wake_power_w(self, empty: ArrayLike) -> NDArray[np.float64]:
        """1[empty] · (P_wake − P_sleep): the power an empty node adds once a pod wakes it, W
        (0 for a node already running pods). ``empty`` : bool, broadcastable to the node
        columns."""
        wake_w = self.p_idle_w if self.p_wake_w is None else self.p_wake_w
        return np.where(empty, wake_w - _known(self.p_sleep_w), 0.0)

    def wake_cost_j(self, empty: ArrayLike) -> NDArray[np.float64]:
        """1[empty] · E_wake: the one-off energy of waking an empty node, J (0 for a node
        already running pods, and where E_wake is unknown)."""
        return np.where(empty, _known(self.wake_energy_j), 0.0)

    def added_power_w(self, pod_cores: ArrayLike, empty: ArrayLike) -> NDArray[np.float64]:
        """ΔP = dynamic + wake: how much more the node draws while the pod runs, W."""
        return self.dynamic_power_w(pod_cores) + self.wake_power_w(empty)

    def work_per_joule(self, pod_cores: ArrayLike, empty: ArrayLike) -> NDArray[np.float64]:
        """c · s / ΔP: reference core-seconds of work per joule a pod of ``pod_cores`` cores gets
        on each node (w / ΔE with the runtime t = w / (c·s) cancelled) — the market's bid before
        the priority weight and the headroom gate (study §5.2), so a ranking by it is the
        market's. One-off wake energy (E_wake) is left out: it does not scale with the work.

        Parameters
        ----------
        pod_cores : float or array, cores c (> 0)
        empty : bool or bool array, the node runs no pod before this one (the wake term)
        """
        return np.asarray(pod_cores) * self.speed / self.added_power_w(pod_cores, empty)

    def marginal_energy_j(
        self, pod_cores: ArrayLike, reference_s: ArrayLike, empty: ArrayLike
    ) -> NDArray[np.float64]:
        """ΔE = (P_max − P_idle)·(c/C)·t + 1[empty]·((P_wake − P_sleep)·t + E_wake), t = w / s:
        the energy the node spends running the pod, J (> 0 for positive inputs).

        Parameters
        ----------
        pod_cores : float or array, cores c_j
        reference_s : float or array, seconds w_j (runtime at speed 1)
        empty : bool or bool array, the node runs no pod before this one
        """
        runtime_s = self.runtime_s(reference_s)
        wake_j = self.wake_power_w(empty) * runtime_s + self.wake_cost_j(empty)
        return self.dynamic_power_w(pod_cores) * runtime_s + wake_j


def _known(column: NDArray[np.float64] | None) -> NDArray[np.float64] | float:
    """A power-state column with its unknown entries (NaN) and an absent column as 0."""
    return 0.0 if column is None else np.nan_to_num(np.asarray(column, dtype=np.float64), nan=0.0)
