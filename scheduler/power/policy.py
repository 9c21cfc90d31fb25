"""The power manager's policy: which nodes sleep and which wake — a pure core (no I/O, no
clock of its own, deterministic), driven with the fleet state (:mod:`.policy_fleet`) and its
own memory (:mod:`.policy_plan`), returning decisions with reasons and numbers.

One call (:meth:`PowerPolicy.decide`) does, in order:

1. **Phase timeouts** — a node waking for longer than its measured wake time × ``wake_margin``
   (``unknown_phase_timeout_s`` if unmeasured) is a failed wake, a node suspending past
   suspend time × ``suspend_margin`` a failed suspend: both become *asleep and suspect*, never
   a terminal state (Slurm marks a node that misses ResumeTimeout DOWN and a person must
   resume it). A suspect node is woken only when no sound node will do (a sound node slept
   within ``cooldown_s`` will not do for a reserve or floor wake, step 5), and again only after
   an exponential backoff (``suspect_retry_s``·2^(k−1), at most ``suspect_retry_max_s``).
2. **Wakes for pending pods** — pods pending longer than ``wake_after_s`` that fit no awake or
   waking node (cores, memory, their static predicates) get the cheapest asleep node that fits
   (wake energy + the pods' §5.1 energy there, :mod:`.policy_costs`), largest pod first, the
   others packed onto the nodes already chosen; a failed wake of the previous call leaves its
   pods unserved, so this step wakes the next node. **Market wakes**: a pending pod the market
   cleared onto an asleep node (the extender's wake request, ``PendingPods.wake_node``: its bid
   there, wake energy and latency priced in, beat every awake node's) wakes exactly that node
   at once, if the safety rules let it (not suspect or past its backoff, the rate limit); the
   market, not this policy, decides which asleep node is worth a pod's wait
   (``eams.scheduler.extender.wakes``).
3. **Which nodes stay awake** — the busy ones, those whose role forbids sleeping
   (:data:`~.policy_fleet.NO_SLEEP_ROLES`, Slurm's SuspendExcNodes) or that have no measured
   sleep state, then the most efficient empty ones (calibrated work per joule) until the free
   cores reach the reserve (``reserve_cores``; default the largest pod pending or seen within
   ``recent_s``) and ``min_awake`` nodes are awake.
4. **Sleeps** — every other awake node that is empty (no pods but DaemonSets) for
   ``idle_before_sleep_s`` (Slurm's SuspendTime, cluster-autoscaler's scale-down-unneeded-
   time), was not woken within ``min_awake_s`` (hysteresis), fits no pending pod, and whose
   expected idle time beats the break-even of its measured wake and suspend energy; least
   efficient first.
5. **Reserve and floor wakes** — if the awake and waking nodes' free cores are below the
   reserve or fewer than ``min_awake`` nodes are up, the most efficient asleep node wakes (not
   within ``cooldown_s`` of its sleep).
6. **Health wakes** — a node asleep for ``max_asleep_s`` is woken to prove it still wakes.

Every wake or sleep counts against ``resume_rate_per_min`` / ``suspend_rate_per_min``
(Slurm's ResumeRate / SuspendRate); one held back is in :attr:`Plan.held`. Among equals
(costs or efficiencies within ``equal_cost_rel``) the node asleep longest wakes (wear
levelling). Never slept: a node with pods, one a pending pod fits, a role node, the last
``min_awake`` awake nodes. Anchors: Slurm's power saving guide; cluster-autoscaler's FAQ
(scale-down); Karpenter's disruption controller (taint first, undo on failure, budgets).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict, Field

from eams.scheduler.power import policy_costs as costs
from eams.scheduler.power.policy_fleet import ASLEEP, AWAKE, SUSPENDING, WAKING, FleetState
from eams.scheduler.power.policy_plan import Action, Decision, PolicyMemory, Reason
from eams.scheduler.power.policy_wake import RATE_WINDOW_S, Work, pick_node, retry_at_s

__all__ = ["Plan", "PolicyConfig", "PowerPolicy"]

EPS_S = 1e-6
"""A threshold reached within this (s) counts as reached: ``next_check_s`` is computed as
``since + span`` and compared again as ``now − since``, which floating point can leave a hair
short."""


class PolicyConfig(BaseModel):
    """The policy's settings (seconds, cores; unknown keys refused). Defaults and where they
    come from: the module docstring; Slurm's defaults for the rates (SuspendRate 60,
    ResumeRate 300 per minute)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    idle_before_sleep_s: float = Field(default=120.0, ge=0)
    min_awake_s: float = Field(default=300.0, ge=0)
    wake_after_s: float = Field(default=2.0, ge=0)
    reserve_cores: float | None = Field(default=None, ge=0)
    recent_s: float = Field(default=900.0, gt=0)
    min_awake: int = Field(default=1, ge=0)
    wake_margin: float = Field(default=2.0, ge=1)
    suspend_margin: float = Field(default=2.0, ge=1)
    unknown_phase_timeout_s: float = Field(default=600.0, gt=0)
    max_asleep_s: float = Field(default=86_400.0, gt=0)
    cooldown_s: float = Field(default=120.0, ge=0)
    suspect_retry_s: float = Field(default=300.0, gt=0)
    suspect_retry_max_s: float = Field(default=3600.0, gt=0)
    suspend_rate_per_min: int = Field(default=60, ge=1)
    resume_rate_per_min: int = Field(default=300, ge=1)
    equal_cost_rel: float = Field(default=0.02, ge=0)
    idle_history: int = Field(default=32, ge=1)
    assumed_runtime_s: float = Field(default=600.0, gt=0)


