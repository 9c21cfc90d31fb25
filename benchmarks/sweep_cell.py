"""The wall time of one sweep cell, against the ``default`` cell of the same ρ and seed (issue 33).

A 1,000-node EAMS cell costs what its scheduler asks of the extender; the reference in the same
run is the same cell with ``default`` (the emulator, the power manager and the energy
integration without any extender), so the ratio follows the scheduler's own cost while the
machine's speed drifts. ``--profile FILE`` also writes the cProfile of the scheduler's cell.

Usage::

    .venv/bin/python benchmarks/sweep_cell.py --manifest scheduler/bench/manifests/regime-1000.yaml
        --scheduler eams-batch --rho 1.0 --seed 1 [--manager policy|none] [--max-pods N]
        [--profile out.prof]
"""

from __future__ import annotations

import argparse
import cProfile
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from eams.scheduler.bench.manifest import load_manifest  # noqa: E402
from eams.scheduler.bench.sweep import Cell, prepare, run_cell  # noqa: E402


def _timed(manifest, cell: Cell, profile: Path | None = None) -> tuple[float, dict]:
    prepare(manifest, cell.rho, cell.seed)  # the workload and cluster are cached per process
    profiler = cProfile.Profile() if profile is not None else None
    started = time.perf_counter()
    if profiler is not None:
        profiler.enable()
    figures, _ = run_cell(manifest, cell)
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats(profile)
    return time.perf_counter() - started, figures


def main() -> int:
    """Time the cell and the default reference; print both and their ratio."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--manifest", type=Path, required=True)
    parser.add_argument("--scheduler", default="eams-batch")
    parser.add_argument("--rho", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--manager", choices=("none", "policy"), default="policy")
    parser.add_argument("--max-pods", type=int, default=None, help="fewer pods of the trace")
    parser.add_argument("--profile", type=Path, default=None, help="cProfile output file")
    args = parser.parse_args()
    manifest = load_manifest(args.manifest)
    if args.max_pods is not None:
        trace = manifest.trace.model_copy(update={"max_pods": args.max_pods})
        manifest = manifest.model_copy(update={"trace": trace})
    load = os.getloadavg()
    reference_s, ref = _timed(manifest, Cell("default", args.rho, args.seed, args.manager))
    cell_s, figures = _timed(
        manifest, Cell(args.scheduler, args.rho, args.seed, args.manager), args.profile
    )
    print(
        f"{manifest.name}: {figures['pods']} pods, ρ {args.rho:g}, seed {args.seed}, "
        f"manager {args.manager}; load average {load[0]:.2f} / {os.getloadavg()[0]:.2f} "
        f"(start / end)"
    )
    print(f"default (reference): {reference_s:.1f} s, p95 {ref['p95_completion_s']:.0f} s")
    print(
        f"{args.scheduler}: {cell_s:.1f} s, p95 {figures['p95_completion_s']:.0f} s, "
        f"{cell_s / reference_s:.1f}× the reference; policy_stats {figures['policy_stats']}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
