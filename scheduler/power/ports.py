"""The power manager's ports: what :class:`~.manager.PowerManager` needs from the world, as
three protocols, so the same loop runs against a real cluster (:mod:`.kube_observer`,
:mod:`.kube_marker`, :mod:`.actuator`) and against ``eams demo``'s emulated cluster.

* :class:`FleetObserver` — the fleet as it is (:class:`Observation`): capacity, calibrations,
  the pods (DaemonSet pods excluded), the pending pods, and per node the facts the manager
  turns into its phases: the Ready condition, when the node's agent last reported, and whether
  it carries the ``eams.io/asleep`` taint.
* :class:`NodeMarker` — the Kubernetes side: cordon + taint ``eams.io/asleep:NoSchedule`` +
  annotate before a sleep (:meth:`~NodeMarker.mark_asleep`), annotate each later phase
  (:meth:`~NodeMarker.annotate`), untaint + uncordon once the node is back
  (:meth:`~NodeMarker.release`).
* :class:`Actuator` — sleep and wake one node, restart its k3s agent, each returning the
  :class:`~eams.actuators.transitions.Transition` of
  :mod:`eams.actuators` (a refusal or failure is a Transition, not an exception).

The phase columns of the observer's :class:`~.policy_fleet.FleetState` (``state``,
``state_since_s``, ``last_wake_s``, ``last_sleep_s``, ``suspect``, ``failed_wakes``) are only
its first guess (:func:`guess_state`); the manager overrides them with the phases it keeps.
All times are seconds on the observer's clock (the one ``step(now_s)`` is called with).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from eams.actuators.transitions import Transition
from eams.scheduler.power.policy_fleet import ASLEEP, AWAKE, FleetInputError, FleetState
from eams.scheduler.record.schema import Power

PHASE_NAMES = {0: "awake", 1: "asleep", 2: "waking", 3: "suspending"}
""":class:`~.policy_fleet.PowerState` code → the word of the node annotation
``eams.io/power-state`` (:data:`eams.kube.names.POWER_STATE_ANNOTATION`; also
:data:`SUSPECT` for a node whose last wake or suspend did not confirm in time). Its
``eams.io/power-reason`` carries the decision's reason (:class:`~.policy_plan.Reason`) and its
figures, as the decision's log line has them; the taint is ``eams.io/asleep:NoSchedule``
(:data:`eams.kube.names.ASLEEP_TAINT`). Every ``eams.io/*`` name lives in
:mod:`eams.kube.names`."""
SUSPECT = "asleep-suspect"
"""The ``eams.io/power-state`` of an asleep node whose last wake or suspend did not confirm in
time: the market prices it no more (its wake request is removed)."""


@dataclass(frozen=True)
class Observation:
    """The fleet at one instant, as a :class:`FleetObserver` sees it.

    Attributes
    ----------
    fleet : FleetState
        N nodes and the pending pods. ``fleet.names`` are the names the marker and the
        actuator take. Its phase columns are a guess (:func:`guess_state`): the manager keeps
        its own.
    ready : (N,) bool
        The node's Ready condition is True.
    agent_seen_s : (N,) float
        When the node's agent last reported (s, observer's clock), NaN when never. A wake
        counts (the node re-registered) only when this is later than the wake's start and
        ``ready`` is True.
    marked_asleep : (N,) bool
        The node carries the ``eams.io/asleep`` taint (a manager put it to sleep, perhaps an
        earlier run of it).
    heartbeat_s : (N,) float
        The node's last kubelet heartbeat as the API shows it (the later of its Lease's
        ``renewTime`` and its Ready condition's ``lastHeartbeatTime``), epoch s on the
        kubelet's clock; NaN when none. Only compared with earlier values of itself: a
        ``Ready=True`` read after a wake may be the stale one from before the sleep (the
        node-lifecycle controller marks a silent node Unknown only after its grace period,
        40 s by default), so a wake counts only once the heartbeat has advanced past the one
        seen when the wake was sent.

    Raises
    ------
    FleetInputError
        A column's length differs from ``fleet.size``.
    """

    fleet: FleetState
    ready: NDArray[np.bool_]
    agent_seen_s: NDArray[np.float64]
    marked_asleep: NDArray[np.bool_]
    heartbeat_s: NDArray[np.float64]

    def __post_init__(self) -> None:
        n = self.fleet.size
        for column in ("ready", "agent_seen_s", "marked_asleep", "heartbeat_s"):
            shape = np.shape(getattr(self, column))
            if shape != (n,):
                raise FleetInputError(f"observation.{column}: shape {shape}, expected ({n},)")


def guess_state(ready: NDArray[np.bool_], marked_asleep: NDArray[np.bool_]) -> NDArray[np.int8]:
    """The phase an observer without memory puts in ``FleetState.state``: asleep for a node
    that is tainted ``eams.io/asleep`` and not Ready, awake otherwise. Shape (N,), int8."""
    return np.where(marked_asleep & ~ready, ASLEEP, AWAKE).astype(np.int8)


@runtime_checkable
class FleetObserver(Protocol):
    """Where the fleet comes from (the Kubernetes API and the calibrations; the demo's
    emulated cluster)."""

    def observe(self, now_s: float) -> Observation:
        """The fleet now. Raises an :class:`~eams.errors.EamsError` when it cannot be seen
        (the manager then decides nothing this tick and says why)."""
        ...


@runtime_checkable
class NodeMarker(Protocol):
    """The Kubernetes side of a node's sleep. Each call raises an
    :class:`~eams.errors.EamsError` naming the node when the change was not made (the manager
    then does not act on the node)."""

    def mark_asleep(self, node: str, reason: str) -> None:
        """Cordon ``node`` (``spec.unschedulable``), taint it ``eams.io/asleep:NoSchedule``
        and annotate it ``eams.io/power-state=suspending``, ``eams.io/power-reason=reason``
        — before it is told to sleep."""
        ...

    def annotate(self, node: str, state: str, reason: str) -> None:
        """Set ``eams.io/power-state`` to ``state`` (:data:`PHASE_NAMES` or
        ``asleep-suspect``) and ``eams.io/power-reason`` to ``reason``; nothing else, but for
        ``asleep-suspect`` remove the market's wake request (``eams.io/wake-request``)."""
        ...

    def release(self, node: str, reason: str) -> None:
        """Remove the ``eams.io/asleep`` taint, uncordon, annotate ``awake`` with ``reason``,
        remove the market's wake request (``eams.io/wake-request``)
        — after the node is Ready and its agent reports again (or a sleep was refused)."""
        ...


@runtime_checkable
class Actuator(Protocol):
    """Switches nodes (:class:`~eams.actuators.actions.PowerActions`; the demo's
    simulator). Each call returns the action's Transition: ``result`` ``ok``, ``failed`` or
    ``refused`` (the safety rules: a node with pods that are not DaemonSets', a role that
    never sleeps), never raising for those."""

    def sleep(self, node: str, reason: str) -> Transition:
        """Put ``node`` to sleep (its inventory method's sleep state)."""
        ...

    def wake(self, node: str, reason: str) -> Transition:
        """Send ``node`` its wake (a magic packet, its outlet on)."""
        ...

    def restart_agent(self, node: str) -> Transition:
        """Restart the node's k3s agent (``systemctl restart k3s-agent``): a node that came
        back from a suspend but stays NotReady."""
        ...

    def sleep_state(self, node: str) -> str:
        """The state :meth:`sleep` leaves ``node`` in: ``suspended``, ``soft_off`` or ``off``
        (:data:`~eams.actuators.transitions.STATES`)."""
        ...


@runtime_checkable
class RecordSink(Protocol):
    """Where decision records go (:class:`eams.scheduler.record.Recorder`, prefix ``power``)."""

    def submit(self, record: Power) -> bool:
        """Queue one record; ``False`` if dropped. Never blocks, never raises."""
        ...
