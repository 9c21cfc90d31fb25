"""The SPECpower-style load sweep of one node (issue 3, DESIGN.md §3).

For each level (active idle, then 10 % … 100 % by default): start ``stress-ng --cpu N
--cpu-load L`` on all N online CPUs, wait until power and utilisation are steady (or a limit
runs out), then measure: read the meter every ``sample_s`` and the node's ``/proc/stat`` at the
start and end of the interval, and record every sample with its timestamp, the measured
utilisation and stress-ng's bogo-ops/s. The load is stopped on every way out of a level.

Settling: stress-ng takes a while to reach its duty cycle and undershoots under contention, so
a fixed wait is not trusted. The level is settled when the last ``settle_windows`` windows of
``sample_s`` each agree: utilisation within ``settle_utilisation_tol`` (absolute) and power
within ``max(settle_power_tol_w, settle_power_tol_pct`` % of the mean). After ``settle_s``
without that, it is measured anyway and marked ``settled: false``.

A meter that fails during a level (any :class:`~eams.meter.errors.MeterError`) makes the level
run again, up to ``level_attempts`` times; then the sweep stops cleanly with a
:class:`~eams.calibrate.errors.SweepError` whose ``partial`` holds the levels already measured.

Contention (other work beside the load: busy at idle, stress-ng short of CPU at full load,
steal; :mod:`eams.calibrate.contention`) stops the sweep the same way right after the level
that shows it, unless ``allow_contention``; the record keeps the figures either way.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from eams.calibrate import stressng
from eams.calibrate.contention import ContentionWatch, refusal
from eams.calibrate.errors import SweepError
from eams.calibrate.runners import Job, Runner
from eams.calibrate.sweeprecord import PowerSample, SweepLevel, SweepRecord
from eams.errors import ProcStatError
from eams.meter.errors import MeterError
from eams.meter.reading import Reading
from eams.procstat import CpuTimes, steal_between, utilisation_between

DEFAULT_LEVELS = (0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100)


class BlockingReader(Protocol):
    """What the sweep needs of a meter: :class:`eams.meter.blocking.BlockingMeter`'s read."""

    def read(self) -> Reading:
        """Read every outlet once; raises a MeterError subclass on failure."""
        ...


@dataclass(frozen=True, slots=True)
class SweepPlan:
    """How to sweep. Times in seconds; defaults sized for real mini-PCs and PDUs.

    ``allow_contention`` keeps a sweep that other work competed with (recorded, not refused).

    Raises
    ------
    SweepError
        If a level is outside 0–100 or repeated, or a time or count is not positive.
    """

    levels_pct: tuple[int, ...] = DEFAULT_LEVELS
    settle_s: float = 60.0
    measure_s: float = 60.0
    sample_s: float = 1.0
    settle_windows: int = 3
    settle_utilisation_tol: float = 0.05
    settle_power_tol_pct: float = 2.0
    settle_power_tol_w: float = 1.0
    level_attempts: int = 2
    allow_contention: bool = False

    def __post_init__(self) -> None:
        bad = [pct for pct in self.levels_pct if not 0 <= pct <= 100]
        if not self.levels_pct or bad or len(set(self.levels_pct)) != len(self.levels_pct):
            raise SweepError(
                f"levels {list(self.levels_pct)}: need distinct whole percentages in 0–100"
            )
        for name in ("settle_s", "measure_s", "sample_s"):
            if not getattr(self, name) > 0:
                raise SweepError(f"{name} must be positive, got {getattr(self, name)}")
        if self.settle_windows < 2 or self.level_attempts < 1:
            raise SweepError("settle_windows must be ≥ 2 and level_attempts ≥ 1")


@dataclass(frozen=True, slots=True)
class SweepProgress:
    """One progress update: level ``index`` of ``count`` (``commanded_pct``), the ``phase``
    (``settling``, ``measuring``, ``repeating``), an estimate of the time left (s), and the
    last power (W) and utilisation read (``None`` until known)."""

    index: int
    count: int
    commanded_pct: int
    phase: str
    time_left_s: float
    last_power_w: float | None
    last_utilisation: float | None


ProgressCallback = Callable[[SweepProgress], None]


def _now() -> datetime:
    return datetime.now(UTC)


