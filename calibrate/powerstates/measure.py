"""``eams calibrate power-states NODE``: measure a node's sleep draws and what each transition
costs, with the meter, repeated with their spread.

One repeat, for a node of method wol (the others skip what they cannot do)::

    running ─systemctl suspend─▶ suspended: P_suspend ─magic packet─▶ running (agent back)
    running ─systemctl poweroff─▶ soft-off: P_off ─outlet off, on (or magic packet)─▶ running

- An action's instant is the middle of its state-changing step (``systemctl`` over the open
  SSH connection, the SNMP SET without the plan's read or the read-back, the datagram), its
  half-width half the step.
- A suspend or a shutdown ends when the outlet's power has settled below the running draw
  (:meth:`~.trace.PowerTrace.settled_low`); the level is then averaged over ``measure_s``:
  P_suspend, P_off.
- A wake or a boot ends when the node's agent answers again (:class:`~.probes.AgentProbe`):
  between the last probe that failed and the first that answered. Where the Kubernetes API
  is reachable, the Node's Ready condition is timed too, when it went NotReady meanwhile.
- Energy is the outlet's power integrated from the action to the end
  (:meth:`~.trace.PowerTrace.energy_j`), its bound the trace's plus the end's and the start's
  uncertainty at the window's highest draw.
- A repeat timed far more loosely than the others (:data:`RETAKE_FACTOR`: the host stalled) is
  retaken and left out; the calibration's notes say which.

Every action goes through :class:`~.actions.PowerActions`, so the safety rules hold and each
is logged and counted. A measurement that fails after the node went to sleep wakes it again
(and says whether that worked).
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

from eams.actuators.actions import PowerActions
from eams.actuators.errors import PowerActionFailed, PowerStateError
from eams.actuators.methods import suspends
from eams.actuators.transitions import Transition
from eams.calibrate.powerstates.estimate import estimate
from eams.calibrate.powerstates.probes import Probe
from eams.calibrate.powerstates.record import MIN_REPEATS, PowerStates, TransitionCost
from eams.calibrate.powerstates.trace import PowerTrace

RETAKE_FACTOR = 4.0
"""A repeat whose transition was timed more than this many times as loosely as the median of
the same transition's repeats not judged stalled already (and more loosely than
:data:`STALL_FLOOR_S` and twice the plan's ``sample_s``) stalled: the host did not run the
probes or the meter's reads for a while (a busy 2-core machine: one repeat's boot end timed to
±1.07 s against ±0.1 s, its energy 390 J against the node's 212 J). Such a repeat is retaken,
up to ``repeats`` times in all, and left out when enough others remain
(:class:`StalledRepeats`). The factor is this project's choice: a probe's spacing varies about
twofold with the load."""

STALL_FLOOR_S = 0.05
"""No repeat timed within this (s) is stalled, whatever the others: the measurement's own
polling step (:meth:`PowerStateMeasurement._sample_for` sleeps 0.05 s at a time)."""


@dataclass(frozen=True, slots=True)
class MeasurePlan:
    """How a power-state calibration runs.

    Attributes
    ----------
    repeats : int
        Repeats of each transition (≥ 3).
    sample_s : float
        Pause between meter reads and probes (s; 0: as fast as they answer).
    settle_s : float
        A sleep level counts once steady this long (s); also the rest at the running draw
        between transitions.
    measure_s : float
        P_off and P_suspend are averaged over this long once settled (s).
    timeout_s : float
        Bound on each transition (s).
    boot_off_s : float
        How long the outlet stays off before a boot from off (s).
    lag_s : float
        How old a meter reading may be (s): a PDU refreshes its outlet power about once a
        second; the PDU simulator's snapshots are at most 0.05 s old.
    """

    repeats: int = MIN_REPEATS
    sample_s: float = 0.1
    settle_s: float = 3.0
    measure_s: float = 5.0
    timeout_s: float = 300.0
    boot_off_s: float = 2.0
    lag_s: float = 1.0

    def __post_init__(self) -> None:
        problems = [f"repeats must be at least {MIN_REPEATS}"] * (self.repeats < MIN_REPEATS)
        problems += [f"{n} must be >= 0" for n in ("sample_s", "boot_off_s", "lag_s")
                     if not getattr(self, n) >= 0]  # fmt: skip
        problems += [f"{n} must be > 0" for n in ("settle_s", "measure_s", "timeout_s")
                     if not getattr(self, n) > 0]  # fmt: skip
        if problems:
            raise ValueError("; ".join(problems))


@dataclass
class RepeatCosts:
    """One transition's repeats (suspend, wake, shutdown or boot), one entry per repeat in
    each list: its time (s) and energy (J), each with its half-width, and where Kubernetes is
    asked its Ready time."""

    time_s: list[float] = field(default_factory=list)
    time_res: list[float] = field(default_factory=list)
    energy_j: list[float] = field(default_factory=list)
    energy_res: list[float] = field(default_factory=list)
    ready: list[tuple[float, float] | None] = field(default_factory=list)
    """Per repeat (where Kubernetes is asked): the Ready time and its half-width, or None."""

    def add(
        self, start: tuple[float, float], end: tuple[float, float], energy: tuple[float, float]
    ) -> None:
        """One repeat: the action's and the end's windows (monotonic s), the energy and its
        bound (J)."""
        mid_start, mid_end = sum(start) / 2, sum(end) / 2
        self.time_s.append(mid_end - mid_start)
        self.time_res.append((start[1] - start[0] + end[1] - end[0]) / 2)
        self.energy_j.append(energy[0])
        self.energy_res.append(energy[1])

    def stalled(self, floor_s: float, judged: set[int]) -> set[int]:
        """The repeats timed more than :data:`RETAKE_FACTOR` times as loosely as the median of
        those not ``judged`` stalled already, and more loosely than ``floor_s`` (s)."""
        steady = [r for i, r in enumerate(self.time_res) if i not in judged]
        if not steady:
            return set()
        limit = max(RETAKE_FACTOR * statistics.median(steady), floor_s)
        return {i for i, res in enumerate(self.time_res) if res > limit}

    def drop(self, indices: set[int]) -> None:
        """Leave out the repeats at ``indices`` (their times, energies and Ready times)."""
        keep = [i for i in range(len(self.time_s)) if i not in indices]
        for values in (self.time_s, self.time_res, self.energy_j, self.energy_res):
            values[:] = [values[i] for i in keep]
        if self.ready:  # none where Kubernetes is not asked
            self.ready[:] = [self.ready[i] for i in keep]

    def cost(self) -> TransitionCost | None:
        """The transition's :class:`TransitionCost` over its repeats; ``None`` unmeasured."""
        if not self.time_s:
            return None
        ready = None
        known = [r for r in self.ready if r is not None]
        if len(known) >= MIN_REPEATS:
            ready = estimate([v for v, _ in known], max(res for _, res in known))
        return TransitionCost(
            time_s=estimate(self.time_s, max(self.time_res)),
            energy_j=estimate(self.energy_j, max(self.energy_res)),
            kubernetes_ready_s=ready,
        )