@dataclass(frozen=True)
class Plan:
    """One call's outcome.

    Attributes
    ----------
    decisions : tuple of Decision, to apply now, in order
    held : tuple of Decision, the first sleep and the first wake a rate limit held back
        (``held_by`` says which limit)
    held_total : int, how many decisions the rate limits held back in all
    next_check_s : float or None, the next instant a timer may change the answer without any
        new event (a node reaching ``idle_before_sleep_s``, a phase timeout, a pod reaching
        ``wake_after_s``…); ``None`` when nothing is timed
    memory : PolicyMemory, to pass to the next call
    """

    decisions: tuple[Decision, ...]
    held: tuple[Decision, ...]
    held_total: int
    next_check_s: float | None
    memory: PolicyMemory


class PowerPolicy:
    """The policy (module docstring). ``decide`` is a pure function of its arguments.

    Parameters
    ----------
    config : PolicyConfig, optional
    """

    def __init__(self, config: PolicyConfig | None = None) -> None:
        self.config = config or PolicyConfig()

    def decide(self, fleet: FleetState, memory: PolicyMemory | None = None) -> Plan:
        """Decide what to sleep and wake now.

        Parameters
        ----------
        fleet : FleetState, the fleet at ``fleet.now_s``
        memory : PolicyMemory, optional, the previous call's ``Plan.memory``

        Returns
        -------
        Plan
        """
        cfg = self.config
        memory = (memory or PolicyMemory()).observe(fleet, cfg.idle_history, cfg.recent_s)
        work = Work.start(fleet, cfg.resume_rate_per_min, cfg.suspend_rate_per_min)
        timers: list[NDArray] = []
        _timeouts(work, cfg, timers)
        fits = _fits(fleet)
        measured = costs.sleep_measured(fleet)
        work.sleepable = measured & ~fleet.no_sleep
        work.break_even_s = costs.break_even_s(fleet, measured)
        model = costs.above_sleep_floor(fleet, measured)
        retry = retry_at_s(
            fleet, work.suspect, work.failed_wakes, cfg.suspect_retry_s, cfg.suspect_retry_max_s
        )
        timers.append(retry[np.isfinite(retry)])
        _pending_wakes(work, cfg, fits, model, retry, timers)
        reserve = cfg.reserve_cores
        if reserve is None:
            reserve = memory.recent_largest_pod_cores
            timers.append(np.asarray([t + cfg.recent_s for t, _ in memory.recent_pods]))
        _sleeps(work, cfg, fits, memory, reserve, timers)
        _floor_wakes(work, cfg, reserve, retry, timers)
        _health_wakes(work, cfg, retry, timers)
        if work.held:
            last = np.concatenate([fleet.last_wake_s, fleet.last_sleep_s])
            timers.append(last[last > fleet.now_s - RATE_WINDOW_S] + RATE_WINDOW_S)
        stamps = np.concatenate([np.ravel(t) for t in timers])
        future = stamps[stamps > fleet.now_s + EPS_S]
        next_check = float(future.min()) if future.size else None
        return Plan(tuple(work.decisions), tuple(work.held), work.held_total, next_check, memory)


