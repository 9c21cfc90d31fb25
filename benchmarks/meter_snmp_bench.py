"""SNMP requests per full read and reads per second: our GETBULK reader vs one GET per value.

For the 24-, 36- and 64-outlet recordings (Eaton ePDU, Raritan PX4, APC cPDU with 64 table
rows of which 40 are outlets), served by one snmpsim on loopback, this measures in one run:

- ours: ``open_meter`` (family auto-detected once), every column walked together with GETBULK;
- naive: the same values fetched with one GET request per value OID (every OID behind a
  value we report; names and decimal-digit columns not even counted).

Prints requests per read, median and p90 read time, reads per second, and the ratio.
Timings are noisy on shared machines: compare the ratio, not the absolute figures.

Run: ``.venv/bin/python benchmarks/meter_snmp_bench.py [--reads 20]``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from eams.datasets import data_dir  # noqa: E402
from eams.meter.open import open_meter  # noqa: E402
from eams.meter.snmp.client import SnmpClient  # noqa: E402
from eams.meter.url import parse_meter_url  # noqa: E402
from tests.servers.snmpsim import snmpsim  # noqa: E402

RECORDINGS = {24: "eatonpdu_2", 36: "raritan-pdu_px4", 64: "apc-cpdu"}


async def _ours(url: str, reads: int) -> tuple[float, list[float], list[str]]:
    meter = open_meter(url, timeout_s=3.0, retries=1)
    try:
        await meter.read()  # detection + first walk, not timed
        sources = meter.last_decoded.sources.values()
        oids = list(dict.fromkeys(oid for group in sources for oid in group))
        before = meter.client.requests
        times = []
        for _ in range(reads):
            started = time.perf_counter()
            await meter.read()
            times.append(time.perf_counter() - started)
        return (meter.client.requests - before) / reads, times, oids
    finally:
        await meter.close()


async def _naive(url: str, oids: list[str], reads: int) -> tuple[float, list[float]]:
    client = SnmpClient(parse_meter_url(url), timeout_s=3.0, retries=1)
    try:
        times = []
        for _ in range(reads):
            started = time.perf_counter()
            for oid in oids:
                await client.get([oid])
            times.append(time.perf_counter() - started)
        return client.requests / reads, times
    finally:
        await client.close()


def _p90(values: list[float]) -> float:
    return sorted(values)[max(0, round(0.9 * len(values)) - 1)]


def main() -> None:
    """Run the benchmark and print one table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reads", type=int, default=20, help="timed reads per reader")
    args = parser.parse_args()
    folder = data_dir() / "pdu_snmp" / "snmprec"
    files = [folder / f"{name}.snmprec" for name in RECORDINGS.values()]
    print(
        f"{'outlets':>7} {'recording':<16} {'reader':<6} {'values':>6} {'req/read':>8} "
        f"{'median ms':>9} {'p90 ms':>7} {'reads/s':>8}"
    )
    with snmpsim(files) as agent:
        for outlets, name in RECORDINGS.items():
            url = agent.url(name)
            ours_req, ours_t, oids = asyncio.run(_ours(url, args.reads))
            naive_req, naive_t = asyncio.run(_naive(url, oids, args.reads))
            for label, req, times in (("ours", ours_req, ours_t), ("naive", naive_req, naive_t)):
                median = statistics.median(times)
                print(
                    f"{outlets:>7} {name:<16} {label:<6} {len(oids):>6} {req:>8.1f} "
                    f"{1000 * median:>9.1f} {1000 * _p90(times):>7.1f} {1 / median:>8.1f}"
                )
            speedup = statistics.median(naive_t) / statistics.median(ours_t)
            print(
                f"{'':>7} {'':<16} ratio: {naive_req / ours_req:.1f}x fewer requests, "
                f"{speedup:.1f}x more reads/s"
            )


if __name__ == "__main__":
    main()
