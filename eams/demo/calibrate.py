"""Demo stage 2: calibrate every virtual node with the real sweep, through the real meter.

Each node is swept by :func:`eams.calibrate.sweep.run_sweep` (settling, measured utilisation
from its virtual ``/proc/stat``, every outlet power read over SNMP by the APC driver), with
:class:`~eams.demo.testbed.VirtualRunner` as its load driver, then fitted and saved by
:func:`eams.calibrate.run.fit_and_save`. The six outlets are independent, so the nodes are swept
at the same time (one thread each), as one would on a real testbed; they share one meter
connection whose reading serves every sweep that asks within half a sample interval
(:class:`SharedMeter`), so the PDU is polled once per interval, not six times.
Speeds are relative to a virtual reference node of speed 1 (4 cores at
``BOGO_OPS_PER_CORE_S``).

Then every node that may sleep has its power states measured (:func:`measure_power_states`)
by the product's :class:`~eams.calibrate.powerstates.measure.PowerStateMeasurement`, as
``eams calibrate power-states`` measures a real node: soft-off, outlet off, outlet on over
SNMP, each repeated three times, the PDU read as fast as it answers by one poller whose every
reading goes to every measured node's trace (``TracePoller``: no node waits on another's
read), each action timed by its own step (the outlet's SET, not its read-back:
``SwitchResult.set_s``); the result goes into the node's calibration file (schema 2's
``power_states``), from which the power manager and the extender's wake prices both read the
sleep state (one cost model). The virtual node has no
SSH: its ``systemctl poweroff`` is the simulator's soft-off (:class:`VirtualPowerActions`), and
its agent answers while its virtual OS runs (its ``/proc/stat`` reads).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

from eams.actuators.actions import PowerActions
from eams.actuators.errors import PowerActionFailed
from eams.actuators.methods.base import Action
from eams.actuators.steps import Steps
from eams.actuators.transitions import Transition
from eams.calibrate.calfile import Calibration, load_calibration, save_calibration
from eams.calibrate.powerstates.measure import MeasurePlan, PowerStateMeasurement
from eams.calibrate.powerstates.trace import PowerTrace, TracePoller
from eams.calibrate.run import SpeedReferenceSpec, fit_and_save
from eams.calibrate.sweep import SweepPlan, SweepProgress, run_sweep
from eams.demo.cluster import EmulatedCluster
from eams.demo.errors import DemoError
from eams.demo.fleet import CORES
from eams.demo.power import ASLEEP_TAINT, SWITCH_WAIT_S, demo_inventory
from eams.demo.testbed import (
    BOGO_OPS_PER_CORE_S,
    DRIVER,
    METER_RETRIES,
    METER_TIMEOUT_S,
    Testbed,
    VirtualNode,
    VirtualRunner,
)
from eams.errors import ProcStatError
from eams.meter.blocking import BlockingMeter
from eams.meter.errors import MeterError
from eams.meter.reading import Reading
from eams.meter.simulator.errors import SimulatorError

FULL_LEVELS_PCT = tuple(range(0, 101, 5))
"""21 levels, twice the sweep's default: the fit's 95 % intervals of P_idle and P_max (the
calibration term of VT-5's uncertainty) narrow with the points, for about 40 s more."""
FULL_PLAN = SweepPlan(
    levels_pct=FULL_LEVELS_PCT,
    settle_s=1.5,
    measure_s=1.0,
    sample_s=0.1,
    settle_power_tol_pct=3.0,
    settle_power_tol_w=1.0,
)
QUICK_PLAN = SweepPlan(
    levels_pct=(0, 25, 50, 75, 100),
    settle_s=0.8,
    measure_s=0.4,
    sample_s=0.2,
    settle_power_tol_pct=3.0,
    settle_power_tol_w=1.0,
)
REFERENCE = SpeedReferenceSpec("virtual reference node", BOGO_OPS_PER_CORE_S * CORES)


class SharedMeter:
    """One meter read on behalf of several sweeps (the sweep's ``BlockingReader`` contract).

    Parameters
    ----------
    meter : BlockingMeter
    max_age_s : float
        A reading whose request was sent at most this long (s) before a caller asked is handed
        to it instead of reading anew; callers that queued behind a slow read take that read
        when it started soon enough, so a busy meter is not read once per caller back to back.
    """

    def __init__(self, meter: BlockingMeter, max_age_s: float) -> None:
        self._meter = meter
        self._max_age_s = max_age_s
        self._lock = threading.Lock()
        self._cached: tuple[float, Reading] | None = None

    @property
    def meter(self) -> Any:
        """The meter read (``BlockingMeter.meter``: a power-state result names its URL)."""
        return self._meter.meter

    def read(self) -> Reading:
        """The latest reading, asked for at most ``max_age_s`` before this call; raises
        MeterError as the meter."""
        asked = time.monotonic()
        with self._lock:
            if self._cached is None or asked - self._cached[0] > self._max_age_s:
                self._cached = (time.monotonic(), self._meter.read())
            return self._cached[1]


def _calibrate_one(
    meter: SharedMeter,
    meter_url: str,
    outlet: int,
    node: VirtualNode,
    plan: SweepPlan,
    out_dir: Path,
    progress: Callable[[str, SweepProgress], None],
) -> Calibration:
    name = node.spec.name
    record = run_sweep(
        VirtualRunner(node),
        meter,
        node=name,
        meter_url=meter_url,
        outlet=outlet,
        plan=plan,
        progress=lambda p: progress(name, p),
    )
    return fit_and_save(record, out_dir / f"{name}.json", REFERENCE)


def calibrate_fleet(
    testbed: Testbed,
    out_dir: Path,
    *,
    quick: bool,
    progress: Callable[[str, SweepProgress], None],
) -> list[Calibration]:
    """Sweep, fit and save every node of ``testbed``; files ``out_dir/NODE.json``.

    Parameters
    ----------
    testbed : Testbed
        Running; outlet n feeds node n.
    out_dir : Path
        Created if missing.
    quick : bool
        Five levels and shorter intervals (:data:`QUICK_PLAN`) instead of :data:`FULL_PLAN`.
    progress : callable
        ``(node, SweepProgress)``, called from the sweep threads.

    Returns
    -------
    list of Calibration
        In node order.

    Raises
    ------
    SweepError, FitError, MeterError
        The first failure of any node (the others finish first; their loads are stopped).
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    plan = QUICK_PLAN if quick else FULL_PLAN
    with (
        BlockingMeter(
            testbed.url, driver=DRIVER, timeout_s=METER_TIMEOUT_S, retries=METER_RETRIES
        ) as blocking,
        ThreadPoolExecutor(len(testbed.nodes), thread_name_prefix="eams-demo-sweep") as pool,
    ):
        meter = SharedMeter(blocking, plan.sample_s / 2)
        futures = [
            pool.submit(_calibrate_one, meter, testbed.url, outlet, node, plan, out_dir, progress)
            for outlet, node in enumerate(testbed.nodes, start=1)
        ]
        return [future.result() for future in futures]


POWER_STATES_PLAN = MeasurePlan(
    repeats=3, sample_s=0.1, settle_s=0.6, measure_s=0.5, timeout_s=30.0, boot_off_s=0.3,
    lag_s=0.05,
)  # fmt: skip
"""The power-state measurement of the demo's nodes: three repeats (the minimum), the outlet
read every 0.1 s, each level steady for 0.6 s, the off level averaged over 0.5 s, the outlet
off for 0.3 s before a boot; the simulator's snapshots are at most 0.05 s old (``lag_s``).
A node sleeps and boots in about a second, so each takes ~10 s, the nodes at once."""


class VirtualPowerActions(PowerActions):
    """The product's power actions on the virtual testbed (module docstring), under the safety
    rules against the emulated cluster: ``systemctl poweroff`` is the simulator's soft-off (a
    virtual node has no SSH, as in :class:`~eams.demo.power.DemoActuator`), and an outlet is
    switched over SNMP (SET, then its state read back) through one meter kept open, as the
    demo's actuator does, not one opened per action (its first read learns the PDU: 1.3–2.7 s
    per action on the shared 2-core machine, and five nodes measured at once starved the
    outlet traces of readings). A context manager: leaving closes the meter.

    Parameters
    ----------
    testbed : Testbed
    cluster : EmulatedCluster
        Its node objects are what the safety rules read.

    Raises
    ------
    MeterError
        The PDU cannot be read (when opened).
    """

    def __init__(self, testbed: Testbed, cluster: EmulatedCluster) -> None:
        super().__init__(
            demo_inventory(testbed), who="eams demo", why="power-state calibration",
            node_view=cluster.view,
        )  # fmt: skip
        self.testbed = testbed
        write_url = testbed.simulator.write_url
        assert write_url is not None, "the demo's simulator always has a write community"
        self._switcher = BlockingMeter(
            write_url, driver=DRIVER, timeout_s=METER_TIMEOUT_S, retries=METER_RETRIES
        )
        self._switcher.read()  # learn the outlets now, not during the first switch

    def __enter__(self) -> VirtualPowerActions:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._switcher.close()

    def _act(
        self,
        node: str,
        to: str,
        step: str,
        stops: bool,
        act: Callable[[], tuple[str, tuple[float, float] | None]],
    ) -> Transition:
        """One action through the façade's machinery (safety when it ``stops`` the node, one
        transition recorded); ``act`` returns its step's words and the monotonic window in
        which it changed the node, the transition's ``acted_s``."""

        def run(done: Steps) -> None:
            words, self._kit.acted = act()
            done.append(words)

        return self._do(node, Action(to, lambda: [step], run, stops=stops))

    def os_sleep(self, node: str, verb: str) -> Transition:
        """``systemctl poweroff`` of the virtual OS: the simulator's soft-off, after the safety
        rules (``verb`` ``suspend``: a virtual node cannot; ValueError).

        Raises
        ------
        PowerActionFailed
            Its OS was not running.
        PowerRefused, ClusterUnreachable
            A safety rule.
        """
        if verb != "poweroff":
            raise ValueError(f"a virtual node cannot {verb}: only poweroff")
        outlet = self.inventory.node(node).outlet
        assert outlet is not None
        step = f"virtual OS of {node}: systemctl poweroff (the simulator's soft-off)"

        def act() -> tuple[str, tuple[float, float]]:
            called = time.monotonic()
            try:
                self.testbed.simulator.soft_off(outlet)
            except SimulatorError as exc:
                raise PowerActionFailed(f"node {node}: poweroff failed: {exc}") from exc
            return step, (called, time.monotonic())

        return self._act(node, "soft_off", step, True, act)

    def wake(self, node: str) -> Transition:
        """Wake ``node``: its outlet on (every virtual node's method is ``outlet``) through the
        meter kept open, not one opened for the wake (the measurement's wake after a failure
        came while the machine was loaded, and a new meter's first read timed out, leaving the
        node asleep). Raises as :meth:`outlet`."""
        return self.outlet(node, "on")

    def outlet(self, node: str, action: str) -> Transition:
        """Switch ``node``'s outlet ``on`` or ``off`` (the safety rules first for off), its
        state read back.

        Raises
        ------
        PowerActionFailed
            The switch failed or did not read back as asked.
        PowerRefused, ClusterUnreachable
            A safety rule (off).
        """
        if action not in ("on", "off"):
            raise ValueError(f"action {action!r} is not on or off")
        outlet = self.inventory.node(node).outlet
        assert outlet is not None

        def act() -> tuple[str, tuple[float, float] | None]:
            try:
                done = self._switcher.switch(outlet, action, wait_s=SWITCH_WAIT_S)
            except MeterError as exc:
                raise PowerActionFailed(f"node {node}: outlet {outlet} {action}: {exc}") from exc
            if done.state != action:
                raise PowerActionFailed(
                    f"node {node}: outlet {outlet} reads {done.state} after {action}"
                )
            words = f"outlet {outlet} {action}: state read back {done.state} after "
            return words + f"{done.elapsed_s:.1f} s", done.set_s  # the SETs' window

        to = "running" if action == "on" else "off"
        return self._act(node, to, f"outlet {outlet} {action}", action == "off", act)


