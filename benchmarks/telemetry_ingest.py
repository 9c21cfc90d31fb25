"""The extender's ``POST /telemetry`` ingest of one large agent batch, against ``json.loads``.

Builds one body of ``--samples`` samples shaped as the agent writes them (every key set, 40 MB
at 200,000), then, interleaved ``--repeats`` times in this process: the reference
``json.loads(body)`` (the floor any decoder of this body pays), the extender's body parser
(:func:`eams.scheduler.extender.telemetry.parse_telemetry_body`: decode plus the telemetry
contract of :mod:`eams.telemetry` for every sample), and the whole POST through the app
in-process (``httpx.ASGITransport``, 202; the parse runs in a worker thread, then the store).
Prints min and median of wall and CPU time and each one's ratio to the reference, with the
load average: on a shared machine the min and the CPU times are the ones to compare.

Usage: ``.venv/bin/python benchmarks/telemetry_ingest.py [--samples 200000] [--repeats 7]``
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import time
from collections.abc import Callable

import httpx

from eams.scheduler.extender.app import create_app
from eams.scheduler.extender.settings import Settings
from eams.scheduler.extender.telemetry import parse_telemetry_body
from eams.telemetry import PowerSource, TelemetrySample, headroom_from_power

NOW_S = 1_800_000_000.0
CAP_W = 65.0


def make_body(count: int) -> bytes:
    """``{"samples": [...]}`` of ``count`` metered samples measured 1 s before :data:`NOW_S`."""
    at_ns = int((NOW_S - 1.0) * 1e9)
    samples = []
    for i in range(count):
        power_w = 30.0 + (i % 35) * 0.917
        sample = TelemetrySample(
            node=f"node-{i:06d}",
            measured_at_ns=at_ns + i,
            power_cap_w=CAP_W,
            utilisation=(i % 100) / 100.0,
            power_w=power_w,
            source=PowerSource.METERED,
            headroom=headroom_from_power(power_w, CAP_W),
            energy_wh=1234.5 + i * 0.01,
        )
        samples.append(sample.to_json())
    return json.dumps({"samples": samples}).encode()


def post(body: bytes) -> None:
    """One POST of ``body`` to a fresh app (its lifespan running); asserts the 202."""

    async def run() -> None:
        app = create_app(Settings(mode="active", window_ms=0), clock=lambda: NOW_S)
        transport = httpx.ASGITransport(app=app)
        async with (
            app.router.lifespan_context(app),
            httpx.AsyncClient(transport=transport, base_url="http://x", timeout=300) as client,
        ):
            response = await client.post(
                "/telemetry", content=body, headers={"Content-Type": "application/json"}
            )
            assert response.status_code == 202, response.text

    asyncio.run(run())


def main() -> None:
    """Measure and print (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    body = make_body(args.samples)
    cases: dict[str, Callable[[], object]] = {
        "json.loads (reference)": lambda: json.loads(body),
        "parse_telemetry_body": lambda: parse_telemetry_body(body, NOW_S),
        "POST /telemetry (ASGI)": lambda: post(body),
    }
    wall: dict[str, list[float]] = {name: [] for name in cases}
    cpu: dict[str, list[float]] = {name: [] for name in cases}
    print(f"body: {args.samples:,} samples, {len(body) / 1e6:.1f} MB; load {os.getloadavg()}")
    for _ in range(args.repeats):
        for name, case in cases.items():
            gc.collect()
            wall_0, cpu_0 = time.perf_counter(), time.process_time()
            case()
            wall[name].append(time.perf_counter() - wall_0)
            cpu[name].append(time.process_time() - cpu_0)
    ref_wall, ref_cpu = min(wall["json.loads (reference)"]), min(cpu["json.loads (reference)"])
    for name in cases:
        best_wall, best_cpu = min(wall[name]), min(cpu[name])
        print(
            f"{name:24s} wall min {best_wall * 1e3:6.0f} ms ({best_wall / ref_wall:.2f}x)"
            f" median {statistics.median(wall[name]) * 1e3:6.0f} ms;"
            f" CPU min {best_cpu * 1e3:6.0f} ms ({best_cpu / ref_cpu:.2f}x)"
        )
    print(f"load after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
