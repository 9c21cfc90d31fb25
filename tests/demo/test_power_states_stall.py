"""The demo's power-state measurement when its outlet trace stalls, as on a busy 2-core machine
(CI: ``eams demo --quick`` exited with "outlet 2: no power reading between the two instants"):
the measurement runs on the demo's own parts (the PDU simulator, the virtual node, its power
actions and emulated cluster), only the trace's meter is a stand-in, for the stall."""

from __future__ import annotations

import time

from eams.calibrate.powerstates.measure import MeasurePlan, PowerStateMeasurement
from eams.calibrate.powerstates.trace import PowerTrace
from eams.demo.calibrate import VirtualPowerActions
from eams.demo.cluster import EmulatedCluster
from eams.demo.fleet import demo_fleet
from eams.demo.power import ASLEEP_TAINT
from eams.demo.testbed import DRIVER
from eams.demo.testbed import Testbed as VirtualTestbed  # not collected as a test class
from eams.meter.blocking import BlockingMeter
from eams.meter.reading import Reading
from eams.meter.simulator import NodePower, PduSimulator

BOOT = NodePower(boot_s=0.3, boot_power_w=40.0, off_w=1.0, shutdown_s=0.2)
"""Fast hidden power states; the boot draws 40 W, between off and the node's idle draw."""
PLAN = MeasurePlan(
    repeats=3, sample_s=0.05, settle_s=0.2, measure_s=0.2, timeout_s=30.0, boot_off_s=0.1,
    lag_s=0.05,
)  # fmt: skip


class StalledThroughBoots:
    """A stand-in only for the stall (the real simulator answers at once): a read asked while
    the node is off or booting starts only 0.2 s after it runs again, as a reading thread the
    scheduler did not run for the whole boot; then it reads the real meter."""

    def __init__(self, meter: BlockingMeter, simulator: PduSimulator, outlet: int) -> None:
        self._real, self._simulator, self._outlet = meter, simulator, outlet
        self.meter = meter.meter
        self.stalls = 0

    def read(self) -> Reading:
        if self._stalled():
            self.stalls += 1
            while self._stalled():
                time.sleep(0.01)
            time.sleep(0.2)
        return self._real.read()

    def _stalled(self) -> bool:
        return self._simulator.state(self._outlet).node in ("off", "booting")


def test_power_states_hold_when_the_trace_stalls_through_every_boot() -> None:
    nodes, _ = demo_fleet()
    with (
        VirtualTestbed(nodes[:2], BOOT) as testbed,
        BlockingMeter(testbed.url, driver=DRIVER) as real,
    ):
        node = testbed.nodes[1]  # mini-1 owns the PDU and never sleeps
        cluster = EmulatedCluster(testbed, 1.0, time.time)
        cluster.taint(node.spec.name, ASLEEP_TAINT, cordon=True)  # as the demo marks it
        meter = StalledThroughBoots(real, testbed.simulator, 2)
        trace = PowerTrace(meter, 2, PLAN.lag_s).start(PLAN.sample_s)  # type: ignore[arg-type]
        try:
            with VirtualPowerActions(testbed, cluster) as actions:
                states = PowerStateMeasurement(
                    node.spec.name, actions, trace, lambda: _runs(testbed), plan=PLAN
                ).run()
        finally:
            trace.stop()
    assert meter.stalls == 3  # one stall through each boot
    assert states.boot is not None
    lo, hi = states.boot.time_s.ci95
    assert lo <= BOOT.boot_s <= hi
    lo, hi = states.boot.energy_j.ci95  # wider, not invented: it still holds the truth
    assert lo <= BOOT.boot_power_w * BOOT.boot_s <= hi  # type: ignore[operator]


class ProbeStallingOnce:
    """The agent's stand-in (it answers while the virtual machine runs) whose first answer
    after the node's second time down comes ``stall_s`` late: a host that did not run the
    probe for that long (a stand-in only for the stall, which a quiet machine will not give on
    cue)."""

    def __init__(self, testbed: VirtualTestbed, stall_s: float) -> None:
        self.testbed, self.stall_s = testbed, stall_s
        self.downs, self.was_up, self.stalls = 0, True, 0

    def __call__(self) -> bool:
        up = _runs(self.testbed)
        self.downs += not up and self.was_up
        self.was_up = up
        if up and self.downs == 2 and not self.stalls:
            self.stalls += 1
            time.sleep(self.stall_s)
        return up


def test_a_boot_timed_during_a_stall_is_retaken_and_left_out() -> None:
    """A busy host once timed a demo node's boot end to ±1.07 s (the others ±0.1 s) and its
    energy 390 J against the node's 212 J, which moved its break-even past its empty time
    (issue 35): such a repeat is retaken and left out, and the notes say so."""
    nodes, _ = demo_fleet()
    with VirtualTestbed(nodes[:2], BOOT) as testbed:
        node = testbed.nodes[1]
        cluster = EmulatedCluster(testbed, 1.0, time.time)
        cluster.taint(node.spec.name, ASLEEP_TAINT, cordon=True)
        # 3 s: a repeat is retaken when timed over 4x as loosely as the others, and beside a
        # sweep (load 11 on 2 cores) the others were timed to ±0.25 s or more, so a 1 s stall
        # did not stand out (CI of 9775c6b)
        probe = ProbeStallingOnce(testbed, stall_s=3.0)
        with BlockingMeter(testbed.url, driver=DRIVER) as meter:
            trace = PowerTrace(meter, 2, PLAN.lag_s).start(PLAN.sample_s)
            try:
                with VirtualPowerActions(testbed, cluster) as actions:
                    states = PowerStateMeasurement(
                        node.spec.name, actions, trace, probe, plan=PLAN
                    ).run()
            finally:
                trace.stop()
    assert probe.stalls == 1
    assert states.repeats == 4  # three planned, one retaken
    assert states.boot is not None and states.shutdown is not None
    assert len(states.boot.time_s.repeats) == 3  # the stalled one left out
    assert len(states.shutdown.time_s.repeats) == 4  # a shutdown it did not touch is kept
    lo, hi = states.boot.time_s.ci95
    assert lo <= BOOT.boot_s <= hi and hi - lo < 0.5  # the stall's ±0.5 s is not in it
    retaken = [n for n in states.notes if n.startswith("boot: 1 repeat(s) retaken: timed to ±")]
    assert len(retaken) == 1, states.notes


def _runs(testbed: VirtualTestbed) -> bool:
    """The agent's stand-in: it answers while the virtual machine runs."""
    return testbed.simulator.state(2).node == "running"


def test_a_wake_goes_through_the_meter_kept_open(monkeypatch) -> None:
    """After a failed measurement the node is woken again under load: through the meter the
    actions keep open, as their switches are. Opening another meter is made to fail here (the
    stand-in: the timeout a loaded machine gave that new meter's first read)."""
    import eams.actuators.steps as steps

    def no_new_meter(*args: object, **kwargs: object) -> None:
        raise AssertionError("the wake opened a new meter")

    nodes, _ = demo_fleet()
    with VirtualTestbed(nodes[:2], BOOT) as testbed:
        node = testbed.nodes[1]
        cluster = EmulatedCluster(testbed, 1.0, time.time)
        with VirtualPowerActions(testbed, cluster) as actions:
            testbed.simulator.switch_outlet(2, "off")
            monkeypatch.setattr(steps, "BlockingMeter", no_new_meter)
            done = actions.wake(node.spec.name)
        assert done.result == "ok", done
        assert testbed.simulator.state(2).state == "on"
