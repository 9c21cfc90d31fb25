"""One node's power-state calibration end to end: open the meter and the probes, measure,
write the result into the node's calibration file (schema 2)."""

from __future__ import annotations

from pathlib import Path

from eams.actuators.actions import PowerActions
from eams.actuators.errors import PowerActionFailed
from eams.actuators.inventory import PowerInventory
from eams.actuators.methods import suspends
from eams.calibrate.calfile import Calibration, load_calibration, save_calibration
from eams.calibrate.powerstates.measure import MeasurePlan, PowerStateMeasurement
from eams.calibrate.powerstates.probes import AgentProbe, ReadyProbe
from eams.calibrate.powerstates.trace import PowerTrace
from eams.kube.errors import ApiUnreachable, KubeConfigError
from eams.kube.nodeview import Cluster
from eams.meter.blocking import BlockingMeter
from eams.meter.errors import MeterError


def plan_power_states(node: str, inventory: PowerInventory, actions: PowerActions) -> list[str]:
    """What a measurement of ``node`` would do, each action checked and planned by the façade
    (a dry run: ``actions.dry_run`` must be true), as lines to print.

    Raises
    ------
    PowerRefused, ClusterUnreachable, PowerActionFailed
        As the actions would.
    """
    assert actions.dry_run
    entry = inventory.node(node)
    steps = []
    if suspends(entry.method):
        steps += [actions.os_sleep(node, "suspend"), actions.magic_packet(node)]
    steps.append(actions.os_sleep(node, "poweroff"))
    if entry.outlet is not None and inventory.pdu is not None:
        steps += [actions.outlet(node, "off"), actions.outlet(node, "on")]
    else:
        steps.append(actions.magic_packet(node))
    lines = [f"node {node} (method {entry.method}), each repeat:"]
    for transition in steps:
        lines += [f"  {step}" for step in transition.steps]
    return lines


def measure_node(
    node: str,
    inventory: PowerInventory,
    actions: PowerActions,
    calibration: Path,
    *,
    plan: MeasurePlan,
    out: Path | None = None,
) -> tuple[Calibration, Path]:
    """Measure ``node``'s power states and save them into its calibration file.

    Parameters
    ----------
    calibration : Path
        The node's calibration file (its line: ``eams calibrate sweep``).
    out : Path, optional
        Where to write (default: ``calibration`` itself).

    Returns
    -------
    (Calibration, Path)
        The file's new content and where it was written.

    Raises
    ------
    CalibrationFileError
        The file is unreadable or another node's (before anything is switched).
    PowerActionFailed
        No outlet or meter for the node, the meter cannot be opened, or as
        :meth:`PowerStateMeasurement.run`.
    PowerRefused, ClusterUnreachable
        A safety rule.
    """
    existing = load_calibration(calibration, expect_node=node)
    entry = inventory.node(node)
    agent_url = inventory.agent_url(node)
    if entry.outlet is None or inventory.meter_url is None or agent_url is None:
        raise PowerActionFailed(
            f"node {node}: measuring power states needs its outlet, the inventory's meter (or "
            f"pdu) and an agent_url or ssh host in {inventory.source}"
        )
    ready = None
    try:
        cluster = Cluster(inventory.kubeconfig)
        cluster.ready(node)
        ready = ReadyProbe(cluster.ready, node)
    except (ApiUnreachable, KubeConfigError):
        pass  # the safety rules say so (or --force did); no Ready times then
    try:
        meter = BlockingMeter(inventory.meter_url, timeout_s=2.0, retries=1)
    except MeterError as exc:
        raise PowerActionFailed(f"{inventory.source}: meter: {exc}") from exc
    with meter:
        trace = PowerTrace(meter, entry.outlet, plan.lag_s).start(plan.sample_s)
        try:
            measurement = PowerStateMeasurement(
                node, actions, trace, AgentProbe(agent_url), ready=ready, plan=plan
            )
            states = measurement.run()
        finally:
            trace.stop()
    if ready is None:
        states = states.model_copy(
            update={"notes": [*states.notes, "Kubernetes API not reachable: no Ready times"]}
        )
    updated = existing.with_power_states(states)
    return updated, save_calibration(updated, out or calibration)
