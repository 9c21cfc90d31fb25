"""What the power policy gives back: decisions with their reasons and numbers, and the small
memory it carries from one call to the next.

A :class:`Decision` is an action on one node (:class:`Action`) with a short, stable reason
(:class:`Reason`, the string a node annotation, a log line and a metric label carry) and the
numbers behind it (seconds, joules, cores). A :class:`Plan` is every decision of one call, the
ones a rate limit held back, the next instant the policy wants to be asked again even if
nothing happens, and the updated :class:`PolicyMemory`.

The memory holds only what makes the policy better, never what makes it safe: the idle gaps it
has seen (to estimate how long an empty node will stay unneeded) and the largest recent pod
(the default reserve). A manager that restarts with an empty memory is conservative, not wrong.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np
from numpy.typing import NDArray

from eams.scheduler.power.policy_fleet import WAKING, FleetState


class Action(StrEnum):
    """What the caller does to the node.

    ``sleep``: cordon, taint ``eams.io/asleep:NoSchedule``, check it is still empty, suspend
    (state → suspending). ``wake``: send the wake (state → waking; it counts once the node is
    Ready again). ``wake-failed`` / ``suspend-failed``: the phase ran past its timeout; the
    node becomes asleep and suspect (never a terminal state), count it and alert.
    """

    SLEEP = "sleep"
    WAKE = "wake"
    WAKE_FAILED = "wake-failed"
    SUSPEND_FAILED = "suspend-failed"


class Reason(StrEnum):
    """Why (stable strings: annotations, logs and metrics use them as they are)."""

    IDLE = "idle-past-break-even"
    """Empty for ``idle_before_sleep_s``, not needed for the reserve, expected idle time above
    its break-even."""
    PENDING = "pending-unfit"
    """Pods pending longer than ``wake_after_s`` fit no awake node; this is the cheapest that
    fits."""
    MARKET = "market-bid"
    """The market cleared a pending pod onto this asleep node (the extender's wake request):
    its bid there, wake energy and latency priced in, beat every awake node's."""
    RESERVE = "reserve"
    """The awake nodes' free cores fell below ``reserve_cores``."""
    MIN_AWAKE = "min-awake"
    """Fewer than ``min_awake`` nodes are awake."""
    ASLEEP_TIMEOUT = "asleep-timeout"
    """Asleep for ``max_asleep_s``: woken to check it still wakes."""
    WAKE_TIMEOUT = "wake-timeout"
    """Not Ready within its measured wake time × ``wake_margin``."""
    SUSPEND_TIMEOUT = "suspend-timeout"
    """Not asleep within its measured suspend time × ``suspend_margin``."""


RATE_LIMIT = "rate-limit"
"""``Decision.held_by`` of a decision held back by ``suspend_rate_per_min`` /
``resume_rate_per_min``."""


@dataclass(frozen=True)
class Decision:
    """One action on one node.

    Attributes
    ----------
    action : Action
    node : str, the node's name; ``index`` its column in the fleet state
    reason : Reason
    numbers : mapping str → float, the figures behind it (units in the keys)
    pods : tuple of str, the pending pods a wake is for (empty otherwise)
    held_by : str or None, :data:`RATE_LIMIT` when this decision was held back, not made
    """

    action: Action
    node: str
    index: int
    reason: Reason
    numbers: Mapping[str, float] = field(default_factory=dict)
    pods: tuple[str, ...] = ()
    held_by: str | None = None

    def line(self) -> str:
        """One log line: ``wake node-3 pending-unfit pending_s=12.0 wake_energy_j=450.0``."""
        figures = " ".join(f"{k}={v:.6g}" for k, v in self.numbers.items())
        held = f" (held: {self.held_by})" if self.held_by else ""
        return f"{self.action} {self.node} {self.reason}{held} {figures}".rstrip()


def _aligned(values: NDArray[np.float64], old: tuple[str, ...], new: tuple[str, ...]):
    """``values`` (indexed by ``old`` names) re-indexed by ``new`` names, NaN where unknown."""
    if old == new:
        return values
    where = {name: i for i, name in enumerate(old)}
    out = np.full(len(new), np.nan)
    for i, name in enumerate(new):
        if name in where:
            out[i] = values[where[name]]
    return out


@dataclass(frozen=True)
class PolicyMemory:
    """What the policy remembers between calls (immutable: :meth:`observe` returns a new one).

    Attributes
    ----------
    names : tuple of str, the node order of ``open_since_s``
    open_since_s : (N,) float, when each node's current idle gap began (NaN: not idle)
    idle_gaps_s : (G,) float, the last closed idle gaps of the fleet, oldest first (s): from a
        node becoming empty to the next pod on it or its next wake
    recent_pods : tuple of (seen_at_s, cores), the largest pods seen within ``recent_s``
        (decreasing cores)
    """

    names: tuple[str, ...] = ()
    open_since_s: NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))
    idle_gaps_s: NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))
    recent_pods: tuple[tuple[float, float], ...] = ()

    @property
    def recent_largest_pod_cores(self) -> float:
        """The largest pod request seen within the window (cores), 0 when none."""
        return self.recent_pods[0][1] if self.recent_pods else 0.0

    def observe(self, fleet: FleetState, history: int, recent_s: float) -> PolicyMemory:
        """Close the idle gaps that ended since the last call (a pod arrived on the node or it is
        waking), open new ones, and note the largest pod running or pending now.

        Parameters
        ----------
        fleet : FleetState
        history : int, how many closed gaps to keep
        recent_s : float, s, the window of :attr:`recent_largest_pod_cores`
        """
        now = fleet.now_s
        idle_now = (fleet.pods == 0) & (fleet.state != WAKING)
        before = _aligned(self.open_since_s, self.names, fleet.names)
        closed = ~np.isnan(before) & ~idle_now
        gaps = np.concatenate([self.idle_gaps_s, now - before[closed]])[-history:]
        opened = np.where(idle_now, fleet.empty_since_s, np.nan)
        largest = float(fleet.largest_pod_cores.max(initial=0.0))
        largest = max(largest, float(fleet.pending.cores.max(initial=0.0)))
        kept = [(t, c) for t, c in self.recent_pods if t > now - recent_s and c > largest]
        recent = (*kept, (now, largest)) if largest > 0 else tuple(kept)
        return PolicyMemory(fleet.names, opened, gaps, recent)
