"""The PDU poller keeps polling whatever a read raises.

A driver bug (an exception that is not a MeterError) cannot be produced on cue with the real
SNMP stack, so a scripted meter stands in for :class:`eams.meter.blocking.BlockingMeter`.
"""

from __future__ import annotations

from datetime import UTC, datetime

from eams.agent.metrics import AgentMetrics
from eams.agent.poller import MeterPoller
from eams.agent.sampler import TimedReading
from eams.meter.errors import MeterError
from eams.meter.reading import Reading
from tests.agent.conftest import wait_for


class ScriptedMeter:
    """Raises each of ``failures`` in turn, then returns a reading; records close()."""

    def __init__(self, failures: list[Exception]):
        self.failures = failures
        self.closed = False

    def read(self) -> Reading:
        if self.failures:
            raise self.failures.pop(0)
        return Reading(meter="scripted", read_at=datetime.now(UTC), driver="scripted")

    def close(self) -> None:
        self.closed = True


def test_an_unexpected_exception_does_not_end_polling() -> None:
    metrics = AgentMetrics()
    meter = ScriptedMeter([RuntimeError("driver bug"), MeterError("no answer")])
    poller = MeterPoller(meter, 0.05, metrics)
    poller.start()
    try:
        timed = wait_for(poller.latest, "a reading after the failures", timeout_s=5)
    finally:
        poller.stop(5)
    assert timed.reading.outlets == ()
    assert metrics.registry.get_sample_value("eams_agent_meter_read_errors_total") == 2
    assert meter.closed


def test_each_reading_reaches_on_reading_and_a_failing_callback_does_not_end_polling() -> None:
    """``on_reading`` (the demo times the meter's readings with it) gets every successful
    reading; a callback that raises is the caller's bug, logged, and polling goes on."""
    metrics = AgentMetrics()
    poller = MeterPoller(ScriptedMeter([]), 0.02, metrics)
    seen: list[float] = []

    def note(timed: TimedReading) -> None:
        seen.append(timed.measured_mono_ns)
        if len(seen) == 1:
            raise RuntimeError("the caller's bug")

    poller.on_reading = note
    poller.start()
    try:
        wait_for(lambda: len(seen) >= 3, "three readings through on_reading", timeout_s=5)
    finally:
        poller.stop(5)
    assert seen == sorted(seen)
    latest = poller.latest()
    assert latest is not None and latest.measured_mono_ns >= seen[2]
    assert metrics.registry.get_sample_value("eams_agent_meter_read_errors_total") == 0
