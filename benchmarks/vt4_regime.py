"""VT-4 (AR-3, AR-7): the ρ sweep for every scheduler with and without the power manager,
summarised honestly.

Runs ``eams bench sweep`` on a manifest (default: the shipped ``regime-1000.yaml``) and prints,
per run (a scheduler, ``+pm`` under the power manager), AR-3 (≥ 10 % less energy per unit work
than ``default`` without a manager at every swept ρ in [0.7, 1.0] with ≤ 5 % p95 completion
regression), AR-7 (Jain ≥ 0.9 in every cell), the shape of the energy gain over ρ (hump or
not), violations and unschedulable pods — met or NOT met, whatever the answer — the manager's
transitions per node-hour and p95 wait for a wake, what sleeping saves per scheduler, what the
market adds (``eams+pm`` vs ``most-allocated+pm``), plus the wall time and the regime PNG.

``--from DIR`` summarises a sweep already run (also a stopped one: the finished cells in
``DIR/cells.jsonl``) and redraws its plots, without running anything.

Usage::

    .venv/bin/python benchmarks/vt4_regime.py [--manifest FILE] [--out DIR] [--from DIR]
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
from eams.scheduler.bench.summary import comparisons, evaluate, report_lines, run_of  # noqa: E402


def summarise(out: Path) -> int:
    rows = [json.loads(line) for line in (out / "cells.jsonl").read_text().splitlines() if line]
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
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--manifest", type=Path, default=ROOT / "scheduler/bench/manifests/regime-1000.yaml"
    )
    parser.add_argument("--out", type=Path, default=Path("vt4-regime"))
    parser.add_argument("--from", dest="existing", type=Path, default=None)
    args = parser.parse_args()
    if args.existing is not None:
        return summarise(args.existing)
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
    return summarise(args.out) if (args.out / "cells.jsonl").exists() else 1


if __name__ == "__main__":
    sys.exit(main())