@dataclass
class StalledRepeats:
    """Which repeats of each transition stalled (:data:`RETAKE_FACTOR`), and what to do.

    Attributes
    ----------
    repeats : int
        Repeats each transition needs that did not stall.
    floor_s : float
        No repeat timed within this (s) is stalled.
    judged : dict of str to set of int
        Transition → the indices of its repeats judged stalled; a repeat judged so stays so,
        whatever the retakes add.
    """

    repeats: int
    floor_s: float
    judged: dict[str, set[int]] = field(default_factory=dict)

    def judge(self, costs: Mapping[str, RepeatCosts]) -> None:
        """Judge every transition's repeats against the median of those not judged stalled
        already (one stall in the list must not raise the bar for the next)."""
        for kind, c in costs.items():
            judged = self.judged.setdefault(kind, set())
            judged |= c.stalled(self.floor_s, judged)

    def short(self, costs: Mapping[str, RepeatCosts]) -> bool:
        """Whether some measured transition has fewer than ``repeats`` repeats not stalled."""
        return any(
            len(c.time_s) - len(self.judged.get(kind, ())) < self.repeats
            for kind, c in costs.items()
            if c.time_s
        )

    def drop(self, costs: Mapping[str, RepeatCosts]) -> list[str]:
        """Leave out each transition's stalled repeats when ``repeats`` others remain, else
        keep them (their width is the honest answer); the notes that say which."""
        notes = []
        for kind, c in costs.items():
            stalled = sorted(self.judged.get(kind, ()))
            if not stalled:
                continue
            widths = ", ".join(f"±{c.time_res[i]:.2f} s" for i in stalled)
            typical = statistics.median([r for i, r in enumerate(c.time_res) if i not in stalled])
            over = f"over {RETAKE_FACTOR:g}× the median ±{typical:.2f} s"
            if len(c.time_s) - len(stalled) >= self.repeats:
                c.drop(set(stalled))
                notes.append(
                    f"{kind}: {len(stalled)} repeat(s) retaken: timed to {widths}, {over} (the "
                    "host or its probes stalled)"
                )
            else:
                notes.append(
                    f"{kind}: {len(stalled)} repeat(s) timed to {widths}, {over}, kept: the "
                    "retakes stalled too"
                )
        return notes


