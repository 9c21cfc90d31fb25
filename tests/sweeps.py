"""Sweep records built in memory for tests: one level per commanded load, its samples given."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta

from eams.calibrate.sweeprecord import PowerSample, SweepLevel, SweepRecord


def sweep_record(
    node: str,
    powers_w: Mapping[int, Sequence[float]],
    *,
    started_at: datetime,
    utilisation: Callable[[int], float] = lambda pct: pct / 100,
    level_s: float = 10.0,
    settle_s: float = 2.0,
    measure_s: float = 3.0,
    bogo_ops_per_pct: float | None = None,
    meter: str = "snmp://public@127.0.0.1:161",
    outlet: int = 1,
    floor_w: float | None = None,
) -> SweepRecord:
    """A complete sweep of ``node``: per commanded % (in the mapping's order) its power samples
    (W), read one a second after the level settled; ``utilisation(pct)`` is the level's measured
    utilisation, ``bogo_ops_per_pct`` × pct its stress-ng rate (none at 0 % or when ``None``)."""
    levels = []
    for i, (pct, samples) in enumerate(powers_w.items()):
        start = started_at + timedelta(seconds=level_s * i)
        levels.append(
            SweepLevel(
                commanded_pct=pct,
                utilisation=utilisation(pct),
                started_at=start,
                settle_s=settle_s,
                settled=True,
                measure_s=measure_s,
                samples=[
                    PowerSample(read_at=start + timedelta(seconds=settle_s + j), power_w=p)
                    for j, p in enumerate(samples)
                ],
                bogo_ops_per_s=None
                if pct == 0 or bogo_ops_per_pct is None
                else bogo_ops_per_pct * pct,
            )
        )
    return SweepRecord(
        node=node,
        target="local",
        meter=meter,
        outlet=outlet,
        floor_w=floor_w,
        online_cpus=4,
        stress_ng_version="0.15.06",
        started_at=started_at,
        complete=True,
        levels=levels,
    )
