"""The working copy of one policy call and the choice of which asleep node to wake.

:class:`Work` is the fleet as the call's decisions leave it (a node told to sleep is
suspending, one told to wake is waking and brings its cores), plus the rate-limit budgets and
the decisions so far. :func:`pick_node` chooses among candidate nodes: never a suspect node
while a sound one will do, the cheapest (or the most efficient) within ``equal_cost_rel``, and
among those equals the one that has slept longest (wear levelling).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from eams.scheduler.power.policy_fleet import ASLEEP, AWAKE, SUSPENDING, WAKING, FleetState
from eams.scheduler.power.policy_plan import RATE_LIMIT, Action, Decision, Reason

RATE_WINDOW_S = 60.0
"""Transitions are limited per minute, as Slurm's SuspendRate and ResumeRate are."""


@dataclass
class Work:
    """Mutable state of one :meth:`PowerPolicy.decide` call (arrays of length N).

    Attributes
    ----------
    state : (N,) int8, power states after this call's decisions
    suspect : (N,) bool
    failed_wakes : (N,) int
    spare_cores, spare_mem_mib : (N,) float, capacity not yet claimed: free cores of awake
        nodes, the cores a waking node brings minus the pending pods counted on it
    wakes_left, sleeps_left : int, what the rate limits still allow
    decisions : list of Decision
    held : list of Decision, the first held back of each action (one is enough to say why)
    held_total : int, how many were held back
    sleepable : (N,) bool, sleep state measured and no role forbids sleeping
    break_even_s : (N,) float, s (:func:`~.policy_costs.break_even_s`)
    """

    fleet: FleetState
    state: NDArray[np.int8]
    suspect: NDArray[np.bool_]
    failed_wakes: NDArray[np.int64]
    spare_cores: NDArray[np.float64]
    spare_mem_mib: NDArray[np.float64]
    wakes_left: int
    sleeps_left: int
    decisions: list[Decision] = field(default_factory=list)
    held: list[Decision] = field(default_factory=list)
    held_total: int = 0
    sleepable: NDArray[np.bool_] = field(default_factory=lambda: np.zeros(0, bool))
    break_even_s: NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))

    @classmethod
    def start(cls, fleet: FleetState, resume_rate: int, suspend_rate: int) -> Work:
        """The fleet as it is, with the budgets left in the current minute."""
        now = fleet.now_s
        waking = fleet.state == WAKING
        awake = fleet.state == AWAKE
        spare = np.where(awake, fleet.cores - fleet.used_cores, np.where(waking, fleet.cores, 0))
        spare_mem = np.where(
            awake, fleet.mem_mib - fleet.used_mem_mib, np.where(waking, fleet.mem_mib, 0)
        )
        since = now - RATE_WINDOW_S + 1e-6  # a transition exactly a minute old is out
        woke = int(np.count_nonzero(fleet.last_wake_s > since))
        slept = int(np.count_nonzero(fleet.last_sleep_s > since))
        return cls(
            fleet,
            fleet.state.copy(),
            fleet.suspect.copy(),
            fleet.failed_wakes.copy(),
            np.maximum(spare, 0.0),
            np.maximum(spare_mem, 0.0),
            max(resume_rate - woke, 0),
            max(suspend_rate - slept, 0),
        )

    def mark(self, n: int, action: Action, reason: Reason, numbers: dict, pods=()) -> bool:
        """Record a decision on node ``n`` and apply it to the working state; a sleep or wake
        beyond the rate limit is held instead. Returns whether it was made."""
        decision = Decision(action, self.fleet.names[n], n, reason, numbers, tuple(pods))
        if action is Action.WAKE:
            if self.wakes_left <= 0:
                self.hold(decision)
                return False
            self.wakes_left -= 1
            self.state[n] = WAKING
            self.spare_cores[n] = self.fleet.cores[n]
            self.spare_mem_mib[n] = self.fleet.mem_mib[n]
        elif action is Action.SLEEP:
            if self.sleeps_left <= 0:
                self.hold(decision)
                return False
            self.sleeps_left -= 1
            self.state[n] = SUSPENDING
            self.spare_cores[n] = self.spare_mem_mib[n] = 0.0
        else:  # a phase timed out: asleep and suspect
            self.state[n] = ASLEEP
            self.suspect[n] = True
            self.failed_wakes[n] += action is Action.WAKE_FAILED
            self.spare_cores[n] = self.spare_mem_mib[n] = 0.0
        self.decisions.append(decision)
        return True

    def hold(self, decision: Decision) -> None:
        """Count a decision the rate limit holds back; keep the first of its action."""
        self.held_total += 1
        if all(h.action is not decision.action for h in self.held):
            self.held.append(dataclasses.replace(decision, held_by=RATE_LIMIT))


def retry_at_s(fleet: FleetState, suspect, failed_wakes, base_s: float, cap_s: float):
    """When each node may be woken again: for a suspect node its last attempt (wake or sleep)
    + ``base_s``·2^(k−1), capped at ``cap_s`` (k its failed wakes, at least 1), so a node that
    does not come back is retried ever more rarely and never in a loop; −inf for a sound node.
    Shape (N,), s."""
    last = np.fmax(fleet.last_wake_s, fleet.last_sleep_s)
    last = np.where(np.isnan(last), fleet.state_since_s, last)
    k = np.maximum(failed_wakes, 1)
    backoff = np.minimum(base_s * np.exp2(np.minimum(k - 1, 30)), cap_s)
    return np.where(suspect, last + backoff, -np.inf)


def pick_node(
    candidates: NDArray[np.int64],
    cost: NDArray[np.float64],
    suspect: NDArray[np.bool_],
    slept_s: NDArray[np.float64],
    equal_rel: float,
) -> int:
    """The node to wake among ``candidates`` (M,) with ``cost`` (M,) (lower is better):
    sound nodes before suspect ones, then every node within ``equal_rel`` of the cheapest (a
    NaN cost — an unmeasured wake — ranks last),
    then the longest asleep (``slept_s``, (M,)), then the lowest index."""
    sound = ~suspect
    pool = np.flatnonzero(sound) if sound.any() else np.arange(candidates.size)
    cost = np.where(np.isnan(cost), np.inf, cost)  # unmeasured: last, but still a candidate
    best = cost[pool].min()
    if np.isinf(best):
        equal = pool[np.isinf(cost[pool])]
    else:
        equal = pool[cost[pool] <= best + abs(best) * equal_rel]
    longest = equal[slept_s[equal] == slept_s[equal].max()]
    return int(candidates[longest[np.argmin(candidates[longest])]])