def _timeouts(work: Work, cfg: PolicyConfig, timers: list[NDArray]) -> None:
    fleet = work.fleet
    for state, span, margin, action, reason in (
        (WAKING, fleet.wake_time_s, cfg.wake_margin, Action.WAKE_FAILED, Reason.WAKE_TIMEOUT),
        (
            SUSPENDING,
            fleet.suspend_time_s,
            cfg.suspend_margin,
            Action.SUSPEND_FAILED,
            Reason.SUSPEND_TIMEOUT,
        ),
    ):
        timeout = np.where(np.isnan(span), cfg.unknown_phase_timeout_s, span * margin)
        in_phase = fleet.state == state
        deadline = fleet.state_since_s + timeout
        for n in np.flatnonzero(in_phase & (fleet.now_s >= deadline - EPS_S)):
            numbers = {
                "in_phase_s": fleet.now_s - fleet.state_since_s[n],
                "timeout_s": float(timeout[n]),
                "failed_wakes": float(fleet.failed_wakes[n] + (action is Action.WAKE_FAILED)),
            }
            work.mark(int(n), action, reason, numbers)
        timers.append(deadline[in_phase])


def _fits(fleet: FleetState) -> NDArray[np.bool_]:
    """(P, N) bool: pending pod p's static predicates admit node n and n's allocatable holds
    it (whatever runs there now)."""
    pods = fleet.pending
    eligible = pods.eligible[pods.profile]
    return (
        eligible
        & (pods.cores[:, None] <= fleet.cores[None, :] + 1e-9)
        & (pods.mem_mib[:, None] <= fleet.mem_mib[None, :] + 1e-9)
    )


def _pending_wakes(work, cfg, fits, model, retry, timers) -> None:
    fleet = work.fleet
    pods = fleet.pending
    now = fleet.now_s
    age = now - pods.pending_since_s
    requested = pods.requested()
    timers.append(pods.pending_since_s[requested < 0] + cfg.wake_after_s)
    wakeable = (work.state == ASLEEP) & (retry <= now + EPS_S)
    if not wakeable.any():
        return  # nothing to wake: the claims below only serve the choice of a node to wake
    runtime = np.where(np.isnan(pods.runtime_ref_s), cfg.assumed_runtime_s, pods.runtime_ref_s)
    order = np.lexsort((np.arange(pods.size), -pods.mem_mib, -pods.cores))
    awake = (fleet.state == AWAKE) & (work.state == AWAKE)
    up = awake | (work.state == WAKING)
    due = (age >= cfg.wake_after_s - EPS_S) | (requested >= 0)
    for p in order[due[order]]:
        c, m = float(pods.cores[p]), float(pods.mem_mib[p])
        target = int(requested[p])
        if target >= 0 and work.state[target] == WAKING:
            _claim(work, target, c, m)  # the market's node is on its way
            continue
        if target >= 0 and wakeable[target] and fits[p, target]:
            asleep, reason = np.asarray([target]), Reason.MARKET
            cost = costs.wake_cost_j(fleet, model, c, float(runtime[p]), asleep)
        else:  # no request, or its node may not be woken now: the pod is served as any other
            room = fits[p] & up & (work.spare_cores + 1e-9 >= c)
            room &= work.spare_mem_mib + 1e-9 >= m
            if room.any():  # an awake node (the scheduler binds it there) or a waking one
                at = room & awake if (room & awake).any() else room
                _claim(work, int(np.flatnonzero(at)[0]), c, m)
                continue
            asleep, reason = np.flatnonzero(fits[p] & wakeable), Reason.PENDING
            if asleep.size == 0 or age[p] < cfg.wake_after_s - EPS_S:
                continue
            cost = costs.wake_cost_j(fleet, model, c, float(runtime[p]), asleep)
        slept = now - fleet.state_since_s[asleep]
        n = pick_node(asleep, cost, work.suspect[asleep], slept, cfg.equal_cost_rel)
        numbers = {
            "pending_s": float(age[p]),
            "pod_cores": c,
            "wake_energy_j": float(fleet.wake_energy_j[n]),
            "cost_j": float(cost[np.flatnonzero(asleep == n)[0]]),
            "wake_time_s": float(fleet.wake_time_s[n]),
        }
        if not work.mark(n, Action.WAKE, reason, numbers, (pods.names[p],)):
            return  # the rate limit is reached: later pods wait for the next call
        _claim(work, n, c, m)
        wakeable[n] = False
        up[n] = True


