"""What the decision record costs the caller (the extender's request path), with references.

1. **Building a window's records** (``placement_records``) for ``--pods`` pods over ``--nodes``
   nodes, against the clearing it sits beside (``eams.scheduler.auction.clear`` plus
   ``bids.bid_values`` on the same arrays), median of ``--repeats``.
2. **Submitting records** (``Recorder.submit``), one call timed at a time with
   ``perf_counter_ns``, in windows of ``--pods`` records every ``--gap-ms`` while the writer
   thread encodes and writes the earlier ones: p50 / p99 / max per record. References measured
   in the same run on the same records: ``json.dumps`` of the record as a dict, msgspec's
   encode, and a synchronous append of the JSON line to a file (what writing on the request
   path would cost), and the timer's own cost.
3. The same submits with the record folder on a **full disk**: a 256 KiB tmpfs mounted here
   (root needed; skipped, loudly, otherwise) filled to ENOSPC first; every record is dropped and
   counted, and the caller's cost is printed beside case 2's.

Usage::

    .venv/bin/python benchmarks/record_writer.py [--pods 100] [--nodes 1000] [--records 20000]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from eams.scheduler.auction import AuctionParams, Nodes, Pods, bids, clear
from eams.scheduler.record import Placement, Recorder, RecordMetrics, WriterSettings
from eams.scheduler.record.build import placement_records
from eams.scheduler.record.schema import encode, to_builtins


@dataclass(frozen=True)
class _Pod:
    key: str
    uid: str | None


def window(pods: int, nodes: int, rng: np.random.Generator) -> tuple[Callable[[], object], ...]:
    """The clearing and the record build of one window, as two callables (and the records)."""
    node_arrays = Nodes(
        slots=rng.integers(1, 8, nodes),
        cores=np.full(nodes, 8.0),
        p_idle_w=rng.uniform(40, 70, nodes),
        p_max_w=rng.uniform(120, 250, nodes),
        speed=rng.uniform(0.7, 1.4, nodes),
        headroom=rng.uniform(-0.05, 0.8, nodes),
        age_s=rng.uniform(0, 30, nodes),
        empty=rng.random(nodes) < 0.2,
    )
    pod_arrays = Pods(
        slots=np.ones(pods, dtype=np.int64),
        work_core_s=rng.uniform(50, 5000, pods),
        priority=rng.uniform(0.5, 2.0, pods),
        tenant=rng.integers(0, 4, pods),
    )
    params = AuctionParams()
    names = [f"node-{i:04d}" for i in range(nodes)]
    window_pods = [_Pod(f"ns/pod-{j}", f"uid-{j}") for j in range(pods)]
    floor = node_arrays.headroom < 0.1
    feasible = np.broadcast_to(~floor, (pods, nodes)).copy()

    def clearing() -> tuple[object, np.ndarray]:
        result = clear(pod_arrays, node_arrays, params, feasible)
        return result, bids.bid_values(pod_arrays, node_arrays, params)

    cleared, values = clearing()
    gate = bids.gate(node_arrays, params)

    def build() -> list[Placement]:
        return placement_records(
            pods=window_pods,
            names=names,
            values=values,
            clearing=cleared,  # type: ignore[arg-type]
            headroom=node_arrays.headroom,
            age_s=node_arrays.age_s,
            mode="active",
            at_s=time.time(),
            excluded={"headroom_floor": floor},
            gate=gate,
            stale_after_s=params.stale_after_s,
        )

    return clearing, build


def median_s(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def percentiles_us(samples_ns: list[int]) -> str:
    """p50, p99 and max of per-call nanoseconds, in µs."""
    low, high, top = p50(samples_ns) / 1000, p99(samples_ns) / 1000, max(samples_ns) / 1000
    return f"p50 {low:7.2f} µs  p99 {high:7.2f} µs  max {top:8.1f} µs"


def timed(
    fn: Callable[[Placement], object], records: list[Placement], pods: int, gap_s: float
) -> list[int]:
    """Per-call ns of ``fn`` over ``records``, in windows of ``pods`` every ``gap_s``."""
    out = []
    clock = time.perf_counter_ns
    for start in range(0, len(records), pods):
        for record in records[start : start + pods]:
            t0 = clock()
            fn(record)
            out.append(clock() - t0)
        time.sleep(gap_s)
    return out


def submits(
    folder: Path, records: list[Placement], pods: int, gap_s: float
) -> tuple[list[int], RecordMetrics]:
    metrics = RecordMetrics()
    settings = WriterSettings(folder=folder, max_file_bytes=4 * 2**20, max_total_bytes=64 * 2**20)
    with Recorder(settings, metrics) as recorder:
        samples = timed(recorder.submit, records, pods, gap_s)
        recorder.flush()
    return samples, metrics


def mount_tmpfs(where: Path) -> bool:
    """Mount a 256 KiB tmpfs at ``where``; ``False`` (said loudly) when mount is refused."""
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        print(f"   FULL-DISK CASE NOT RUN: mount refused: {done.stderr.strip()}")
    return done.returncode == 0


def fill(where: Path) -> None:
    """Write to ``where`` until the file system says ENOSPC (unbuffered)."""
    (where / "record").mkdir()
    fd = os.open(where / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"x" * 4096)
    except OSError:
        pass
    finally:
        os.close(fd)


def p50(samples: list[int]) -> int:
    return sorted(samples)[len(samples) // 2]


def p99(samples: list[int]) -> int:
    return sorted(samples)[int(0.99 * len(samples))]


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pods", type=int, default=100, help="pods per window")
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--records", type=int, default=20_000, help="records submitted per case")
    parser.add_argument("--repeats", type=int, default=30, help="repeats of the build timing")
    parser.add_argument("--gap-ms", type=float, default=5.0, help="pause between windows")
    args = parser.parse_args()
    print(f"load average at start: {load()} ({os.cpu_count()} cores)")
    rng = np.random.default_rng(19)
    clearing, build = window(args.pods, args.nodes, rng)
    clear_s, build_s = median_s(clearing, args.repeats), median_s(build, args.repeats)
    print(f"\n1. one window, {args.pods} pods × {args.nodes} nodes (median of {args.repeats})")
    print(f"   clearing (clear + bid_values): {clear_s * 1e3:8.3f} ms   (reference)")
    print(
        f"   placement_records:             {build_s * 1e3:8.3f} ms   "
        f"= {build_s / clear_s:.2f}× the clearing, {build_s / args.pods * 1e6:.1f} µs per record"
    )
    records: list[Placement] = []
    while len(records) < args.records:
        records += build()  # type: ignore[operator]
    records = records[: args.records]
    first = records[0]
    print(
        f"   a record: {len(encode(first))} bytes of JSON, {len(first.candidates)} candidates, "
        f"{len(first.gated)} gated named"
    )
    gap_s = args.gap_ms / 1000
    print(
        f"\n2. caller's cost per record, {args.records} records "
        f"in windows of {args.pods} every {args.gap_ms} ms"
    )
    with tempfile.TemporaryDirectory() as tmp:
        timer = timed(lambda r: None, records, args.pods, 0)
        dumps = timed(lambda r: json.dumps(to_builtins(r)), records, args.pods, 0)
        encoded = timed(encode, records, args.pods, 0)
        with (Path(tmp) / "sync.jsonl").open("a") as sync:

            def write_sync(r: Placement) -> None:
                sync.write(json.dumps(to_builtins(r)) + "\n")
                sync.flush()

            synchronous = timed(write_sync, records, args.pods, 0)
        submitted, metrics = submits(Path(tmp) / "record", records, args.pods, gap_s)
    written = metrics.registry.get_sample_value("eams_record_written_total", {"kind": "placement"})
    print(f"   timer alone                      {percentiles_us(timer)}")
    print(f"   json.dumps of the record (ref.)  {percentiles_us(dumps)}")
    print(f"   msgspec encode (ref.)            {percentiles_us(encoded)}")
    print(f"   sync json.dumps + write + flush  {percentiles_us(synchronous)}")
    print(
        f"   Recorder.submit                  {percentiles_us(submitted)}   ({written:.0f} written)"
    )
    print(
        f"   submit p50 = {p50(submitted) / p50(dumps):.3f}× json.dumps, "
        f"{p50(submitted) / p50(synchronous):.3f}× the synchronous write; "
        f"msgspec encode p50 = {p50(encoded) / p50(dumps):.3f}× json.dumps"
    )
    print("\n3. the same on a full disk (256 KiB tmpfs filled to ENOSPC)")
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp) / "tmpfs"
        if mount_tmpfs(where):
            try:
                fill(where)
                full, metrics = submits(where / "record", records, args.pods, gap_s)
            finally:
                subprocess.run(["umount", "-l", str(where)], check=False)
            dropped = metrics.registry.get_sample_value(
                "eams_record_dropped_total", {"reason": "disk_full"}
            )
            print(
                f"   Recorder.submit, disk full       {percentiles_us(full)}"
                f"   ({dropped:.0f} dropped)"
            )
            print(
                f"   disk full / normal: p50 {p50(full) / p50(submitted):.2f}×, "
                f"p99 {p99(full) / p99(submitted):.2f}×"
            )
    print(f"\nload average at end: {load()}")


if __name__ == "__main__":
    sys.exit(main())