class _LevelRun:
    """Settles and measures one level; the caller owns (and always stops) the load job."""

    def __init__(self, sweep: _Sweep, index: int, pct: int, job: Job | None, attempt: int) -> None:
        self.sweep, self.index, self.pct, self.job = sweep, index, pct, job
        self.phase = "settling" if attempt == 1 else "repeating"
        self.last_power_w: float | None = None
        self.last_utilisation: float | None = None

    def report_progress(self, left_in_level_s: float) -> None:
        self.sweep.report(self, left_in_level_s)

    def _check_load(self) -> None:
        if self.job is not None and not self.job.running():
            output = self.job.stop().strip().splitlines()
            raise SweepError(
                f"{self.sweep.runner.target}: stress-ng exited early at level {self.pct} %: "
                f"{output[-1] if output else 'no output'}"
            )

    def _sample(self) -> PowerSample:
        sample = self.sweep.read_sample()
        self.last_power_w = sample.power_w
        return sample

    def settle(self) -> tuple[float, bool]:
        plan = self.sweep.plan
        windows: deque[tuple[float | None, float | None]] = deque(maxlen=plan.settle_windows)
        start = time.monotonic()
        previous = self.sweep.cpu_times()
        while True:
            time.sleep(plan.sample_s)
            self._check_load()
            current = self.sweep.cpu_times()
            self.last_utilisation = utilisation_between(previous, current)
            previous = current
            windows.append((self.last_utilisation, self._sample().power_w))
            elapsed = time.monotonic() - start
            if len(windows) == plan.settle_windows and _steady(windows, plan):
                return elapsed, True
            if elapsed >= plan.settle_s:
                return elapsed, False
            self.report_progress(plan.measure_s + max(0.0, plan.settle_s - elapsed))

    def measure(self) -> tuple[float | None, float | None, list[PowerSample], float]:
        """Utilisation and steal over the interval (fractions), its samples, its length (s)."""
        plan = self.sweep.plan
        self.phase = "measuring"
        self.report_progress(plan.measure_s)  # seen even when one read outlasts the interval
        start_times = self.sweep.cpu_times()
        start = time.monotonic()
        samples: list[PowerSample] = []
        while True:
            time.sleep(max(0.0, start + (len(samples) + 1) * plan.sample_s - time.monotonic()))
            self._check_load()
            samples.append(self._sample())
            elapsed = time.monotonic() - start
            if elapsed >= plan.measure_s - 1e-6:
                break
            self.report_progress(plan.measure_s - elapsed)
        end_times = self.sweep.cpu_times()
        utilisation = utilisation_between(start_times, end_times)
        self.last_utilisation = utilisation
        return utilisation, steal_between(start_times, end_times), samples, elapsed


def _steady(windows: deque[tuple[float | None, float | None]], plan: SweepPlan) -> bool:
    us = [u for u, _ in windows]
    ps = [p for _, p in windows]
    if any(u is None for u in us) or any(p is None for p in ps):
        return False
    u_known = [u for u in us if u is not None]
    p_known = [p for p in ps if p is not None]
    mean_p = sum(p_known) / len(p_known)
    power_tol = max(plan.settle_power_tol_w, plan.settle_power_tol_pct / 100 * mean_p)
    return (
        max(u_known) - min(u_known) <= plan.settle_utilisation_tol
        and max(p_known) - min(p_known) <= power_tol
    )


