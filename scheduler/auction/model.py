"""The engine's value objects: ``Pods``, ``Nodes``, ``AuctionParams``, ``Clearing``, and the
closed set of clearing methods, ``Method`` (their table: :mod:`.methods`).

Slots and cores. A *slot* is the cluster-wide quantum of CPU the market trades (study §5.3:
"pods are quantized to slot units"); one slot is ``AuctionParams.cores_per_slot`` cores. A
pod asks for ``Pods.slots`` slots, all on one node, so it uses
``c_j = slots_j × cores_per_slot`` cores. A node offers ``Nodes.slots`` *free* slots and has
``Nodes.cores`` (C_n) cores in total; C_n scales its power (study §5.1), the free slots bound
what it can take in this batch.

Every array is checked once, when the object is built (:mod:`.inputs`); a bad element raises
:class:`~eams.scheduler.errors.AuctionInputError` naming the array and index.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np

from eams.scheduler.auction.inputs import array, check, int_array
from eams.scheduler.errors import AuctionInputError


class Method(StrEnum):
    """The clearing methods, in the order ``method="auto"`` tries them (:data:`.methods.METHODS`
    says when each applies and which function runs it).

    A ``StrEnum``: each member equals its name as a string (``Method.MATCHING == "matching"``),
    so it prints, compares and serialises (JSON, metric labels) as that string.
    """

    SHORT_LISTS = "short_lists"
    """A few single-slot pods (or one pod of any size): each pod's best node when none is
    over-asked (prices 0), replicas in value order, else each pod's J best nodes (provably
    enough), one dense assignment on their union, priced and certified on every node."""
    RANK_ONE = "rank_one"
    """Exactly rank-one single-slot bids: the ε-auction from the warm start, ≤ 20 rounds."""
    LINEAR_SUM_ASSIGNMENT = "linear_sum_assignment"
    """Single-slot: scipy's dense ``linear_sum_assignment`` on slot-expanded values, priced."""
    MATCHING = "matching"
    """Single-slot: min-cost flow on candidate lists (OR-tools), dual certificate."""
    RELAXATION = "relaxation"
    """Mixed pod sizes: per-slot prices of the LP relaxation, priced greedy, swap repair."""
    AUCTION = "auction"
    """The ε-auction with ε-scaling, round cap and greedy fallback; handles every batch."""


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
        slots = int_array("pods.slots", self.slots, None)
        n = slots.shape[0]
        work = array("pods.work_core_s", self.work_core_s, float, n)
        priority = array("pods.priority", self.priority, float, n)
        tenant = int_array("pods.tenant", self.tenant, n)
        check("pods.slots", slots, slots < 1, "must be ≥ 1")
        check("pods.work_core_s", work, ~(np.isfinite(work) & (work > 0)), "must be finite and > 0")
        check(
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
        The node runs nothing: placing a pod there also pays its wake power (study §5.1).
    p_wake_w : (N,) float, watts, optional
        That wake power: the calibration's ``wake_power_w`` (measured active idle, else the
        intercept; :class:`eams.calibrate.energy.EnergyModel`). ``None`` → ``p_idle_w``;
        finite and ≥ 0.
    p_sleep_w : (N,) float, watts, optional
        P_sleep, what the node draws in its measured sleep state (0 where not measured;
        ``None``: 0 everywhere): an empty node is charged ``p_wake_w − p_sleep_w``, the power
        it draws over sleeping, as the power manager counts it (one model, issue 34);
        finite, ≥ 0 and ≤ ``p_wake_w``.
    power_cap_w : (N,) float, watts, optional
        P_cap,n, the cap behind ``headroom`` (telemetry); NaN = unknown, else > 0. ``None``:
        unknown everywhere. With it the headroom gate knows which nodes their calibrated
        full load cannot push over the cap (:func:`.bids.gate_midpoint`).

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
    p_wake_w: np.ndarray | None = None
    p_sleep_w: np.ndarray | None = None
    power_cap_w: np.ndarray | None = None

    def __post_init__(self) -> None:
        state = _state_columns(self.slots, self.headroom, self.age_s, self.empty, self.power_cap_w)
        n = state["slots"].shape[0]
        calibration = _calibration_columns(
            n, self.cores, self.p_idle_w, self.p_max_w, self.speed, self.p_wake_w, self.p_sleep_w
        )
        for key, value in (state | calibration).items():
            object.__setattr__(self, key, value)

    @classmethod
    def calibrated(
        cls,
        slots: np.ndarray,
        headroom: np.ndarray,
        age_s: np.ndarray,
        empty: np.ndarray,
        checked: Nodes,
        power_cap_w: np.ndarray | None = None,
    ) -> Nodes:
        """Nodes whose calibration columns (:data:`CALIBRATION_COLUMNS`) are those of
        ``checked``, already checked when it was built, so only the columns that change
        between clearings (``slots``, ``headroom``, ``age_s``, ``empty``, ``power_cap_w``)
        are checked here:
        the extender's path (``Market.nodes`` passes the last Nodes whose calibration columns
        equal today's). The constructor checks every column.

        Raises
        ------
        AuctionInputError
            As the constructor, for these columns; their length differs from ``checked``'s.
        """
        state = _state_columns(slots, headroom, age_s, empty, power_cap_w)
        if state["slots"].shape[0] != len(checked):
            raise AuctionInputError(
                f"nodes.slots: length {state['slots'].shape[0]}, expected {len(checked)}"
            )
        nodes = object.__new__(cls)
        for key in CALIBRATION_COLUMNS:
            object.__setattr__(nodes, key, getattr(checked, key))
        for key, value in state.items():
            object.__setattr__(nodes, key, value)
        return nodes

    def __len__(self) -> int:
        return int(self.slots.shape[0])


