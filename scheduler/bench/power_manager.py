"""The measured state model of the simulated nodes and the power manager in simulated time.

:class:`SleepModel` is every node's sleep state (sleep power, suspend and wake time and
energy) from the manifest's ``cluster.power_states`` (a mini PC's suspend-to-RAM, a server's
suspend-to-RAM or soft-off, each from its named source). :class:`SimPowerManager` runs the
power manager's pure policy (:class:`eams.scheduler.power.policy.PowerPolicy`) inside the
simulator: after every instant's events (and at the instants the policy asks to be called
again, ``Plan.next_check_s``) it builds the fleet state from the simulated nodes and the
pending pods, and applies the decisions the way the live manager does:

* **sleep** — the node is tainted at once (no pod lands on it), suspends for ``suspend_time_s``
  drawing ``suspend_energy_j / suspend_time_s``, then draws ``sleep_power_w``;
* **wake** — it draws ``wake_energy_j / wake_time_s`` for ``wake_time_s`` and is then awake
  and takes pods (pods that waited for it are bound in the pass that follows). A wake drawn to
  fail (``wake_failure_rate``, seeded) draws the wake power for ``wake_time_s`` and then the
  sleep power, never becoming Ready, until the policy's wake timeout makes it asleep and
  suspect;
* **wake-failed / suspend-failed** — asleep and suspect (draws the sleep power).

The pending pods it shows the policy carry the market's wake requests (issue 34: the scheduler
policy's :meth:`~eams.scheduler.policies.base.ScoringPolicy.wake_requests`, the extender's
clearing onto an asleep node), which the policy executes (reason ``market-bid``); the node's
state is told back to the scheduler policy as the ``eams.io/power-state`` annotation the live
manager writes (:meth:`SimPowerManager.annotation`).

It counts sleeps, wakes (``market_wakes`` of them the market's), failed wakes, the energy spent
in transitions and the node-seconds asleep, and when each node last became Ready (for the pods'
wait for a wake).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
from numpy.typing import NDArray

from eams.calibrate.powerstates.record import MIN_REPEATS, Estimate, PowerStates, TransitionCost
from eams.scheduler.bench.manifest import PowerStatesSpec
from eams.scheduler.policies.base import Cluster, NodeState, Workload
from eams.scheduler.power.policy import PolicyConfig, PowerPolicy
from eams.scheduler.power.policy_fleet import FleetState, PendingPods, PowerState
from eams.scheduler.power.policy_plan import Action, PolicyMemory, Reason

SIMULATED_AT = datetime(2026, 1, 1, tzinfo=UTC)
"""When the simulated power states were "measured": the replay's t = 0."""

POWER_STATE_LABELS = {
    PowerState.SUSPENDING: "suspending",
    PowerState.ASLEEP: "asleep",
    PowerState.WAKING: "waking",
}
"""The ``eams.io/power-state`` annotation of a node in each state (``asleep-suspect`` for an
asleep suspect node; an awake node has none)."""

WAKE_POWER_LEVEL = 5
"""Index of the 50 % point on the SPECpower grid: a resuming node is assumed to draw its
power at 50 % load (the PDU simulator's ``NodePower`` boot-power default)."""


