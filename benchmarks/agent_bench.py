"""Agent footprint (resident memory, CPU share at a 1 s period) and spool replay rate.

Footprint: each variant runs as its own process for ``--seconds`` (goal: ≤ 60 MB RSS,
≤ 1 % of one core), sampling every 1 s into influxd 1.6 (and VictoriaMetrics for the v2
variant), all started here on loopback. CPU share = (utime + stime) / wall time over the
measurement window (after a 3 s warm-up), from /proc/PID/stat; RSS = VmRSS at the end, peak =
VmHWM. Reference in the same run: a bare Python interpreter (``python -c sleep``).

Replay: ``--points`` samples (6 nodes) are put into a spool, then a sink channel replays them
into a fresh influxd database (and, with influxdb-client, into VictoriaMetrics); the rate is
points acknowledged per second until the spool is empty, and the count read back is checked.
Reference in the same run: the same line-protocol bytes POSTed to the same server by a bare
httpx loop, in the same batch size (goal: ≥ 50,000 points/s).

Usage::

    .venv/bin/python benchmarks/agent_bench.py [--seconds 60] [--points 200000]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # for the shared test launchers in tests/servers

from eams.agent.channel import SinkChannel  # noqa: E402
from eams.agent.config import InfluxV1SinkConfig, InfluxV2SinkConfig  # noqa: E402
from eams.agent.metrics import AgentMetrics  # noqa: E402
from eams.agent.sinks import SINKS  # noqa: E402
from eams.agent.spool import Spool  # noqa: E402
from eams.telemetry import PowerSource, TelemetrySample, headroom_from_power  # noqa: E402
from tests.agent.conftest import write_calibration  # noqa: E402
from tests.conftest import free_port  # noqa: E402
from tests.servers.influxdb import InfluxDB  # noqa: E402
from tests.servers.victoriametrics import VictoriaMetrics  # noqa: E402

TICKS_PER_S = os.sysconf("SC_CLK_TCK")
WARM_UP_S = 3.0
BATCH = 5000


def cpu_s(pid: int) -> float:
    """utime + stime of ``pid`` (s), proc(5) /proc/PID/stat fields 14 and 15."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS_PER_S


