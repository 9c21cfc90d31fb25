"""The engine against the solvers a user would pick instead, on every batch kind, in one run.

Run: ``.venv/bin/python benchmarks/auction_bench.py [--repeats N] [--out FILE]``: for each kind
of ``eams.scheduler.bench.auction_batches.KINDS`` at 500 pods × 1,000 nodes × 8 free slots,
the figures of ``eams bench auction --json`` (one JSON line each, also written to ``--out``),
then a Markdown table of them (the README's). ``PYTHONPATH=. … --bundle-milp 400``: only the
gap of ``method="auto"`` and ``method="auction"`` to the HiGHS MILP optimum on tiny bundle
batches.

Targets (issue 18, 500 × 1,000 × 8): every single-slot kind within J·ε of the optimum and no
slower than the min-cost flow, cold and filtered ≤ 30 ms; 1–4-slot pods ≤ 30 ms within 1 % of
the best bound any solver found in 1 s; trace-shaped batches ≤ 50 ms within 2 % of it.
"""

import argparse
import json
import os

import numpy as np

from eams.scheduler.auction import AuctionParams, bids, solve
from eams.scheduler.bench.auction_batches import KINDS, random_batch
from eams.scheduler.bench.clearing_time import compare

SIZE = (500, 1000, 8)


def bundle_gaps(n_instances: int) -> dict:
    """Relative gap to the HiGHS MILP optimum on tiny random bundle batches (2–13 pods of 1–3
    slots, 1–6 nodes of 2–6 slots), per method: mean, worst, share solved optimally. Needs the
    repository root on the path (``PYTHONPATH=.``) for the tests' MILP reference."""
    from tests.auction.reference import milp_optimum

    gaps: dict[str, list[float]] = {"auto": [], "auction": []}
    for seed in range(n_instances):
        rng = np.random.default_rng(seed)
        n_pods, n_nodes, slots = (
            int(rng.integers(2, 14)),
            int(rng.integers(1, 7)),
            int(rng.integers(2, 7)),
        )
        pods, nodes = random_batch(n_pods, n_nodes, slots, seed=seed, max_pod_slots=3)
        values = bids.bid_values(pods, nodes, AuctionParams())
        best = milp_optimum(values, pods.slots, nodes.slots)
        if best <= 0:
            continue
        for method, found in gaps.items():
            c = solve(values, pods.slots, nodes.slots, AuctionParams(method=method))
            found.append((best - c.value) / best)
    return {
        method: {
            "instances": len(g),
            "mean_gap_pct": 100 * float(np.mean(g)),
            "worst_gap_pct": 100 * float(np.max(g)),
            "optimal_share": float(np.mean(np.array(g) < 1e-9)),
        }
        for method, g in gaps.items()
    }


def _cell(solved: dict) -> str:
    value = "none" if solved["value"] is None else f"{solved['value']:.1f}"
    bound = "—" if solved["bound"] is None else f"{solved['bound']:.1f}"
    return f"{solved['solve_ms']:,.0f} ms: {value} / {bound}"


def table(rows: list[dict]) -> str:
    """The figures as the README's Markdown table (CPU medians for the engine and the flow,
    wall time of each budgeted solve; value / bound)."""
    lines = [
        "| batch | EAMS `clear` CPU median / p99 | method | EAMS value, certificate | "
        "OR-tools min-cost flow (build + solve CPU): value | CP-SAT 50 ms / 200 ms / 1 s "
        "(wall: value / bound) | HiGHS MILP 50 ms / 200 ms / 1 s | best bound (by) | "
        "EAMS below it | load |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        e = r["eams"]
        refs = {s["solver"]: s for s in r["references"]}
        flow = r["references"][0]
        flow_ms = flow["build_ms"] + flow["solve_cpu_ms"]
        flow_text = f"{flow_ms:,.0f} ms: " + (
            f"{flow['value']:.2f}" if flow["value"] is not None else f"LP {flow['bound']:.1f}"
        )
        cert = (
            "J·ε " + f"{e['j_epsilon']:.3g}"
            if e["gap_bound"] is None
            else (f"gap_bound {e['gap_bound']:.2f} ({100 * e['gap_bound'] / e['value']:.2f} %)")
        )
        cp = " · ".join(_cell(s) for n, s in refs.items() if n.startswith("cp-sat")) or "—"
        hi = " · ".join(_cell(s) for n, s in refs.items() if n.startswith("highs")) or "—"
        lines.append(
            f"| {r['kind']} ({r['pod_slots_total']} slots asked, {r['free_slots_total']} free) "
            f"| {e['clear_cpu_ms_median']:.1f} / {e['clear_cpu_ms_p99']:.1f} ms | {e['method']} "
            f"| {e['value']:.2f}, {cert} | {flow_text} | {cp} | {hi} "
            f"| {r['best_bound']:.2f} ({r['best_bound_by']}) | {r['gap_to_best_bound_pct']:.2f} % "
            f"| {r['load_avg'][0]:.1f}–{r['load_avg'][1]:.1f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="also write the JSON lines here")
    parser.add_argument(
        "--bundle-milp", type=int, default=0, help="only the bundle-vs-MILP study, N instances"
    )
    args = parser.parse_args()
    if args.bundle_milp:
        print(json.dumps(bundle_gaps(args.bundle_milp)))
        return
    rows = []
    for kind in KINDS:
        figures = compare(kind, *SIZE, seed=args.seed, repeats=args.repeats)
        rows.append(figures)
        print(json.dumps(figures), flush=True)
        if args.out:
            with open(args.out, "a") as handle:
                handle.write(json.dumps(figures) + "\n")
    print(table(rows))
    print(f"load average at the end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
