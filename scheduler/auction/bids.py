"""Marginal energy, the headroom gate and bid values (study §5.1–§5.2), and the priority bound.

Pure numpy; every function takes the checked ``Pods``/``Nodes``/``AuctionParams`` objects
and returns arrays. No I/O.
"""

from __future__ import annotations

import numpy as np

from eams.calibrate.energy import EnergyModel
from eams.scheduler.auction.model import AuctionParams, Nodes, Pods
from eams.scheduler.errors import AuctionInputError

# kubernetes pkg/apis/scheduling/types.go: HighestUserDefinablePriority = 1e9; larger values
# are reserved for system-node-critical / system-cluster-critical.
HIGHEST_USER_PRIORITY = 1_000_000_000


def energy_model(nodes: Nodes) -> EnergyModel:
    """The nodes' columns as the study's §5.1 energy model (:mod:`eams.calibrate.energy`),
    measured above each node's sleep floor (``Nodes.p_sleep_w``)."""
    return EnergyModel(
        nodes.p_idle_w,
        nodes.p_max_w,
        nodes.cores,
        nodes.speed,
        nodes.p_wake_w,
        p_sleep_w=nodes.p_sleep_w,
    )


def runtime_s(pods: Pods, nodes: Nodes, params: AuctionParams) -> np.ndarray:
    """Runtime t_jn of each pod on each node (study §5.1).

    ``t_jn = w_j / (c_j · s_n)`` with ``w_j`` in reference core-seconds and
    ``c_j = slots_j × cores_per_slot``; this is the study's ``t = w / s`` with the work counted
    per pod (the worked example: 4 cores × 3,600 s = 14,400 core-s → 3,600 s at speed 1).

    Returns
    -------
    (J, N) float, seconds
    """
    pod_cores = pods.slots * params.cores_per_slot
    return energy_model(nodes).runtime_s((pods.work_core_s / pod_cores)[:, None])


def marginal_energy_j(pods: Pods, nodes: Nodes, params: AuctionParams) -> np.ndarray:
    """ΔE_jn, the energy node n spends running pod j (study §5.1), joules.

    :meth:`eams.calibrate.energy.EnergyModel.marginal_energy_j` with ``c_j = slots_j ×
    cores_per_slot`` and the pod's work per core ``w_j / c_j`` as its reference runtime: the
    dynamic power of the pod's share of the cores for its runtime, plus the idle power of
    waking an empty node for that time. ``c_j / C_n`` is not clipped: a pod wider than the
    node is excluded by the free-slot check, not here.

    Returns
    -------
    delta_e : (J, N) float, joules, > 0
    """
    pod_cores = pods.slots * params.cores_per_slot
    return energy_model(nodes).marginal_energy_j(
        pod_cores[:, None], (pods.work_core_s / pod_cores)[:, None], nodes.empty
    )


def headroom_estimate(nodes: Nodes, params: AuctionParams) -> np.ndarray:
    """ĥ_n, the headroom a bid believes in (study §5.2, AR-6).

    ``ĥ = h − κ·max(0, a − stale_after_s)``: a reading up to ``stale_after_s`` old (15 s) is
    taken as is; beyond that each second costs κ of headroom, so stale nodes look fuller than
    they claim. Missing telemetry (NaN headroom or NaN age) gives
    ``min(h, unknown_headroom)`` (h taken as +∞ when NaN): such a node never looks idle.

    Returns
    -------
    (N,) float
    """
    h, age = nodes.headroom, nodes.age_s
    unknown = np.isnan(h) | np.isnan(age)
    stale_s = np.fmax(age - params.stale_after_s, 0.0)  # NaN age: 0 (fmax skips NaN)
    fresh = h - params.kappa * stale_s
    return np.where(unknown, np.fmin(h, params.unknown_headroom), fresh)


def full_load_headroom(nodes: Nodes) -> np.ndarray:
    """h_full,n = 1 − P_max,n / P_cap,n, the headroom node n keeps at its calibrated
    full-load draw (study §5.2's h_n at 100 % utilisation).

    Returns
    -------
    (N,) float, NaN where the cap is unknown; < 0 where the full load exceeds the cap
    """
    return 1.0 - nodes.p_max_w / nodes.power_cap_w


