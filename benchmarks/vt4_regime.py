"""VT-4 (AR-3, AR-7): the ρ sweep for every scheduler with and without the power manager,
summarised honestly.

Runs ``eams bench sweep`` on a manifest (default: the shipped ``regime-1000.yaml``) and prints,
per run (a scheduler, ``+pm`` under the power manager), AR-3 (≥ 10 % less energy per unit work
than ``default`` without a manager at every swept ρ in [0.7, 1.0] with ≤ 5 % p95 completion
regression), AR-7 (Jain ≥ 0.9 in every cell), the shape of the energy gain over ρ (hump or
not), violations and unschedulable pods — met or NOT met, whatever the answer — the manager's
transitions per node-hour and p95 wait for a wake, what sleeping saves per scheduler, what the
market adds (``eams+pm`` vs ``most-allocated+pm``), plus the wall time and the regime PNG.

``--from DIR [DIR ...]`` summarises a sweep already run (also a stopped one: the finished cells in
``DIR/cells.jsonl``; several folders are the parts of one sweep run apart, merged, a cell found in
two counted once) and redraws its plots in the first, without running anything. ``--tables`` also
prints the Markdown tables of the README: per run and ρ the mean over seeds ± the 95 % interval of
energy per work, p95 completion, mean wait, transitions per node-hour, p95 wake wait, p95 wait,
wakes, the market's wakes, the pods it held for one and the extender's mean batch (pods a clearing;
rows whose cells lack a figure are left out), then every comparison paired by seed
(``summary.paired``: AR-3's runs against ``default``, and ``summary.comparisons``).

Usage::

    .venv/bin/python benchmarks/vt4_regime.py [--manifest FILE] [--out DIR]
        [--from DIR [DIR ...]] [--tables]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from eams.scheduler.bench.plots import regime_plot  # noqa: E402
from eams.scheduler.bench.summary import (  # noqa: E402
    BAND,
    ENERGY,
    comparisons,
    evaluate,
    paired,
    report_lines,
    run_of,
    seed_interval,
)

FIGURES = (
    (ENERGY, "energy per work in the window, J/core-s", 2),
    ("p95_completion_s", "p95 completion, s", 0),
    ("mean_wait_s", "mean wait (arrival to start), s", 0),
    ("transitions_per_node_hour", "transitions per node-hour", 2),
    ("p95_wake_wait_s", "p95 wake wait, s", 1),
    ("p95_wait_s", "p95 wait (arrival to start), s", 0),
    ("wakes", "wakes", 0),
    ("market_wakes", "wakes the market asked for", 0),
    ("market_held_pods", "pods the market held for a wake", 0),
    ("pods_per_clearing", "pods a clearing of the extender (mean batch)", 2),
)


def _cell(values: list[float], digits: int) -> str:
    if not values:
        return "—"
    mean, half = seed_interval(values)
    return f"{mean:.{digits}f}" + ("" if half is None else f" ± {half:.{digits}f}")


def _interval(pair: tuple[float, float | None]) -> str:
    mean, half = pair
    return f"{mean:+.1f}" + ("" if half is None else f" ± {half:.1f}") + " %"


def tables(results: list[dict]) -> None:
    """Print the README's Markdown tables (module docstring)."""
    runs = list(dict.fromkeys(run_of(r) for r in results))
    rhos = sorted({r["rho"] for r in results})
    head = "| run | " + " | ".join(f"ρ {r:g}" for r in rhos) + " |"
    rule = "| --- |" + " --- |" * len(rhos)
    for key, title, digits in FIGURES:
        print(f"\n{title} (mean over seeds ± 95 % interval)\n\n{head}\n{rule}")
        for run in runs:
            cells = []
            for rho in rhos:
                values = [
                    r[key]
                    for r in results
                    if run_of(r) == run and r["rho"] == rho and r.get(key) is not None
                ]
                cells.append(_cell(values, digits))
            if any(c != "—" for c in cells):
                print(f"| {run} | " + " | ".join(cells) + " |")
    pairs = [(f"AR-3: {run}", run, "default") for run in runs if run != "default"]
    pairs += [(label, c["run"], c["reference"]) for label, c in comparisons(results).items()]
    print("\ndifferences paired by seed, energy gain / p95 change (mean ± 95 % interval)\n")
    print("| comparison | " + " | ".join(f"ρ {r:g}" for r in rhos) + " |\n" + rule)
    for label, run, reference in pairs:
        per_rho = paired(results, run, reference)
        cells = [
            " / ".join(_interval(per_rho[r][k]) for k in ("energy_gain_pct", "p95_change_pct"))
            if r in per_rho
            else "—"
            for r in rhos
        ]
        print(f"| {label} ({run} vs {reference}) | " + " | ".join(cells) + " |")
    band = [r for r in rhos if BAND[0] <= r <= BAND[1]]
    print(f"\n(band: ρ {', '.join(f'{r:g}' for r in band)})")


