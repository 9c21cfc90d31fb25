"""The power manager's loop: observe → decide → (active) mark, then act; (shadow) record only.

:class:`PowerManager` drives the pure :class:`~.policy.PowerPolicy` with the fleet a
:class:`~.ports.FleetObserver` sees, and keeps what the policy cannot see between ticks: its
:class:`~.policy_plan.PolicyMemory` and each node's phase (:class:`NodePhase`: awake,
suspending, asleep, waking; since when; last wake and sleep; suspect; failed wakes).

Each :meth:`PowerManager.step` does, in order:

1. **Observe** (an observer error: nothing is decided this tick, counted and logged).
2. **Sync the phases with the facts**: a waking node that is Ready, whose kubelet heartbeat
   (``Observation.heartbeat_s``) is newer than the one seen when the wake was sent and whose agent
   reported after the wake was sent has re-registered — the wake counts (never when the command was
   sent; never on a ``Ready=True`` left from before the sleep, which the node-lifecycle controller
   keeps for its grace period) and, in active mode, the node is untainted and uncordoned; a waking
   node whose agent reports again but stays NotReady (or without a new heartbeat) for
   ``restart_agent_after_s`` gets one ``systemctl restart k3s-agent`` per wake (k3s may need it
   after a resume); a suspending node whose agent has been silent for ``agent_silent_s`` and whose
   measured suspend time has passed is asleep (a magic packet sent while it is still going down is
   lost); an asleep node (suspect or not) that re-registers is awake again (a late wake, or a
   person's). A node NotReady with no sleep of ours to explain it is *unmanaged* this tick (left
   out of the fleet: a failed node is not the manager's to sleep or wake), and so is a node that is
   not awake but runs pods. The node-lifecycle taints (``node.kubernetes.io/unreachable``,
   ``not-ready``) the controller adds while a node sleeps are not the manager's: a woken node keeps
   them until its kubelet reports, and the manager never removes them.
3. **Decide** with the phases as the fleet's state columns.
4. **Apply** (active mode): ``sleep`` — the node is marked first (cordon, taint
   ``eams.io/asleep:NoSchedule``, annotate), then told to sleep; a refusal (the actuator's
   safety rules: pods that are not DaemonSets', a role that never sleeps) is undone (untaint,
   uncordon), as Karpenter undoes a failed disruption; a failure may have left the node going
   down, so it stays marked and suspending until the suspend timeout (asleep and suspect) or
   its agent reporting again (awake, released) resolves it.
   A marker error means the node is not told to sleep. ``wake`` — the wake is sent (phase
   waking); one that cannot be sent leaves the node asleep and suspect with a failed wake, so
   the next tick wakes the next node. ``wake-failed`` / ``suspend-failed`` (the policy's phase
   timeouts) — asleep and suspect, never a terminal state (a suspend-failed node whose agent
   has been silent since the sleep was sent is asleep and sound: it went down). In shadow mode
   nothing is marked or switched and the phases follow only the facts; a decision is logged,
   counted and recorded once while it stands (not at every tick).

The manager never drains: it sleeps only nodes with no pods but DaemonSets', so no
PodDisruptionBudget is ever in play (the actuator re-checks the pods after the cordon).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from eams.actuators.transitions import Transition
from eams.errors import EamsError
from eams.scheduler.power.metrics import ManagerMetrics
from eams.scheduler.power.policy import Plan, PowerPolicy
from eams.scheduler.power.policy_fleet import ASLEEP, AWAKE, SUSPENDING, WAKING, FleetState
from eams.scheduler.power.policy_plan import Action, Decision, PolicyMemory
from eams.scheduler.power.ports import (
    PHASE_NAMES,
    SUSPECT,
    Actuator,
    FleetObserver,
    NodeMarker,
    Observation,
    RecordSink,
)
from eams.scheduler.record.schema import Power

log = logging.getLogger("eams.power.manager")

Mode = Literal["shadow", "active"]
RE_REGISTERED = "re-registered"
"""Reason of the record and annotation when a wake is confirmed (or an asleep node is back)."""


class ManagerConfig(BaseModel):
    """The manager's own settings (s; unknown keys refused). The policy's are
    :class:`~.policy.PolicyConfig`.

    Attributes
    ----------
    agent_silent_s : float
        A suspending node whose agent has not reported for this long (and whose measured
        suspend time has passed) is asleep. At least the agent's report interval (an observer
        that polls the agent at each tick: any value up to the tick interval), and under the
        policy's suspend timeout (measured time × ``suspend_margin``) so that a sound suspend
        is confirmed before it times out; one that times out while the agent has stayed silent
        since the sleep was sent is asleep and sound, not suspect.
    restart_agent_after_s : float
        A waking node whose agent reports again but that is not Ready this long after the
        wake was sent gets its k3s agent restarted (once per wake).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    agent_silent_s: float = Field(default=5.0, gt=0)
    restart_agent_after_s: float = Field(default=60.0, gt=0)