def status_mb(pid: int, key: str) -> float:
    """A kB line of /proc/PID/status (VmRSS, VmHWM) in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    raise KeyError(key)


def footprint(
    variants: dict[str, tuple[list[str], int | None]], seconds: float
) -> dict[str, tuple[float, float, float]]:
    """Run every command at once (each with its metrics port, ``None`` for the reference);
    once all serve /metrics, wait the warm-up, then measure.

    Returns name → (CPU % of one core, RSS MB, peak RSS MB).
    """
    procs = {
        name: subprocess.Popen(argv, stderr=subprocess.DEVNULL)
        for name, (argv, _) in variants.items()
    }
    try:
        for name, (_, port) in variants.items():
            while port is not None:
                if procs[name].poll() is not None:
                    raise RuntimeError(f"{name} exited {procs[name].returncode}")
                try:
                    httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=1).raise_for_status()
                    break
                except httpx.HTTPError:
                    time.sleep(0.2)
        time.sleep(WARM_UP_S)
        start = {name: (time.monotonic(), cpu_s(p.pid)) for name, p in procs.items()}
        time.sleep(seconds)
        result = {}
        for name, p in procs.items():
            wall0, cpu0 = start[name]
            share = (cpu_s(p.pid) - cpu0) / (time.monotonic() - wall0) * 100
            result[name] = (share, status_mb(p.pid, "VmRSS"), status_mb(p.pid, "VmHWM"))
    finally:
        for p in procs.values():
            p.terminate()
        for name, p in procs.items():
            if p.wait(30) != 0 and variants[name][1] is not None:
                print(f"warning: {name} exited {p.returncode}", file=sys.stderr)
    return result


def agent_config(
    directory: Path, sinks: list[dict[str, object]], calibration: bool
) -> tuple[Path, int]:
    """A 1 s-period config in ``directory``; returns it and its metrics port."""
    directory.mkdir(parents=True)
    config: dict[str, object] = {
        "node": "node-a",
        "power_cap_w": 65.0,
        "sample_period_s": 1.0,
        "sinks": sinks,
        "spool": {
            "dir": str(directory / "spool"),
            "max_points": 1_000_000,
            "policy": "drop_oldest",
        },
        "metrics": {"host": "127.0.0.1", "port": free_port()},
    }
    if calibration:
        config["calibration"] = str(write_calibration(directory / "cal.json", "node-a"))
    path = directory / "agent.yaml"
    path.write_text(yaml.safe_dump(config))
    return path, config["metrics"]["port"]  # type: ignore[index]


def make_records(points: int, encode, prefix: str = "node") -> list[str]:
    """``points`` encoded samples of 6 nodes ``{prefix}-0..5``, 1 ms apart, ending now."""
    base_ns = time.time_ns() - points * 1_000_000
    return [
        encode(
            TelemetrySample(
                node=f"{prefix}-{i % 6}",
                measured_at_ns=base_ns + i * 1_000_000,
                power_cap_w=65.0,
                utilisation=(i % 100) / 100,
                power_w=20.0 + i % 40,
                source=PowerSource.METERED,
                headroom=headroom_from_power(20.0 + i % 40, 65.0),
                energy_wh=1000.0 + i / 1000,
            )
        )
        for i in range(points)
    ]


def replay_rate(sink, records: list[str], spool_path: Path) -> tuple[float, float]:
    """(spool append rate, replay rate) in points/s through a real SinkChannel."""
    spool = Spool(spool_path, max_points=len(records), max_bytes=None, policy="drop_oldest")
    t0 = time.perf_counter()
    for i in range(0, len(records), BATCH):
        spool.append(records[i : i + BATCH])
    append_rate = len(records) / (time.perf_counter() - t0)
    channel = SinkChannel(sink, spool, AgentMetrics(), batch_size=BATCH, max_backoff_s=1.0)
    t0 = time.perf_counter()
    channel.start()
    while spool.depth_points:
        time.sleep(0.005)
    rate = len(records) / (time.perf_counter() - t0)
    channel.stop(30)
    return append_rate, rate


def bare_rate(url: str, params: dict[str, str], records: list[str]) -> float:
    """Points/s of the same lines POSTed by a bare httpx loop."""
    with httpx.Client(timeout=30) as client:
        t0 = time.perf_counter()
        for i in range(0, len(records), BATCH):
            client.post(
                url, params=params, content="\n".join(records[i : i + BATCH]).encode()
            ).raise_for_status()
        return len(records) / (time.perf_counter() - t0)


def influx_count(server: InfluxDB, database: str) -> int:
    series = server.query("SELECT count(power_cap_w) FROM eams_node", database)
    return int(series[0]["values"][0][1]) if series else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="footprint window (s)")
    parser.add_argument("--points", type=int, default=200_000, help="points to replay")
    args = parser.parse_args()
    python = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "influxd").mkdir()
        (root / "vm").mkdir()
        with InfluxDB(root / "influxd") as influx, VictoriaMetrics(root / "vm") as vm:
            for db in ("agent", "replay", "ref1", "ref2"):
                influx.create_database(db)
            v1 = {"type": "influx_v1", "url": influx.url, "database": "agent"}
            v2 = {"type": "influx_v2", "url": vm.url, "bucket": "b", "org": "o", "token": "t"}

            def jsonl(name: str) -> dict[str, str]:
                return {"type": "jsonl", "path": str(root / f"samples-{name}.jsonl")}

            agent = [python, "-m", "eams.agent", "run", "--config"]
            eams = [str(Path(python).parent / "eams"), "agent", "run", "--config"]

            def run(command: list[str], name: str, sinks: list, calibration: bool):
                path, port = agent_config(root / name, sinks, calibration)
                return [*command, str(path)], port

            variants = {
                "reference: bare python": ([python, "-c", "import time; time.sleep(1e6)"], None),
                "agent v1, no calibration": run(agent, "a", [v1], False),
                "agent v1+jsonl, calibration": run(agent, "b", [v1, jsonl("b")], True),
                "agent v1+v2 (influxdb-client), calibration": run(agent, "c", [v1, v2], True),
                "`eams agent run` v1+jsonl, calibration": run(eams, "d", [v1, jsonl("d")], True),
            }
            print(f"footprint over {args.seconds:.0f} s, 1 s period (goal: <= 60 MB, <= 1 % core)")
            results = footprint(variants, args.seconds)
            print(f"  {'variant':45s} {'CPU % core':>10s} {'RSS MB':>8s} {'peak MB':>8s}")
            for name, (share, rss, peak) in results.items():
                print(f"  {name:45s} {share:10.2f} {rss:8.1f} {peak:8.1f}")
            stored = influx_count(influx, "agent")
            print(f"  points stored by the agents in influxd: {stored}")

            print(f"\nspool replay: {args.points} points, batches of {BATCH} (goal >= 50,000/s)")
            v1_sink = SINKS["influx_v1"](
                "replay", InfluxV1SinkConfig(type="influx_v1", url=influx.url, database="replay")
            )
            records = make_records(args.points, v1_sink.encode)
            # The reference runs before and after the replay (the server warms up; the
            # machine is shared), each into its own fresh database.
            ref1 = bare_rate(f"{influx.url}/write", {"db": "ref1", "precision": "ns"}, records)
            append, rate = replay_rate(v1_sink, records, root / "replay-v1.sqlite")
            ref2 = bare_rate(f"{influx.url}/write", {"db": "ref2", "precision": "ns"}, records)
            print(f"  spool append                       {append:12,.0f} points/s")
            print(f"  influx_v1 -> influxd replay        {rate:12,.0f} points/s")
            print(f"  bare httpx -> influxd, before      {ref1:12,.0f} points/s")
            print(f"  bare httpx -> influxd, after       {ref2:12,.0f} points/s")
            print(f"  replay / mean reference            {2 * rate / (ref1 + ref2):12.2f}")
            counts = [influx_count(influx, db) for db in ("replay", "ref1", "ref2")]
            print(f"  read back (replay, ref1, ref2): {counts}")

            v2_sink = SINKS["influx_v2"](
                "replay-v2",
                InfluxV2SinkConfig(type="influx_v2", url=vm.url, bucket="b", org="o", token="t"),
            )
            # VictoriaMetrics has no databases: each run writes its own series.
            v2_params = {"bucket": "b", "org": "o", "precision": "ns"}
            write_url = f"{vm.url}/api/v2/write"
            ref1 = bare_rate(
                write_url,
                v2_params,
                make_records(args.points, TelemetrySample.to_line_protocol, "ref1"),
            )
            replayed = make_records(args.points, v2_sink.encode, "replay")
            _, rate = replay_rate(v2_sink, replayed, root / "replay-v2.sqlite")
            ref2 = bare_rate(
                write_url,
                v2_params,
                make_records(args.points, TelemetrySample.to_line_protocol, "ref2"),
            )
            print(f"  influx_v2 -> VictoriaMetrics replay {rate:11,.0f} points/s")
            print(f"  bare httpx -> VictoriaMetrics, before {ref1:9,.0f} points/s")
            print(f"  bare httpx -> VictoriaMetrics, after  {ref2:9,.0f} points/s")
            print(f"  replay / mean reference             {2 * rate / (ref1 + ref2):11.2f}")


if __name__ == "__main__":
    main()