@dataclass(frozen=True)
class SleepModel:
    """Every node's measured sleep state, arrays of shape (N,): ``sleep_power_w`` (W),
    ``suspend_time_s``, ``wake_time_s`` (s), ``suspend_energy_j``, ``wake_energy_j`` (J), the
    fraction of wakes that fail, and the kind of sleep (``state``: ``suspend-to-ram`` or
    ``soft-off``)."""

    sleep_power_w: NDArray[np.float64]
    suspend_time_s: NDArray[np.float64]
    suspend_energy_j: NDArray[np.float64]
    wake_time_s: NDArray[np.float64]
    wake_energy_j: NDArray[np.float64]
    wake_failure_rate: float = 0.0
    state: str = "suspend-to-ram"

    @classmethod
    def from_spec(cls, spec: PowerStatesSpec, cluster: Cluster) -> SleepModel:
        """The manifest's figures; a sleep draw given as a fraction of the power at 100 % load
        and unset energies from each node's measured curve (see
        :class:`~eams.scheduler.bench.manifest.PowerStatesSpec`)."""
        n = cluster.size
        points = cluster.curves.points_w
        full = np.full
        suspend_j = spec.suspend_energy_j
        wake_j = spec.wake_energy_j
        fraction = spec.sleep_power_fraction_of_max
        return cls(
            sleep_power_w=(
                points[:, -1] * fraction if fraction is not None else full(n, spec.sleep_power_w)
            ),
            suspend_time_s=full(n, spec.suspend_time_s),
            suspend_energy_j=(
                points[:, 0] * spec.suspend_time_s if suspend_j is None else full(n, suspend_j)
            ),
            wake_time_s=full(n, spec.wake_time_s),
            wake_energy_j=(
                points[:, WAKE_POWER_LEVEL] * spec.wake_time_s
                if wake_j is None
                else full(n, wake_j)
            ),
            wake_failure_rate=spec.wake_failure_rate,
            state=spec.state,
        )

    def records(self) -> list[PowerStates]:
        """Each node's sleep state as a calibration file's schema-2 ``power_states`` would carry
        it (what a policy reading calibrations, the extender, learns;
        :func:`eams.calibrate.powerstates.figures.node_figures` reads it back to these
        figures): suspend-to-RAM as method ``wol`` (``p_suspend_w``, ``suspend``, ``wake``),
        soft-off as ``ssh`` (``p_off_w``, ``shutdown``, ``boot`` from soft-off). The figures
        are the manifest's, not measured: each :class:`Estimate` is :data:`MIN_REPEATS`
        identical repeats, interval 0 wide, and the record's notes say so.

        Returns
        -------
        list of PowerStates, one per node (N)
        """

        def figure(value: float) -> Estimate:
            v = float(value)
            repeats = [v] * MIN_REPEATS
            return Estimate(value=v, ci95=(v, v), spread=0.0, resolution=0.0, repeats=repeats)

        suspends = self.state == "suspend-to-ram"
        out = []
        for n in range(self.sleep_power_w.size):
            down = TransitionCost(
                time_s=figure(self.suspend_time_s[n]), energy_j=figure(self.suspend_energy_j[n])
            )
            ready = figure(self.wake_time_s[n])
            up = TransitionCost(
                time_s=ready, energy_j=figure(self.wake_energy_j[n]), kubernetes_ready_s=ready
            )
            asleep = figure(self.sleep_power_w[n])
            record = PowerStates(
                measured_at=SIMULATED_AT,
                method="wol" if suspends else "ssh",
                meter="snmp://127.0.0.1:161",  # simulated outlet (no real meter)
                outlet=1,
                repeats=MIN_REPEATS,
                p_suspend_w=asleep if suspends else None,
                suspend=down if suspends else None,
                wake=up if suspends else None,
                p_off_w=None if suspends else asleep,
                shutdown=None if suspends else down,
                boot=None if suspends else up,
                boot_from=None if suspends else "soft_off",
                notes=["simulated: the sweep manifest's power_states, not measured"],
            )
            out.append(record)
        return out