def summarise(outs: list[Path], print_tables: bool = False) -> int:
    out = outs[0]
    parts = [
        json.loads(line)
        for folder in outs
        for line in (folder / "cells.jsonl").read_text().splitlines()
        if line
    ]
    # a cell run in two parts of a sweep counts once (its figures are the same: AR-8)
    keyed = {(run_of(r["figures"]), r["figures"]["rho"], r["figures"]["seed"]): r for r in parts}
    rows = list(keyed.values())
    results = [r["figures"] for r in rows]
    cells = {(run_of(r), r["rho"], r["seed"]) for r in results}
    schedulers = sorted({c[0] for c in cells})
    rhos = sorted({c[1] for c in cells})
    seeds = sorted({c[2] for c in cells})
    print(
        f"VT-4 from {out}: {len(results)} cells; schedulers {', '.join(schedulers)}; "
        f"ρ {', '.join(f'{r:g}' for r in rhos)}; seeds {seeds}"
    )
    complete = [(s, r) for s in schedulers for r in rhos if all((s, r, x) in cells for x in seeds)]
    if len(complete) < len(schedulers) * len(rhos):
        print(
            f"  (partial sweep: {len(complete)} of {len(schedulers) * len(rhos)} "
            "scheduler × ρ points have every seed)"
        )
    for line in report_lines(evaluate(results), comparisons(results)):
        print("  " + line)
    latency = [r["latency"] for r in rows if r["latency"]["p99_ms"] is not None]
    for s in schedulers:
        p99 = [row["p99_ms"] for row in latency if run_of(row) == s]
        if p99:
            print(f"  {s}: emulator decision p99 (wall clock, worst cell) {max(p99):.1f} ms")
    plots = regime_plot(
        sorted(results, key=lambda r: (r["scheduler"], run_of(r), r["rho"], r["seed"])),
        out,
        f"{out.name}: regime curve",
    )
    print(f"  regime plot: {plots[0]}")
    if print_tables:
        tables(results)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--manifest", type=Path, default=ROOT / "scheduler/bench/manifests/regime-1000.yaml"
    )
    parser.add_argument("--out", type=Path, default=Path("vt4-regime"))
    parser.add_argument("--from", dest="existing", type=Path, nargs="+", default=None)
    parser.add_argument("--tables", action="store_true", help="print the README's tables")
    args = parser.parse_args()
    if args.existing is not None:
        return summarise(args.existing, args.tables)
    command = [
        sys.executable,
        "-m",
        "eams.cli",
        "bench",
        "sweep",
        "--manifest",
        str(args.manifest),
        "--out",
        str(args.out),
    ]
    print("$", " ".join(command), flush=True)
    started = time.perf_counter()
    done = subprocess.run(command, check=False)
    print(f"sweep wall time: {time.perf_counter() - started:.0f} s (exit {done.returncode})")
    return summarise([args.out], args.tables) if (args.out / "cells.jsonl").exists() else 1


if __name__ == "__main__":
    sys.exit(main())