class PowerStateMeasurement:
    """Measure node ``node``'s power states (see the module docstring).

    Parameters
    ----------
    node : str
    actions : PowerActions
        The façade (not a dry run); its inventory gives the node's method and outlet.
    trace : PowerTrace
        The node's outlet on a meter that reads it.
    agent : Probe
        True once the node's agent answers.
    ready : Probe, optional
        True once Kubernetes calls the node Ready (``None``: no API to ask).
    plan : MeasurePlan
    clock : callable
        Monotonic seconds (the trace's clock).
    """

    def __init__(
        self,
        node: str,
        actions: PowerActions,
        trace: PowerTrace,
        agent: Probe,
        *,
        ready: Probe | None = None,
        plan: MeasurePlan | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.node, self.actions, self.trace = node, actions, trace
        self.agent, self.ready = agent, ready
        self.plan = plan or MeasurePlan()
        self.clock = clock
        self.entry = actions.inventory.node(node)
        self.notes: list[str] = []
        self._asleep = False  # whether a failure must wake the node again
        self._stalls = StalledRepeats(self.plan.repeats, max(STALL_FLOOR_S, 2 * self.plan.sample_s))

    def run(self) -> PowerStates:
        """Run every repeat and return the :class:`PowerStates`.

        Raises
        ------
        PowerRefused, ClusterUnreachable
            A safety rule refused the first sleep (nothing was done).
        PowerActionFailed
            An action failed, or a transition did not end within ``timeout_s``; the node is
            woken again if it was asleep (the message says).
        """
        entry, plan = self.entry, self.plan
        can_boot_from_off = entry.outlet is not None and self.actions.inventory.pdu is not None
        costs = {kind: RepeatCosts() for kind in ("suspend", "wake", "shutdown", "boot")}
        levels: dict[str, list[float | None]] = {"p_suspend_w": [], "p_off_w": []}
        if not self.agent():
            raise PowerActionFailed(
                f"node {self.node}: its agent does not answer: wake it before measuring"
            )
        running_w = self._rest()
        try:
            cycles = 0
            while cycles < plan.repeats or self._retake(costs, cycles):
                running_w = self._repeat(costs, levels, running_w, can_boot_from_off)
                cycles += 1
        except PowerStateError as exc:
            if self._asleep:
                raise PowerActionFailed(f"{exc}; {self._wake_again()}") from exc
            raise
        self.notes += self._stalls.drop(costs)
        return self._result(costs, levels, "outlet" if can_boot_from_off else "soft_off", cycles)

    def _repeat(
        self,
        costs: dict[str, RepeatCosts],
        levels: dict[str, list[float | None]],
        running_w: float,
        can_boot_from_off: bool,
    ) -> float:
        """One repeat of every transition the node's method allows (module docstring); the
        running draw after it (W)."""
        if suspends(self.entry.method):
            self._asleep = True
            start = self._act(lambda: self.actions.os_sleep(self.node, "suspend"))
            levels["p_suspend_w"].append(self._sleep(start, running_w, costs["suspend"]))
            start = self._act(lambda: self.actions.magic_packet(self.node))
            self._back(start, costs["wake"])
            self._asleep = False
            running_w = self._rest()
        self._asleep = True
        start = self._act(lambda: self.actions.os_sleep(self.node, "poweroff"))
        levels["p_off_w"].append(self._sleep(start, running_w, costs["shutdown"]))
        if can_boot_from_off:
            self._act(lambda: self.actions.outlet(self.node, "off"))
            self._sample_for(self.plan.boot_off_s)
            start = self._act(lambda: self.actions.outlet(self.node, "on"))
        else:
            start = self._act(lambda: self.actions.magic_packet(self.node))
        self._back(start, costs["boot"])
        self._asleep = False
        return self._rest()

    def _retake(self, costs: dict[str, RepeatCosts], cycles: int) -> bool:
        """Whether to run one more repeat after ``cycles`` (:class:`StalledRepeats`): some
        transition is short of ``plan.repeats`` repeats that did not stall, and fewer than
        ``plan.repeats`` repeats have been retaken."""
        self._stalls.judge(costs)
        return cycles < 2 * self.plan.repeats and self._stalls.short(costs)

    # --- the steps ---------------------------------------------------------------------------

    def _act(self, action: Callable[[], Transition]) -> tuple[float, float]:
        """Run one façade action; when its state-changing step ran: (from, to) in monotonic s
        (:attr:`Transition.acted_s`, else the whole call)."""
        called = self.clock()
        transition = action()
        return transition.acted_s or (called, self.clock())

    def _pause(self, started: float) -> None:
        time.sleep(max(0.0, self.plan.sample_s - (self.clock() - started)))

    def _sample_for(self, duration_s: float) -> None:
        """Let the trace's thread read for ``duration_s``."""
        until = self.clock() + duration_s
        while (left := until - self.clock()) > 0:
            time.sleep(min(left, 0.05))
            self.trace.check()

    def _rest(self) -> float:
        """Read the running node for ``settle_s`` (and at least 3 readings): its mean draw (W)."""
        since = self.clock()
        self._sample_for(self.plan.settle_s)
        deadline = since + self.plan.timeout_s
        while len(values := [s.power_w for s in self.trace.window(since, self.clock())]) < 3:
            if self.clock() > deadline:
                raise PowerActionFailed(
                    f"node {self.node}: outlet {self.trace.outlet}: fewer than 3 meter readings "
                    f"in {self.plan.timeout_s:g} s"
                )
            self._sample_for(0.05)
        known = [v for v in values if v]
        if not known:
            raise PowerActionFailed(
                f"node {self.node}: outlet {self.trace.outlet} gave no power reading while "
                "running: a meter that cannot see the node cannot time its states"
            )
        return sum(known) / len(known)

    def _sleep(
        self, start: tuple[float, float], running_w: float, costs: RepeatCosts
    ) -> float | None:
        """Wait for the draw to settle below ``running_w``, record the transition, then
        average the level over ``measure_s``; the level (W) or ``None`` (under the floor)."""
        since = start[0]
        above_w = running_w - max(2.0, 0.1 * running_w)
        deadline = since + self.plan.timeout_s
        while (index := self.trace.settled_low(since, above_w, self.plan.settle_s)) is None:
            if self.clock() > deadline:
                last = self.trace.samples[-1].power_w if self.trace.samples else None
                raise PowerActionFailed(
                    f"node {self.node}: the draw did not settle below {above_w:.1f} W within "
                    f"{self.plan.timeout_s:g} s (last read {last} W): did it go to sleep?"
                )
            self._sample_for(max(self.plan.sample_s, 0.02))
        first = self.trace.samples[index]
        end = (self.trace.before(index, since), first.answered_s)
        energy, bound = self.trace.energy_j(sum(start) / 2, sum(end) / 2)
        costs.add(start, end, (energy, bound + self._edges_j(start, end)))
        self._sample_for(max(0.0, self.plan.measure_s - (self.clock() - first.sent_s)))
        level = self.trace.window(first.sent_s, self.clock())
        values = [s.power_w for s in level if s.power_w is not None]
        if self.agent():
            raise PowerActionFailed(
                f"node {self.node}: the draw settled at {values[-1]:.1f} W, but its agent still "
                "answers: it did not go to sleep"
            )
        if any(s.below_floor for s in level):
            self.notes.append(
                "some sleep-level readings were under the meter's stated floor: their "
                "accuracy is not the meter's stated one"
            )
            if all(v == 0 for v in values):
                return None
        return sum(values) / len(values)

    def _back(self, start: tuple[float, float], costs: RepeatCosts) -> None:
        """Poll the agent (and Ready) while reading the meter, until the agent answers (it was
        seen down before the command, so the wake ends after ``start``)."""
        failed_at = start[0]
        not_ready_seen, ready_lo = False, None
        ready_end: tuple[float, float] | None = None
        deadline = start[0] + self.plan.timeout_s
        while True:
            started = self.clock()
            ok = self.agent()
            if ok:
                end = (failed_at, self.clock())
                break
            failed_at = started
            if self.ready is not None and ready_end is None:
                asked = self.clock()
                if not self.ready():
                    not_ready_seen, ready_lo = True, asked
            self.trace.check()
            if self.clock() > deadline:
                raise PowerActionFailed(
                    f"node {self.node}: its agent did not answer within {self.plan.timeout_s:g} s "
                    "of the wake"
                )
            self._pause(started)
        self._read_past(sum(end) / 2, deadline)
        energy, bound = self.trace.energy_j(sum(start) / 2, sum(end) / 2)
        costs.add(start, end, (energy, bound + self._edges_j(start, end)))
        if self.ready is not None:
            costs.ready.append(self._time_ready(start, not_ready_seen, ready_lo))

    def _read_past(self, instant_s: float, deadline_s: float) -> None:
        """Let the trace read until it has a value read wholly after ``instant_s`` (monotonic
        s), so an energy window ending there has a reading on each side even when the reads
        stalled.

        Raises
        ------
        PowerActionFailed
            None by ``deadline_s`` (monotonic s).
        """
        while not self.trace.window(instant_s + self.trace.lag_s, math.inf):
            if self.clock() > deadline_s:
                raise PowerActionFailed(
                    f"node {self.node}: outlet {self.trace.outlet}: no meter reading within "
                    f"{self.plan.timeout_s:g} s of the transition"
                )
            self._sample_for(0.05)

    def _time_ready(
        self, start: tuple[float, float], not_ready_seen: bool, lo: float | None
    ) -> tuple[float, float] | None:
        """After the agent is back, wait for Ready (when the node went NotReady meanwhile): the
        Ready time from ``start`` and its half-width (s), or ``None`` (noted why)."""
        assert self.ready is not None
        if not not_ready_seen or lo is None:
            self.notes.append(
                "Kubernetes kept the node Ready through a sleep (shorter than its node-monitor "
                "grace period): no Ready time for that repeat"
            )
            return None
        deadline = start[0] + self.plan.timeout_s
        while True:
            asked = self.clock()
            if self.ready():
                now = self.clock()
                return (lo + now) / 2 - sum(start) / 2, (now - lo + start[1] - start[0]) / 2
            lo = asked
            if self.clock() > deadline:
                self.notes.append("the node was not Ready within the timeout: no Ready time")
                return None
            self._pause(asked)

    def _edges_j(self, start: tuple[float, float], end: tuple[float, float]) -> float:
        """What the uncertain start and end instants can add to an energy (J): half of each
        window at the highest draw read within it (± the lag)."""
        total = 0.0
        for lo, hi in (start, end):
            inside = self.trace.window(lo - self.trace.lag_s, hi + self.trace.lag_s)
            peak = max((s.power_w or 0.0 for s in inside), default=0.0)
            if not inside:  # no reading in the window: the nearest ones bound it
                near = [s.power_w or 0.0 for s in self.trace.samples if s.power_w is not None]
                peak = max(near, default=0.0)
            total += peak * (hi - lo) / 2
        return total

    def _wake_again(self) -> str:
        try:
            self.actions.wake(self.node)
        except PowerStateError as exc:
            return f"could not wake it again: {exc}"
        return "woken again"

    def _result(
        self,
        costs: dict[str, RepeatCosts],
        levels: dict[str, list[float | None]],
        boot_from: Literal["outlet", "soft_off"],
        cycles: int,
    ) -> PowerStates:
        half_w = self.trace.resolution_w() / 2
        found = {}
        for name, values in levels.items():
            known = [v for v in values if v is not None]
            if values and len(known) < len(values):
                self.notes.append(f"{name}: reads 0 W under the meter's floor: not measurable")
            found[name] = estimate(known, half_w) if len(known) >= MIN_REPEATS else None
        if not suspends(self.entry.method):
            self.notes.append(f"method {self.entry.method}: the node cannot suspend")
        if self.trace.missed_reads:
            self.notes.append(
                f"{self.trace.missed_reads} meter reads got no answer in time and were skipped: "
                "the energies bridge those gaps, their bounds the wider"
            )
        boot = costs["boot"].cost()
        return PowerStates(
            measured_at=datetime.now(UTC),
            method=self.entry.method,
            meter=self.trace.meter.meter.url.redacted(),
            outlet=self.trace.outlet,
            repeats=cycles,
            p_off_w=found["p_off_w"],
            p_suspend_w=found["p_suspend_w"],
            suspend=costs["suspend"].cost(),
            wake=costs["wake"].cost(),
            shutdown=costs["shutdown"].cost(),
            boot=boot,
            boot_from=boot_from if boot else None,
            below_floor=any(s.below_floor for s in self.trace.samples),
            notes=list(dict.fromkeys(self.notes)),
        )
