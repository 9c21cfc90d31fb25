"""The study's acceptance figures from a sweep: AR-3 (energy vs default in the contended band),
AR-7 (fairness), the hump-or-flat shape of the gain over ρ, and AR-4 (violations) — per *run*
(a scheduler, ``+pm`` under the power manager) — and what the power manager changes.

AR-3 (study §3): ≥ 10 % lower energy per unit work (over the arrival window, where the offered
load is ρ: :data:`ENERGY`) than ``default`` *without* a power manager at every swept ρ in
[0.7, 1.0], with ≤ 5 % p95 completion-time regression. AR-7: Jain's index ≥ 0.9 in every
cell. Means are over the seeds a run and its reference share at that ρ (a sweep stopped
part-way compares like with like: each seed draws its own fleet). The gain is a *hump* when
its mean inside [0.7, 1.0] exceeds its mean on both sides (ρ < 0.7 and ρ > 1.0) by at least
2 points; otherwise the shape is reported as it is.

Issue 14's comparisons (:func:`comparisons`): what sleeping saves — each scheduler under the
manager against itself without one (energy, and the p95 completion cost of waiting for wakes) —
and what the market adds — ``eams+pm`` against ``most-allocated+pm``, the strongest energy
baseline the study names, under the same manager. Issue 33's: what the batch market adds —
``eams-batch+pm`` against ``most-allocated+pm`` (``market-batch``) and ``eams-batch`` against
the single-pod score ``eams`` in each mode (``batch``, ``batch+pm``) —, each difference also
paired by seed (same ρ and seed: the same pods and nodes) with its 95 % interval over seeds
(:func:`paired`). Issue 34's: the market deciding the wakes (:data:`PAIRS`).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
from scipy import stats

BAND = (0.7, 1.0)
ENERGY_GAIN_MIN = 0.10
P95_REGRESSION_MAX = 0.05
JAIN_MIN = 0.9
HUMP_POINTS = 2.0
MANAGED = "+pm"
MARKET = ("eams" + MANAGED, "most-allocated" + MANAGED)
"""What the market adds: this run against that one (both under the same power manager)."""
PAIRS = {
    "market-batch": ("eams-batch" + MANAGED, "most-allocated" + MANAGED),
    "batch": ("eams-batch", "eams"),
    "batch" + MANAGED: ("eams-batch" + MANAGED, "eams" + MANAGED),
    "market-default": ("eams" + MANAGED, "default" + MANAGED),
    "wakes": ("eams" + MANAGED, "eams-no-wakes" + MANAGED),
    "market-no-wakes": ("eams-no-wakes" + MANAGED, "most-allocated" + MANAGED),
}
"""Issue 33: what the batch market adds over most-allocated and over the single-pod score.
Issue 34: what the market with its wakes adds over default+pm (``market-default``), what its
wakes add over the same extender without them (``wakes``: ``eams-no-wakes``), and that
extender against most-allocated+pm (``market-no-wakes``)."""
CONFIDENCE = 0.95
ENERGY = "energy_per_work_window_j_per_core_s"
"""The energy figure judged: energy per work over the arrival window (:mod:`.metrics`)."""
WHOLE_RUN = "energy_per_work_j_per_core_s"
"""The same to the last pod's end, printed beside it: a manager that defers work past the
window (a server's boot, overloaded) saves in one and loses in the other (bench README)."""


def seed_interval(values: list[float], floor_sd: float = 0.0) -> tuple[float, float | None]:
    """Mean and half-width of the 95 % Student-t interval of ``values`` (one per seed or
    repeat), ``t(0.975, n − 1) · max(s, floor_sd) / √n``; the half-width is ``None`` with
    fewer than two values. ``floor_sd`` (≥ 0, the values' unit): the least standard deviation
    the spread is taken to have (the demo's repeats: each run's measurement 1σ)."""
    mean = float(np.mean(values))
    if len(values) < 2:
        return mean, None
    spread = max(float(np.std(values, ddof=1)), floor_sd)
    half = stats.t.ppf(0.5 + CONFIDENCE / 2, len(values) - 1) * spread
    return mean, float(half / np.sqrt(len(values)))


def paired(results: list[dict], run: str, reference: str, energy: str = ENERGY) -> dict:
    """Per ρ, the difference of ``run`` against ``reference`` paired by seed, mean and 95 %
    interval over the seeds both have: energy gain 100·(1 − E/E_ref) of the figure ``energy``
    (:data:`ENERGY`, or :data:`WHOLE_RUN` for the whole run) and p95 completion change
    100·(p95/p95_ref − 1), %.

    Returns
    -------
    dict ρ → {"seeds": n, "energy_gain_pct": (mean, half), "p95_change_pct": (mean, half)}
    """
    cells = {(run_of(r), r["rho"], r["seed"]): r for r in results}
    out: dict[float, dict] = {}
    for rho in sorted({r["rho"] for r in results}):
        seeds = sorted(
            s for (n, p, s) in cells if n == run and p == rho and (reference, rho, s) in cells
        )
        if not seeds:
            continue
        pairs = [(cells[(run, rho, s)], cells[(reference, rho, s)]) for s in seeds]
        gains = [100.0 * (1.0 - a[energy] / b[energy]) for a, b in pairs]
        p95 = [100.0 * (a["p95_completion_s"] / b["p95_completion_s"] - 1.0) for a, b in pairs]
        out[rho] = {
            "seeds": len(seeds),
            "energy_gain_pct": seed_interval(gains),
            "p95_change_pct": seed_interval(p95),
        }
    return out


def run_of(row: dict) -> str:
    """The run label of a result row (rows from before the power manager have none)."""
    return row.get("run", row["scheduler"])


PerSeed = dict[tuple[str, float], dict[int, float]]
"""(run, ρ) → {seed: one figure}."""


def _per_seed(results: list[dict]) -> dict[str, PerSeed]:
    """The figures compared (:data:`ENERGY`, :data:`WHOLE_RUN`, p95 completion), each as
    :data:`PerSeed` over the rows that have it: built once for every run's comparison."""
    tables: dict[str, PerSeed] = {}
    for key in (ENERGY, WHOLE_RUN, "p95_completion_s"):
        table: PerSeed = defaultdict(dict)
        for row in results:
            if row.get(key) is not None:
                table[(run_of(row), row["rho"])][row["seed"]] = row[key]
        tables[key] = table
    return tables


def _ratios(values: PerSeed, run: str, reference: str, rhos) -> dict[float, float]:
    """Per ρ, mean of ``run`` over mean of ``reference``, both over the seeds the two share
    (each seed draws its own fleet: means over different seeds are not comparable); a ρ where
    they share none, or the reference's mean is 0, is left out."""
    out = {}
    for rho in rhos:
        mine, theirs = values.get((run, rho), {}), values.get((reference, rho), {})
        seeds = [s for s in mine if s in theirs]
        ref = float(np.mean([theirs[s] for s in seeds])) if seeds else 0.0
        if ref:
            out[rho] = float(np.mean([mine[s] for s in seeds])) / ref
    return out


def _against(tables: dict[str, PerSeed], run: str, reference: str, rhos) -> dict[str, dict]:
    """``run`` against ``reference`` per ρ (%), from their means over the seeds the two share
    at that ρ (``tables``: :func:`_per_seed`): ``"energy"`` gain (:data:`ENERGY`),
    ``"whole_run"`` gain (:data:`WHOLE_RUN`) and ``"p95"`` change."""

    def gain(key: str) -> dict[float, float]:
        return {
            rho: 100.0 * (1.0 - r) for rho, r in _ratios(tables[key], run, reference, rhos).items()
        }

    p95 = _ratios(tables["p95_completion_s"], run, reference, rhos)
    return {
        "energy": gain(ENERGY),
        "whole_run": gain(WHOLE_RUN),
        "p95": {rho: 100.0 * (r - 1.0) for rho, r in p95.items()},
    }


def evaluate(results: list[dict], reference: str = "default") -> dict[str, dict]:
    """Per run: gain and regression per ρ against ``reference``, AR-3, AR-7, shape, violations,
    and the power manager's transitions per node-hour and p95 wait for a wake.

    Returns
    -------
    dict run → {"energy_gain_pct": {ρ: %}, "whole_run_gain_pct": {ρ: %} (:data:`WHOLE_RUN`,
    not judged), "p95_regression_pct": {ρ: %}, "ar3": bool|None,
    "ar7": bool, "min_jain": float|None, "shape": str, "violations": int, "unschedulable": int,
    "transitions_per_node_hour": float (mean over cells), "p95_wake_wait_s": float|None (worst
    cell), "failed_wakes": int}; ``ar3`` is ``None`` for the reference itself, when no swept ρ
    lies in the band, or when the results hold no cell of the reference run (a sweep of one
    scheduler: gains are then empty).
    """
    runs = list(dict.fromkeys(run_of(r) for r in results))
    rhos = sorted({r["rho"] for r in results})
    tables = _per_seed(results)
    out: dict[str, dict] = {}
    for s in runs:
        rows = [r for r in results if run_of(r) == s]
        against = _against(tables, s, reference, rhos)
        gain, regression = against["energy"], against["p95"]
        in_band = [r for r in rhos if BAND[0] <= r <= BAND[1] and r in gain]
        ar3 = None
        if s != reference and in_band:
            ar3 = all(
                gain[r] >= 100 * ENERGY_GAIN_MIN
                and regression.get(r, np.inf) <= 100 * P95_REGRESSION_MAX
                for r in in_band
            )
        jains = [r["jain"] for r in rows if r["jain"] is not None]
        waits = [r["p95_wake_wait_s"] for r in rows if r.get("p95_wake_wait_s") is not None]
        out[s] = {
            "energy_gain_pct": gain,
            "whole_run_gain_pct": against["whole_run"],
            "p95_regression_pct": regression,
            "ar3": ar3,
            "min_jain": min(jains) if jains else None,
            "ar7": bool(jains) and min(jains) >= JAIN_MIN,
            "shape": _shape(gain) if s != reference else "reference",
            "violations": sum(r["violations"] for r in rows),
            "unschedulable": max(r["unschedulable"] for r in rows),
            "transitions_per_node_hour": float(
                np.mean([r.get("transitions_per_node_hour") or 0.0 for r in rows])
            ),
            "p95_wake_wait_s": max(waits) if waits else None,
            "failed_wakes": sum(r.get("failed_wakes", 0) for r in rows),
        }
    return out


def comparisons(results: list[dict]) -> dict[str, dict]:
    """What sleeping saves and what the market adds (module docstring).

    Returns
    -------
    dict label → {"run", "reference", "energy_gain_pct": {ρ: %}, "whole_run_gain_pct": {ρ: %},
    "p95_change_pct": {ρ: %}, "band_gain_pct": float|None (mean over the band's ρ), "paired":
    :func:`paired`, "paired_whole_run": :func:`paired` of :data:`WHOLE_RUN`}; labels
    ``sleep:<scheduler>`` for every scheduler swept in both modes, ``market`` when both
    :data:`MARKET` runs are there, and each of :data:`PAIRS` whose runs are there.
    """
    runs = set(run_of(r) for r in results)
    rhos = sorted({r["rho"] for r in results})
    pairs = [
        (f"sleep:{s}", s + MANAGED, s)
        for s in dict.fromkeys(r["scheduler"] for r in results)
        if s in runs and s + MANAGED in runs
    ]
    if set(MARKET) <= runs:
        pairs.append(("market", *MARKET))
    pairs += [(label, *pair) for label, pair in PAIRS.items() if set(pair) <= runs]
    tables = _per_seed(results)
    out = {}
    for label, run, reference in pairs:
        against = _against(tables, run, reference, rhos)
        gain = against["energy"]
        band = [g for r, g in gain.items() if BAND[0] <= r <= BAND[1]]
        out[label] = {
            "run": run,
            "reference": reference,
            "energy_gain_pct": gain,
            "whole_run_gain_pct": against["whole_run"],
            "p95_change_pct": against["p95"],
            "band_gain_pct": float(np.mean(band)) if band else None,
            "paired": paired(results, run, reference),
            "paired_whole_run": paired(results, run, reference, WHOLE_RUN),
        }
    return out


def _shape(gain: dict[float, float]) -> str:
    if not gain:
        return "undetermined (no cells of the reference run to compare with)"
    mid = [g for r, g in gain.items() if BAND[0] <= r <= BAND[1]]
    low = [g for r, g in gain.items() if r < BAND[0]]
    high = [g for r, g in gain.items() if r > BAND[1]]
    if not (mid and low and high):
        return "undetermined (ρ values do not cover both sides of the band)"
    m, lo, hi = np.mean(mid), np.mean(low), np.mean(high)
    if m - lo >= HUMP_POINTS and m - hi >= HUMP_POINTS:
        return f"hump: {m:+.1f} % in band vs {lo:+.1f} % below, {hi:+.1f} % above"
    return f"no hump (flat or monotone): {m:+.1f} % in band vs {lo:+.1f} % below, {hi:+.1f} % above"


def _signed(mean: float, half: float | None) -> str:
    return f"{mean:+.1f}" + ("" if half is None else f" ± {half:.1f}")


def _seeds(n: int) -> str:
    return f"{n} seed" + ("" if n == 1 else "s")


def _compared_at(c: dict, rho: float) -> str:
    """One ρ of a comparison: the figures paired by seed, with their intervals."""
    window, whole = c["paired"][rho], c["paired_whole_run"][rho]
    return (
        f"ρ={rho:g}: {_signed(*window['energy_gain_pct'])} % energy "
        f"(whole run {_signed(*whole['energy_gain_pct'])} %), "
        f"{_signed(*window['p95_change_pct'])} % p95 ({_seeds(window['seeds'])} paired)"
    )


def report_lines(evaluation: dict[str, dict], compared: dict[str, dict] | None = None) -> list:
    """Human-readable VT-4 summary lines (met / NOT met, honestly), then the comparisons: per ρ
    the energy gain over the arrival window (judged) and over the whole run, ± the 95 %
    interval over the seeds the two runs share."""
    lines = []
    for s, ev in evaluation.items():
        if ev["shape"] == "reference":
            ar3 = "n/a (reference)"
        elif not ev["energy_gain_pct"]:
            ar3 = "n/a (no cells of the reference run to compare with)"
        elif ev["ar3"] is None:
            ar3 = "n/a (no ρ in band)"
        else:
            ar3 = "met" if ev["ar3"] else "NOT met"
        band = ", ".join(
            f"ρ={r:g}: {ev['energy_gain_pct'][r]:+.1f} % energy "
            f"(whole run {ev['whole_run_gain_pct'].get(r, float('nan')):+.1f} %), "
            f"{ev['p95_regression_pct'].get(r, float('nan')):+.1f} % p95"
            for r in ev["energy_gain_pct"]
            if BAND[0] <= r <= BAND[1]
        )
        jain = "n/a" if ev["min_jain"] is None else f"{ev['min_jain']:.3f}"
        power = ""
        if s.endswith(MANAGED):
            wait = ev["p95_wake_wait_s"]
            power = (
                f"; {ev['transitions_per_node_hour']:.2f} transitions per node-hour, "
                f"p95 wait for a wake {'n/a' if wait is None else f'{wait:.1f} s'}, "
                f"{ev['failed_wakes']} failed wakes"
            )
        lines.append(
            f"{s}: AR-3 {ar3} [{band}]; AR-7 {'met' if ev['ar7'] else 'NOT met'} "
            f"(min Jain {jain}); shape {ev['shape']}; violations {ev['violations']}; "
            f"unschedulable {ev['unschedulable']}{power}"
        )
    for label, c in (compared or {}).items():
        per_rho = "; ".join(_compared_at(c, rho) for rho in c["energy_gain_pct"])
        band = c["band_gain_pct"]
        head = "what sleeping saves" if label.startswith("sleep:") else f"what {label} adds"
        head = "what the market adds" if label == "market" else head
        lines.append(
            f"{head}: {c['run']} vs {c['reference']}: "
            f"{'n/a' if band is None else f'{band:+.1f} %'} in band [{per_rho}]"
        )
    return lines
