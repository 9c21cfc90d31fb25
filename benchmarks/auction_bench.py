"""The ε-auction against scipy's linear_sum_assignment at the three sizes of issue 5.

Run: ``.venv/bin/python benchmarks/auction_bench.py [--repeats N] [--method auto|auction]``;
prints one JSON line per size (the figures of ``eams bench auction --json``), then the hard
cases at 500 × 1,000 × 8 (30 % filter mask; cold start; pods of 1–4 slots, without and with
the mask; for mixed sizes the reference is the ε-auction, ``method="auction"``).
``PYTHONPATH=. … --bundle-milp 400``: only the gap of both methods to the HiGHS MILP on tiny
bundle batches.
Goal (500 × 1,000 × 8): ≤ 10 ms median, ≥ 5× faster than linear_sum_assignment on the same
values, value gap within J·ε.
"""

import argparse
import json

import numpy as np

from eams.scheduler.auction import AuctionParams, bids, solve
from eams.scheduler.bench.auction_batches import random_batch
from eams.scheduler.bench.clearing_time import run_benchmark

SIZES = [(100, 100, 4), (500, 1000, 8), (2000, 1000, 8)]
# the extender's case (AR-2): filter masks, mixed pod sizes, no warm start; 500 × 1,000 × 8
HARD = [
    {"mask": 0.3, "pod_slots": 1, "cold": False},
    {"mask": 0.0, "pod_slots": 1, "cold": True},
    {"mask": 0.0, "pod_slots": 4, "cold": False},
    {"mask": 0.3, "pod_slots": 4, "cold": False},
]


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--mask", type=float, default=0.0)
    parser.add_argument("--method", choices=["auto", "auction"], default="auto")
    parser.add_argument(
        "--bundle-milp", type=int, default=0, help="only the bundle-vs-MILP study, N instances"
    )
    args = parser.parse_args()
    if args.bundle_milp:
        print(json.dumps(bundle_gaps(args.bundle_milp)))
        return
    for pods, nodes, slots in SIZES:
        figures = run_benchmark(
            pods, nodes, slots, args.seed, args.repeats, 1, args.mask, method=args.method
        )
        print(json.dumps(figures), flush=True)
    for case in HARD:
        figures = run_benchmark(
            500,
            1000,
            8,
            args.seed,
            args.repeats,
            1,
            case["mask"],
            cold=case["cold"],
            max_pod_slots=case["pod_slots"],
            method=args.method,
        )
        print(json.dumps(figures), flush=True)


if __name__ == "__main__":
    main()
