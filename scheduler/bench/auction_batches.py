"""Seeded auction batches for ``eams bench auction`` and the engine's tests (the kinds of
batch the clearing meets: no I/O except the trace and node lists of the real-data folder).

:func:`random_batch` draws a mixed fleet: 16–64 cores, P_idle 40–160 W, dynamic range
60–300 W, speed 0.7–1.6, headroom 0–0.8 with 5 % unknown, telemetry 0–30 s old with 5 %
unknown, and 30 % empty nodes. Pods have 1–``max_pod_slots`` slots, 10 min–4 h of reference
work per core and a π from :func:`eams.scheduler.auction.bids.priority_weight` over random
PriorityClass values and quota shares.

:func:`batch` builds one named kind (:data:`KINDS`) at a size: the study's single-slot bids
warm and cold, with a filter mask, non-rank-one single-slot bids, random 1–4-slot pods, and
trace-shaped batches whose pod sizes are the CPU requests of the Alibaba GPU-2023 ("openb")
pod list (:func:`trace_pods`), on the random fleet or on nodes of the openb node list
(:func:`openb_nodes`: real core counts, SPECpower power lines, loaded and empty nodes).
Every value matrix comes from the engine's own bids (:func:`eams.scheduler.auction.bids.
bid_values`, i.e. the energy model :mod:`eams.calibrate.energy`), so when that model grows
(sleep power, wake energy) the batches follow.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from eams.scheduler.auction import AuctionParams, Nodes, Pods, bids, priority_weight
from eams.scheduler.bench.cluster import read_server_models
from eams.scheduler.bench.errors import ClusterError
from eams.scheduler.bench.manifest import ClusterSpec
from eams.scheduler.bench.traces import DEFAULT_PATHS, read_gpu2023
from eams.scheduler.policies.base import PowerCurves

OPENB_NODES = "cluster_traces/alibaba_gpu_v2023_openb_node_list_all_node.csv"
MASK_FRACTION = 0.3  # the filter kinds forbid this share of (pod, node) pairs
TRACE_MAX_SLOTS = 8  # trace pods: 1-core slots, capped at 8 (the issue-18 batches)
REQUEST_CORES = (0.5, 1.0, 2.0, 3.0, 4.0)  # non-rank-one kind: requests within one 4-core slot


def random_batch(
    n_pods: int, n_nodes: int, slots: int, seed: int = 0, max_pod_slots: int = 1
) -> tuple[Pods, Nodes]:
    """A batch of ``n_pods`` pods and ``n_nodes`` nodes with ``slots`` free slots each.

    Parameters
    ----------
    n_pods, n_nodes : int ≥ 0
    slots : int ≥ 0
        Free slots per node.
    seed : int
    max_pod_slots : int ≥ 1
        Pods need 1..max_pod_slots slots (uniform).

    Returns
    -------
    (Pods, Nodes)
    """
    rng = np.random.default_rng(seed)
    nodes = _fleet(rng, n_nodes, slots)
    pod_slots = rng.integers(1, max_pod_slots + 1, n_pods)
    priority = _priority(rng, n_pods)
    pods = Pods(
        slots=pod_slots,
        work_core_s=pod_slots * rng.uniform(600.0, 14_400.0, n_pods),
        priority=priority,
        tenant=rng.integers(0, 8, n_pods),
    )
    return pods, nodes


def _fleet(rng: np.random.Generator, n_nodes: int, slots: int) -> Nodes:
    headroom = rng.uniform(0.0, 0.8, n_nodes)
    headroom[rng.random(n_nodes) < 0.05] = np.nan
    age_s = rng.uniform(0.0, 30.0, n_nodes)
    age_s[rng.random(n_nodes) < 0.05] = np.nan
    p_idle = rng.uniform(40.0, 160.0, n_nodes)
    return Nodes(
        slots=np.full(n_nodes, slots, dtype=np.int64),
        cores=rng.choice([16.0, 32.0, 64.0], n_nodes),
        p_idle_w=p_idle,
        p_max_w=p_idle + rng.uniform(60.0, 300.0, n_nodes),
        speed=rng.uniform(0.7, 1.6, n_nodes),
        headroom=headroom,
        age_s=age_s,
        empty=rng.random(n_nodes) < 0.3,
    )


def _priority(rng: np.random.Generator, n_pods: int) -> np.ndarray:
    return priority_weight(
        rng.choice([0, 1000, 100_000, 1_000_000], n_pods), rng.uniform(0, 1, n_pods)
    )


def trace_pods(
    n_pods: int, seed: int, cores_per_slot: float = 1.0, max_slots: int = TRACE_MAX_SLOTS
) -> Pods:
    """``n_pods`` pods drawn (seeded, with replacement) from the pods of the GPU-2023 pod list
    that ran; slots = ⌈CPU request / cores_per_slot⌉ capped at ``max_slots``, work = slots ·
    cores_per_slot · the pod's run time (so it runs its traced time at speed 1).

    Raises
    ------
    eams.scheduler.bench.errors.TraceError
        The trace is missing or has a bad row.
    """
    from eams.datasets import data_dir

    _, rows, _ = read_gpu2023(data_dir() / DEFAULT_PATHS["alibaba-gpu-2023"])
    table = np.asarray(rows, dtype=float)  # arrival, cpu, memory, duration
    rng = np.random.default_rng([seed, 18])
    pick = rng.integers(0, table.shape[0], n_pods)
    slots = np.minimum(np.ceil(table[pick, 1] / cores_per_slot - 1e-9), max_slots).astype(int)
    return Pods(
        slots=np.maximum(slots, 1),
        work_core_s=np.maximum(slots, 1) * cores_per_slot * table[pick, 3],
        priority=_priority(rng, n_pods),
        tenant=rng.integers(0, 8, n_pods),
    )


def openb_nodes(n_nodes: int, seed: int, empty_fraction: float = 0.3) -> Nodes:
    """``n_nodes`` nodes drawn (seeded) from the GPU-2023 node list (8–128 cores), each with
    the power line and speed of a SPECpower server of the nearest core count
    (:func:`eams.scheduler.bench.cluster.read_server_models`, fitted as a calibration would).

    ``empty_fraction`` of them are empty (asleep in the study's §5.1 model: a pod pays the
    wake term) with every core free; the others are loaded at 30–95 % of their cores, offer the
    rest as free 1-core slots, and report the headroom of their power at that load against a
    cap at P_max (5 % unknown telemetry).

    Raises
    ------
    eams.scheduler.bench.errors.ClusterError
        The node list or the SPECpower extract is missing.
    """
    from eams.datasets import data_dir, missing_hint

    path = data_dir() / OPENB_NODES
    try:
        cores_all = np.loadtxt(path, delimiter=",", skiprows=1, usecols=1, dtype=float)
    except OSError as exc:
        raise ClusterError(
            f"cannot read node list {path}: {exc.strerror or exc}{missing_hint(path)}"
        ) from exc
    models = read_server_models(ClusterSpec(min_cores=1, max_cores=1024))
    model_cores = np.array([m.cores for m in models], dtype=float)
    rng = np.random.default_rng([seed, 19])
    cores = cores_all[rng.integers(0, cores_all.size, n_nodes)] / 1000.0
    near = np.abs(np.log(model_cores)[None, :] - np.log(cores)[:, None])
    # a random server among the nearest core counts (within 10 % of the best match)
    choice = [rng.choice(np.flatnonzero(row <= row.min() + 0.1)) for row in near]
    curves = PowerCurves(np.array([models[i].points_w for i in choice], dtype=float))
    p_idle, p_max = curves.linear_fit()
    ops = np.array([models[i].ops_per_core for i in choice])
    empty = rng.random(n_nodes) < empty_fraction
    load = np.where(empty, 0.0, rng.uniform(0.3, 0.95, n_nodes))
    free = np.floor(cores * (1.0 - load)).astype(np.int64)
    power_w = p_idle + (p_max - p_idle) * load
    headroom = np.where(empty, 1.0, 1.0 - power_w / p_max)
    headroom[rng.random(n_nodes) < 0.05] = np.nan
    return Nodes(
        slots=free,
        cores=cores,
        p_idle_w=p_idle,
        p_max_w=p_max,
        speed=ops / np.median(ops),
        headroom=headroom,
        age_s=rng.uniform(0.0, 10.0, n_nodes),
        empty=empty,
    )


def request_values(
    pods: Pods, nodes: Nodes, pod_cores: np.ndarray, params: AuctionParams
) -> np.ndarray:
    """Bids of pods whose CPU request ``pod_cores`` (J,) is less than their slots' cores: the
    §5.1 energy with c_j the request (:meth:`eams.calibrate.energy.EnergyModel.
    marginal_energy_j`, through :func:`eams.scheduler.auction.bids.bid_values`). The wake term
    P_idle / c_j then differs per pod, so single-slot bids are no longer rank one.

    Returns
    -------
    (J, N) float, core-seconds per joule
    """
    reference_s = (pods.work_core_s / pod_cores)[:, None]  # the runtime at speed 1
    delta_e_j = bids.energy_model(nodes).marginal_energy_j(
        pod_cores[:, None], reference_s, nodes.empty
    )
    return bids.bid_values(pods, nodes, params, delta_e_j)


@dataclass(frozen=True)
class AuctionBatch:
    """One benchmark batch: the engine's inputs and the bids every solver gets.

    Attributes
    ----------
    kind : str
        Its name in :data:`KINDS`.
    pods, nodes : Pods, Nodes
    params : AuctionParams
        What ``clear`` is called with (``warm_start`` False for the cold kind).
    values : (J, N) float
        The bids (``bids.bid_values``, or :func:`request_values`).
    feasible : (J, N) bool or None
        The filter mask.
    pod_cores : (J,) float or None
        The CPU requests of the non-rank-one kind (None: the pods' slots).
    """

    kind: str
    pods: Pods
    nodes: Nodes
    params: AuctionParams
    values: np.ndarray
    feasible: np.ndarray | None
    pod_cores: np.ndarray | None = None

    def bids(self) -> np.ndarray:
        """The bids computed again (what ``clear`` does before it clears), (J, N)."""
        if self.pod_cores is None:
            return bids.bid_values(self.pods, self.nodes, self.params)
        return request_values(self.pods, self.nodes, self.pod_cores, self.params)

    @property
    def single_slot(self) -> bool:
        """Every pod needs one slot."""
        return bool((self.pods.slots == 1).all())


# kind → (pod sizes, nodes, filter mask, warm start); the docstring of batch() says what each is
KINDS: dict[str, tuple[str, str, bool, bool]] = {
    "warm": ("1", "fleet", False, True),
    "cold": ("1", "fleet", False, False),
    "filtered": ("1", "fleet", True, True),
    "non-rank-one": ("requests", "fleet", False, True),
    "mixed": ("1-4", "fleet", False, True),
    "mixed-filtered": ("1-4", "fleet", True, True),
    "trace": ("trace", "fleet", False, True),
    "trace-filtered": ("trace", "fleet", True, True),
    "trace-openb": ("trace", "openb", False, True),
}


def batch(kind: str, n_pods: int, n_nodes: int, slots: int, seed: int = 0) -> AuctionBatch:
    """The batch of ``kind`` (:data:`KINDS`) with ``n_pods`` pods on ``n_nodes`` nodes.

    ``warm``/``cold``: single-slot pods on the random fleet (``slots`` free each), the study's
    rank-one bids, with and without the warm start. ``filtered``: the same with a filter mask
    forbidding 30 % of the pairs. ``non-rank-one``: single-slot pods whose CPU requests are
    0.5–4 cores of a 4-core slot (:func:`request_values`). ``mixed`` / ``mixed-filtered``:
    pods of 1–4 slots. ``trace`` / ``trace-filtered``: pod sizes from the GPU-2023 pod list
    (:func:`trace_pods`) on the random fleet. ``trace-openb``: the same pods on nodes of the
    openb node list (:func:`openb_nodes`; ``slots`` unused: free slots follow each node's load).

    Raises
    ------
    KeyError
        ``kind`` is not in :data:`KINDS`.
    """
    sizes, fleet, masked, warm = KINDS[kind]
    params = AuctionParams(warm_start=warm)
    if sizes == "trace":
        pods = trace_pods(n_pods, seed)
        if fleet == "openb":
            nodes = openb_nodes(n_nodes, seed)
        else:
            nodes = _fleet(np.random.default_rng(seed), n_nodes, slots)
    else:
        pods, nodes = random_batch(n_pods, n_nodes, slots, seed, 4 if sizes == "1-4" else 1)
    request = None
    if sizes == "requests":
        params = AuctionParams(cores_per_slot=max(REQUEST_CORES))
        request = np.random.default_rng([seed, 20]).choice(REQUEST_CORES, n_pods)
    feasible = None
    if masked:
        feasible = np.random.default_rng(seed + 1).random((n_pods, n_nodes)) >= MASK_FRACTION
    made = AuctionBatch(kind, pods, nodes, params, np.empty((0, 0)), feasible, request)
    return replace(made, values=made.bids())
