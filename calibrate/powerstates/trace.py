"""One outlet's power over time, read as fast as the meter answers, and what it tells: when a
node settled into a sleep level, that level, and the energy between two instants with a bound.

Each :class:`Sample` keeps when its request was sent and answered (monotonic s): the value is
the outlet's power at some instant between ``sent_s − lag_s`` and ``answered_s``, ``lag_s``
being how old a PDU's reading may be (it averages and refreshes its outlet power itself).
Energy is the trapezoid sum over the samples; its bound adds, per pair of samples, the change
between them times half their spacing plus the lag (a step somewhere between two readings: the
trapezoid takes the mean), and half the reading resolution over the whole time.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise

from eams.actuators.errors import PowerActionFailed
from eams.meter.blocking import BlockingMeter
from eams.meter.errors import MeterError, MeterTimeout
from eams.meter.reading import Reading


@dataclass(frozen=True, slots=True)
class Sample:
    """One reading of the outlet: ``power_w`` (``None``: no value), when it was asked and
    answered (monotonic s), and the driver's ``below_floor`` flag."""

    sent_s: float
    answered_s: float
    power_w: float | None
    below_floor: bool


@dataclass
class PowerTrace:
    """The samples of one outlet, kept (:meth:`keep`) between :meth:`start` and :meth:`stop`
    by a :class:`TracePoller` of its own (so power is read while an action is under way) or
    by one it shares with other outlets' traces; the poller's reads that got no answer in time
    are counted in ``missed_reads``.

    Parameters
    ----------
    meter : BlockingMeter
    outlet : int
    lag_s : float
        How old a reading may be (s, ≥ 0).
    """

    meter: BlockingMeter
    outlet: int
    lag_s: float
    samples: list[Sample] = field(default_factory=list)
    error: PowerActionFailed | None = None
    missed_reads: int = 0
    _poller: TracePoller | None = None

    def start(self, period_s: float) -> PowerTrace:
        """Read every ``period_s`` (s; 0: back to back) on a poller of its own until
        :meth:`stop` (:meth:`TracePoller.start`)."""
        self._poller = TracePoller(self.meter, [self]).start(period_s)
        return self

    def stop(self) -> None:
        """Stop its own poller (idempotent)."""
        if self._poller is not None:
            self._poller.stop()
            self._poller = None

    def check(self) -> None:
        """Raise the poller's failure for this outlet, if it had one (PowerActionFailed)."""
        if self.error is not None:
            raise self.error

    def keep(self, reading: Reading, sent_s: float, answered_s: float) -> Sample:
        """Keep this outlet's value in ``reading``, asked at ``sent_s`` and answered at
        ``answered_s`` (monotonic s), as a sample.

        Raises
        ------
        PowerActionFailed
            The reading has no such outlet.
        """
        row = reading.outlet(self.outlet)
        if row is None:
            raise PowerActionFailed(f"{reading.meter}: no outlet {self.outlet}")
        sample = Sample(sent_s, answered_s, row.power_w, row.below_floor)
        self.samples.append(sample)
        return sample

    def window(self, from_s: float, to_s: float) -> list[Sample]:
        """The samples with a value sent in [from_s, to_s]."""
        return [s for s in self.samples if from_s <= s.sent_s <= to_s and s.power_w is not None]

    def resolution_w(self) -> float:
        """The smallest step between distinct values read so far (W), e.g. 1 on an APC
        outlet; 1 W when fewer than two values differ (the coarsest common PDU step)."""
        values = sorted({s.power_w for s in self.samples if s.power_w is not None})
        steps = [b - a for a, b in pairwise(values) if b - a > 1e-9]
        return min(steps) if steps else 1.0

    def energy_j(self, from_s: float, to_s: float) -> tuple[float, float]:
        """Energy the outlet metered from ``from_s`` to ``to_s`` (J) and its bound (J).

        Before the first sample of the window and after the last, the nearest value holds;
        those stretches are bounded by the window's whole range of values. A window with no
        sample (the reads stalled, or it is shorter than their spacing) is bounded by the
        readings around it and across it, as between any two samples (:meth:`_between`).

        Raises
        ------
        PowerActionFailed
            No sample with a value in the window, and none on one side of it.
        """
        inside = self.window(from_s, to_s)
        if not inside or to_s <= from_s:
            return self._between(from_s, to_s)
        values = [s.power_w for s in inside if s.power_w is not None]
        points = [(from_s, values[0])]
        points += [(s.sent_s, p) for s, p in zip(inside, values, strict=True)]
        points.append((to_s, values[-1]))
        energy = sum((t1 - t0) * (p0 + p1) / 2 for (t0, p0), (t1, p1) in pairwise(points))
        spread = max(values) - min(values)
        bound = (inside[0].sent_s - from_s + to_s - inside[-1].sent_s) * spread
        bound += sum(
            abs(p1 - p0) * ((t1 - t0) / 2 + self.lag_s)
            for (t0, p0), (t1, p1) in pairwise(points[1:-1])
        )
        bound += self.resolution_w() / 2 * (to_s - from_s)
        return energy, bound

    def _between(self, from_s: float, to_s: float) -> tuple[float, float]:
        """:meth:`energy_j` of a window no reading was sent in: the power stayed between the
        lowest and the highest of the last value read wholly before it, the first read wholly
        after it and any read under way across it (its value is from an unknown instant of
        the window); the middle of that range holds, half of it bounds the error."""
        valued = [s for s in self.samples if s.power_w is not None]
        before = [s for s in valued if s.answered_s <= from_s][-1:]
        after = [s for s in valued if s.sent_s - self.lag_s >= to_s][:1]
        if to_s <= from_s or not before or not after:
            raise PowerActionFailed(
                f"outlet {self.outlet}: no power reading between the two instants "
                f"({to_s - from_s:.2f} s apart) nor on both sides of them"
            )
        across = [s for s in valued if s.answered_s > from_s and s.sent_s - self.lag_s < to_s]
        values = [s.power_w for s in [*before, *across, *after] if s.power_w is not None]
        low_w, high_w = min(values), max(values)
        duration_s = to_s - from_s
        energy = duration_s * (low_w + high_w) / 2
        return energy, duration_s * (high_w - low_w + self.resolution_w()) / 2

    def settled_low(self, since_s: float, above_w: float, settle_s: float) -> int | None:
        """Index (in :attr:`samples`) of the first sample of a steady level below ``above_w``
        that has lasted ``settle_s``, among the samples sent after ``since_s``; ``None`` until
        there is one.

        Steady: every value within max(1 W, 2 %) of the level's first — the sweep's rule
        (``calibrate/README.md``).
        """
        last = self.samples[-1] if self.samples else None
        if last is None or last.power_w is None or last.power_w >= above_w:
            return None
        level = last.power_w
        tolerance = max(1.0, 0.02 * abs(level))
        start = None
        for index in range(len(self.samples) - 1, -1, -1):
            sample = self.samples[index]
            if sample.sent_s < since_s or sample.power_w is None:
                break
            if abs(sample.power_w - level) > tolerance:
                break
            start = index
        if start is None or last.sent_s - self.samples[start].sent_s < settle_s:
            return None
        return start

    def before(self, index: int, since_s: float) -> float:
        """When the level that starts at sample ``index`` began at the earliest (s): the
        previous sample's send time less the lag, not before ``since_s``."""
        previous = self.samples[index - 1].sent_s if index > 0 else since_s
        return max(since_s, previous - self.lag_s)


