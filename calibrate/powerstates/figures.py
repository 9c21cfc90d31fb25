"""A calibration's measured sleep state as the power policy and the market read it.

By the node's method (:class:`~eams.calibrate.powerstates.record.PowerStates`): the sleep
power and wake are :attr:`~PowerStates.sleep_power_w`, :attr:`~PowerStates.wake_energy_j`,
:attr:`~PowerStates.wake_time_s` (suspend-to-RAM for wol, the boot otherwise); the wake's time
is the later of the agent answering and Kubernetes calling the node Ready (``kubernetes_ready_s``
when measured: the manager counts a wake only at both); the sleep's cost is the ``suspend``
(wol) or the ``shutdown`` (ssh, outlet). Anything not measured is ``None``: the power manager
never puts such a node to sleep and the market never wakes it for a pod (one reading for both,
issue 34: ``eams.scheduler.power`` and ``eams.scheduler.extender``).
"""

from __future__ import annotations

from typing import Any

from eams.actuators.methods import suspends
from eams.calibrate.calfile import Calibration


def node_figures(cal: Calibration) -> dict[str, Any]:
    """The fields a calibration gives the power policy
    (:class:`eams.scheduler.power.policy_fleet.NodePowerView`) and the extender's node table:
    ``p_idle_w``, ``p_max_w``, ``speed`` (1 when unknown: the node is its own reference),
    ``p_wake_w`` (its ``wake_power_w``, as the extender's bids take it) and the sleep state
    (module docstring; ``None`` where not measured)."""
    states = cal.power_states
    figures: dict[str, Any] = {
        "p_idle_w": max(cal.p_idle_w, 0.0),
        "p_max_w": max(cal.p_max_w, cal.p_idle_w, 0.0),
        "speed": cal.speed if cal.speed is not None else 1.0,
        "p_wake_w": max(cal.wake_power_w, 0.0),
        "sleep_power_w": None,
        "wake_time_s": None,
        "wake_energy_j": None,
        "suspend_time_s": None,
        "suspend_energy_j": None,
    }
    if states is None:
        return figures
    wake = states.wake if suspends(states.method) else states.boot
    sleep = states.suspend if suspends(states.method) else states.shutdown
    figures["sleep_power_w"] = states.sleep_power_w
    figures["wake_energy_j"] = states.wake_energy_j
    if wake is not None:
        ready = wake.kubernetes_ready_s.value if wake.kubernetes_ready_s is not None else 0.0
        figures["wake_time_s"] = max(wake.time_s.value, ready)
    if sleep is not None:
        figures["suspend_time_s"] = sleep.time_s.value
        figures["suspend_energy_j"] = sleep.energy_j.value
    return figures
