"""The study's acceptance figures from a sweep: AR-3 (energy vs default in the contended band),
AR-7 (fairness), the hump-or-flat shape of the gain over ρ, and AR-4 (violations).

AR-3 (study §3): ≥ 10 % lower energy per unit work than ``default`` at every swept ρ in
[0.7, 1.0], with ≤ 5 % p95 completion-time regression. AR-7: Jain's index ≥ 0.9 in every cell.
Means are over seeds. The gain is a *hump* when its mean inside [0.7, 1.0] exceeds its mean on
both sides (ρ < 0.7 and ρ > 1.0) by at least 2 points; otherwise the shape is reported as it is.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

BAND = (0.7, 1.0)
ENERGY_GAIN_MIN = 0.10
P95_REGRESSION_MAX = 0.05
JAIN_MIN = 0.9
HUMP_POINTS = 2.0


def _means(results: list[dict], key: str) -> dict[tuple[str, float], float]:
    acc: dict[tuple[str, float], list[float]] = defaultdict(list)
    for row in results:
        if row[key] is not None:
            acc[(row["scheduler"], row["rho"])].append(row[key])
    return {k: float(np.mean(v)) for k, v in acc.items()}


def evaluate(results: list[dict], reference: str = "default") -> dict[str, dict]:
    """Per scheduler: gain and regression per ρ, AR-3, AR-7, shape, violations.

    Returns
    -------
    dict scheduler → {"energy_gain_pct": {ρ: %}, "p95_regression_pct": {ρ: %}, "ar3": bool|None,
    "ar7": bool, "min_jain": float|None, "shape": str, "violations": int}; ``ar3`` is ``None``
    for the reference itself or when no swept ρ lies in the band.
    """
    energy = _means(results, "energy_per_work_j_per_core_s")
    p95 = _means(results, "p95_completion_s")
    schedulers = list(dict.fromkeys(r["scheduler"] for r in results))
    rhos = sorted({r["rho"] for r in results})
    out: dict[str, dict] = {}
    for s in schedulers:
        gain, regression = {}, {}
        for rho in rhos:
            ref_e, ref_p = energy.get((reference, rho)), p95.get((reference, rho))
            if ref_e and (s, rho) in energy:
                gain[rho] = 100.0 * (1.0 - energy[(s, rho)] / ref_e)
            if ref_p and (s, rho) in p95:
                regression[rho] = 100.0 * (p95[(s, rho)] / ref_p - 1.0)
        in_band = [r for r in rhos if BAND[0] <= r <= BAND[1] and r in gain]
        ar3 = None
        if s != reference and in_band:
            ar3 = all(
                gain[r] >= 100 * ENERGY_GAIN_MIN
                and regression.get(r, np.inf) <= 100 * P95_REGRESSION_MAX
                for r in in_band
            )
        jains = [r["jain"] for r in results if r["scheduler"] == s and r["jain"] is not None]
        out[s] = {
            "energy_gain_pct": gain,
            "p95_regression_pct": regression,
            "ar3": ar3,
            "min_jain": min(jains) if jains else None,
            "ar7": bool(jains) and min(jains) >= JAIN_MIN,
            "shape": _shape(gain) if s != reference else "reference",
            "violations": sum(r["violations"] for r in results if r["scheduler"] == s),
            "unschedulable": max(r["unschedulable"] for r in results if r["scheduler"] == s),
        }
    return out


def _shape(gain: dict[float, float]) -> str:
    mid = [g for r, g in gain.items() if BAND[0] <= r <= BAND[1]]
    low = [g for r, g in gain.items() if r < BAND[0]]
    high = [g for r, g in gain.items() if r > BAND[1]]
    if not (mid and low and high):
        return "undetermined (ρ values do not cover both sides of the band)"
    m, lo, hi = np.mean(mid), np.mean(low), np.mean(high)
    if m - lo >= HUMP_POINTS and m - hi >= HUMP_POINTS:
        return f"hump: {m:+.1f} % in band vs {lo:+.1f} % below, {hi:+.1f} % above"
    return f"no hump (flat or monotone): {m:+.1f} % in band vs {lo:+.1f} % below, {hi:+.1f} % above"


def report_lines(evaluation: dict[str, dict]) -> list[str]:
    """Human-readable VT-4 summary lines (met / NOT met, honestly)."""
    lines = []
    for s, ev in evaluation.items():
        if ev["ar3"] is None:
            ar3 = "n/a (reference)" if ev["shape"] == "reference" else "n/a (no ρ in band)"
        else:
            ar3 = "met" if ev["ar3"] else "NOT met"
        band = ", ".join(
            f"ρ={r:g}: {ev['energy_gain_pct'][r]:+.1f} % energy, "
            f"{ev['p95_regression_pct'].get(r, float('nan')):+.1f} % p95"
            for r in ev["energy_gain_pct"]
            if BAND[0] <= r <= BAND[1]
        )
        jain = "n/a" if ev["min_jain"] is None else f"{ev['min_jain']:.3f}"
        lines.append(
            f"{s}: AR-3 {ar3} [{band}]; AR-7 {'met' if ev['ar7'] else 'NOT met'} "
            f"(min Jain {jain}); shape {ev['shape']}; violations {ev['violations']}; "
            f"unschedulable {ev['unschedulable']}"
        )
    return lines
