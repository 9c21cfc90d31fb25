"""Herding guard: recently cleared pods count against a node's power headroom.

Telemetry lags placement: a pod cleared onto the cheapest node shows up in that node's power
only after it is bound, started and the agent's next sample is measured. Until then every later
batch would see the same idle node and pile onto it (study §8 FMEA, "Herding onto the cheapest
node"). Each clearing therefore leaves a *reservation* of the pod's expected power on its node
(study §5.1's dynamic power ``(P_max − P_idle)·c/C``; not its wake term, even on an empty node:
the node's reading already shows its idle draw, ``market._reserved_power_w``), which lowers the
node's headroom by ``power_w / power_cap_w``. A reservation ends when a sample measured at
least ``settle_s`` after the clearing arrives for that node (its power then includes the pod),
or after ``ttl_s`` at the latest (the pod may never have been bound there).

A reservation is *bound* once its pod no longer waits for its scheduling cycle (the watch saw
it bound, it left the pending selection, or it was deleted: :meth:`HerdGuard.bind`). Only
bound reservations count toward the floor taint (``floor.py``): a batch's own pods, still
pending, must not taint the node they were cleared onto before kube-scheduler has placed them
there.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, replace

from eams.scheduler.extender.table import NodeTable


@dataclass(frozen=True, slots=True)
class Reservation:
    """Expected power of one cleared pod on one node.

    Attributes
    ----------
    pod : str
        Pod key (``namespace/name``).
    power_w : float
        Expected extra power of the node, W.
    cleared_at_s : float
        Clearing time, epoch seconds.
    clearing : int or None
        The clearing that made it (:meth:`.market.Market.apply` numbers them): the pods it put
        on one node together do not count against each other there
        (:meth:`HerdGuard.cleared_with`); ``None``: a clearing of its own.
    bound : bool
        The pod no longer waits for its scheduling cycle (:meth:`HerdGuard.bind`).
    """

    pod: str
    power_w: float
    cleared_at_s: float
    clearing: int | None = None
    bound: bool = False


class HerdGuard:
    """Reservations per node until telemetry reflects them.

    The live total of each node (reserved power, W, and count) is kept in the node table's
    ``reserved_w`` and ``reserved_pods`` columns, updated as reservations are made and end, so
    a request over 1,000 candidates reads them as two columns instead of summing reservations;
    the bound reservations' power, W, in ``reserved_bound_w`` (the floor taint reads it).

    Parameters
    ----------
    settle_s : float
        How long after a clearing a sample must be measured to count as reflecting the pod, s.
    ttl_s : float
        Upper bound on a reservation's life, s.
    table : NodeTable
        Receives the per-node totals.
    """

    def __init__(self, settle_s: float, ttl_s: float, table: NodeTable) -> None:
        self.settle_s = settle_s
        self.ttl_s = ttl_s
        self.table = table
        self._by_node: dict[str, dict[str, Reservation]] = {}
        self._node_of: dict[str, str] = {}  # pod → node of its reservation
        self._expiry: list[tuple[float, str, str]] = []  # (cleared_at_s, node, pod), a heap
        self.version = 0  # changes whenever a reservation is added or ends (reserved_w)
        self.bound_version = 0  # changes whenever reserved_bound_w does

    def _end(self, node: str, pod: str) -> None:
        held = self._by_node[node]
        reservation = held.pop(pod)
        del self._node_of[pod]
        if not held:
            del self._by_node[node]
        self.table.add_reserved(node, -reservation.power_w, -1)
        self.version += 1
        if reservation.bound:
            self.table.add_reserved_bound(node, -reservation.power_w)
            self.bound_version += 1

    def _hold(self, node: str, reservation: Reservation) -> None:
        """``reservation`` now held on ``node`` (the counterpart of :meth:`_end`)."""
        pod = reservation.pod
        self._by_node.setdefault(node, {})[pod] = reservation
        self._node_of[pod] = node
        heapq.heappush(self._expiry, (reservation.cleared_at_s, node, pod))
        self.table.add_reserved(node, reservation.power_w, 1)
        self.version += 1
        if reservation.bound:
            self.table.add_reserved_bound(node, reservation.power_w)
            self.bound_version += 1

    def reserve(
        self, node: str, pod: str, power_w: float, now_s: float, clearing: int | None = None
    ) -> None:
        """Record that ``pod`` was cleared onto ``node`` by clearing number ``clearing``; a
        re-clearing replaces the old one."""
        old = self._node_of.get(pod)
        if old is not None:
            self._end(old, pod)
        self._hold(node, Reservation(pod, power_w, now_s, clearing))

    def release(self, pod: str) -> None:
        """``pod``'s reservation ends: it was cleared again onto no node, or the market holds
        it for a wake (``wakes.py``: it lands on no awake node meanwhile). Nothing when it
        holds none."""
        node = self._node_of.get(pod)
        if node is not None:
            self._end(node, pod)

    def move(self, pod: str, node: str, power_w: float | None) -> None:
        """``pod`` was bound to ``node``, not to the node it was cleared onto (an in-tree filter
        or score of kube-scheduler overturned the clearing): its reservation moves there as
        ``power_w`` W, the pod's expected power on ``node``, keeping its clearing time (its
        settle time and TTL run on); ``power_w`` ``None`` (``node`` cannot be valued) ends it.
        Nothing when ``pod`` holds no reservation or holds it on ``node`` already."""
        old = self._node_of.get(pod)
        if old is None or old == node:
            return
        reservation = self._by_node[old][pod]
        self._end(old, pod)
        if power_w is not None:
            self._hold(node, replace(reservation, power_w=power_w))

    def bind(self, pod: str) -> str | None:
        """Record that ``pod`` no longer waits for its scheduling cycle (bound, or gone from the
        pending pods): its reservation now counts toward the floor taint.

        Returns
        -------
        str or None
            The node of the reservation, ``None`` when ``pod`` holds none not yet bound.
        """
        node = self._node_of.get(pod)
        if node is None:
            return None
        held = self._by_node[node]
        reservation = held[pod]
        if reservation.bound:
            return None
        held[pod] = replace(reservation, bound=True)
        self.table.add_reserved_bound(node, reservation.power_w)
        self.bound_version += 1
        return node

    def reflect(self, node: str, measured_at_s: float) -> int:
        """Drop ``node``'s reservations that a sample measured at ``measured_at_s`` reflects.

        Returns
        -------
        int
            How many reservations ended.
        """
        held = self._by_node.get(node)
        if not held:
            return 0
        ended = [p for p, r in held.items() if measured_at_s >= r.cleared_at_s + self.settle_s]
        for pod in ended:
            self._end(node, pod)
        return len(ended)

    def expire(self, now_s: float) -> None:
        """End reservations older than ``ttl_s`` (the pod may never have been bound there)."""
        while self._expiry and now_s - self._expiry[0][0] > self.ttl_s:
            cleared_at_s, node, pod = heapq.heappop(self._expiry)
            held = self._by_node.get(node, {}).get(pod)
            if held is not None and held.cleared_at_s == cleared_at_s:
                self._end(node, pod)

    def held_by(self, pod: str) -> tuple[str, float] | None:
        """``(node, power_w)`` of ``pod``'s reservation (W), ``None`` when it holds none."""
        node = self._node_of.get(pod)
        return None if node is None else (node, self._by_node[node][pod].power_w)

    def cleared_with(self, pod: str) -> tuple[str, float, int] | None:
        """``(node, power_w, count)``: the node of ``pod``'s reservation, and the power (W) and
        number of the reservations that ``pod``'s clearing left there, its own included (the
        pods that clearing put on that node together); ``None`` when ``pod`` holds none."""
        node = self._node_of.get(pod)
        if node is None:
            return None
        held = self._by_node[node]
        clearing = held[pod].clearing
        if clearing is None:
            return node, held[pod].power_w, 1
        together = [r.power_w for r in held.values() if r.clearing == clearing]
        return node, sum(together), len(together)

    def count(self, node: str) -> int:
        """Number of reservations held for ``node`` (expired ones included until :meth:`expire`)."""
        return len(self._by_node.get(node, ()))
