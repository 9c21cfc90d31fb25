"""The bridge between the extender's state and the auction engine (``eams.scheduler.auction``).

It turns pods, node capacities, calibrations, telemetry and herding reservations into the
engine's ``Pods``/``Nodes`` arrays (``docs/architecture.md``), and the engine's answers back
into node names and 0–10 scores. The engine is pure numpy; :meth:`Market.solve` works on a
snapshot and touches no live state.

Per node (study §5.1–5.2): ``cores`` from allocatable CPU, free ``slots`` from allocatable minus
the requests of pods placed there, ``p_idle_w``/``p_max_w``/``speed`` and ``p_wake_w`` (its
``wake_power_w``) from the node's calibration, ``headroom`` from the newest telemetry sample
minus the herding reservations (NaN when unknown), ``age_s`` (NaN when unknown). A node without
capacity or calibration cannot be valued: it is left out of the auction, scores 0 and still
passes ``/filter``.

Per pod (a :class:`~eams.scheduler.extender.pending.PendingPod`, sized in ``pending.py``):
``slots = ceil(cpu / cores_per_slot)`` (at least 1), ``work_core_s`` from the annotation
``eams.io/work-core-s`` or ``slots × cores_per_slot × default_runtime_s`` (the pod then runs
``default_runtime_s`` at speed 1), and π as the pending pod carries it.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from eams.calibrate.energy import EnergyModel
from eams.scheduler.auction import AuctionParams, Clearing, Nodes, Pods, bids, solve
from eams.scheduler.auction.model import CALIBRATION_COLUMNS
from eams.scheduler.extender.herding import HerdGuard
from eams.scheduler.extender.pending import PendingPod
from eams.scheduler.extender.rows import Cleared, Columns, scale_scores
from eams.scheduler.extender.table import NodeTable

# A node below this utilisation with nothing placed or reserved on it is treated as empty
# (placing a pod there also pays its wake power, study §5.1).
EMPTY_UTILISATION = 0.05


@dataclass(frozen=True)
class BatchSnapshot:
    """Engine input for one batch, taken on the event loop.

    Attributes
    ----------
    pods : list of PendingPod
        The batch, length J.
    names : list of str
        Valued nodes, length N.
    pod_arrays : Pods
    node_arrays : Nodes
    feasible : (J, N) bool ndarray
        Candidate set (where known) and CPU, memory and pod-count fit.
    values : (J, N) float ndarray
        The bids v_jn (``bids.bid_values``), computed once: the engine clears on them and the
        scores scale them.
    listed : list of (N,) bool ndarray or None, length J
        Per pod, which nodes are among its candidates (kube-scheduler's filters passed them);
        ``None`` when every node of the window is (or its candidates are not known). Part of
        ``feasible``, kept apart for the decision record's ``filter`` reason.
    """

    pods: list[PendingPod]
    names: list[str]
    pod_arrays: Pods
    node_arrays: Nodes
    feasible: np.ndarray
    values: np.ndarray
    listed: list[np.ndarray | None]


class Market:
    """Builds engine inputs from live state and turns engine outputs into answers.

    Every per-node quantity is read from the :class:`~.table.NodeTable` as whole columns, so
    a request over 1,000 candidates costs a few numpy operations, not 1,000 Python steps.

    Parameters
    ----------
    table : NodeTable
        Capacities, usage, calibrations and the newest telemetry, one row per node.
    herd : HerdGuard
    params : AuctionParams
        ``cores_per_slot`` sizes slots; ``stale_after_s`` is AR-6's limit.
    default_runtime_s : float
        Runtime at speed 1 assumed for a pod without the work annotation, s.
    """

    def __init__(
        self, table: NodeTable, herd: HerdGuard, params: AuctionParams, default_runtime_s: float
    ) -> None:
        self.table = table
        self.herd = herd
        self.params = params
        self.default_runtime_s = default_runtime_s
        self._columns: Columns | None = None
        self._columns_names: list[str] = []
        self._kept: tuple[list[str], np.ndarray | slice, list[str], int] | None = None
        self._among_last: tuple[frozenset[str], list[str], np.ndarray | None] | None = None
        self._checked_nodes: Nodes | None = None  # the last fully checked calibration columns
        self._checked_raw = b""  # their bytes, in CALIBRATION_COLUMNS order
        # (table.capacity_version, names, keep) they were last found equal for
        self._checked_for: tuple[int, list[str], np.ndarray | slice] | None = None
        self._one_pod: tuple[tuple[int, float, float], Pods] | None = None
        self._clearings = itertools.count()  # numbers each reserving clearing (``apply``)

    def view(self, names: list[str], now_s: float, own: str | None = None) -> dict[str, np.ndarray]:
        """Columns for ``names`` plus the derived ones, each (N,):

        ``headroom`` (telemetry minus herding reservations, NaN unknown), ``age_s`` (NaN
        unknown), ``fresh_headroom`` (headroom where age ≤ ``stale_after_s``, else NaN),
        ``reserved`` (live reservation count), ``valued`` (calibrated and allocatable CPU known:
        the auction can price it) and ``slots`` (free slots).

        ``own``: the key of the one pod the view prices, whose own herding reservation and those
        of the pods its clearing put on the same node (W, and their count,
        :meth:`.herding.HerdGuard.cleared_with`) are left out: a pod does not compete with
        itself, nor with the pods its clearing valued beside it, for the node that clearing put
        it on (:meth:`.floor.HeadroomFloor.below_for` reads the floor the same way).
        """
        self.herd.expire(now_s)
        rows = self.table.rows(names)
        view = self.table.take(rows)
        held = None if own is None else self.herd.cleared_with(own)
        if held is not None:
            node, together_w, count = held
            at = np.asarray(rows) == self.table.index[node]
            view["reserved_w"] = view["reserved_w"] - np.where(at, together_w, 0.0)
            view["reserved_pods"] = view["reserved_pods"] - count * at
        return self._derived(view, now_s)

    def _derived(self, view: dict[str, np.ndarray], now_s: float) -> dict[str, np.ndarray]:
        """:meth:`view`'s derived columns added to table columns ``view``."""
        view["headroom"] = view["headroom"] - view["reserved_w"] / view["power_cap_w"]
        view["age_s"] = np.maximum(0.0, now_s - view["measured_at_s"])
        fresh = view["age_s"] <= self.params.stale_after_s  # NaN age compares False
        view["fresh_headroom"] = np.where(fresh, view["headroom"], np.nan)
        view["reserved"] = view["reserved_pods"]
        view["valued"] = np.isfinite(view["speed"]) & (view["alloc_cpu_milli"] > 0)
        free_cpu = view["alloc_cpu_milli"] - view["used_cpu_milli"]  # NaN: unknown, 0 slots
        view["slots"] = np.fmax(free_cpu // (self.params.cores_per_slot * 1000.0), 0.0)
        return view

    def nodes(
        self, view: dict[str, np.ndarray], keep: np.ndarray | slice, names: list[str] | None = None
    ) -> Nodes:
        """Engine ``Nodes`` of the rows ``keep`` (a bool mask, indices or a slice) of a
        :meth:`view` (of ``names``, when given).

        The calibration columns (``CALIBRATION_COLUMNS``: allocatable cores, P_idle, P_max,
        speed, wake power) change only when a calibration or a node's allocatable does, yet
        the engine checks every column of a ``Nodes`` it is given; so they are checked once:
        while they equal the last checked copy, ``Nodes.calibrated`` reuses it and checks
        only slots, headroom, age, emptiness and cap. They are not even compared while the same
        ``names`` and ``keep`` objects come again with no allocatable or calibration written
        since (``NodeTable.capacity_version``).
        """
        state = _state_columns(view, keep)
        checked = self._checked_nodes
        version = self.table.capacity_version
        last = self._checked_for
        if (
            checked is not None
            and last is not None
            and last[0] == version
            and last[1] is names
            and last[2] is keep
        ):
            return Nodes.calibrated(**state, checked=checked)
        calibration = _calibration_columns(view, keep)
        # compared bit for bit (one memcmp a column, NaN equal to itself), not element-wise
        raw = b"".join(calibration[key].tobytes() for key in CALIBRATION_COLUMNS)
        if checked is None or raw != self._checked_raw:
            # copies: the table's columns change in place, the checked ones must not
            copies = {key: np.array(value) for key, value in calibration.items()}
            checked = self._checked_nodes = Nodes(**state, **copies)
            self._checked_raw = raw
        self._checked_for = None if names is None else (version, names, keep)
        return Nodes.calibrated(**state, checked=checked)

    def wake_model(self, view: dict[str, np.ndarray], keep: np.ndarray) -> EnergyModel:
        """The §5.1 model of the asleep rows ``keep`` of a :meth:`view`: the engine's (above
        each node's measured sleep floor, :func:`_calibration_columns`) plus the one-off
        E_wake, so an asleep node and an awake empty one differ by exactly the wake's energy
        (and, in the bid, its wait; ``wakes.py``)."""
        cal = _calibration_columns(view, keep)
        return EnergyModel(
            cal["p_idle_w"],
            cal["p_max_w"],
            cal["cores"],
            cal["speed"],
            cal["p_wake_w"],
            p_sleep_w=cal["p_sleep_w"],
            wake_energy_j=view["wake_energy_j"][keep],
        )

    def expected_power_on_w(self, node: str, cpu_milli: float, now_s: float) -> float | None:
        """Power a pod requesting ``cpu_milli`` millicores adds to ``node``'s reading, W: the
        herding reservation a clearing onto that node leaves (:meth:`apply`); ``None`` when
        the node is unknown or cannot be valued (no calibration or allocatable CPU). For a pod
        kube-scheduler bound elsewhere than its clearing said
        (:meth:`.herding.HerdGuard.move`)."""
        row = self.table.index.get(node)
        if row is None:
            return None
        view = self._derived(self.table.take(np.array([row])), now_s)
        if not view["valued"][0]:
            return None
        keep = slice(None)
        nodes = Nodes(**_state_columns(view, keep), **_calibration_columns(view, keep))
        pod_cores = np.array([self._slots(cpu_milli) * self.params.cores_per_slot])
        return float(_reserved_power_w(nodes, np.array([0]), pod_cores)[0])

    def _slots(self, cpu_milli: float) -> int:
        """Slots of a pod requesting ``cpu_milli`` millicores (at least 1)."""
        return max(1, math.ceil(cpu_milli / (self.params.cores_per_slot * 1000.0)))

    def pod_arrays(self, pods: list[PendingPod]) -> Pods:
        """Engine ``Pods`` for a batch (tenants numbered in sorted namespace order).

        A batch of one pod (the usual one while kube-scheduler keeps up) reuses the last
        one-pod ``Pods`` of the same slots, work and π (a workload's replicas), so its arrays
        are not built and checked again per clearing; the engine never writes into them."""
        if len(pods) == 1:
            pod = pods[0]
            slots1 = self._slots(pod.request.cpu_milli)
            work1 = pod.work_core_s or slots1 * self.params.cores_per_slot * self.default_runtime_s
            key = (slots1, work1, pod.priority)
            last = self._one_pod
            if last is None or last[0] != key:
                arrays = self._pod_arrays(pods)
                for column in (arrays.slots, arrays.work_core_s, arrays.priority, arrays.tenant):
                    column.setflags(write=False)  # shared by clearings: a write would raise
                last = self._one_pod = (key, arrays)
            return last[1]
        return self._pod_arrays(pods)

    def _pod_arrays(self, pods: list[PendingPod]) -> Pods:
        tenants = {t: i for i, t in enumerate(sorted({p.tenant for p in pods}))}
        slots = [self._slots(p.request.cpu_milli) for p in pods]
        per_slot_s = self.params.cores_per_slot * self.default_runtime_s
        work = [p.work_core_s or s * per_slot_s for p, s in zip(pods, slots, strict=True)]
        return Pods(
            slots=np.array(slots, dtype=np.int64),
            work_core_s=np.array(work, dtype=float),
            priority=np.array([p.priority for p in pods], dtype=float),
            tenant=np.array([tenants[p.tenant] for p in pods], dtype=np.int64),
        )

    def fits(
        self, pod: PendingPod, view: dict[str, np.ndarray], among: np.ndarray | None
    ) -> np.ndarray:
        """(N,) bool: among the candidates (``among``, :meth:`_among` of the pod's; ``None``:
        every node) with room for the pod's CPU, memory and one more pod (NodeResourcesFit,
        ``fit.go``); unknown allocatable does not exclude."""
        request = pod.request

        def room(alloc: str, used: str, need: float) -> np.ndarray:
            free = view[alloc] - view[used]
            return np.isnan(free) | (need <= free)

        fits = room("alloc_cpu_milli", "used_cpu_milli", request.cpu_milli)
        fits &= room("alloc_memory_bytes", "used_memory_bytes", request.memory_bytes)
        fits &= room("alloc_pods", "used_pods", 1)
        if among is not None:
            fits &= among
        return fits

    def _among(self, candidates: frozenset[str], names: list[str]) -> np.ndarray | None:
        """(N,) bool: which of ``names`` are ``candidates``; ``None`` when all are. Kept while
        both repeat (the same objects: ``CandidateLists.as_set``, ``NodeCache.names``), so a
        clearing does not look up 1,000 names per pod."""
        last = self._among_last
        if last is not None and last[0] is candidates and last[1] is names:
            return last[2]
        among = None
        if not candidates.issuperset(names):
            among = np.fromiter((n in candidates for n in names), dtype=bool, count=len(names))
        self._among_last = (candidates, names, among)
        return among

    def snapshot(
        self, pods: list[PendingPod], names: list[str], now_s: float, own: str | None = None
    ) -> BatchSnapshot:
        """Engine input for a batch over the valued ones of ``names``, its bids included;
        ``own``: a one-pod batch's key, its own herding reservation left out (:meth:`view`)."""
        view = self.view(names, now_s, own)
        keep, kept = self._valued(names, view["valued"])
        feasible = np.empty((len(pods), len(kept)), dtype=bool)
        listed: list[np.ndarray | None] = []
        for j, pod in enumerate(pods):
            among = None if pod.candidates is None else self._among(pod.candidates, names)
            feasible[j] = self.fits(pod, view, among)[keep]
            listed.append(None if among is None else among[keep])
        pod_arrays, node_arrays = self.pod_arrays(pods), self.nodes(view, keep, names)
        if len(pods) and kept:
            values = bids.bid_values(pod_arrays, node_arrays, self.params)
        else:
            values = np.zeros((len(pods), len(kept)))
        return BatchSnapshot(pods, kept, pod_arrays, node_arrays, feasible, values, listed)

    def _valued(self, names: list[str], valued: np.ndarray) -> tuple[np.ndarray | slice, list[str]]:
        """Positions and names of the valued nodes of ``names``: every one (the usual case) is
        ``slice(None)`` and ``names`` itself, so the columns are taken as views, not copied;
        kept while the node list (the same list object, :meth:`.nodes.NodeCache.names`)
        repeats and no allocatable or calibration was written (``NodeTable.capacity_version``:
        the valued set is theirs), so a clearing does not walk 1,000 names in Python."""
        last = self._kept
        version = self.table.capacity_version
        if last is not None and last[0] is names and last[3] == version:
            return last[1], last[2]
        keep: np.ndarray | slice
        if valued.all():
            keep, kept = slice(None), names
        else:
            keep = np.flatnonzero(valued)
            kept = [names[i] for i in keep]
        self._kept = (names, keep, kept, version)
        return keep, kept

    def solve(
        self, snapshot: BatchSnapshot, time_budget_s: float | None = None
    ) -> tuple[Clearing, np.ndarray]:
        """Clear a snapshot with the engine (``eams.scheduler.auction.solve`` on its bids) and
        score the batch (pure).

        ``time_budget_s`` is the clearing's wall-clock budget (``solve``'s): when it ends the
        engine returns its best certified assignment, ``Clearing.timed_out``. ``None`` (the
        harness) keeps only the deterministic round cap (AR-8). A batch of a few single-slot
        pods (the usual one while kube-scheduler keeps up) clears by the engine's
        ``short_lists`` method: each pod's best nodes and one tiny assignment, certified.

        Returns
        -------
        clearing : Clearing
        scores : (J, N) int
            :meth:`window_scores`.
        """
        clearing = solve(
            snapshot.values,
            snapshot.pod_arrays.slots,
            snapshot.node_arrays.slots,
            self.params,
            snapshot.feasible,
            time_budget_s=time_budget_s,
        )
        return clearing, self.window_scores(snapshot, clearing)

    def apply(
        self,
        snapshot: BatchSnapshot,
        clearing: Clearing,
        scores: np.ndarray,
        now_s: float,
        reserve: bool = True,
    ) -> list[Cleared]:
        """Turn a clearing into table rows; with ``reserve``, leave a herding reservation of
        each assigned pod's expected power on its node, numbered with the clearing (shadow mode
        places nothing); a pod cleared again replaces its earlier reservation, or ends it when
        assigned no node.

        Expected power (study §5.1, :meth:`eams.calibrate.energy.EnergyModel.dynamic_power_w`):
        ``(P_max − P_idle)·c_j/C_n`` with ``c_j = slots × cores_per_slot`` clipped to ``C_n``
        (:meth:`expected_power_w`).
        """
        rows = []
        fell_back = bool(clearing.fell_back)
        expected_w = self.expected_power_w(snapshot, clearing) if reserve else None
        number = next(self._clearings) if reserve else None
        columns = self.columns(snapshot.names)
        compact = scores.astype(np.int8)
        for j, pod in enumerate(snapshot.pods):
            n = int(clearing.assignment[j])
            if n < 0:
                if reserve:  # cleared again onto no node: an earlier clearing's ends
                    self.herd.release(pod.key)
                rows.append(
                    Cleared(pod.key, None, None, now_s, fell_back, compact[j], columns, pod)
                )
                continue
            if expected_w is not None:
                power_w = float(expected_w[j])
                self.herd.reserve(snapshot.names[n], pod.key, power_w, now_s, number)
            price = float(clearing.prices[n])
            node = snapshot.names[n]
            rows.append(Cleared(pod.key, node, price, now_s, fell_back, compact[j], columns, pod))
        return rows

    def expected_power_w(self, snapshot: BatchSnapshot, clearing: Clearing) -> np.ndarray:
        """(J,) power each pod of the window adds to the reading of the node it cleared onto,
        W (the herding reservation, see :meth:`apply`, and :func:`_reserved_power_w`); NaN for
        a pod left unassigned."""
        assignment = clearing.assignment.astype(np.int64)
        assigned = assignment >= 0
        expected_w = np.full(assignment.size, np.nan)
        pod_cores = snapshot.pod_arrays.slots[assigned] * self.params.cores_per_slot
        expected_w[assigned] = _reserved_power_w(
            snapshot.node_arrays, assignment[assigned], pod_cores
        )
        return expected_w

    def window_scores(self, snapshot: BatchSnapshot, clearing: Clearing) -> np.ndarray:
        """(J, N) int scores of each pod of a window over its valued nodes (``scale_scores``)."""
        return scale_scores(self.usable(snapshot), clearing.assignment.astype(np.int64))

    @staticmethod
    def usable(snapshot: BatchSnapshot) -> np.ndarray:
        """(J, N) bid values where the pod can go (feasible, a free slot), else 0."""
        values, nodes = snapshot.values, snapshot.node_arrays
        usable = snapshot.feasible & (nodes.slots > 0)[None, :] & np.isfinite(values)
        return np.where(usable, values, 0.0)

    def scores(self, pod: PendingPod, candidates: list[str], now_s: float) -> np.ndarray:
        """(len(candidates),) 0–10 integer scores of ``candidates`` for one pod without a
        clearing, in order.

        The best single-pod bid gets 10, the others scale with their bid value v_jn (study §5.2,
        :func:`scale_scores`). A node that cannot be valued, that the pod does not fit, or whose
        bid is 0 (gated out) scores 0.
        """
        snapshot = self.snapshot([pod], candidates, now_s)
        scores = scale_scores(self.usable(snapshot), np.array([-1]))[0]
        row = Cleared(pod.key, None, None, now_s, False, scores, self.columns(snapshot.names))
        return row.scores_for(candidates)

    def columns(self, names: list[str]) -> Columns:
        """The :class:`Columns` of ``names``, reused while the node list repeats (so does its
        index cache for kube-scheduler's candidate list)."""
        if self._columns is None or names != self._columns_names:
            self._columns = Columns(names)
            self._columns_names = names
        return self._columns


def _state_columns(view: dict[str, np.ndarray], keep: np.ndarray | slice) -> dict[str, np.ndarray]:
    """The rows ``keep`` of a :meth:`Market.view` as the engine's per-clearing ``Nodes``
    columns: slots, headroom, age and emptiness (study §5.1: a node below
    :data:`EMPTY_UTILISATION` with nothing placed or reserved is empty), and the power cap
    behind the headroom (the gate's, ``bids.gate_midpoint``)."""
    empty = (view["used_pods"] == 0) & (view["reserved"] == 0)
    empty &= view["utilisation"] < EMPTY_UTILISATION  # unknown (NaN) is never empty
    return {
        "slots": view["slots"][keep].astype(np.int64),
        "headroom": np.fmin(view["headroom"][keep], 1.0),
        "age_s": view["age_s"][keep],
        "empty": empty[keep],
        "power_cap_w": view["power_cap_w"][keep],
    }


def _calibration_columns(
    view: dict[str, np.ndarray], keep: np.ndarray | slice
) -> dict[str, np.ndarray]:
    """The rows ``keep`` of a :meth:`Market.view` as the engine's :data:`CALIBRATION_COLUMNS`
    (views of ``view`` where they can be)."""
    p_wake_w = view["p_wake_w"][keep]
    return {
        "cores": view["alloc_cpu_milli"][keep] / 1000.0,
        "p_idle_w": view["p_idle_w"][keep],
        "p_max_w": view["p_max_w"][keep],
        "speed": view["speed"][keep],
        "p_wake_w": p_wake_w,
        # the measured sleep floor (0 where none): an empty node is charged what it draws
        # over sleeping, as the power manager counts it
        "p_sleep_w": np.fmin(np.nan_to_num(view["p_sleep_w"][keep], nan=0.0), p_wake_w),
    }


def _reserved_power_w(nodes: Nodes, at: np.ndarray, pod_cores: np.ndarray) -> np.ndarray:
    """Power the pods add to the readings of nodes ``at`` of ``nodes``, W: their dynamic power
    (study §5.1, :meth:`eams.calibrate.energy.EnergyModel.dynamic_power_w`),
    ``(P_max − P_idle)·c/C`` with ``c`` clipped to ``C``.

    Never the wake term, even on an empty node: a reading is only ever taken awake (an asleep
    node's agent is silent), so the headroom a reservation lowers already counts the node's
    idle draw. Counted again, an empty node with one pod cleared onto it looked its idle power
    fuller than it would be, and a server fell under the headroom floor for every other pod
    (issue 33's batch holds). The bids keep the wake term
    (:func:`eams.scheduler.auction.bids.marginal_energy_j`): it is energy the pod is charged
    for, the node's idle draw it keeps from sleeping, not power its reading lacks."""
    model = EnergyModel(nodes.p_idle_w[at], nodes.p_max_w[at], nodes.cores[at], nodes.speed[at])
    return model.dynamic_power_w(np.minimum(pod_cores, nodes.cores[at]))
