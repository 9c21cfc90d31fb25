"""The engine's value objects: ``Pods``, ``Nodes``, ``AuctionParams``, ``Clearing``.

Slots and cores. A *slot* is the cluster-wide quantum of CPU the market trades (study §5.3:
"pods are quantized to slot units"); one slot is ``AuctionParams.cores_per_slot`` cores. A
pod asks for ``Pods.slots`` slots, all on one node, so it uses
``c_j = slots_j × cores_per_slot`` cores. A node offers ``Nodes.slots`` *free* slots and has
``Nodes.cores`` (C_n) cores in total; C_n scales its power (study §5.1), the free slots bound
what it can take in this batch.

Every array is checked once, when the object is built (``_check_*``); a bad element raises
:class:`~eams.scheduler.errors.AuctionInputError` naming the array and index.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from eams.scheduler.errors import AuctionInputError


def _array(name: str, values: object, dtype: type, length: int | None) -> np.ndarray:
    try:
        array: np.ndarray = np.asarray(values, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise AuctionInputError(f"{name}: not a numeric array ({exc})") from exc
    if array.ndim != 1:
        raise AuctionInputError(f"{name}: must be 1-D, got shape {array.shape}")
    if length is not None and array.shape[0] != length:
        raise AuctionInputError(f"{name}: length {array.shape[0]}, expected {length}")
    array.setflags(write=False)
    return array


def _check(name: str, array: np.ndarray, bad: np.ndarray, rule: str) -> None:
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise AuctionInputError(f"{name}[{i}] = {array[i].item()!r}: {rule}")


def _int_array(name: str, values: object, length: int | None) -> np.ndarray:
    raw = np.asarray(values)
    if raw.size and raw.dtype.kind == "f":
        _check(
            name,
            raw.ravel(),
            ~np.isfinite(raw.ravel()) | (raw.ravel() % 1 != 0),
            "must be an integer",
        )
    elif raw.size and raw.dtype.kind not in "iub":
        raise AuctionInputError(f"{name}: must be integers, got dtype {raw.dtype}")
    return _array(name, raw, np.int64, length)


@dataclass(frozen=True)
class Pods:
    """The batch of pods to place (length J).

    Attributes
    ----------
    slots : (J,) int, ≥ 1
        Slots the pod needs, all on one node (its bundle).
    work_core_s : (J,) float, > 0, reference core-seconds
        Work at speed 1: the pod runs ``work_core_s / (c_j · s_n)`` seconds on node n.
    priority : (J,) float, > 0
        π_j, already bounded (see :func:`eams.scheduler.auction.bids.priority_weight`).
    tenant : (J,) int
        Tenant index (fairness unit); carried, not used by the clearing itself.

    Raises
    ------
    AuctionInputError
        An array is not 1-D, lengths differ, or an element breaks its rule (NaN or negative
        work, zero slots...); the message names the array and index.
    """

    slots: np.ndarray
    work_core_s: np.ndarray
    priority: np.ndarray
    tenant: np.ndarray

    def __post_init__(self) -> None:
        slots = _int_array("pods.slots", self.slots, None)
        n = slots.shape[0]
        work = _array("pods.work_core_s", self.work_core_s, float, n)
        priority = _array("pods.priority", self.priority, float, n)
        tenant = _int_array("pods.tenant", self.tenant, n)
        _check("pods.slots", slots, slots < 1, "must be ≥ 1")
        _check(
            "pods.work_core_s", work, ~(np.isfinite(work) & (work > 0)), "must be finite and > 0"
        )
        _check(
            "pods.priority",
            priority,
            ~(np.isfinite(priority) & (priority > 0)),
            "must be finite and > 0",
        )
        for key, value in (
            ("slots", slots),
            ("work_core_s", work),
            ("priority", priority),
            ("tenant", tenant),
        ):
            object.__setattr__(self, key, value)

    def __len__(self) -> int:
        return int(self.slots.shape[0])


@dataclass(frozen=True)
class Nodes:
    """The nodes on offer (length N).

    Attributes
    ----------
    slots : (N,) int, ≥ 0
        Free slots.
    cores : (N,) float, > 0
        C_n, the node's cores (study §5.1).
    p_idle_w, p_max_w : (N,) float, watts
        Linear power model, 0 ≤ P_idle < P_max (calibration).
    speed : (N,) float, > 0
        s_n relative to the reference node.
    headroom : (N,) float, NaN = unknown
        h_n = 1 − P_n / P_cap,n from telemetry; ≤ 0 means at or over the power cap.
    age_s : (N,) float, seconds, NaN = unknown
        Age of the telemetry reading behind ``headroom``; ≥ 0.
    empty : (N,) bool
        The node runs nothing: placing a pod there also pays P_idle (study §5.1).

    Raises
    ------
    AuctionInputError
        Names the array and index of the first bad element.
    """

    slots: np.ndarray
    cores: np.ndarray
    p_idle_w: np.ndarray
    p_max_w: np.ndarray
    speed: np.ndarray
    headroom: np.ndarray
    age_s: np.ndarray
    empty: np.ndarray

    def __post_init__(self) -> None:
        slots = _int_array("nodes.slots", self.slots, None)
        n = slots.shape[0]
        arrays = {
            key: _array(f"nodes.{key}", getattr(self, key), float, n)
            for key in ("cores", "p_idle_w", "p_max_w", "speed", "headroom", "age_s")
        }
        empty = _array("nodes.empty", self.empty, bool, n)
        _check("nodes.slots", slots, slots < 0, "must be ≥ 0")
        for key in ("cores", "speed"):
            a = arrays[key]
            _check(f"nodes.{key}", a, ~(np.isfinite(a) & (a > 0)), "must be finite and > 0")
        idle, peak = arrays["p_idle_w"], arrays["p_max_w"]
        _check("nodes.p_idle_w", idle, ~(np.isfinite(idle) & (idle >= 0)), "must be finite and ≥ 0")
        _check(
            "nodes.p_max_w",
            peak,
            ~(np.isfinite(peak) & (peak > idle)),
            "must be finite and > p_idle_w",
        )
        h, age = arrays["headroom"], arrays["age_s"]
        _check("nodes.headroom", h, np.isinf(h) | (h > 1), "must be ≤ 1 or NaN (unknown)")
        _check("nodes.age_s", age, np.isinf(age) | (age < 0), "must be ≥ 0 or NaN (unknown)")
        object.__setattr__(self, "slots", slots)
        object.__setattr__(self, "empty", empty)
        for key, value in arrays.items():
            object.__setattr__(self, key, value)

    def __len__(self) -> int:
        return int(self.slots.shape[0])


@dataclass(frozen=True)
class AuctionParams:
    """Bid and auction parameters, with their sources.

    Attributes
    ----------
    k : float
        Gate steepness, 25 (study §5.2).
    h0 : float
        Gate midpoint, 0.225 = midway between 10 % and 35 % headroom: σ(25·(0.10 − 0.225))
        = 0.042 (nearly closed) and σ(25·(0.35 − 0.225)) = 0.958 (open) (study §5.2).
    kappa : float, per second
        κ, headroom discount per second of telemetry age beyond ``stale_after_s``:
        ĥ = h − κ·max(0, a − stale_after_s). 0.01/s: 10 s past the limit costs 10 points of
        headroom (engineering choice; study §5.2 gives the form, AR-6 the 15 s limit).
    stale_after_s : float
        15 s: readings older than this are discounted (AR-6).
    unknown_headroom : float
        ĥ used when headroom or age is missing (NaN): 0.10, the edge of the closed gate, so a
        node without usable telemetry never looks idle; a known lower value is kept.
    cores_per_slot : float
        Cores in one slot (c_j = slots × cores_per_slot), 1.0.
    epsilon_rel : float
        Final ε as a fraction of the largest bid value, 1e-4; the total value is then within
        J·ε of the optimum (single-slot pods).
    epsilon_start_rel : float
        First ε of the scaling schedule, 0.05 of the largest bid value.
    epsilon_factor : float
        ε shrinks by this factor per phase, 8 (Bertsekas 1998, §7.1: 4–10 works well).
    candidates : int
        Nodes each pod keeps on its short list between full rescans, 48.
    max_rounds : int
        Bidding-round cap over all phases, 3000; on hitting it the greedy fallback completes
        the assignment (``Clearing.fell_back``).
    warm_start : bool
        Start from the prices of the rank-one approximation of the bids
        (:mod:`.warmstart`), True; False starts every price at 0.
    method : str
        ``"auto"`` (default): solve exactly by sparse shortest augmenting paths on short
        candidate lists (:mod:`.exact`; mixed pod sizes size by size, :mod:`.bundles`), and
        run the ε-auction only if that gives up; ``"auction"``: always the ε-auction.
    """

    k: float = 25.0
    h0: float = 0.225
    kappa: float = 0.01
    stale_after_s: float = 15.0
    unknown_headroom: float = 0.10
    cores_per_slot: float = 1.0
    epsilon_rel: float = 1e-4
    epsilon_start_rel: float = 0.05
    epsilon_factor: float = 8.0
    candidates: int = 48
    max_rounds: int = 3000
    warm_start: bool = True
    method: str = "auto"

    def __post_init__(self) -> None:
        positive = (
            "k",
            "kappa",
            "stale_after_s",
            "cores_per_slot",
            "epsilon_rel",
            "epsilon_start_rel",
        )
        for key in positive:
            value = getattr(self, key)
            if not (np.isfinite(value) and value > 0):
                raise AuctionInputError(f"params.{key} = {value!r}: must be finite and > 0")
        if not np.isfinite(self.h0) or not np.isfinite(self.unknown_headroom):
            raise AuctionInputError("params.h0 and params.unknown_headroom must be finite")
        if self.epsilon_start_rel < self.epsilon_rel:
            raise AuctionInputError("params.epsilon_start_rel must be ≥ params.epsilon_rel")
        if not self.epsilon_factor > 1:
            raise AuctionInputError(f"params.epsilon_factor = {self.epsilon_factor!r}: must be > 1")
        if self.method not in ("auto", "auction"):
            raise AuctionInputError(f"params.method = {self.method!r}: must be 'auto' or 'auction'")
        if self.candidates < 2 or self.max_rounds < 1:
            raise AuctionInputError("params.candidates must be ≥ 2 and params.max_rounds ≥ 1")


@dataclass(frozen=True)
class Clearing:
    """The result of one clearing.

    Attributes
    ----------
    assignment : (J,) int
        Node index per pod, −1 = unassigned.
    prices : (N,) float, bid-value units per slot
        p_n, the price of the node's cheapest slot at termination (0 for a node with free
        slots once converged).
    value : float
        Σ_j v_{j, assignment_j} over assigned pods.
    rounds : int
        Bidding rounds (forward and reverse) over all ε phases; 0 for single-slot matching,
        the polish's rounds for the bundle relaxation.
    epsilon : float
        ε of the last phase run.
    converged : bool
        ε-complementary slackness holds at termination (no fallback).
    fell_back : bool
        The round cap was hit and the greedy fallback completed the assignment.
    unplaceable : (J,) bool
        Pods no node can take at all (no eligible node with enough free slots).
    phases : int
        ε-scaling phases run (auction), or restricted solves (matching).
    gap_bound : float or None
        Certified bound on (optimum − value) from the LP dual of the prices
        (:func:`~eams.scheduler.auction.auction.dual_bound`), given when J·ε is not
        guaranteed: multi-slot pods or no convergence. ``None``: the clearing converged with
        single-slot pods, so it is within J·ε of the optimum.
    method : str
        How it was cleared: ``"auction"`` (ε-auction), ``"auction+greedy"`` (round cap hit,
        greedy fallback), ``"matching"`` (exact, :func:`.exact.transport`: 0-CS, the prices
        are its LP duals), ``"linear_sum_assignment"`` (small single-slot batches,
        :func:`.exact.dense`, same prices), ``"matching relaxation, rounded and repaired"``
        or ``"matching relaxation, then R auction rounds from its duals"`` (mixed pod sizes,
        :mod:`.bundles`; gap certified in ``gap_bound``).
    """

    assignment: np.ndarray
    prices: np.ndarray
    value: float
    rounds: int
    epsilon: float
    converged: bool
    fell_back: bool
    unplaceable: np.ndarray
    phases: int = field(default=0)
    gap_bound: float | None = None
    method: str = "auction"
