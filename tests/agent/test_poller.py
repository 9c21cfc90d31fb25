"""The PDU poller keeps polling whatever a read raises.

A driver bug (an exception that is not a MeterError) cannot be produced on cue with the real
SNMP stack, so a scripted meter stands in for :class:`eams.meter.blocking.BlockingMeter`.
"""

from __future__ import annotations

from datetime import UTC, datetime

from eams.agent.metrics import AgentMetrics
from eams.agent.poller import MeterPoller
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
