"""The hard power-headroom floor: which nodes are under it, and the taint that keeps pods off.

A node is *under the floor* when its fresh headroom (telemetry ≤ ``stale_after_s`` old, minus
the herding reservations, ``herding.py``) is below ``headroom_floor``; it is *recovered* once
that headroom is at least floor + ``recovery_margin`` again, or once it has no fresh reading
(a node without a fresh reading is never kept off: scores rank it instead, AR-6).

In a cluster the floor is enforced by kube-scheduler itself: the extender puts the taint
:data:`TAINT` (``eams.kube.names.HEADROOM_TAINT``, effect ``NoSchedule``) on a node under the floor
and removes it when the node recovers (``watch.py`` patches the node). kube-scheduler's
TaintToleration filter then keeps new pods off that node without a ``/filter`` call per pod, and the
taint's removal is a Node update event that requeues the pods it held back by itself (kubernetes
issue 122019 — the annotation ``eams.io/headroom-recovered-at`` that did this before is retired).
The taint is honoured by every profile, not only ``eams-scheduler``: a node at its power cap takes
no new pod from any scheduler while it lasts. ``/filter`` answers the nodes under the floor for
configurations that still call it (shadow mode only records it), counting the reservations as below.

The taint counts only the reservations of *bound* pods (pods no longer waiting for their
scheduling cycle). A taint is one per node, not per pod: had it counted a batch's reservations
at once, a batch cleared onto a node that its own pods put under the floor would have tainted
that node before those pods' cycles ran, and kube-scheduler would have bound them elsewhere
(the clearing not honoured). Their reservations count once they are bound (the taint is then
planned again); meanwhile they still lower the node's headroom for later clearings and for
``/filter``, which counts every reservation but those the asking pod's clearing left on the node
it put the pod on (:meth:`HeadroomFloor.below_for`). Under the floor and recovered are read with
the same reservations, so the hysteresis holds.

Each set is computed over every node at once (numpy) and kept until a sample arrives, the
reservations it counts change (added, bound, ended or expired) or a node under the floor
would turn stale: a request costs a set lookup, not a pass over the table, and a binding
leaves the requests' set alone.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from eams.kube.names import HEADROOM_TAINT, NO_SCHEDULE
from eams.scheduler.extender.herding import HerdGuard
from eams.scheduler.extender.table import NodeTable

TAINT = {"key": HEADROOM_TAINT, "effect": NO_SCHEDULE}


class NodeMask:
    """A set of node names held as a boolean column over the table's rows (``in`` only)."""

    def __init__(self, index: dict[str, int], mask: np.ndarray) -> None:
        self._index, self._mask = index, mask

    def __contains__(self, name: object) -> bool:
        i = self._index.get(name)  # type: ignore[call-overload]
        return i is not None and i < self._mask.size and bool(self._mask[i])


class _FloorSets:
    """Nodes under the floor and recovered, for one column of reservations, kept while the
    table's samples, that column's version and the row count are unchanged and no reading
    turns stale."""

    def __init__(self, reserved: str) -> None:
        self.reserved = reserved  # the table column of reservations that count, W
        self.key: tuple[int, int, int] = (-1, -1, -1)
        self.until_s = -math.inf
        self.below: frozenset[str] = frozenset()
        self.below_mask = np.zeros(0, dtype=bool)
        self.recovered = NodeMask({}, np.zeros(0, dtype=bool))


