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
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from eams.calibrate.calfile import Calibration
from eams.calibrate.run import SpeedReferenceSpec, fit_and_save
from eams.calibrate.sweep import SweepPlan, SweepProgress, run_sweep
from eams.demo.fleet import CORES
from eams.demo.testbed import (
    BOGO_OPS_PER_CORE_S,
    DRIVER,
    METER_RETRIES,
    METER_TIMEOUT_S,
    Testbed,
    VirtualNode,
    VirtualRunner,
)
from eams.meter.blocking import BlockingMeter
from eams.meter.reading import Reading

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
        A reading younger than this (monotonic) is handed out again instead of reading anew.
    """

    def __init__(self, meter: BlockingMeter, max_age_s: float) -> None:
        self._meter = meter
        self._max_age_s = max_age_s
        self._lock = threading.Lock()
        self._cached: tuple[float, Reading] | None = None

    def read(self) -> Reading:
        """The latest reading, fresh within ``max_age_s``; raises MeterError as the meter."""
        with self._lock:
            now = time.monotonic()
            if self._cached is None or now - self._cached[0] > self._max_age_s:
                self._cached = (now, self._meter.read())
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