class TracePoller:
    """One meter read every period on a daemon thread, each reading kept in every trace given.

    A PDU answers all its outlets in one reading, so the traces of nodes measured at once share
    each read: every trace gets every reading, each placed at its own request and answer, and
    none waits on another's read (issue 35: five traces reading one meter in turn, the demo's
    mini-3 got no reading for 1.7 s of a busy machine, a whole boot, and its boot energy came
    out 31 J against 212 J).

    Parameters
    ----------
    meter : BlockingMeter
    traces : sequence of PowerTrace
        The outlets' traces (each ``trace.meter`` is ``meter``).
    """

    def __init__(self, meter: BlockingMeter, traces: Sequence[PowerTrace]) -> None:
        self.meter = meter
        self.traces = list(traces)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, period_s: float) -> TracePoller:
        """Read every ``period_s`` (s; 0: back to back) until :meth:`stop`. A read the meter
        did not answer in time (MeterTimeout: a busy meter or host) leaves a gap, counted in
        each trace's ``missed_reads``, and the reading goes on; any other meter failure ends
        it, and a reading without a trace's outlet ends that trace's; each trace's
        :meth:`PowerTrace.check` raises its failure."""
        self._thread = threading.Thread(
            target=self._loop, args=(period_s,), name="eams-power-trace", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the reading thread (idempotent)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None

    def _loop(self, period_s: float) -> None:
        reading_for = list(self.traces)
        while reading_for and not self._stop.is_set():
            sent = time.monotonic()
            try:
                reading = self.meter.read()
            except MeterTimeout:
                for trace in reading_for:
                    trace.missed_reads += 1
            except MeterError as exc:
                for trace in reading_for:
                    trace.error = PowerActionFailed(
                        f"outlet {trace.outlet}: meter read failed: {exc}"
                    )
                return
            else:
                answered = time.monotonic()
                for trace in list(reading_for):
                    try:
                        trace.keep(reading, sent, answered)
                    except PowerActionFailed as exc:
                        trace.error = exc
                        reading_for.remove(trace)
            self._stop.wait(max(0.0, period_s - (time.monotonic() - sent)))
