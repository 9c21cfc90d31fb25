"""One sample per node per period: utilisation, metered or modelled power, headroom, time.

Power, per node:

* **own node** (``config.node``): *metered* from its PDU outlet when the latest reading is
  fresh (younger than ``stale_after_s`` by the monotonic clock) and that outlet has a power
  value above the device's metering floor; otherwise *modelled* from the calibration,
  P(u) = P_idle + (P_max − P_idle)·u (DESIGN.md §3); otherwise missing (``None``), never 0.
* **other nodes on the PDU owner's outlet map**: only the meter knows them (their utilisation
  lives on their own machine), so they are *metered* when the reading is fresh and missing
  otherwise (``power_w``, ``source``, ``headroom`` and ``utilisation`` absent). A point is
  still written for them each period, so a consumer sees a fresh "unknown" rather than an
  old value that looks current; the node's own agent publishes its modelled power meanwhile.

Headroom h = 1 − P/P_cap (:func:`eams.telemetry.headroom_from_power`, study §5.2). A power
value the telemetry contract (:mod:`eams.telemetry`) refuses — a negative reading, a model
that gives a non-finite value — is not published: it counts as no reading (a warning names
it), so the own node falls back to its model.

Time (issue 16, item 3): every sample carries the time its power was *measured*. A metered
sample is stamped with its reading's own time, ``Reading.read_at`` (when the PDU's answer
arrived), and a reading is published once per node: a tick that finds no newer reading than
the one already published publishes nothing for the metered nodes, so a lagging meter's value
ages visibly downstream (AR-6's age discount) instead of looking fresh at every tick. Its
freshness here is judged by the same measurement, mapped onto the monotonic clock
(:attr:`TimedReading.measured_mono_ns`). A modelled sample, or one without power, is stamped
with the wall clock (ns) at which /proc/stat was read at the end of its utilisation window.
The own node's utilisation is the mean since its previous published sample, so a tick
skipped for want of a new reading loses none; on a metered sample that window ends at the
tick, after the reading's time by at most the meter's lag.

Clock policy: the wall clock can be stepped back (NTP, an operator). Each tick compares the
progress of the wall clock with that of the monotonic clock; a step back of more than
:data:`CLOCK_STEP_TOLERANCE_NS` is counted (``eams_agent_clock_steps_back_total``) and
logged. A tick whose wall time is not later than the previous tick's is *not published*
(counted as ``eams_agent_skipped_samples_total{reason="clock_back"}``) until the wall clock
passes that time again, and no node's sample is published unless it is later than the
node's previous one (a tick-stamped sample that is not, after a step back, is counted the
same way). Points are thus never reordered or duplicated (InfluxDB would overwrite a point at
an equal timestamp), and no timestamp is invented: a sample's time is always the wall clock
at which it was measured, which is what consumers need to compute its age.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from eams.agent.metrics import AgentMetrics
from eams.errors import ProcStatError, TelemetryError
from eams.meter.reading import Reading
from eams.procstat import CpuTimes, utilisation_between
from eams.telemetry import PowerSource, TelemetrySample, headroom_from_power

log = logging.getLogger(__name__)

#: Wall-clock steps back smaller than this (50 ms) are jitter, not counted.
CLOCK_STEP_TOLERANCE_NS = 50_000_000
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


@dataclass(frozen=True, slots=True)
class TimedReading:
    """A meter reading and when it was measured on the monotonic clock.

    Attributes
    ----------
    reading : Reading
    measured_mono_ns : int
        ``reading.read_at`` on the monotonic clock (ns): freshness is judged by it, so a
        step of the wall clock cannot make a reading look fresh (see
        :meth:`eams.agent.poller.MeterPoller.latest`).
    """

    reading: Reading
    measured_mono_ns: int

    @property
    def measured_at_ns(self) -> int:
        """``reading.read_at`` as epoch nanoseconds (:func:`read_at_ns`)."""
        return read_at_ns(self.reading)


def read_at_ns(reading: Reading) -> int:
    """When ``reading`` was measured (``Reading.read_at``), epoch nanoseconds, exactly (a
    datetime holds microseconds)."""
    return (reading.read_at - _EPOCH) // _MICROSECOND * 1000


@dataclass(frozen=True, slots=True)
class NodeSpec:
    """A node the agent publishes: its name, P_cap (W) and PDU outlet (``None``: unmetered)."""

    node: str
    power_cap_w: float
    outlet: int | None


class Sampler:
    """Turn /proc/stat, the latest meter reading and the power model into samples.

    Parameters
    ----------
    own : NodeSpec
        This machine's node.
    others : list of NodeSpec
        Other nodes on the PDU owner's outlet map (empty elsewhere).
    model : callable or None
        Utilisation (0–1) → power (W), e.g. ``Calibration.model().power_w``; ``None`` when
        the node has no calibration.
    latest_reading : callable or None
        Returns the latest :class:`TimedReading` or ``None``; ``None`` on a node without
        a meter.
    stale_after_s : float
        A reading older than this is not used.
    metrics : AgentMetrics
        Counts clock steps and skipped ticks.
    read_cpu, wall_ns, mono_ns : callable
        ``CpuTimes.read``, ``time.time_ns``, ``time.monotonic_ns``; replaceable in tests
        (a wall clock that is stepped back cannot be produced on a shared machine).
    """

    def __init__(
        self,
        own: NodeSpec,
        others: list[NodeSpec],
        model: Callable[[float], float] | None,
        latest_reading: Callable[[], TimedReading | None] | None,
        stale_after_s: float,
        metrics: AgentMetrics,
        *,
        read_cpu: Callable[[], CpuTimes] = CpuTimes.read,
        wall_ns: Callable[[], int] = time.time_ns,
        mono_ns: Callable[[], int] = time.monotonic_ns,
    ):
        self._own = own
        self._others = others
        self._model = model
        self._latest_reading = latest_reading
        self._stale_after_ns = int(stale_after_s * 1e9)
        self._metrics = metrics
        self._read_cpu = read_cpu
        self._wall_ns = wall_ns
        self._mono_ns = mono_ns
        self._cpu = self._cpu_times()
        self._previous = (wall_ns(), mono_ns())
        self._last_tick_ns: int | None = None
        self._last_published_ns: dict[str, int] = {}
        self._clock_back = False

    def _cpu_times(self) -> CpuTimes | None:
        try:
            return self._read_cpu()
        except ProcStatError as exc:
            log.warning("utilisation unknown: %s", exc)
            return None

    def sample(self) -> list[TelemetrySample]:
        """Take this tick's samples: own node first, then the outlet map's other nodes.

        Returns
        -------
        list of TelemetrySample
            Empty when the tick is skipped because the wall clock stepped back; without the
            metered nodes whose newest reading was published already (see the module
            docstring).
        """
        cpu = self._cpu_times()
        wall, mono = self._wall_ns(), self._mono_ns()
        self._check_clock(wall, mono)
        if self._last_tick_ns is not None and wall <= self._last_tick_ns:
            self._metrics.skipped.labels("clock_back").inc()
            return []
        self._last_tick_ns = wall
        timed = self._fresh_reading(mono)
        utilisation = utilisation_between(self._cpu, cpu) if self._cpu and cpu else None
        self._clock_back = False
        samples = []
        own = self._publishable(self._own_sample(wall, utilisation, timed))
        if own is not None:
            self._cpu = cpu  # the next utilisation window starts here
            samples.append(own)
        for spec in self._others:
            other = self._metered_sample(spec, timed)
            if other is None:  # no metered value: a fresh "unknown"
                other = TelemetrySample(spec.node, wall, spec.power_cap_w)
            if (other := self._publishable(other)) is not None:
                samples.append(other)
        if self._clock_back:
            self._metrics.skipped.labels("clock_back").inc()
        return samples

    def _publishable(self, sample: TelemetrySample) -> TelemetrySample | None:
        """``sample`` if it is later than its node's previous one (then it is recorded as
        published); ``None`` otherwise: a reading published already, or, for a tick-stamped
        sample, a wall clock stepped back behind a reading's time."""
        previous = self._last_published_ns.get(sample.node)
        if previous is not None and sample.measured_at_ns <= previous:
            self._clock_back |= sample.source is not PowerSource.METERED
            return None
        self._last_published_ns[sample.node] = sample.measured_at_ns
        return sample

    def _check_clock(self, wall: int, mono: int) -> None:
        previous_wall, previous_mono = self._previous
        self._previous = (wall, mono)
        step_ns = (wall - previous_wall) - (mono - previous_mono)
        if step_ns < -CLOCK_STEP_TOLERANCE_NS:
            self._metrics.clock_steps_back.inc()
            log.warning(
                "wall clock stepped back by %.3f s: samples are held back until it passes "
                "the last published time again",
                -step_ns / 1e9,
            )

    def _fresh_reading(self, mono: int) -> TimedReading | None:
        latest = self._latest_reading() if self._latest_reading is not None else None
        if latest is None or mono - latest.measured_mono_ns > self._stale_after_ns:
            return None
        return latest

    def _own_sample(
        self, wall: int, utilisation: float | None, timed: TimedReading | None
    ) -> TelemetrySample:
        """Metered (possibly a reading published already: :meth:`_publishable` drops it),
        else modelled, else without power."""
        metered = self._metered_sample(self._own, timed, utilisation)
        if metered is not None:
            return metered
        unknown = TelemetrySample(self._own.node, wall, self._own.power_cap_w, utilisation)
        if self._model is None or utilisation is None:
            return unknown
        power_w = float(self._model(utilisation))
        modelled = _with_power(self._own, wall, utilisation, power_w, PowerSource.MODELLED, None)
        return unknown if modelled is None else modelled

    def _metered_sample(
        self, spec: NodeSpec, timed: TimedReading | None, utilisation: float | None = None
    ) -> TelemetrySample | None:
        """The node's metered sample, stamped with the reading's time; ``None`` when the
        fresh reading (if any) has no usable value for its outlet."""
        if timed is None or spec.outlet is None:
            return None
        outlet = timed.reading.outlet(spec.outlet)
        if outlet is None or outlet.power_w is None or outlet.below_floor:
            return None
        return _with_power(
            spec,
            timed.measured_at_ns,
            utilisation,
            outlet.power_w,
            PowerSource.METERED,
            outlet.energy_wh,
        )


def _with_power(
    spec: NodeSpec,
    wall: int,
    utilisation: float | None,
    power_w: float,
    source: PowerSource,
    energy_wh: float | None,
) -> TelemetrySample | None:
    """The sample with its power, or ``None`` (logged) when the contract refuses the values."""
    try:
        return TelemetrySample(
            node=spec.node,
            measured_at_ns=wall,
            power_cap_w=spec.power_cap_w,
            utilisation=utilisation,
            power_w=power_w,
            source=source,
            headroom=headroom_from_power(power_w, spec.power_cap_w),
            energy_wh=energy_wh,
        )
    except TelemetryError as exc:
        log.warning("%s: %s power not published: %s", spec.node, source.value, exc)
        return None