def gate_midpoint(nodes: Nodes, params: AuctionParams) -> np.ndarray:
    """h0_n, the headroom gate's midpoint per node: the study's h0 reconciled with packing.

    The gate exists so that "a node near its power cap withdraws from the market instead of
    being pushed over it" (study §5.2). A node whose calibrated full-load draw stays under its
    cap (h_full ≥ 0, :func:`full_load_headroom`) cannot be pushed over it by placement, yet at
    h0 = 0.225 its gate closes as it fills: the nodes the power manager keeps awake to be
    filled were gated out for being filled (issue 34). For such a node the midpoint is
    ``min(h0, h_full − gate_open_width)``: at its full-load draw the gate is open
    (σ(25·0.125) = 0.958); it closes only where the node draws more than its calibration
    says, and at the cap itself (h ≤ 0, :func:`gate`) as every node's does. Where the cap is
    unknown or the full load exceeds it (h_full < 0), or with ``params.full_load_gate``
    False, the midpoint is h0.

    Returns
    -------
    (N,) float, ≤ h0
    """
    if not params.full_load_gate:
        return np.full(len(nodes), params.h0)
    h_full = full_load_headroom(nodes)
    under_cap = h_full >= 0  # NaN (cap unknown) compares False
    return np.where(under_cap, np.fmin(params.h0, h_full - params.gate_open_width), params.h0)


def gate(nodes: Nodes, params: AuctionParams) -> np.ndarray:
    """σ(k·(ĥ_n − h0_n)) (study §5.2, midpoints :func:`gate_midpoint`), 0 for a node at or
    over its power cap (known h ≤ 0).

    Returns
    -------
    (N,) float in [0, 1)
    """
    x = params.k * (headroom_estimate(nodes, params) - gate_midpoint(nodes, params))
    open_ = 0.5 * (1.0 + np.tanh(0.5 * x))  # σ(x) without overflow
    capped = nodes.headroom <= 0  # NaN compares False: unknown is not "capped"
    return np.where(capped, 0.0, open_)


def bid_values(
    pods: Pods, nodes: Nodes, params: AuctionParams, delta_e_j: np.ndarray | None = None
) -> np.ndarray:
    """v_jn = π_j · (w_j / ΔE_jn) · σ(k(ĥ_n − h0_n)) (study §5.2; :func:`gate`).

    Work per joule (reference core-seconds per joule), weighted by priority and gated by
    headroom. A node at or over its cap bids 0 (gated out of the market).

    Parameters
    ----------
    pods, nodes, params
    delta_e_j : (J, N) float, joules, optional
        Precomputed :func:`marginal_energy_j`.

    Returns
    -------
    values : (J, N) float, ≥ 0, core-seconds per joule
    """
    gate_n = gate(nodes, params)
    if delta_e_j is not None:
        return (pods.priority * pods.work_core_s)[:, None] / delta_e_j * gate_n[None, :]
    # w_j / ΔE_jn = w_j / (ΔP_jn · t_jn) with t_jn = w_j / (c_j · s_n): the work cancels, and
    # for one pod size c the row is c · s_n / ΔP_n (EnergyModel.work_per_joule), an (N,) vector:
    # one outer product per size.
    # (This holds while ΔE is proportional to the runtime: a one-off wake energy, power states,
    # needs the delta_e_j path.)
    model = energy_model(nodes)
    if len(pods) and (pods.slots == pods.slots[0]).all():  # one size (a batch of one)
        c = float(pods.slots[0]) * params.cores_per_slot
        per_node = model.work_per_joule(c, nodes.empty) * gate_n
        return np.multiply.outer(pods.priority, per_node)
    values = np.empty((len(pods), len(nodes)))
    for size in np.unique(pods.slots):
        rows = pods.slots == size
        c = float(size) * params.cores_per_slot
        per_node = model.work_per_joule(c, nodes.empty) * gate_n
        values[rows] = np.multiply.outer(pods.priority[rows], per_node)
    return values