class HeadroomFloor:
    """Nodes under the floor and nodes recovered from it, from the table (samples and the
    herding reservations' columns).

    Two notions of the reservations: :meth:`below`, :meth:`below_for` (``/filter``) count them
    all; the taint (:meth:`to_taint`, :meth:`recovered`, :meth:`under`) counts only those of
    bound pods (``herding.py``), so a clearing's own pods do not taint their node before
    their scheduling cycles have placed them there.

    Parameters
    ----------
    table : NodeTable
    herd : HerdGuard
    floor : float
        ``headroom_floor`` (0–1).
    margin : float
        ``recovery_margin``: hysteresis against flapping.
    stale_after_s : float
        Readings older than this never keep a node off (AR-6), s.
    """

    def __init__(
        self, table: NodeTable, herd: HerdGuard, floor: float, margin: float, stale_after_s: float
    ) -> None:
        self.table, self.herd = table, herd
        self.floor, self.margin, self.stale_after_s = floor, margin, stale_after_s
        self._names: list[str] = []  # the table's names in row order (rows never move)
        self._all = _FloorSets("reserved_w")
        self._bound = _FloorSets("reserved_bound_w")

    def _refresh(self, sets: _FloorSets, version: int, now_s: float) -> _FloorSets:
        """``sets`` brought up to date (the caller ran ``herd.expire`` first: an expiry is a
        new ``version``)."""
        key = (self.table.samples_version, version, len(self.table.index))
        if key == sets.key and now_s < sets.until_s:
            return sets
        size = len(self.table.index)
        cols = self.table.cols
        headroom = cols["headroom"][:size] - cols[sets.reserved][:size] / cols["power_cap_w"][:size]
        measured_s = cols["measured_at_s"][:size]
        fresh = now_s - measured_s <= self.stale_after_s  # NaN (never measured) compares False
        headroom = np.where(fresh, headroom, np.nan)
        with np.errstate(invalid="ignore"):
            below = headroom < self.floor
            recovered = ~(headroom < self.floor + self.margin)  # NaN: not fresh, recovered
        if not np.array_equal(below, sets.below_mask):  # usually the same nodes (none)
            if len(self._names) != size:
                self._names = list(self.table.index)
            sets.below = frozenset(self._names[i] for i in np.flatnonzero(below))
            sets.below_mask = below
        sets.recovered = NodeMask(self.table.index, recovered)
        sets.until_s = float((measured_s[fresh] + self.stale_after_s).min(initial=math.inf)) + 1e-6
        sets.key = key
        return sets

    def _taint_sets(self, now_s: float) -> _FloorSets:
        self.herd.expire(now_s)
        return self._refresh(self._bound, self.herd.bound_version, now_s)

    def under(self, names: Iterable[str], now_s: float) -> bool:
        """Whether any of ``names`` is under the floor as the taint counts it (bound
        reservations only), read row by row (a binding only lowers that headroom on the node
        its pod reserved on: only it can have crossed)."""
        cols, index = self.table.cols, self.table.index
        for name in names:
            i = index.get(name)
            if i is None or not now_s - cols["measured_at_s"][i] <= self.stale_after_s:
                continue  # unknown or not fresh: never under the floor
            if self._row_headroom(i, cols["reserved_bound_w"][i]) < self.floor:
                return True
        return False

    def _row_headroom(self, i: int, reserved_w: float) -> float:
        """Row ``i``'s headroom less ``reserved_w`` W of reservations."""
        cols = self.table.cols
        return cols["headroom"][i] - reserved_w / cols["power_cap_w"][i]

    def below(self, now_s: float) -> frozenset[str]:
        """Nodes under the floor now, every reservation counted (``/filter``)."""
        self.herd.expire(now_s)
        return self._refresh(self._all, self.herd.version, now_s).below

    def below_for(self, pod: str, now_s: float) -> frozenset[str]:
        """Nodes under the floor now as ``pod`` sees them: neither its own reservation nor those
        of the pods its clearing put on the same node count against the node it was cleared onto
        (:meth:`.herding.HerdGuard.cleared_with`; the floor keeps *other* pods off a node the
        clearing filled). Without this the pod's own /filter would refuse its cleared node, and
        kube-scheduler would bind it elsewhere whenever its batch cleared before the call; and
        of two pods a window cleared onto one node, under the floor only with both
        reservations, the first asked would be refused it through the other's (and held for an
        asleep node by the wake market)."""
        below = self.below(now_s)
        held = self.herd.cleared_with(pod) if below else None
        if held is None or held[0] not in below:
            return below
        node, together_w, _ = held
        i = self.table.index[node]
        if self._row_headroom(i, self.table.cols["reserved_w"][i] - together_w) < self.floor:
            return below
        return below - {node}

    def to_taint(self, now_s: float) -> frozenset[str]:
        """Nodes the taint belongs on now: under the floor counting only the reservations of
        bound pods (a pod still waiting for its cycle must not be kept off its cleared node)."""
        return self._taint_sets(now_s).below

    def recovered(self, now_s: float) -> NodeMask:
        """Nodes at floor + margin or above, or without a fresh reading (``name in ...``),
        counting the reservations as :meth:`to_taint` does."""
        return self._taint_sets(now_s).recovered
