"""Demo stage 3, power: the power manager's ports over the emulated cluster and the simulator.

The manager is the product's :class:`~eams.scheduler.power.manager.PowerManager` (active mode,
the policy core :class:`~eams.scheduler.power.policy.PowerPolicy`); this module gives it the
three ports of :mod:`eams.scheduler.power.ports` for the demo:

* :class:`DemoObserver` — the fleet from the emulated cluster (allocatable, the pods bound, the
  scheduler's pending pods, each with the node the market's wake request names for it: the
  node annotation ``eams.io/wake-request``), the calibrations with their measured sleep state
  (:func:`eams.calibrate.powerstates.figures.node_figures`, the figures the extender prices
  wakes by); a node is Ready while its virtual OS runs, and its agent has *reported* when it
  last read its virtual ``/proc/stat`` (a node that is off runs no agent);
* :class:`DemoMarker` — cordon, taint ``eams.io/asleep:NoSchedule`` and annotate the node
  objects of the emulated cluster, each change told to the extender as its node watch would
  see it (``POST /nodes``); releasing a node, or finding it suspect, removes its wake request;
  releasing a node is a cluster event that sends the unschedulable pods back to the
  scheduler's queue;
* :class:`DemoActuator` — the power inventory's method ``outlet`` (soft-off, then outlet off)
  on the PDU simulator: the safety rules of
  :class:`~eams.actuators.actions.PowerActions`
  (:func:`~eams.actuators.safety.check_sleep`: never the PDU owner and k3s server,
  cordoned, tainted and drained first) against the emulated cluster, the node's OS powered off
  (the virtual node has no SSH: its ``systemctl poweroff`` is the simulator's soft-off, as its
  stress-ng is :class:`~eams.demo.testbed.VirtualRunner`'s), then its outlet switched off over
  SNMP and read back; a wake switches it on (SNMP SET, read back) and the node boots.

Why the outlet and not suspend-to-RAM with Wake-on-LAN: the simulated APC rPDU2, like the real
one, cannot meter an outlet under 50 W (:mod:`eams.demo.fleet`), and a suspended node draws a
few watts; an outlet switched off draws exactly nothing, which the meter reports as such
(``state`` off). The sleep figures the policy decides by are the ones measured in the demo's
calibration stage (:func:`eams.demo.calibrate.measure_power_states`) from the testbed's hidden
:data:`NODE_POWER`.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np

from eams.actuators.errors import PowerStateError
from eams.actuators.inventory import PowerInventory, parse_inventory
from eams.actuators.safety import check_sleep
from eams.actuators.transitions import Transition, record
from eams.calibrate.calfile import Calibration
from eams.calibrate.powerstates.figures import node_figures
from eams.demo.cluster import NAMESPACE, EmulatedCluster
from eams.demo.fleet import MEMORY_MIB
from eams.demo.testbed import DRIVER, METER_RETRIES, METER_TIMEOUT_S, Testbed
from eams.kube import names
from eams.kube.errors import BadObject
from eams.kube.wakerequest import WakeRequest, parse_wake_request, pods_to_nodes
from eams.meter.blocking import BlockingMeter
from eams.meter.errors import MeterError
from eams.meter.simulator import NodePower
from eams.meter.simulator.errors import SimulatorError
from eams.scheduler.power.manager import ManagerConfig, PowerManager
from eams.scheduler.power.policy import PolicyConfig, PowerPolicy
from eams.scheduler.power.policy_fleet import (
    AWAKE,
    FleetState,
    NodePowerView,
    PendingPod,
    PowerState,
)
from eams.scheduler.power.ports import SUSPECT, Observation, RecordSink

log = logging.getLogger(__name__)

NODE_POWER = {
    True: NodePower(boot_s=1.0, off_w=1.0, shutdown_s=0.5),
    False: NodePower(boot_s=1.0, off_w=1.0, shutdown_s=0.5),
}
"""Hidden power states of every virtual node (quick, full), real seconds: the live loop runs in
real time, the trace compressed (at the full demo's ~40× a 1 s boot is ~40 s of trace time, a
mini-PC's boot). Boot draw: the node's curve at 50 % (``NodePower`` default)."""
POLICY = {
    True: PolicyConfig(
        idle_before_sleep_s=1.0, min_awake_s=2.0, wake_after_s=0.3,
        cooldown_s=1.0, recent_s=30.0,
    ),
    False: PolicyConfig(
        idle_before_sleep_s=2.0, min_awake_s=4.0, wake_after_s=0.5,
        cooldown_s=2.0, recent_s=60.0,
    ),
}  # fmt: skip
"""The policy's timers for the compressed run (quick, full), s; the phase timeouts' margins are
derived (:func:`demo_policy`), the rest default."""
HOST_LAG_S = 2.0
"""How late a step of the live loop may run on a busy 2-core host (a manager tick, an agent
sample, an SNMP round trip; the first read of the PDU took 1.3–2.7 s under load): the phase
timeouts allow it on top of what a sound transition needs (:func:`phase_timeouts`)."""


def phase_timeouts(power: NodePower, period_s: float) -> tuple[float, float, float]:
    """(suspend timeout, wake timeout, agent silence) for nodes of ``power`` whose agents
    sample and whose manager ticks every ``period_s``, s.

    A sleep is confirmed when the agent has been silent for ``agent_silent_s`` (three
    samples; the virtual OS stops answering when its poweroff begins) and the suspend time has
    passed, at the manager's first tick after that, a tick coming a period after the step that
    carried out the sleep: ``shutdown_s + agent_silent_s + 2 × period_s``. A wake is confirmed
    once the node has booted and its agent sampled, at the next tick: ``boot_s + 2 ×
    period_s``. Each timeout is that plus :data:`HOST_LAG_S`, so a sound transition on a busy
    host is confirmed before it times out (``ManagerConfig``: ``agent_silent_s`` under the
    suspend timeout), and a suspend-failed or wake-failed means one that did not happen."""
    agent_silent_s = 3 * period_s
    suspend_s = power.shutdown_s + agent_silent_s + 2 * period_s + HOST_LAG_S
    wake_s = power.boot_s + 2 * period_s + HOST_LAG_S
    return suspend_s, wake_s, agent_silent_s


def demo_policy(quick: bool, period_s: float) -> PolicyConfig:
    """:data:`POLICY` with the phase timeouts of :func:`phase_timeouts` as the margins on the
    known suspend and wake times (the policy's timeout is time × margin)."""
    power = NODE_POWER[quick]
    suspend_s, wake_s, _ = phase_timeouts(power, period_s)
    return PolicyConfig(
        **POLICY[quick].model_dump()
        | {"suspend_margin": suspend_s / power.shutdown_s, "wake_margin": wake_s / power.boot_s}
    )


FAILURES = ("failed", "suspend_failed", "wake_failed", "suspect")
"""Keys of a run's failed transitions (:func:`failures`)."""


def failures(manager: PowerManager, actuator: DemoActuator, marker: DemoMarker) -> dict[str, int]:
    """A run's failed transitions: ``failed`` (an action that failed part-way: a soft-off, an
    outlet that did not read back), ``suspend_failed`` and ``wake_failed`` (the manager's
    phase timeouts, its ``suspend-timeout`` / ``wake-timeout`` decisions), ``suspect`` (nodes
    the manager marked asleep and suspect)."""
    decided: dict[str, float] = {}
    for metric in manager.metrics.registry.collect():
        for sample in metric.samples:
            if sample.name == "eams_power_decisions_total":
                action = sample.labels["action"]
                decided[action] = decided.get(action, 0.0) + sample.value
    return {
        "failed": actuator.counts["failed"],
        "suspend_failed": int(decided.get("suspend-failed", 0)),
        "wake_failed": int(decided.get("wake-failed", 0)),
        "suspect": len(marker.suspect),
    }


def failure_text(counts: dict[str, int], suspect: list[str]) -> str | None:
    """The failed transitions of :func:`failures` in words; ``None`` when there were none."""
    parts = []
    for key, one, many in (
        ("suspend_failed", "sleep not confirmed in time (suspend-failed)", "sleeps not "
         "confirmed in time (suspend-failed)"),
        ("wake_failed", "wake not confirmed in time (wake-failed)", "wakes not confirmed in "
         "time (wake-failed)"),
        ("failed", "power action failed", "power actions failed"),
    ):  # fmt: skip
        n = counts.get(key, 0)
        if n:
            parts.append(f"{n} {one if n == 1 else many}")
    if suspect:
        parts.append(f"left asleep and suspect: {', '.join(suspect)}")
    return "; ".join(parts) if parts else None


OWNER_ROLES = frozenset({"k3s-server", "pdu-owner"})
"""mini-1 owns the PDU link (its agent reads the meter) and serves k3s: it never sleeps."""
ASLEEP_TAINT = {"key": names.ASLEEP_TAINT, "value": "", "effect": names.NO_SCHEDULE}
SOFT_OFF_WAIT = 3.0
"""A soft-off may take this many × ``shutdown_s`` before the actuator gives up on it."""
SWITCH_WAIT_S = 5.0
"""How long an outlet's state may take to read back as asked, s."""


def demo_inventory(testbed: Testbed) -> PowerInventory:
    """The power inventory of the testbed: every node by method ``outlet`` on the simulator's
    switched outlets; mini-1 the k3s server and PDU owner. The ``ssh`` targets are never dialled
    (the virtual OS is the simulator's)."""
    sim = testbed.simulator
    nodes = {}
    for i, node in enumerate(testbed.nodes, start=1):
        entry = {
            "method": "outlet",
            "outlet": i,
            "mac": sim.mac(i),
            "ssh": f"demo@{node.spec.name}",
        }
        if i == 1:
            entry |= {"k3s_server": True, "pdu_owner": True}
        nodes[node.spec.name] = entry
    data = {"pdu": sim.write_url, "meter": sim.url, "grace_s": 5.0, "nodes": nodes}
    return parse_inventory(data, Path("."), "eams demo (virtual testbed)")


class DemoActuator:
    """Sleep and wake the virtual nodes on the simulator's switched outlets (module docstring).

    The outlet is switched through one meter kept open for the run (SNMP SET, then the state
    read back: :meth:`BlockingMeter.switch`, the primitive :class:`PowerActions` switches
    with), under :class:`PowerActions`' safety rules (:func:`check_sleep`), each outcome one
    :class:`Transition` (:func:`record`: the same log line and counter). Not
    :meth:`PowerActions.outlet` itself: it opens a new meter per action, whose first read
    learns the PDU (1.3–2.7 s per action on the shared 2-core machine) — long enough to push
    wakes past their timeout while the manager waits, and to leave a soft-off node unmetered
    (its 1 W is under the APC floor) until its outlet opens.

    Attributes
    ----------
    counts : dict of str to int
        Transitions carried out: ``sleep`` (outlet off read back) and ``wake`` (outlet on);
        ``refused``: sleeps the safety rules refused (a pod bound since the decision);
        ``failed``: actions that failed part-way (a soft-off, an outlet not read back).

    Raises
    ------
    MeterError
        The PDU cannot be read (when opened).
    """

    def __init__(self, testbed: Testbed, cluster: EmulatedCluster, power: NodePower) -> None:
        self.testbed, self.cluster, self.power = testbed, cluster, power
        self.inventory = demo_inventory(testbed)
        self.counts = {"sleep": 0, "wake": 0, "refused": 0, "failed": 0}
        self._lock = threading.Lock()
        write_url = testbed.simulator.write_url
        assert write_url is not None, "the demo's simulator always has a write community"
        self._meter = BlockingMeter(
            write_url, driver=DRIVER, timeout_s=METER_TIMEOUT_S,
            retries=METER_RETRIES,
        )  # fmt: skip
        self._meter.read()  # learn the outlets now, not during the first sleep

    def close(self) -> None:
        """Close the meter (idempotent)."""
        self._meter.close()

    def _outcome(
        self, node: str, to: str, result: str, why: str, steps: tuple[str, ...] = (), detail=""
    ) -> Transition:
        if result == "failed":
            with self._lock:
                self.counts["failed"] += 1
        return record(
            Transition(node=node, to=to, method="outlet", result=result, who="eams demo",
                       why=why, steps=steps, detail=detail)
        )  # fmt: skip

    def _switch(self, node: str, action: str) -> str:
        outlet = self.inventory.node(node).outlet
        assert outlet is not None
        done = self._meter.switch(outlet, action, wait_s=SWITCH_WAIT_S)
        if done.state != action:
            raise MeterError(f"outlet {outlet} reads {done.state} after {action}")
        return (
            f"outlet {outlet} {action}: state read back {done.state} after {done.elapsed_s:.1f} s"
        )

    def sleep(self, node: str, reason: str) -> Transition:
        """Safety rules, soft-off of the virtual OS, outlet off read back (never raises)."""
        entry = self.inventory.node(node)
        assert entry.outlet is not None
        try:
            check_sleep(node, entry, self.cluster.view)
        except PowerStateError as exc:
            with self._lock:
                self.counts["refused"] += 1
            return self._outcome(node, "off", "refused", reason, detail=str(exc))
        sim = self.testbed.simulator
        started = time.monotonic()
        try:
            sim.soft_off(entry.outlet)
        except SimulatorError as exc:  # its OS was not running
            return self._outcome(node, "off", "failed", reason, detail=f"soft-off: {exc}")
        deadline = started + SOFT_OFF_WAIT * max(self.power.shutdown_s, 0.1)
        while sim.state(entry.outlet).node != "soft_off" and time.monotonic() < deadline:
            time.sleep(0.02)
        took_s = time.monotonic() - started
        soft = f"virtual OS of {node}: systemctl poweroff, soft-off after {took_s:.1f} s"
        try:
            cut = self._switch(node, "off")
        except MeterError as exc:
            return self._outcome(node, "off", "failed", reason, (soft,), f"outlet off: {exc}")
        with self._lock:
            self.counts["sleep"] += 1
        return self._outcome(node, "off", "ok", reason, (soft, cut))

    def wake(self, node: str, reason: str) -> Transition:
        """Switch the node's outlet on, read back (it then boots); never raises."""
        try:
            on = self._switch(node, "on")
        except MeterError as exc:
            return self._outcome(node, "running", "failed", reason, detail=str(exc))
        with self._lock:
            self.counts["wake"] += 1
        return self._outcome(node, "running", "ok", reason, (on,))

    def restart_agent(self, node: str) -> Transition:
        """A virtual node's kubelet is Ready as soon as its OS runs: nothing to restart."""
        return self._outcome(node, "running", "ok", "NotReady after a wake",
                             detail="virtual node: no k3s agent to restart")  # fmt: skip

    def sleep_state(self, node: str) -> str:
        """``off``: the outlet is switched off."""
        return "off"


class DemoMarker:
    """The Kubernetes side of a sleep, on the emulated cluster's node objects.

    Parameters
    ----------
    cluster : EmulatedCluster
    on_release : callable
        Called after a node is released (a cluster event: the scheduler requeues).
    on_change : callable
        Called with a node's name after each change of its object (the EAMS run: its object
        goes to the extender, as its node watch would see it); none by default.
    """

    def __init__(
        self,
        cluster: EmulatedCluster,
        on_release: Callable[[], None],
        on_change: Callable[[str], None] = lambda node: None,
    ) -> None:
        self.cluster, self.on_release, self.on_change = cluster, on_release, on_change
        self.suspect: set[str] = set()
        """Nodes the manager annotated asleep and suspect during the run."""

    def mark_asleep(self, node: str, reason: str) -> None:
        """Cordon, taint ``eams.io/asleep:NoSchedule``, annotate ``suspending``."""
        self.cluster.taint(node, ASLEEP_TAINT, cordon=True)
        self.annotate(node, "suspending", reason)

    def annotate(self, node: str, state: str, reason: str) -> None:
        """Set the power-state and power-reason annotations; a node found suspect loses its
        wake request (the market clears its pods again)."""
        if state == SUSPECT:
            self.suspect.add(node)
            self.cluster.unannotate(node, names.WAKE_REQUEST_ANNOTATION)
        self.cluster.annotate(
            node, {names.POWER_STATE_ANNOTATION: state, names.POWER_REASON_ANNOTATION: reason}
        )
        self.on_change(node)

    def release(self, node: str, reason: str) -> None:
        """Untaint, uncordon, annotate ``awake``, remove its wake request; then the cluster
        event."""
        self.cluster.untaint(node, names.ASLEEP_TAINT, uncordon=True)
        self.cluster.unannotate(node, names.WAKE_REQUEST_ANNOTATION)
        self.annotate(node, "awake", reason)
        self.on_release()


def wake_nodes(annotations: dict[str, dict[str, str]]) -> dict[str, str]:
    """Pod (``namespace/name``) → the node whose wake request names it, from every node's
    annotations (:data:`~eams.kube.names.WAKE_REQUEST_ANNOTATION`); a pod named on two nodes
    goes to the later request (as the live observer reads them). A value that does not parse
    is logged and skipped (a node's bad annotation must not stop the manager)."""
    requests: list[WakeRequest] = []
    for node, values in annotations.items():
        text = values.get(names.WAKE_REQUEST_ANNOTATION)
        if text is None:
            continue
        try:
            requests.append(parse_wake_request(node, text))
        except BadObject as exc:
            log.warning("%s", exc)
    return pods_to_nodes(requests)


class DemoObserver:
    """The fleet as the manager needs it (module docstring).

    Parameters
    ----------
    testbed : Testbed
    cluster : EmulatedCluster
    calibrations : list of Calibration
        In node order (P_idle, P_max, speed, the measured sleep state).
    pending : callable
        Pod name → (cores, MiB, pending since s, runtime at speed 1 in real s), now.
    """

    def __init__(
        self,
        testbed: Testbed,
        cluster: EmulatedCluster,
        calibrations: list[Calibration],
        pending: Callable[[], dict[str, tuple[float, float, float, float]]],
    ) -> None:
        self.testbed, self.cluster = testbed, cluster
        self.calibrations, self.pending = calibrations, pending
        self._heartbeat_s: dict[str, float] = {}

    def observe(self, now_s: float) -> Observation:
        """The fleet at ``now_s`` (epoch s)."""
        sim = self.testbed.simulator
        views, ready, seen, marked = [], [], [], []
        objects = self.cluster.objects()
        for i, (vnode, cal) in enumerate(zip(self.testbed.nodes, self.calibrations, strict=True)):
            name = vnode.spec.name
            node = self.cluster.nodes[name]
            pods = tuple(p.cores for p in list(node.pods.values()))
            taints = objects[name]["spec"]["taints"]
            marked.append(any(t.get("key") == names.ASLEEP_TAINT for t in taints))
            running = sim.state(i + 1).node == "running"
            ready.append(running)
            if running:  # the emulated kubelet heartbeats while its node runs
                self._heartbeat_s[name] = now_s
            seen.append(math.nan if vnode.last_read_s is None else vnode.last_read_s)
            views.append(
                NodePowerView(
                    name=name,
                    state=PowerState.AWAKE,
                    allocatable_cores=float(vnode.spec.cores),
                    allocatable_mem_mib=MEMORY_MIB,
                    **node_figures(cal),  # the line and the sleep state, as the extender's
                    state_since_s=now_s,
                    pod_cores=pods,
                    pod_mem_mib=node.used_mem_mib,
                    empty_since_s=None if pods else (node.empty_since_s or now_s),
                    roles=OWNER_ROLES if i == 0 else frozenset(),
                )
            )  # fmt: skip
        woken_for = wake_nodes(self.cluster.annotations())
        pending = [
            PendingPod(name, cores, mem, since, runtime,
                       wake_node=woken_for.get(f"{NAMESPACE}/{name}"))
            for name, (cores, mem, since, runtime) in self.pending().items()
        ]  # fmt: skip
        fleet = FleetState.from_views(now_s, views, pending)
        fleet = replace(fleet, state=np.full(fleet.size, AWAKE, dtype=np.int8))
        heartbeat = [self._heartbeat_s.get(v.spec.name, math.nan) for v in self.testbed.nodes]
        return Observation(
            fleet,
            np.array(ready),
            np.array(seen, dtype=float),
            np.array(marked, dtype=bool),
            np.array(heartbeat, dtype=float),
        )


def demo_manager(
    testbed: Testbed,
    cluster: EmulatedCluster,
    calibrations: list[Calibration],
    pending: Callable[[], dict[str, tuple[float, float, float, float]]],
    on_release: Callable[[], None],
    *,
    quick: bool,
    period_s: float,
    recorder: RecordSink | None,
    on_change: Callable[[str], None] = lambda node: None,
) -> tuple[PowerManager, DemoActuator, DemoMarker]:
    """The product's power manager, active, over the demo's ports; its actuator and marker
    (the counts of :func:`failures`).

    Parameters
    ----------
    calibrations : list of Calibration
        In node order, with their measured sleep states.
    period_s : float
        The agents' sample period: a suspending node whose agent has been silent for three of
        them is asleep.
    on_change : callable
        The marker's (:class:`DemoMarker`): told each node whose object changed.

    The phase timeouts are :func:`phase_timeouts`' (:func:`demo_policy`).
    """
    power = NODE_POWER[quick]
    actuator = DemoActuator(testbed, cluster, power)
    _, _, agent_silent_s = phase_timeouts(power, period_s)
    marker = DemoMarker(cluster, on_release, on_change)
    manager = PowerManager(
        PowerPolicy(demo_policy(quick, period_s)),
        DemoObserver(testbed, cluster, calibrations, pending),
        marker,
        actuator,
        recorder=recorder,
        mode="active",
        config=ManagerConfig(agent_silent_s=agent_silent_s, restart_agent_after_s=60.0),
    )
    return manager, actuator, marker
