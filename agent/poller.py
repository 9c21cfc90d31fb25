"""Read the PDU in a background thread, so a slow or dead meter never delays a sample.

The sampler takes :meth:`MeterPoller.latest` each tick and decides freshness itself (by the
monotonic time the reading arrived, so wall-clock steps cannot make a reading look fresh).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Protocol

from eams.agent.metrics import AgentMetrics
from eams.agent.sampler import TimedReading
from eams.meter.errors import MeterError
from eams.meter.reading import Reading

log = logging.getLogger(__name__)


class SyncMeter(Protocol):
    """What the poller needs of :class:`eams.meter.blocking.BlockingMeter`."""

    def read(self) -> Reading:
        """Read all outlets; raises :class:`~eams.meter.errors.MeterError` on failure."""
        ...

    def close(self) -> None:
        """Release the meter."""
        ...


class MeterPoller:
    """Poll ``meter`` every ``period_s`` seconds in a daemon thread.

    A failed read is counted (``eams_agent_meter_read_errors_total``) and logged when the
    meter goes from working to failing (and back), not on every period; an unexpected
    exception (not a :class:`~eams.meter.errors.MeterError`) is logged with its traceback
    each time and polling goes on.
    """

    def __init__(self, meter: SyncMeter, period_s: float, metrics: AgentMetrics):
        self._meter = meter
        self._period_s = period_s
        self._metrics = metrics
        self._latest: TimedReading | None = None
        self._failing = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="meter-poller", daemon=True)

    def latest(self) -> TimedReading | None:
        """The last successful reading with its arrival time, or ``None`` before the first."""
        return self._latest

    def start(self) -> None:
        """Start polling."""
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                reading = self._meter.read()
            except Exception as exc:  # MeterError; anything else is a driver bug, which must
                # not end polling for good (power would stay modelled until a restart)
                self._metrics.meter_errors.inc()
                if not isinstance(exc, MeterError):
                    log.exception("meter read: unexpected error")
                elif not self._failing:
                    log.warning("meter read failed (power will be modelled when stale): %s", exc)
                self._failing = True
            else:
                self._latest = TimedReading(reading, time.monotonic_ns())
                if self._failing:
                    log.info("meter reads again")
                self._failing = False
            self._stop.wait(max(0.0, self._period_s - (time.monotonic() - started)))

    def stop(self, timeout_s: float) -> None:
        """Stop polling and close the meter."""
        self._stop.set()
        if self._thread.ident is not None:  # started
            self._thread.join(timeout_s)
        self._meter.close()
