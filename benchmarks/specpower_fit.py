"""Fit the §5.1 line to all SPECpower_ssj2008 servers in the shared data and report how well it
does (issue 3, "Done when").

Per server: utilisation at a level = ssj_ops at that level / ssj_ops at 100 %, active idle is
u = 0; power is the published average at each level (11 points). All servers are fitted in one
vectorised call (:func:`eams.calibrate.fit.fit_linear_batch`). Printed:

- |fitted − published| at active idle (the line's intercept vs measured idle) and at 100 %,
  in W and in % of published: median, p90, max;
- the line's mean absolute percentage error at the intermediate levels (10 % … 90 %);
- how many servers the linearity checks flag as not linear, and the idle-step verdicts
  (issue 16, item 5): how many servers' measured active idle steps off the line through their
  loaded levels, the line's intercept against measured idle on those, the worst intercept still
  called linear, and how many idle points the line does not use without a step verdict;
- the time to fit all servers (median of repeats), against two references measured in the same
  run: a Python loop of ``numpy.polyfit`` (ordinary least squares, no intervals) and a loop of
  the single-data-set :func:`eams.calibrate.fit.fit_linear`.

Run: ``.venv/bin/python benchmarks/specpower_fit.py`` (``EAMS_DATA_DIR`` selects the data).
"""

from __future__ import annotations

import csv
import sys
import time
from collections.abc import Callable

import numpy as np

from eams.calibrate.fit import BatchFit, fit_linear, fit_linear_batch
from eams.datasets import data_file

FILE = "specpower/specpower_load_power_table_2023_extract.csv"
LEVELS = (100, 90, 80, 70, 60, 50, 40, 30, 20, 10)
REPEATS = 15


def load() -> tuple[np.ndarray, np.ndarray]:
    """(utilisation, power_w), each (n_servers, 11): active idle first, then 10 % … 100 %."""
    path = data_file(FILE)
    if path is None:
        sys.exit(f"no {FILE} under the data folder (set EAMS_DATA_DIR)")
    us, ps = [], []
    with path.open(newline="") as handle:
        for row in csv.DictReader(handle):
            ops = np.array([float(row[f"ssj_ops_{lv}pct"]) for lv in LEVELS])
            watts = np.array([float(row[f"watts_{lv}pct"]) for lv in LEVELS])
            us.append(np.concatenate([[0.0], (ops / ops[0])[::-1]]))
            ps.append(np.concatenate([[float(row["watts_active_idle"])], watts[::-1]]))
    return np.array(us), np.array(ps)


def timed(fn: Callable[[], object]) -> float:
    """Median wall time of REPEATS calls (s)."""
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def spread(name: str, values: np.ndarray, unit: str) -> str:
    p50, p90 = np.percentile(values, [50, 90])
    top = values.max()
    return f"  {name:<34} median {p50:7.2f} {unit}  p90 {p90:7.2f} {unit}  max {top:8.2f} {unit}"


def idle_step(fit: BatchFit, p: np.ndarray, n: int) -> None:
    """Print the idle-step verdicts (see the module docstring)."""
    stepped = fit.idle_stepped
    gap_pct = 100 * (fit.p_idle_w - p[:, 0]) / p[:, 0]
    print(
        f"idle step (measured active idle off the loaded levels' line, p < 0.01 and > 5 %): "
        f"{stepped.sum()} of {n}, {(fit.idle_step_w[stepped] < 0).sum()} of them below it"
    )
    if stepped.any():
        print(spread("intercept above measured idle (%)", gap_pct[stepped], "% "))
    linear = fit.linear_ok
    worst = np.sort(gap_pct[linear])[::-1][:3]
    print(f"  largest intercept above measured idle still called linear: {np.round(worst, 1)} %")
    print(
        f"  called linear with the intercept > 50 % above idle: {(linear & (gap_pct > 50)).sum()}"
    )
    unused = fit.weights[:, 0] == 0
    print(
        f"  idle point not used by the line: {unused.sum()} of {n}, "
        f"{(unused & ~stepped).sum()} of them without a step verdict"
    )


def main() -> None:
    u, p = load()
    n = len(u)
    fit = fit_linear_batch(u, p)
    line = fit.p_idle_w[:, None] + (fit.p_max_w - fit.p_idle_w)[:, None] * u
    idle_err = np.abs(fit.p_idle_w - p[:, 0])
    full_err = np.abs(fit.p_max_w - p[:, -1])
    mid = slice(1, 10)  # 10 % … 90 %
    mape = 100 * np.mean(np.abs(line[:, mid] - p[:, mid]) / p[:, mid], axis=1)
    ols = np.array([np.polyfit(row_u, row_p, 1) for row_u, row_p in zip(u, p, strict=True)])
    ols_idle_pct = 100 * np.abs(ols[:, 1] - p[:, 0]) / p[:, 0]

    print(f"SPECpower_ssj2008: {n} servers, 11 points each (active idle + 10 levels)")
    print("|fitted - published| at active idle (line intercept vs measured idle):")
    print(spread("W", idle_err, "W "))
    print(spread("% of published", 100 * idle_err / p[:, 0], "% "))
    print(spread("same, ordinary least squares (%)", ols_idle_pct, "% "))
    print("|fitted - published| at 100 %:")
    print(spread("W", full_err, "W "))
    print(spread("% of published", 100 * full_err / p[:, -1], "% "))
    print("MAPE of the line at 10 %..90 % (per server):")
    print(spread("%", mape, "% "))
    print(f"  mean over all servers: {mape.mean():.2f} %")
    not_linear = int((~fit.linear_ok).sum())
    print(f"flagged not linear: {not_linear} of {n} ({100 * not_linear / n:.1f} %)")
    idle_step(fit, p, n)

    t_batch = timed(lambda: fit_linear_batch(u, p))
    t_polyfit = timed(lambda: [np.polyfit(a, b, 1) for a, b in zip(u, p, strict=True)])
    t_single = timed(lambda: [fit_linear(a, b) for a, b in zip(u, p, strict=True)])
    print(f"time to fit all {n} (median of {REPEATS}):")
    print(f"  fit_linear_batch (robust, CIs, curvature)  {1e3 * t_batch:8.1f} ms")
    print(
        f"  loop of numpy.polyfit (OLS only)           {1e3 * t_polyfit:8.1f} ms   "
        f"ratio batch/polyfit {t_batch / t_polyfit:.2f}"
    )
    print(
        f"  loop of fit_linear (one server per call)   {1e3 * t_single:8.1f} ms   "
        f"ratio batch/loop {t_batch / t_single:.3f}"
    )


if __name__ == "__main__":
    main()
