"""Simulated runs with a known hidden truth: JSONL telemetry as the agent writes it.

Each node's power follows a hidden curve of its utilisation; its utilisation is piecewise
constant in time (a schedule). The truth energy is integrated exactly; the telemetry is what an
agent would record every ``period_s``: utilisation averaged over the period, instantaneous
metered power with meter noise, and the outlet's cumulative counter.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from eams.calibrate.calfile import Calibration, FitSummary
from eams.calibrate.fit import fit_linear
from eams.meter.simulator.curves import MeasuredCurve
from eams.telemetry import PowerSource, TelemetrySample, headroom_from_power

START_NS = int(datetime(2026, 11, 29, 10, tzinfo=UTC).timestamp()) * 10**9
CAP_W = 200.0

# Six hidden curves (utilisation → W), mini-PC sized, mildly non-linear like SPECpower rows.
CURVES = {
    "n1": MeasuredCurve([0, 0.25, 0.5, 0.75, 1], [8, 14, 19, 23, 26]),
    "n2": MeasuredCurve([0, 0.25, 0.5, 0.75, 1], [10, 18, 25, 31, 36]),
    "n3": MeasuredCurve([0, 0.25, 0.5, 0.75, 1], [12, 21, 29, 37, 45]),
    "n4": MeasuredCurve([0, 0.25, 0.5, 0.75, 1], [9, 13, 17, 21, 25]),
    "n5": MeasuredCurve([0, 0.25, 0.5, 0.75, 1], [15, 24, 32, 39, 46]),
    "n6": MeasuredCurve([0, 0.25, 0.5, 0.75, 1], [11, 19, 26, 33, 40]),
}

Schedule = Callable[[np.ndarray], np.ndarray]
"""Utilisation (0–1) of a node at times t (s), vectorised."""


def spread(level: float) -> dict[str, Schedule]:
    """Every node at ``level`` all the time (a LeastAllocated-like spread)."""
    return {name: (lambda t, lv=level: np.full_like(t, lv)) for name in CURVES}


def packed(levels: dict[str, float]) -> dict[str, Schedule]:
    """Each node at its own constant level (a packing scheduler's outcome)."""
    return {name: (lambda t, lv=lv: np.full_like(t, lv)) for name, lv in levels.items()}


@dataclass
class RunPlan:
    """How to simulate one run."""

    schedules: dict[str, Schedule]
    duration_s: float = 120.0
    period_s: float = 1.0
    noise_w: float = 0.2
    counter: bool = True
    counter_resolution_wh: float = 0.001
    gaps: dict[str, Sequence[tuple[float, float]]] = field(default_factory=dict)
    counter_drop_at_s: dict[str, float] = field(default_factory=dict)
    counter_glitch_at_s: dict[str, float] = field(default_factory=dict)
    """Node → the one tick at which its counter reads 0 and then resumes (a transient 0)."""
    counter_offset_wh: float = 1000.0
    start_ns: int = START_NS
    seed: int = 1
    curves: dict[str, MeasuredCurve] = field(default_factory=dict)
    """Hidden curves of nodes that are not in :data:`CURVES`, or replace theirs."""


def simulate(plan: RunPlan, out_dir: Path) -> dict[str, float]:
    """Write ``NODE.jsonl`` files for ``plan`` into ``out_dir``; return true energy per node (Wh).

    The fine time step is 0.01 s; a counter drop resets the counter to 0 at that instant.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(plan.seed)
    fine = np.arange(0.0, plan.duration_s + 1e-9, 0.01)
    truth = {}
    for name, schedule in plan.schedules.items():
        curve = plan.curves.get(name) or CURVES[name]
        u_fine = schedule(fine)
        p_fine = np.array([curve.power_w(u) for u in u_fine])
        e_fine = np.concatenate(([0.0], np.cumsum((p_fine[1:] + p_fine[:-1]) / 2 * 0.01))) / 3600
        truth[name] = float(e_fine[-1])
        ticks = np.arange(0.0, plan.duration_s + 1e-9, plan.period_s)
        lines = []
        for t in ticks:
            if any(a < t < b for a, b in plan.gaps.get(name, ())):
                continue
            i = round(t / 0.01)
            lo = max(0, i - round(plan.period_s / 0.01))
            u = float(np.mean(u_fine[lo : i + 1]))
            power = float(p_fine[i] + rng.normal(0, plan.noise_w))
            counter = None
            if plan.counter:
                energy = plan.counter_offset_wh + e_fine[i]
                drop = plan.counter_drop_at_s.get(name)
                if drop is not None and t >= drop:
                    energy = e_fine[i] - e_fine[round(drop / 0.01)]
                counter = float(np.floor(energy / plan.counter_resolution_wh)) * (
                    plan.counter_resolution_wh
                )
                if plan.counter_glitch_at_s.get(name) == t:
                    counter = 0.0
            sample = TelemetrySample(
                node=name,
                measured_at_ns=plan.start_ns + round(t * 1e9),
                power_cap_w=CAP_W,
                utilisation=u,
                power_w=power,
                source=PowerSource.METERED,
                headroom=headroom_from_power(power, CAP_W),
                energy_wh=counter,
            )
            lines.append(json.dumps(sample.to_json()))
        (out_dir / f"{name}.jsonl").write_text("\n".join(lines) + "\n")
    return truth


def write_calibrations(out_dir: Path, scale_pmax: dict[str, float] | None = None) -> Path:
    """Fit each hidden curve at 11 levels and write ``NODE.json`` calibration files.

    ``scale_pmax`` deliberately mis-calibrates: the named node's dynamic range is scaled.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(7)
    for name, curve in CURVES.items():
        u = np.linspace(0, 1, 11)
        p = np.array([curve.power_w(x) for x in u]) + rng.normal(0, 0.1, u.size)
        fit = fit_linear(u, p)
        summary = FitSummary.from_result(fit)
        factor = (scale_pmax or {}).get(name)
        if factor is not None:
            p_max = fit.p_idle_w + (fit.p_max_w - fit.p_idle_w) * factor
            half = (fit.p_max_ci95_w[1] - fit.p_max_ci95_w[0]) / 2
            summary = summary.model_copy(
                update={"p_max_w": p_max, "p_max_ci95_w": (p_max - half, p_max + half)}
            )
        calibration = Calibration(
            node=name,
            created_at=datetime(2026, 11, 29, 9, 0, tzinfo=UTC),
            meter="snmp://public@127.0.0.1:1161",
            outlet=int(name[1:]),
            fit=summary,
            p_active_idle_w=float(p[0]),
            speed=1.0,
        )
        (out_dir / f"{name}.json").write_text(calibration.model_dump_json(indent=1))
    return out_dir