CALIBRATION_COLUMNS = ("cores", "p_idle_w", "p_max_w", "speed", "p_wake_w", "p_sleep_w")
"""The :class:`Nodes` columns that only the calibrations (and allocatable CPU) change."""


def _state_columns(
    slots: object, headroom: object, age_s: object, empty: object, power_cap_w: object | None
) -> dict[str, np.ndarray]:
    """The per-clearing columns of :class:`Nodes`, checked (its rules); ``power_cap_w``
    None → NaN (unknown)."""
    checked_slots = int_array("nodes.slots", slots, None)
    n = checked_slots.shape[0]
    h = array("nodes.headroom", headroom, float, n)
    age = array("nodes.age_s", age_s, float, n)
    check("nodes.slots", checked_slots, checked_slots < 0, "must be ≥ 0")
    check("nodes.headroom", h, np.isinf(h) | (h > 1), "must be ≤ 1 or NaN (unknown)")
    check("nodes.age_s", age, np.isinf(age) | (age < 0), "must be ≥ 0 or NaN (unknown)")
    empty_ = array("nodes.empty", empty, bool, n)
    cap = array("nodes.power_cap_w", np.full(n, np.nan) if power_cap_w is None else power_cap_w,
                float, n)  # fmt: skip
    check("nodes.power_cap_w", cap, np.isinf(cap) | (cap <= 0), "must be > 0 or NaN (unknown)")
    return {"slots": checked_slots, "headroom": h, "age_s": age, "empty": empty_,
            "power_cap_w": cap}  # fmt: skip