def _answers(node: VirtualNode) -> bool:
    """The node's agent answers: its virtual ``/proc/stat`` reads (its OS runs), as the demo's
    agents read it."""
    try:
        node.cpu_times()
    except ProcStatError:
        return False
    return True


def _measure_one(
    actions: VirtualPowerActions, trace: PowerTrace, node: VirtualNode, out_dir: Path
) -> Calibration:
    name = node.spec.name
    states = PowerStateMeasurement(
        name, actions, trace, lambda: _answers(node), plan=POWER_STATES_PLAN
    ).run()
    path = out_dir / f"{name}.json"
    updated = load_calibration(path, expect_node=name).with_power_states(states)
    save_calibration(updated, path)
    return updated


def measure_power_states(
    testbed: Testbed, calibrations: list[Calibration], out_dir: Path
) -> list[Calibration]:
    """Measure the power states of every node that may sleep (module docstring) and write them
    into its calibration file ``out_dir/NODE.json``; the PDU owner and k3s server (mini-1,
    :data:`~eams.demo.power.OWNER_ROLES`) never sleeps and is not measured.

    Parameters
    ----------
    testbed : Testbed
        Running, every node idle.
    calibrations : list of Calibration
        In node order, as :func:`calibrate_fleet` wrote them.

    Returns
    -------
    list of Calibration
        In node order, with ``power_states`` where measured; every node running again.

    Raises
    ------
    PowerActionFailed, PowerRefused
        The first node's failure (the others finish first; a node asleep when its measurement
        failed is woken again, the message says whether that worked).
    """
    cluster = EmulatedCluster(testbed, 1.0, time.time)
    measured: dict[int, Future[Calibration]] = {}
    with (
        VirtualPowerActions(testbed, cluster) as actions,
        BlockingMeter(
            testbed.url, driver=DRIVER, timeout_s=METER_TIMEOUT_S, retries=METER_RETRIES
        ) as blocking,
        ThreadPoolExecutor(len(testbed.nodes), thread_name_prefix="eams-demo-states") as pool,
    ):
        nodes = {
            outlet: node
            for outlet, node in enumerate(testbed.nodes, start=1)
            if not actions.inventory.node(node.spec.name).never_sleeps()
        }
        traces = {i: PowerTrace(blocking, i, POWER_STATES_PLAN.lag_s) for i in nodes}
        # every reading of the PDU goes to every node's trace
        poller = TracePoller(blocking, list(traces.values())).start(POWER_STATES_PLAN.sample_s)
        try:
            for outlet, node in nodes.items():
                cluster.taint(node.spec.name, ASLEEP_TAINT, cordon=True)  # as the manager does
                measured[outlet] = pool.submit(_measure_one, actions, traces[outlet], node, out_dir)
            wait(measured.values())  # every node done before its trace stops
        finally:
            poller.stop()
        return [
            measured[i].result() if i in measured else cal
            for i, cal in enumerate(calibrations, start=1)
        ]


def measure_power_states_again(
    testbed: Testbed, calibrations: list[Calibration], out_dir: Path
) -> list[Calibration]:
    """A repeat's own calibration files in ``out_dir`` (made): every node's power curve as the
    calibration stage fitted it (the sweep is deterministic on the simulator: the same curve
    every time) and the power states measured afresh (:func:`measure_power_states`). The power
    manager's break-even and the extender's wake prices follow that measurement, so one demo's
    repeats see its spread (issue 35: three demos of 7 Dec whose default+pm saved 4.6, 4.0 and
    12.4 % while each one's repeats agreed within 1.3 points; the third had measured mini-3's
    wake at 189 J where the others had 221 and 238 J).

    Raises
    ------
    DemoError
        ``out_dir`` cannot be written.
    PowerActionFailed, PowerRefused
        As :func:`measure_power_states`.
    """
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        for cal in calibrations:  # the nodes that never sleep keep theirs as they are
            save_calibration(cal, out_dir / f"{cal.node}.json")
    except OSError as exc:
        raise DemoError(f"cannot write {out_dir}: {exc.strerror or exc}") from exc
    return measure_power_states(testbed, calibrations, out_dir)