class _Sweep:
    def __init__(
        self,
        runner: Runner,
        meter: BlockingReader,
        outlet: int,
        plan: SweepPlan,
        progress: ProgressCallback | None,
    ) -> None:
        self.runner, self.meter, self.outlet, self.plan = runner, meter, outlet, plan
        self.progress = progress
        self.floor_w: float | None = None
        self.meter_name: str | None = None
        self.settle_seen_s: list[float] = []
        self.contention = ContentionWatch()

    def cpu_times(self) -> CpuTimes:
        text = self.runner.run(["cat", "/proc/stat"], timeout_s=10.0)
        try:
            return CpuTimes.parse(text, f"{self.runner.target}:/proc/stat")
        except ProcStatError as exc:
            raise SweepError(str(exc)) from exc

    def read_sample(self) -> PowerSample:
        reading = self.meter.read()
        outlet = reading.outlet(self.outlet)
        if outlet is None:
            numbers = ", ".join(str(o.outlet) for o in reading.outlets) or "none"
            raise SweepError(f"meter {reading.meter} has no outlet {self.outlet} (has {numbers})")
        self.floor_w = reading.floor_w
        self.meter_name = reading.meter
        return PowerSample(
            read_at=reading.read_at, power_w=outlet.power_w, below_floor=outlet.below_floor
        )

    def report(self, run: _LevelRun, left_in_level_s: float) -> None:
        if self.progress is None:
            return
        plan = self.plan
        settle = (
            sum(self.settle_seen_s) / len(self.settle_seen_s)
            if self.settle_seen_s
            else plan.settle_s
        )
        later = len(plan.levels_pct) - run.index - 1
        self.progress(
            SweepProgress(
                index=run.index,
                count=len(plan.levels_pct),
                commanded_pct=run.pct,
                phase=run.phase,
                time_left_s=left_in_level_s + later * (settle + plan.measure_s),
                last_power_w=run.last_power_w,
                last_utilisation=run.last_utilisation,
            )
        )

    def level(self, index: int, pct: int, cpus: int) -> SweepLevel:
        plan = self.plan
        last_error: MeterError | None = None
        for attempt in range(1, plan.level_attempts + 1):
            started = _now()
            longest = plan.settle_s + plan.measure_s + plan.sample_s * 4
            job = self.runner.start(stressng.load_command(cpus, pct, longest)) if pct else None
            run = _LevelRun(self, index, pct, job, attempt)
            try:
                run.report_progress(plan.settle_s + plan.measure_s)
                settle_s, settled = run.settle()
                self.settle_seen_s.append(settle_s)
                utilisation, steal, samples, measure_s = run.measure()
            except MeterError as exc:
                last_error = exc
                continue
            finally:
                output = job.stop() if job is not None else ""
            bogo_ops_per_s = stressng.bogo_ops_per_s(output) if job is not None else None
            share = stressng.load_cpu_share(output, cpus, pct) if job is not None else None
            self.contention.add(pct, utilisation, steal, share, bogo_ops_per_s)
            return SweepLevel(
                commanded_pct=pct,
                utilisation=utilisation,
                started_at=started,
                settle_s=settle_s,
                settled=settled,
                measure_s=measure_s,
                samples=samples,
                bogo_ops_per_s=bogo_ops_per_s,
                attempts=attempt,
            )
        raise SweepError(
            f"meter failed at level {pct} % on all {plan.level_attempts} attempt(s): {last_error}"
        )


def run_sweep(
    runner: Runner,
    meter: BlockingReader,
    *,
    node: str,
    meter_url: str,
    outlet: int,
    plan: SweepPlan | None = None,
    progress: ProgressCallback | None = None,
) -> SweepRecord:
    """Sweep one node and return the raw record (fit it with
    :func:`eams.calibrate.calfile.calibration_from_sweep`).

    Parameters
    ----------
    runner : Runner
        Where the node's commands run (:class:`~eams.calibrate.runners.LocalRunner` or
        :class:`~eams.calibrate.runners.SshRunner`).
    meter : BlockingReader
        An open meter (:class:`eams.meter.blocking.BlockingMeter`).
    node : str
        The node's name.
    meter_url : str
        The meter's URL (stored redacted).
    outlet : int
        The node's outlet on the meter (1-based).
    plan : SweepPlan, optional
    progress : callable, optional
        Called with a :class:`SweepProgress` at least once per sample.

    Returns
    -------
    SweepRecord
        ``complete`` is True.

    Raises
    ------
    SweepError
        stress-ng missing on the node, the meter failing a level on every attempt, the SSH
        connection lost, stress-ng exiting early, Ctrl-C, or contention (unless
        ``plan.allow_contention``). The load is stopped first; ``SweepError.partial`` holds
        the levels measured so far (``complete`` False).
    """
    plan = plan or SweepPlan()
    sweep = _Sweep(runner, meter, outlet, plan, progress)
    version = stressng.check_installed(runner)
    cpus = stressng.online_cpus(runner)
    started = _now()
    levels: list[SweepLevel] = []

    def record(complete: bool, reason: str | None) -> SweepRecord:
        return SweepRecord(
            node=node,
            target=runner.target,
            meter=meter_url,
            outlet=outlet,
            floor_w=sweep.floor_w,
            online_cpus=cpus,
            stress_ng_version=version,
            started_at=started,
            finished_at=_now(),
            complete=complete,
            stop_reason=reason,
            levels=list(levels),
            contention=sweep.contention.summary(),
        )

    pct = plan.levels_pct[0]
    try:
        for index, pct in enumerate(plan.levels_pct):
            levels.append(sweep.level(index, pct, cpus))
            findings = sweep.contention.findings()
            if findings and not plan.allow_contention:
                raise SweepError(refusal(findings))
    except (SweepError, MeterError, KeyboardInterrupt) as exc:
        reason = "interrupted (Ctrl-C)" if isinstance(exc, KeyboardInterrupt) else str(exc)
        raise SweepError(
            f"node {node}: sweep stopped at level {pct} %: {reason}; load stopped, "
            f"{len(levels)} level(s) kept",
            partial=record(False, reason),
        ) from exc
    return record(True, None)
