"""The ε-auction against scipy's linear_sum_assignment at the three sizes of issue 5.

Run: ``.venv/bin/python benchmarks/auction_bench.py [--repeats N] [--method auto|auction]``;
prints one JSON line per size (the figures of ``eams bench auction --json``), then the hard
cases at 500 × 1,000 × 8 (30 % filter mask; cold start; pods of 1–4 slots, without and with
the mask; for mixed sizes the reference is the ε-auction, ``method="auction"``).
Goal (500 × 1,000 × 8): ≤ 10 ms median, ≥ 5× faster than linear_sum_assignment on the same
values, value gap within J·ε.
"""

import argparse
import json

from eams.scheduler.auction.cli import run_benchmark

SIZES = [(100, 100, 4), (500, 1000, 8), (2000, 1000, 8)]
# the extender's case (AR-2): filter masks, mixed pod sizes, no warm start; 500 × 1,000 × 8
HARD = [
    {"mask": 0.3, "pod_slots": 1, "cold": False},
    {"mask": 0.0, "pod_slots": 1, "cold": True},
    {"mask": 0.0, "pod_slots": 4, "cold": False},
    {"mask": 0.3, "pod_slots": 4, "cold": False},
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--mask", type=float, default=0.0)
    parser.add_argument("--method", choices=["auto", "auction"], default="auto")
    args = parser.parse_args()
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