def _calibration_columns(
    n: int,
    cores: object,
    p_idle_w: object,
    p_max_w: object,
    speed: object,
    p_wake_w: object | None,
    p_sleep_w: object | None = None,
) -> dict[str, np.ndarray]:
    """The :data:`CALIBRATION_COLUMNS` of :class:`Nodes`, checked (its rules); ``p_wake_w``
    None → ``p_idle_w``, ``p_sleep_w`` None → 0."""
    arrays = {
        key: array(f"nodes.{key}", value, float, n)
        for key, value in (("cores", cores), ("p_idle_w", p_idle_w), ("p_max_w", p_max_w))
    }
    arrays["speed"] = array("nodes.speed", speed, float, n)
    for key in ("cores", "speed"):
        a = arrays[key]
        check(f"nodes.{key}", a, ~(np.isfinite(a) & (a > 0)), "must be finite and > 0")
    idle, peak = arrays["p_idle_w"], arrays["p_max_w"]
    check("nodes.p_idle_w", idle, ~(np.isfinite(idle) & (idle >= 0)), "must be finite and ≥ 0")
    check(
        "nodes.p_max_w",
        peak,
        ~(np.isfinite(peak) & (peak > idle)),
        "must be finite and > p_idle_w",
    )
    if p_wake_w is None:
        arrays["p_wake_w"] = idle
    else:
        wake = array("nodes.p_wake_w", p_wake_w, float, n)
        check("nodes.p_wake_w", wake, ~(np.isfinite(wake) & (wake >= 0)), "must be finite and ≥ 0")
        arrays["p_wake_w"] = wake
    if p_sleep_w is None:
        arrays["p_sleep_w"] = np.zeros(n)
    else:
        sleep = array("nodes.p_sleep_w", p_sleep_w, float, n)
        bad = ~(np.isfinite(sleep) & (sleep >= 0) & (sleep <= arrays["p_wake_w"]))
        check("nodes.p_sleep_w", sleep, bad, "must be finite, ≥ 0 and ≤ p_wake_w")
        arrays["p_sleep_w"] = sleep
    return arrays


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
    gate_open_width : float
        How far above h0 the gate counts as open, 0.125: σ(25·0.125) = 0.958, the study's
        "fully open above 35 %" (§5.2). A node whose calibrated full-load draw stays under its
        cap has its midpoint lowered so that its full load sits this far above it
        (:func:`.bids.gate_midpoint`, issue 34).
    full_load_gate : bool
        True (default): the gate reconciled with the power manager's packing
        (:func:`.bids.gate_midpoint`); False: the study's gate on headroom alone, h0 for
        every node.
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
        ``"auto"`` (default): the first method of the table (:data:`.methods.METHODS`) that
        applies to the batch, the next one if it gives up, the ε-auction last. Or a
        :class:`Method` name (``"rank_one"``, ``"linear_sum_assignment"``, ``"matching"``,
        ``"relaxation"``, ``"auction"``): that method, as ``scipy.optimize.linprog(method=...)``
        does; :func:`.auction.solve` raises ``AuctionInputError`` if it cannot handle the
        batch, and the ε-auction clears if it gives up at run time.
    """

    k: float = 25.0
    h0: float = 0.225
    kappa: float = 0.01
    stale_after_s: float = 15.0
    unknown_headroom: float = 0.10
    gate_open_width: float = 0.125
    full_load_gate: bool = True
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
            "gate_open_width",
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
        if self.method != "auto" and self.method not in set(Method):
            names = ", ".join(repr(str(m)) for m in ("auto", *Method))
            raise AuctionInputError(f"params.method = {self.method!r}: must be one of {names}")
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
        Bidding rounds (forward and reverse) over all ε phases; 0 for the single-slot exact
        methods, the polish's rounds for the relaxation (whether or not its assignment won).
    epsilon : float
        ε of the last phase run.
    converged : bool
        ε-complementary slackness holds at termination (no fallback).
    fell_back : bool
        The round cap was hit and the greedy fallback completed the assignment.
    unplaceable : (J,) bool
        Pods no node can take at all (no eligible node with enough free slots).
    phases : int
        ε-scaling phases run (auction), or restricted solves (matching); 1 for the dense
        solver and the relaxation.
    gap_bound : float or None
        Certified bound on (optimum − value) from the LP dual of the prices
        (:func:`~eams.scheduler.auction.dual.dual_bound`), given when J·ε is not
        guaranteed: multi-slot pods or no convergence. ``None``: the clearing converged with
        single-slot pods, so it is within J·ε of the optimum.
    method : Method
        The method that cleared the batch (:data:`.methods.METHODS`). ``RANK_ONE`` and
        ``AUCTION``: ε-CS prices (``AUCTION`` with ``fell_back`` True: round cap hit, greedy
        completion); ``MATCHING`` and ``LINEAR_SUM_ASSIGNMENT``: exact, the prices are LP
        duals (0-CS); ``RELAXATION``: mixed pod sizes, gap certified in ``gap_bound``. A batch
        where no pod can go anywhere says ``AUCTION`` (0 rounds) whatever was asked.
    polish_rounds : int
        ``RELAXATION`` only: the auction rounds of the polish when its assignment beat the
        priced greedy one and was kept; 0 when that one was kept or no polish ran (and for
        every other method).
    timed_out : bool
        The wall-clock budget (``time_budget_s``) ended the clearing: the assignment is the
        ε-auction's partial one completed greedily (``fell_back``), or the relaxation's
        without its refinements; ``gap_bound`` certifies it either way.
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
    method: Method = Method.AUCTION
    polish_rounds: int = 0
    timed_out: bool = False