class SimPowerManager:
    """The power manager of one simulated run (module docstring).

    Parameters
    ----------
    cluster : Cluster
    workload : Workload, the replayed pods (their runtimes are the policy's estimates)
    masks : (K, N) bool, static feasibility of each pod profile
    sleep : SleepModel
    config : PolicyConfig
    seed : int, seeds the wake failures
    no_sleep_nodes : int, the first this many nodes hold a role that forbids sleeping
    tick_s : float, s, the manager's loop period (asked at most once per tick)
    """

    def __init__(
        self,
        cluster: Cluster,
        workload: Workload,
        masks: NDArray[np.bool_],
        sleep: SleepModel,
        config: PolicyConfig,
        seed: int,
        no_sleep_nodes: int = 0,
        tick_s: float = 0.0,
    ) -> None:
        n = cluster.size
        self.c, self.w, self.masks, self.sleep = cluster, workload, masks, sleep
        self.names = tuple(cluster.names)
        self.tick_s = tick_s
        self.policy = PowerPolicy(config)
        self.memory = PolicyMemory()
        self.rng = np.random.default_rng([seed, 7])
        self.state = np.zeros(n, dtype=np.int8)
        self.awake = np.ones(n, dtype=bool)
        self.state_since_s = np.zeros(n)
        self.empty_since_s = np.zeros(n)
        self.last_wake_s = np.full(n, np.nan)
        self.last_sleep_s = np.full(n, np.nan)
        self.ready_at_s = np.full(n, -np.inf)
        self.suspect = np.zeros(n, dtype=bool)
        self.failed_wakes = np.zeros(n, dtype=np.int64)
        self.no_sleep = np.arange(n) < no_sleep_nodes
        self.failing = np.zeros(n, dtype=bool)
        self.pods_on: list[dict[int, float]] = [{} for _ in range(n)]
        self.largest = np.zeros(n)
        self.stats = {
            "sleeps": 0,
            "wakes": 0,
            "market_wakes": 0,
            "failed_wakes": 0,
            "failed_suspends": 0,
        }
        self.transition_energy_j = 0.0
        self.asleep_node_s = 0.0

    def draw_w(self, n: int) -> float | None:
        """What node ``n`` draws in its power state (W); ``None`` when awake (its curve)."""
        s, sl = self.state[n], self.sleep
        if s == PowerState.AWAKE:
            return None
        if s == PowerState.SUSPENDING:
            return float(sl.suspend_energy_j[n] / sl.suspend_time_s[n])
        if s == PowerState.WAKING and not self.failing[n]:
            return float(sl.wake_energy_j[n] / sl.wake_time_s[n])
        return float(sl.sleep_power_w[n])

    def pod_bound(self, n: int, pod: int) -> None:
        """A pod started on node ``n``."""
        cores = float(self.w.cpu[pod])
        self.pods_on[n][pod] = cores
        self.largest[n] = max(self.largest[n], cores)
        self.empty_since_s[n] = np.nan

    def pod_left(self, n: int, pod: int, now_s: float) -> None:
        """A pod finished on node ``n``."""
        cores = self.pods_on[n].pop(pod)
        if not self.pods_on[n]:
            self.largest[n] = 0.0
            self.empty_since_s[n] = now_s
        elif cores >= self.largest[n]:
            self.largest[n] = max(self.pods_on[n].values())

    def annotation(self, n: int) -> str | None:
        """Node ``n``'s ``eams.io/power-state`` annotation as the live manager writes it:
        ``suspending``, ``asleep``, ``waking`` or ``asleep-suspect``; ``None`` when awake."""
        s = PowerState(int(self.state[n]))
        if s == PowerState.AWAKE:
            return None
        if s == PowerState.ASLEEP and self.suspect[n]:
            return "asleep-suspect"
        return POWER_STATE_LABELS[s]

    def fleet(
        self, state: NodeState, pending: list[int], wakes: Mapping[int, int] | None = None
    ) -> FleetState:
        """The fleet state the policy sees now; ``wakes`` maps a pending pod (index) to the
        asleep node the market cleared it onto (its wake request; ``PendingPods.wake_node``)."""
        c, w, sl = self.c, self.w, self.sleep
        pend = np.asarray(pending, dtype=np.int64)
        wake_node = None
        if wakes:
            wake_node = np.asarray([wakes.get(int(j), -1) for j in pend], dtype=np.int64)
        pods = PendingPods(
            names=tuple(w.names[j] for j in pend),
            cores=w.cpu[pend],
            mem_mib=w.mem_mib[pend],
            pending_since_s=w.arrival_s[pend],
            runtime_ref_s=w.duration_s[pend],
            profile=w.profile[pend],
            eligible=self.masks,
            wake_node=wake_node,
        )
        return FleetState(
            now_s=state.now_s,
            names=self.names,
            state=self.state,
            cores=c.cores,
            mem_mib=c.mem_mib,
            used_cores=state.alloc_cpu,
            used_mem_mib=state.alloc_mem_mib,
            pods=state.pods_on,
            largest_pod_cores=self.largest,
            p_idle_w=c.p_idle_w,
            p_max_w=c.p_max_w,
            speed=c.speed,
            sleep_power_w=sl.sleep_power_w,
            wake_time_s=sl.wake_time_s,
            wake_energy_j=sl.wake_energy_j,
            suspend_time_s=sl.suspend_time_s,
            suspend_energy_j=sl.suspend_energy_j,
            state_since_s=self.state_since_s,
            empty_since_s=self.empty_since_s,
            last_wake_s=self.last_wake_s,
            last_sleep_s=self.last_sleep_s,
            suspect=self.suspect,
            failed_wakes=self.failed_wakes,
            no_sleep=self.no_sleep,
            pending=pods,
        )

    def step(self, state: NodeState, pending: list[int], wakes: Mapping[int, int] | None = None):
        """Ask the policy and apply its decisions at ``state.now_s``; ``wakes``: the market's
        wake requests (:meth:`fleet`).

        Returns
        -------
        touched : list of int, nodes whose power state changed
        transitions : list of (time_s, node), when a started sleep or wake ends
        next_check_s : float or None, when the policy wants to be asked again
        """
        now = state.now_s
        plan = self.policy.decide(self.fleet(state, pending, wakes), self.memory)
        self.memory = plan.memory
        ends: list[tuple[float, int]] = []
        for d in plan.decisions:
            n = d.index
            if d.action is Action.SLEEP:
                self._enter(n, PowerState.SUSPENDING, now)
                self.last_sleep_s[n] = now
                self.stats["sleeps"] += 1
                ends.append((now + float(self.sleep.suspend_time_s[n]), n))
            elif d.action is Action.WAKE:
                self._enter(n, PowerState.WAKING, now)
                self.last_wake_s[n] = now
                self.stats["wakes"] += 1
                self.stats["market_wakes"] += d.reason is Reason.MARKET
                self.failing[n] = self.rng.random() < self.sleep.wake_failure_rate
                ends.append((now + float(self.sleep.wake_time_s[n]), n))
            else:
                key = "failed_wakes" if d.action is Action.WAKE_FAILED else "failed_suspends"
                self.stats[key] += 1
                self.failed_wakes[n] += d.action is Action.WAKE_FAILED
                self.suspect[n] = True
                self.failing[n] = False
                self._enter(n, PowerState.ASLEEP, now)
        return [d.index for d in plan.decisions], ends, plan.next_check_s

    def transition_ends(self, n: int, now_s: float) -> bool:
        """A suspend or wake started on ``n`` has run its time; returns whether ``n`` is now
        awake (a pass should follow)."""
        sl = self.sleep
        if self.state[n] == PowerState.SUSPENDING:
            self.transition_energy_j += float(sl.suspend_energy_j[n])
            self._enter(n, PowerState.ASLEEP, now_s)
        elif self.state[n] == PowerState.WAKING:
            self.transition_energy_j += float(sl.wake_energy_j[n])
            if self.failing[n]:
                return False  # it hangs: the policy's wake timeout will find it
            self.suspect[n] = False
            self.ready_at_s[n] = now_s
            self._enter(n, PowerState.AWAKE, now_s)
            return True
        return False

    def _enter(self, n: int, new: PowerState, now_s: float) -> None:
        if self.state[n] == PowerState.ASLEEP:
            self.asleep_node_s += now_s - self.state_since_s[n]
        self.state[n] = new
        self.state_since_s[n] = now_s
        self.awake[n] = new == PowerState.AWAKE

    def summary(self, end_s: float, n_nodes: int) -> dict[str, float | int | None]:
        """The run's power figures at its end (transitions per node-hour over [0, end])."""
        asleep = self.state == PowerState.ASLEEP
        asleep_s = self.asleep_node_s + float((end_s - self.state_since_s[asleep]).sum())
        node_h = n_nodes * end_s / 3600.0
        transitions = self.stats["sleeps"] + self.stats["wakes"]
        return {
            **self.stats,
            "transitions_per_node_hour": transitions / node_h if node_h > 0 else None,
            "transition_energy_j": self.transition_energy_j,
            "asleep_fraction": asleep_s / (n_nodes * end_s) if end_s > 0 else None,
        }
