"""The power manager's Prometheus metrics (served by ``eams power manage --metrics-port``).

* ``eams_power_decisions_total{action,reason,mode}`` — decisions made (shadow mode counts a
  decision once while it stands, not at every tick);
* ``eams_power_held_total{action}`` — decisions a rate limit held back;
* ``eams_power_nodes{state}`` — nodes by phase: ``awake``, ``suspending``, ``asleep``,
  ``waking``, ``suspect`` (asleep and suspect; counted in ``asleep`` too), ``unmanaged``
  (NotReady with no sleep of ours to explain it: left alone);
* ``eams_power_failed_wakes_total{node}`` — wakes not confirmed in time, or that could not be
  sent (alert on its rate);
* ``eams_power_wakes_confirmed_total`` — wakes that re-registered (Ready and agent reporting);
* ``eams_power_observe_errors_total`` — ticks in which the fleet could not be seen;
* ``eams_power_transitions_total`` — every action's outcome
  (:mod:`eams.actuators.transitions`, on the same registry when the manager
  serves that one).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge

NODE_STATES = ("awake", "suspending", "asleep", "waking", "suspect", "unmanaged")


class ManagerMetrics:
    """The metrics above, registered on ``registry``.

    Parameters
    ----------
    registry : CollectorRegistry
    """

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self.decisions = Counter(
            "eams_power_decisions",
            "Power-manager decisions, by action, reason and mode.",
            ["action", "reason", "mode"],
            registry=registry,
        )
        self.held = Counter(
            "eams_power_held",
            "Power-manager decisions held back by a rate limit, by action.",
            ["action"],
            registry=registry,
        )
        self.nodes = Gauge(
            "eams_power_nodes", "Nodes by power phase.", ["state"], registry=registry
        )
        self.failed_wakes = Counter(
            "eams_power_failed_wakes",
            "Wakes that did not re-register in time or could not be sent, by node.",
            ["node"],
            registry=registry,
        )
        self.wakes_confirmed = Counter(
            "eams_power_wakes_confirmed",
            "Wakes confirmed: the node Ready and its agent reporting again.",
            registry=registry,
        )
        self.observe_errors = Counter(
            "eams_power_observe_errors",
            "Ticks in which the fleet could not be observed.",
            registry=registry,
        )

    def set_nodes(self, counts: dict[str, int]) -> None:
        """Set ``eams_power_nodes`` for every state of :data:`NODE_STATES` (0 when absent)."""
        for state in NODE_STATES:
            self.nodes.labels(state).set(counts.get(state, 0))