def _claim(work: Work, n: int, cores: float, mem_mib: float) -> None:
    """Count a pending pod on node ``n``'s spare capacity (where it will be bound)."""
    work.spare_cores[n] -= cores
    work.spare_mem_mib[n] -= mem_mib


def _sleeps(work, cfg, fits, memory, reserve, timers) -> None:
    fleet = work.fleet
    now = fleet.now_s
    awake = work.state == AWAKE
    sleepable = work.sleepable
    empty = fleet.pods == 0
    base = awake & ~(empty & sleepable)
    efficiency = costs.work_per_joule(fleet, reserve)
    waking = work.state == WAKING
    free = float(work.spare_cores[base | waking].sum())
    count = int(np.count_nonzero(base))
    cands = np.flatnonzero(awake & empty & sleepable)
    # most efficient first; among equals the most recently woken stays (it has slept least)
    cands = cands[np.lexsort((cands, -fleet.state_since_s[cands], -efficiency[cands]))]
    keep = 0
    while keep < cands.size and (free < reserve - 1e-9 or count < cfg.min_awake):
        free += float(work.spare_cores[cands[keep]])
        count += 1
        keep += 1
    rest = cands[keep:][::-1]  # least efficient first
    if rest.size == 0:
        return
    t_be = work.break_even_s[rest]
    idle_s = now - fleet.empty_since_s[rest]
    expected = costs.expected_idle_s(idle_s, memory.idle_gaps_s)
    since_wake = now - np.nan_to_num(fleet.last_wake_s[rest], nan=-np.inf)
    wanted = fits[:, rest].any(axis=0) if fits.shape[0] else np.zeros(rest.size, bool)
    timers.append(fleet.empty_since_s[rest] + cfg.idle_before_sleep_s)
    timers.append(fleet.last_wake_s[rest] + cfg.min_awake_s)
    recheck = costs.idle_recheck_s(idle_s, memory.idle_gaps_s, t_be)
    timers.append(fleet.empty_since_s[rest] + recheck + 1e-6)
    ready = (idle_s >= cfg.idle_before_sleep_s - EPS_S) & (since_wake >= cfg.min_awake_s - EPS_S)
    for i in np.flatnonzero(ready & ~wanted & (expected >= t_be - EPS_S)):
        if work.sleeps_left <= 0 and work.held:
            work.held_total += 1  # the first held sleep is listed; count the others
            continue
        numbers = {
            "empty_s": float(idle_s[i]),
            "expected_idle_s": float(expected[i]),
            "break_even_s": float(t_be[i]),
            "work_per_joule": float(efficiency[rest[i]]),
        }
        work.mark(int(rest[i]), Action.SLEEP, Reason.IDLE, numbers)


def _floor_wakes(work, cfg, reserve, retry, timers) -> None:
    fleet = work.fleet
    now = fleet.now_s
    efficiency = costs.work_per_joule(fleet, reserve)
    since_sleep = now - np.nan_to_num(fleet.last_sleep_s, nan=-np.inf)
    timers.append(fleet.last_sleep_s + cfg.cooldown_s)
    while True:
        up = (work.state == AWAKE) | (work.state == WAKING)
        free = float(work.spare_cores[up].sum())
        count = int(np.count_nonzero(up))
        if count < cfg.min_awake:
            reason = Reason.MIN_AWAKE
        elif free < reserve - 1e-9:
            reason = Reason.RESERVE
        else:
            return
        asleep = np.flatnonzero(
            (work.state == ASLEEP)
            & (retry <= now + EPS_S)
            & (since_sleep >= cfg.cooldown_s - EPS_S)
        )
        if asleep.size == 0:
            return
        slept = now - fleet.state_since_s[asleep]
        n = pick_node(asleep, -efficiency[asleep], work.suspect[asleep], slept, cfg.equal_cost_rel)
        numbers = {"free_cores": free, "reserve_cores": float(reserve), "awake": float(count)}
        if not work.mark(n, Action.WAKE, reason, numbers):
            return


def _health_wakes(work, cfg, retry, timers) -> None:
    fleet = work.fleet
    now = fleet.now_s
    asleep = work.state == ASLEEP
    due = fleet.state_since_s + cfg.max_asleep_s
    timers.append(due[asleep])
    for n in np.flatnonzero(asleep & (now >= due - EPS_S) & (retry <= now + EPS_S)):
        work.mark(
            int(n), Action.WAKE, Reason.ASLEEP_TIMEOUT, {"asleep_s": now - fleet.state_since_s[n]}
        )
