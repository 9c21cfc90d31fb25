"""The ε-auction against scipy's linear_sum_assignment at the three sizes of issue 5.

Run: ``.venv/bin/python benchmarks/auction_bench.py [--repeats N]``; prints one JSON line per
size (the figures of ``eams bench auction --json``). Goal (500 × 1,000 × 8): ≤ 10 ms median,
≥ 5× faster than linear_sum_assignment on the same values, value gap within J·ε.
"""

import argparse
import json

from eams.scheduler.auction.cli import run_benchmark

SIZES = [(100, 100, 4), (500, 1000, 8), (2000, 1000, 8)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--mask", type=float, default=0.0)
    args = parser.parse_args()
    for pods, nodes, slots in SIZES:
        figures = run_benchmark(pods, nodes, slots, args.seed, args.repeats, 1, args.mask)
        print(json.dumps(figures), flush=True)


if __name__ == "__main__":
    main()