def wake_values(
    pods: Pods, model: EnergyModel, wait_s: np.ndarray, params: AuctionParams
) -> np.ndarray:
    """v_jn of pods on *asleep* nodes: π_j · (w_j / ΔE_jn) · t_jn / (t_jn + wait_n).

    The study's §5.2 bid with its §5.1 wake term made explicit
    (:meth:`EnergyModel.marginal_energy_j` of an empty node): ΔE_jn carries the node's
    measured sleep state (``model.p_sleep_w``, ``model.wake_energy_j``: the power a woken
    node adds over sleeping for the runtime, plus
    the one-off E_wake), and the bid is discounted by the share of the pod's time lost
    waiting, ``t / (t + wait)`` with ``t_jn = w_j / (c_j · s_n)`` its runtime there (a pod that
    runs an hour loses little to a 60 s wake; one that runs a minute loses half). No headroom
    gate: an asleep node draws nothing against its cap. The extender compares it with the
    pod's awake bids on the same model (:mod:`eams.scheduler.extender.wakes`), so a pod waits
    for a wake only when the wait is the better price.

    Parameters
    ----------
    pods : Pods, J pods
    model : EnergyModel, N asleep nodes with ``p_sleep_w`` and ``wake_energy_j`` (NaN: 0)
    wait_s : (N,) float, s, ≥ 0, how long each node still needs to be Ready
    params : AuctionParams (``cores_per_slot``)

    Returns
    -------
    values : (J, N) float, ≥ 0, core-seconds per joule (the unit of :func:`bid_values`)
    """
    pod_cores = (pods.slots * params.cores_per_slot)[:, None]
    reference_s = pods.work_core_s[:, None] / pod_cores
    delta_e_j = model.marginal_energy_j(pod_cores, reference_s, True)
    runtime = model.runtime_s(reference_s)
    waited = runtime / (runtime + np.maximum(np.asarray(wait_s, dtype=float), 0.0)[None, :])
    return (pods.priority * pods.work_core_s)[:, None] / delta_e_j * waited


def priority_weight(
    priority_class_value: np.ndarray | float,
    tenant_quota_share: np.ndarray | float,
    *,
    pi_max: float = 4.0,
    quota_floor: float = 0.25,
) -> np.ndarray:
    """π_j from the pod's PriorityClass value and its tenant's free quota (AR-7).

    ``π = (1 + (pi_max − 1)·log10(1 + v⁺)/9) · (quota_floor + (1 − quota_floor)·q)``, with
    v⁺ the PriorityClass value clipped to [0, 1e9] (Kubernetes' highest user-definable
    priority) and q the share of the tenant's quota still free, in [0, 1]. Bounds:
    π ∈ [quota_floor, pi_max] = [0.25, 4] by default; priority 0, 1e3, 1e6, 1e9 map to 1, 2,
    3, 4 before the quota factor. A tenant at its quota still bids at ``quota_floor`` of its
    weight: never starved, never dominant. Nothing a pod declares (labels, annotations)
    enters: the caller resolves the PriorityClass and the quota (study §6.2).

    Parameters
    ----------
    priority_class_value : float or array
        ``spec.priority`` as resolved by the API server (any int32).
    tenant_quota_share : float or array, [0, 1]
        Free share of the tenant's quota.
    pi_max : float, > 1
    quota_floor : float, (0, 1]

    Returns
    -------
    ndarray of float, π > 0 (broadcast shape of the inputs)

    Raises
    ------
    AuctionInputError
        A value is NaN, a share is outside [0, 1], or a bound is invalid.
    """
    if not (pi_max > 1 and 0 < quota_floor <= 1):
        raise AuctionInputError(
            f"priority_weight: need pi_max > 1 and 0 < quota_floor ≤ 1, got {pi_max}, {quota_floor}"
        )
    value = np.asarray(priority_class_value, dtype=float)
    share = np.asarray(tenant_quota_share, dtype=float)
    if np.isnan(value).any():
        raise AuctionInputError(
            f"priority_class_value[{int(np.flatnonzero(np.isnan(value))[0])}] is NaN"
        )
    bad = ~((share >= 0) & (share <= 1))
    if bad.any():
        i = int(np.flatnonzero(bad.ravel())[0])
        raise AuctionInputError(
            f"tenant_quota_share[{i}] = {share.ravel()[i]!r}: must be in [0, 1]"
        )
    level = np.log10(1.0 + np.clip(value, 0, HIGHEST_USER_PRIORITY)) / np.log10(
        1.0 + HIGHEST_USER_PRIORITY
    )
    return (1.0 + (pi_max - 1.0) * level) * (quota_floor + (1.0 - quota_floor) * share)
