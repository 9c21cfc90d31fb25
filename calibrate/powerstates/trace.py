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
from dataclasses import dataclass, field
from itertools import pairwise

from eams.actuators.errors import PowerActionFailed
from eams.meter.blocking import BlockingMeter
from eams.meter.errors import MeterError, MeterTimeout


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
    """The samples of one outlet, appended by :meth:`read`, or by a thread of its own between
    :meth:`start` and :meth:`stop` (so power is read while an action is under way); that
    thread's reads that got no answer in time are counted in ``missed_reads``.

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
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self, period_s: float) -> PowerTrace:
        """Read every ``period_s`` (s; 0: back to back) on a daemon thread until :meth:`stop`.
        A read the meter did not answer in time (MeterTimeout: a busy meter or host) leaves a
        gap, counted in :attr:`missed_reads`, and the reading goes on; any other failure ends
        it and is raised by :meth:`check`."""

        def loop() -> None:
            while not self._stop.is_set():
                started = time.monotonic()
                try:
                    self.read()
                except PowerActionFailed as exc:
                    if not isinstance(exc.__cause__, MeterTimeout):
                        self.error = exc
                        return
                    self.missed_reads += 1
                self._stop.wait(max(0.0, period_s - (time.monotonic() - started)))

        self._thread = threading.Thread(target=loop, name="eams-power-trace", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the reading thread (idempotent)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None

    def check(self) -> None:
        """Raise the reading thread's failure, if it had one (PowerActionFailed)."""
        if self.error is not None:
            raise self.error

    def read(self) -> Sample:
        """Read the outlet once and keep the sample.

        Raises
        ------
        PowerActionFailed
            The meter failed, or has no such outlet.
        """
        sent = time.monotonic()
        try:
            reading = self.meter.read()
        except MeterError as exc:
            raise PowerActionFailed(f"outlet {self.outlet}: meter read failed: {exc}") from exc
        row = reading.outlet(self.outlet)
        if row is None:
            raise PowerActionFailed(f"{reading.meter}: no outlet {self.outlet}")
        sample = Sample(sent, time.monotonic(), row.power_w, row.below_floor)
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