@dataclass
class NodePhase:
    """One node's phase as the manager keeps it (times on the observer's clock, NaN never)."""

    state: int
    since_s: float
    last_wake_s: float = math.nan
    last_sleep_s: float = math.nan
    suspect: bool = False
    failed_wakes: int = 0
    agent_restarted: bool = False
    heartbeat_then_s: float = math.nan
    """The kubelet heartbeat seen when the node was last told to sleep or wake, or first seen
    asleep (kubelet's clock): it is back only with a newer one."""


def _nan_lt(a: float, b: float) -> bool:
    return not math.isnan(a) and (math.isnan(b) or a > b)


class PowerManager:
    """The loop (module docstring).

    Parameters
    ----------
    policy : PowerPolicy
    observer : FleetObserver
    marker : NodeMarker
    actuator : Actuator
    recorder : RecordSink, optional
        Gets one :class:`~eams.scheduler.record.Power` record per decision and per confirmed
        wake.
    mode : {"shadow", "active"}
    config : ManagerConfig, optional
    metrics : ManagerMetrics, optional
        Default: on a private registry (:attr:`metrics`).

    Raises
    ------
    ValueError
        ``mode`` is neither shadow nor active.
    """

    def __init__(
        self,
        policy: PowerPolicy,
        observer: FleetObserver,
        marker: NodeMarker,
        actuator: Actuator,
        recorder: RecordSink | None = None,
        mode: Mode = "shadow",
        config: ManagerConfig | None = None,
        metrics: ManagerMetrics | None = None,
    ) -> None:
        if mode not in ("shadow", "active"):
            raise ValueError(f"mode = {mode!r}: must be 'shadow' or 'active'")
        from prometheus_client import CollectorRegistry

        self.policy, self.observer, self.marker, self.actuator = policy, observer, marker, actuator
        self.recorder, self.mode = recorder, mode
        self.config = config or ManagerConfig()
        self.metrics = metrics or ManagerMetrics(CollectorRegistry())
        self.memory: PolicyMemory | None = None
        self.phases: dict[str, NodePhase] = {}
        self.last_plan: Plan | None = None
        self._standing: set[tuple[str, str]] = set()
        self._seen: dict[str, float] = {}
        self._heartbeat: dict[str, float] = {}

    @property
    def active(self) -> bool:
        """True in active mode."""
        return self.mode == "active"

    def step(self, now_s: float) -> Plan:
        """One tick (module docstring) at ``now_s`` (s, the observer's clock).

        Returns
        -------
        Plan
            The policy's plan (no decisions when the fleet could not be observed).
        """
        try:
            obs = self.observer.observe(now_s)
        except EamsError as exc:
            self.metrics.observe_errors.inc()
            log.warning("power manager: fleet not observed, nothing decided: %s", exc)
            return Plan((), (), 0, None, self.memory or PolicyMemory())
        managed = self._sync(obs, now_s)
        fleet = self._fleet(obs.fleet, managed)
        plan = self.policy.decide(fleet, self.memory)
        self.memory = plan.memory
        standing = set()
        for decision in plan.decisions:
            key = (decision.node, str(decision.action))
            standing.add(key)
            if self.active or key not in self._standing:
                self._apply(decision, fleet, now_s)
        self._standing = standing if not self.active else set()
        for held in plan.held:
            self.metrics.held.labels(str(held.action)).inc()
        self._count(obs.fleet.names, managed)
        self.last_plan = plan
        return plan

    # --- the phases ---------------------------------------------------------------------------

    def _sync(self, obs: Observation, now_s: float) -> np.ndarray:
        """Update the phases from ``obs``; returns the (N,) bool mask of managed nodes."""
        fleet, cfg = obs.fleet, self.config
        self._seen = dict(zip(fleet.names, obs.agent_seen_s.tolist(), strict=True))
        self._heartbeat = dict(zip(fleet.names, obs.heartbeat_s.tolist(), strict=True))
        managed = np.ones(fleet.size, dtype=bool)
        for i, name in enumerate(fleet.names):
            ready, seen = bool(obs.ready[i]), float(obs.agent_seen_s[i])
            phase = self.phases.get(name)
            if phase is None:  # first seen: a node we (or an earlier run) marked is asleep
                start = ASLEEP if obs.marked_asleep[i] else int(fleet.state[i])
                phase = self.phases[name] = NodePhase(start, now_s)
                phase.heartbeat_then_s = float(obs.heartbeat_s[i])
            was = phase.state
            # Ready on a heartbeat from after the last sleep or wake we sent, not a stale one
            ready_now = ready and _nan_lt(float(obs.heartbeat_s[i]), phase.heartbeat_then_s)
            if phase.state == WAKING:
                if ready_now and _nan_lt(seen, phase.last_wake_s):
                    self._back(name, phase, now_s, f"after {now_s - phase.since_s:.3g} s")
                elif (
                    _nan_lt(seen, phase.last_wake_s)
                    and now_s - phase.since_s >= cfg.restart_agent_after_s
                    and not phase.agent_restarted
                    and self.active
                ):
                    phase.agent_restarted = True
                    log.warning("power manager: %s reports but is NotReady: k3s agent", name)
                    self.actuator.restart_agent(name)
            elif phase.state == SUSPENDING:
                measured = float(np.nan_to_num(fleet.suspend_time_s[i], nan=0.0))
                silent = math.isnan(seen) or now_s - seen >= cfg.agent_silent_s
                if silent and now_s - phase.since_s >= measured:
                    phase.state, phase.since_s = ASLEEP, now_s
                    self._annotate(name, SUSPECT if phase.suspect else "asleep", "agent silent")
            elif phase.state == ASLEEP:
                last = np.nanmax([phase.last_wake_s, phase.last_sleep_s, phase.since_s])
                if ready_now and _nan_lt(seen, float(last)):
                    self._back(name, phase, now_s, "asleep node back")
            if was == AWAKE and obs.marked_asleep[i] and ready and self.active:
                self._release(name, "awake but still marked")  # a release that failed before
            if phase.state == AWAKE and not ready:
                managed[i] = False  # down, but not by us: not ours to sleep or wake
            if phase.state != AWAKE and fleet.pods[i] > 0:
                log.warning("power manager: %s is %s but runs pods: left alone", name, phase)
                managed[i] = False
        return managed

    def _back(self, name: str, phase: NodePhase, now_s: float, detail: str) -> None:
        """The node re-registered: awake; count and record the wake; release its marks."""
        was = phase.state
        phase.state, phase.since_s, phase.agent_restarted = AWAKE, now_s, False
        if was == WAKING:
            phase.suspect = False
            self.metrics.wakes_confirmed.inc()
        log.info("power manager: %s %s (%s)", name, RE_REGISTERED, detail)
        if self.active:
            self._release(name, f"{RE_REGISTERED} {detail}")
        self._record(now_s, name, None, "running", RE_REGISTERED, detail, {}, None)

    def _fleet(self, fleet: FleetState, managed: np.ndarray) -> FleetState:
        """``fleet``'s managed nodes, with the phase columns from :attr:`phases`."""
        if not managed.all():
            fleet = _subset(fleet, managed)
        p = [self.phases[name] for name in fleet.names]

        def column(get, dtype) -> np.ndarray:
            return np.asarray([get(x) for x in p], dtype=dtype).reshape(fleet.size)

        return replace(
            fleet,
            state=column(lambda x: x.state, np.int8),
            state_since_s=column(lambda x: x.since_s, float),
            last_wake_s=column(lambda x: x.last_wake_s, float),
            last_sleep_s=column(lambda x: x.last_sleep_s, float),
            suspect=column(lambda x: x.suspect, bool),
            failed_wakes=column(lambda x: x.failed_wakes, np.int64),
        )

    # --- applying a decision ------------------------------------------------------------------

    def _apply(self, d: Decision, fleet: FleetState, now_s: float) -> None:
        reason = d.line().split(" ", 2)[-1]  # "<reason> figures…" without action and node
        self.metrics.decisions.labels(str(d.action), str(d.reason), self.mode).inc()
        level = logging.WARNING if d.action in (Action.WAKE_FAILED, Action.SUSPEND_FAILED) else 20
        log.log(level, "power decision (%s): %s", self.mode, d.line())
        asleep_state = self.actuator.sleep_state(d.node)
        states = {
            Action.SLEEP: ("running", asleep_state),
            Action.WAKE: (asleep_state, "running"),
            Action.WAKE_FAILED: (None, asleep_state),
            Action.SUSPEND_FAILED: (None, asleep_state),
        }[d.action]
        if d.action is Action.WAKE_FAILED:
            self.metrics.failed_wakes.labels(d.node).inc()
        if not self.active:
            self._record(now_s, d.node, *states, str(d.reason), d.line(), d.numbers, None)
            return
        phase = self.phases[d.node]
        t: Transition | None = None
        if d.action is Action.SLEEP:
            t = self._sleep(d, fleet, phase, now_s, reason)
        elif d.action is Action.WAKE:
            t = self.actuator.wake(d.node, reason)
            phase.heartbeat_then_s = self._heartbeat.get(d.node, math.nan)
            if t.result == "ok":
                phase.state, phase.since_s, phase.last_wake_s = WAKING, now_s, now_s
                phase.agent_restarted = False
                self._annotate(d.node, "waking", reason)
            else:
                self._suspect(d.node, phase, now_s, wake=True, why=f"wake not sent: {t.detail}")
                phase.last_wake_s = now_s
        elif d.action is Action.SUSPEND_FAILED and not _nan_lt(
            self._seen.get(d.node, math.nan), phase.last_sleep_s
        ):  # silent since the sleep was sent: it went down, only the confirmation lagged
            phase.state, phase.since_s = ASLEEP, now_s
            self._annotate(d.node, "asleep", f"{reason}; agent silent since the sleep")
        else:
            self._suspect(d.node, phase, now_s, wake=d.action is Action.WAKE_FAILED, why=reason)
        detail = d.line() + (f"; {t.detail}" if t is not None and t.detail else "")
        action = t.method if t is not None else None
        result = t.result if t is not None else None
        self._record(now_s, d.node, *states, str(d.reason), detail, d.numbers, action, result)

    def _sleep(self, d: Decision, fleet: FleetState, phase: NodePhase, now_s: float, reason: str):
        if fleet.pods[d.index] > 0:  # the policy never asks this; never act on it if it did
            log.error("power manager: refused to sleep %s: it runs pods", d.node)
            return None
        try:
            self.marker.mark_asleep(d.node, reason)
        except EamsError as exc:
            log.warning("power manager: %s not marked, not slept: %s", d.node, exc)
            return None
        t = self.actuator.sleep(d.node, reason)
        if t.result == "refused":
            self._release(d.node, f"sleep refused: {t.detail}")  # undo: nothing was done
        else:  # ok, or failed part-way: the node may be going down, so it stays marked and the
            # suspend timeout (or its agent reporting again) resolves it
            phase.state, phase.since_s, phase.last_sleep_s = SUSPENDING, now_s, now_s
            phase.heartbeat_then_s = self._heartbeat.get(d.node, math.nan)
        return t

    def _suspect(self, name: str, phase: NodePhase, now_s: float, *, wake: bool, why: str) -> None:
        phase.state, phase.since_s, phase.suspect = ASLEEP, now_s, True
        if wake:
            phase.failed_wakes += 1
            if why.startswith("wake not sent"):
                self.metrics.failed_wakes.labels(name).inc()
        log.warning("power manager: %s asleep and suspect (%s)", name, why)
        self._annotate(name, SUSPECT, why)

    # --- the ports, guarded -------------------------------------------------------------------

    def _annotate(self, name: str, state: str, reason: str) -> None:
        if not self.active:
            return
        try:
            self.marker.annotate(name, state, reason)
        except EamsError as exc:
            log.warning("power manager: %s not annotated: %s", name, exc)

    def _release(self, name: str, reason: str) -> None:
        try:
            self.marker.release(name, reason)
        except EamsError as exc:  # retried at the next tick that sees it awake and marked
            log.warning("power manager: %s not released: %s", name, exc)

    def _record(
        self, now_s, node, from_state, to_state, reason, detail, numbers, action, result=None
    ) -> None:
        if self.recorder is None:
            return
        self.recorder.submit(
            Power(
                at_s=now_s,
                mode=self.mode,
                node=node,
                from_state=from_state,
                to_state=to_state,
                reason=reason,
                detail=detail,
                numbers={k: float(v) for k, v in numbers.items()},
                action=action,
                result=result,
            )
        )

    def _count(self, names: tuple[str, ...], managed: np.ndarray) -> None:
        counts: dict[str, int] = {}
        for name, ok in zip(names, managed, strict=True):
            phase = self.phases[name]
            word = PHASE_NAMES[phase.state] if ok else "unmanaged"
            counts[word] = counts.get(word, 0) + 1
            counts["suspect"] = counts.get("suspect", 0) + int(bool(phase.suspect and ok))
        self.metrics.set_nodes(counts)

    # --- the loop -----------------------------------------------------------------------------

    def run(
        self,
        stop: threading.Event,
        interval_s: float,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        """Call :meth:`step` every ``interval_s`` (sooner when the plan's ``next_check_s``
        comes first) until ``stop`` is set.

        The ticks keep to a grid on the monotonic clock, as the agent's samples do: the wait
        after a step is what is left of the interval, so a step's own time (its actions: a
        soft-off waited for, an outlet switched) and a late wake-up on a busy host are not
        added to every later interval; after a step that outlasted the interval, the next
        tick is the grid's next point (missed ticks are not run in a burst). An early check
        (``next_check_s``) leaves the grid as it was."""
        due = monotonic()
        while not stop.is_set():
            plan = self.step(clock())
            now = monotonic()
            if now >= due:  # a regular tick: the grid's next point after now
                due += interval_s * (math.floor((now - due) / interval_s) + 1)
            wait = due - now
            if plan.next_check_s is not None:
                wait = min(wait, max(plan.next_check_s - clock(), 0.05))
            stop.wait(wait)


def _subset(fleet: FleetState, keep: np.ndarray) -> FleetState:
    """The nodes of ``fleet`` where ``keep`` (N,) is True (pending pods' eligibility cut too)."""
    columns = {}
    for name in FleetState.__dataclass_fields__:
        value = getattr(fleet, name)
        if isinstance(value, np.ndarray) and value.shape[:1] == (fleet.size,):
            columns[name] = value[keep]
    names = tuple(n for n, k in zip(fleet.names, keep, strict=True) if k)
    pending = replace(fleet.pending, eligible=fleet.pending.eligible[:, keep])
    return replace(fleet, names=names, pending=pending, **columns)
