"""Read the PDU in a background thread, so a slow or dead meter never delays a sample.

The sampler takes :meth:`MeterPoller.latest` each tick and decides freshness itself, by the
time the reading was measured (``Reading.read_at``) on the monotonic clock, so wall-clock
steps cannot make a reading look fresh.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Protocol

from eams.agent.metrics import AgentMetrics
from eams.agent.sampler import TimedReading, read_at_ns
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

    ``on_reading``, when set before :meth:`start`, is called in the poller's thread with each
    successful reading (as :meth:`latest` returns it): how regularly the meter was read.
    """

    def __init__(self, meter: SyncMeter, period_s: float, metrics: AgentMetrics):
        self._meter = meter
        self._period_s = period_s
        self._metrics = metrics
        self._latest: TimedReading | None = None
        self.on_reading: Callable[[TimedReading], None] | None = None
        self._failing = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="meter-poller", daemon=True)

    def latest(self) -> TimedReading | None:
        """The last successful reading, or ``None`` before the first.

        Its ``measured_mono_ns`` is ``Reading.read_at`` moved onto the monotonic clock when
        the read returned: the monotonic time then, less how long before then (by the wall
        clock) the reading was measured, never later than that time. Decoding, and on a
        loaded machine the hop back from the meter's event-loop thread, come after
        ``read_at`` and so do not make the reading look younger.
        """
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
                self._latest = measured(reading, time.time_ns(), time.monotonic_ns())
                if self._failing:
                    log.info("meter reads again")
                self._failing = False
                self._notify(self._latest)
            self._stop.wait(max(0.0, self._period_s - (time.monotonic() - started)))

    def _notify(self, latest: TimedReading) -> None:
        if self.on_reading is None:
            return
        try:
            self.on_reading(latest)
        except Exception:  # the caller's bug must not end polling either
            log.exception("meter read: on_reading failed")

    def stop(self, timeout_s: float) -> None:
        """Stop polling and close the meter."""
        self._stop.set()
        if self._thread.ident is not None:  # started
            self._thread.join(timeout_s)
        self._meter.close()


def measured(reading: Reading, wall_ns: int, mono_ns: int) -> TimedReading:
    """``reading`` with its measurement time on the monotonic clock, given both clocks now.

    Parameters
    ----------
    reading : Reading
    wall_ns, mono_ns : int
        ``time.time_ns()`` and ``time.monotonic_ns()``, read together after the read returned.
    """
    since_ns = max(0, wall_ns - read_at_ns(reading))  # ≥ 0: a wall step cannot move it ahead
    return TimedReading(reading, mono_ns - since_ns)
