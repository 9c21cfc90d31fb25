"""The hard power-headroom floor: which nodes are under it, and the taint that keeps pods off.

A node is *under the floor* when its fresh headroom (telemetry ≤ ``stale_after_s`` old, minus
the herding reservations of bound pods, ``herding.py``) is below ``headroom_floor``; it is
*recovered* once that headroom is at least floor + ``recovery_margin`` again, or once it has no
fresh reading (a node without a fresh reading is never kept off: scores rank it instead, AR-6).

In a cluster the floor is enforced by kube-scheduler itself: the extender puts the taint
:data:`TAINT_KEY` with effect ``NoSchedule`` on a node under the floor and removes it when the
node recovers (``watch.py`` patches the node). kube-scheduler's TaintToleration filter then
keeps new pods off that node without a ``/filter`` call per pod, and the taint's removal is a
Node update event that requeues the pods it held back by itself (kubernetes issue 122019 —
the annotation ``eams.io/headroom-recovered-at`` that did this before is retired). The taint
is honoured by every profile, not only ``eams-scheduler``: a node at its power cap takes no new
pod from any scheduler while it lasts. ``/filter`` answers the same set for configurations that
still call it (shadow mode only records it), and the decision record gates the same nodes.

Only the reservations of *bound* pods (pods no longer waiting for their scheduling cycle)
count here. A taint is one per node, not per pod: had it counted a batch's reservations at
once, a batch cleared onto a node that its own pods put under the floor would have tainted
that node before those pods' cycles ran, and kube-scheduler would have bound them elsewhere
(the clearing not honoured); ``/filter`` would have refused a pod the node its batch cleared it
onto. A pod's reservation counts once it is bound (the taint is then planned again), while
every reservation, bound or not, lowers the node's headroom for the next clearings' bids.
Under the floor and recovered are read with the same reservations, so the hysteresis holds.

The sets are computed over every node at once (numpy) and kept until a sample arrives, a bound
reservation is added, ends or expires, or a node under the floor would turn stale: a request
costs a set lookup, not a pass over the table, and a clearing leaves the sets alone.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from eams.scheduler.extender.herding import HerdGuard
from eams.scheduler.extender.table import NodeTable

TAINT_KEY = "eams.io/power-headroom-low"
TAINT_EFFECT = "NoSchedule"
TAINT = {"key": TAINT_KEY, "effect": TAINT_EFFECT}


class NodeMask:
    """A set of node names held as a boolean column over the table's rows (``in`` only)."""

    def __init__(self, index: dict[str, int], mask: np.ndarray) -> None:
        self._index, self._mask = index, mask

    def __contains__(self, name: object) -> bool:
        i = self._index.get(name)  # type: ignore[call-overload]
        return i is not None and i < self._mask.size and bool(self._mask[i])


class HeadroomFloor:
    """Nodes under the floor and nodes recovered from it, from the table (samples and the
    bound herding reservations' column ``reserved_bound_w``).

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
        self._key: tuple[int, int, int] = (-1, -1, -1)
        self._until_s = -math.inf
        self._below: frozenset[str] = frozenset()
        self._below_mask = np.zeros(0, dtype=bool)
        self._names: list[str] = []  # the table's names in row order (rows never move)
        self._recovered = NodeMask({}, np.zeros(0, dtype=bool))

    def _refresh(self, now_s: float) -> None:
        self.herd.expire(now_s)  # a bound reservation ending is a new bound_version
        key = (self.table.samples_version, self.herd.bound_version, len(self.table.index))
        if key == self._key and now_s < self._until_s:
            return
        size = len(self.table.index)
        cols = self.table.cols
        reserved_w = cols["reserved_bound_w"][:size]
        headroom = cols["headroom"][:size] - reserved_w / cols["power_cap_w"][:size]
        measured_s = cols["measured_at_s"][:size]
        fresh = now_s - measured_s <= self.stale_after_s  # NaN (never measured) compares False
        headroom = np.where(fresh, headroom, np.nan)
        with np.errstate(invalid="ignore"):
            below = headroom < self.floor
            recovered = ~(headroom < self.floor + self.margin)  # NaN: not fresh, recovered
        if not np.array_equal(below, self._below_mask):  # usually the same nodes (none)
            if len(self._names) != size:
                self._names = list(self.table.index)
            self._below = frozenset(self._names[i] for i in np.flatnonzero(below))
            self._below_mask = below
        self._recovered = NodeMask(self.table.index, recovered)
        turning_stale_s = float((measured_s[fresh] + self.stale_after_s).min(initial=math.inf))
        self._until_s = turning_stale_s + 1e-6
        self._key = key

    def under(self, names: Iterable[str], now_s: float) -> bool:
        """Whether any of ``names`` is under the floor now, read row by row (a binding only
        lowers the headroom of the node its pod reserved on: only it can have crossed)."""
        cols, index = self.table.cols, self.table.index
        for name in names:
            i = index.get(name)
            if i is None or not now_s - cols["measured_at_s"][i] <= self.stale_after_s:
                continue  # unknown or not fresh: never under the floor
            headroom = cols["headroom"][i] - cols["reserved_bound_w"][i] / cols["power_cap_w"][i]
            if headroom < self.floor:
                return True
        return False

    def below(self, now_s: float) -> frozenset[str]:
        """Nodes under the floor now: the taint's, ``/filter``'s and the record's set."""
        self._refresh(now_s)
        return self._below

    def recovered(self, now_s: float) -> NodeMask:
        """Nodes at floor + margin or above, or without a fresh reading (``name in ...``)."""
        self._refresh(now_s)
        return self._recovered
