"""Herding guard: recently cleared pods count against a node's power headroom.

Telemetry lags placement: a pod cleared onto the cheapest node shows up in that node's power
only after it is bound, started and the agent's next sample is measured. Until then every later
batch would see the same idle node and pile onto it (study §8 FMEA, "Herding onto the cheapest
node"). Each clearing therefore leaves a *reservation* of the pod's expected power on its node
(study §5.1: ``(P_max − P_idle)·c/C``, plus ``P_idle`` when the node was empty), which lowers
the node's headroom by ``power_w / power_cap_w``. A reservation ends when a sample measured at
least ``settle_s`` after the clearing arrives for that node (its power then includes the pod),
or after ``ttl_s`` at the latest (the pod may never have been bound there).
"""

from __future__ import annotations

from dataclasses import dataclass


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
    """

    pod: str
    power_w: float
    cleared_at_s: float


class HerdGuard:
    """Reservations per node until telemetry reflects them.

    Parameters
    ----------
    settle_s : float
        How long after a clearing a sample must be measured to count as reflecting the pod, s.
    ttl_s : float
        Upper bound on a reservation's life, s.
    """

    def __init__(self, settle_s: float, ttl_s: float) -> None:
        self.settle_s = settle_s
        self.ttl_s = ttl_s
        self._by_node: dict[str, dict[str, Reservation]] = {}
        self._live: dict[str, tuple[float, int]] | None = None
        self._live_until_s = 0.0
        self.version = 0  # changes whenever the live reservations may have changed

    def reserve(self, node: str, pod: str, power_w: float, now_s: float) -> None:
        """Record that ``pod`` was cleared onto ``node``; a re-clearing replaces the old one."""
        for held in self._by_node.values():
            held.pop(pod, None)
        self._by_node.setdefault(node, {})[pod] = Reservation(pod, power_w, now_s)
        self._live = None
        self.version += 1

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
            del held[pod]
        if ended:
            self._live = None
            self.version += 1
        return len(ended)

    def live(self, now_s: float) -> dict[str, tuple[float, int]]:
        """Node → (reserved power W, reservation count) of live reservations.

        Expired reservations (older than ``ttl_s``) are dropped on the way. The answer is kept
        until a reservation is added or ended or the oldest one expires, because every request
        asks and thousands of reservations can be live at 100 pods/s.
        """
        if self._live is not None and now_s <= self._live_until_s:
            return self._live
        live, oldest_s = {}, float("inf")
        for node, held in list(self._by_node.items()):
            for pod in [p for p, r in held.items() if now_s - r.cleared_at_s > self.ttl_s]:
                del held[pod]
            if held:
                live[node] = (sum(r.power_w for r in held.values()), len(held))
                oldest_s = min(oldest_s, *(r.cleared_at_s for r in held.values()))
            else:
                del self._by_node[node]
        self._live, self._live_until_s = live, oldest_s + self.ttl_s
        self.version += 1
        return live

    @property
    def live_until_s(self) -> float:
        """When the oldest live reservation expires (epoch s; inf with none), as of the last
        :meth:`live`."""
        return self._live_until_s if self._live is not None else -float("inf")

    def count(self, node: str) -> int:
        """Number of reservations held for ``node`` (expired ones included until :meth:`live`)."""
        return len(self._by_node.get(node, ()))
