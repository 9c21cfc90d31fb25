"""The extender behind kube-scheduler's own cycle: one pod at a time, fed by its watch (issue 15).

``eams extender serve --mode active --watch`` (uvicorn, its own process, pinned to one core)
lists and watches nodes and pods on a stand-in kube-apiserver (``tests/extender/apiserver.py``:
the published list/watch shapes, real node and pod objects from ``k8s/honeycomb_*.json``, no
kube-apiserver can run here). Pods are created open-loop (Poisson, ``--rate``); the extender's
watch and the emulated kube-scheduler (:mod:`eams.scheduler.bench.kube_cycle`, the shipped
``deploy/k3s`` extender entry) see each creation, and the scheduler takes the pods one at a
time through the extender's verbs over one keep-alive connection, then binds through the
stand-in apiserver (which the extender's watch sees too).

Reported per node count: extender time per pod cycle (both calls, p50/p99), pod latency from
creation to bind (p50/p99; AR-2: p99 ≤ 250 ms with the 200 ms window), extender CPU per pod
(``/proc``, watch included), errors, and the sustainable rate on one core (a saturating
offered load, pods bound per second while the queue never empties). Reference in the same
run: serial ``GET /healthz`` round trips on the same connection (the bare HTTP cost: its latency,
and its CPU per request, which a pod's CPU is also given as a multiple of). The host's speed
drifts within seconds (another tenant's load), faster than a reference taken before the load
can follow: the emulated kube-scheduler's own CPU per pod, printed beside the extender's,
moves in step with it and is the one to compare runs by.

Usage::

    .venv/bin/python benchmarks/extender_cycle.py [--nodes 1000,5000] [--rate 100]
        [--duration-s 12] [--saturate-rate 400] [--saturate-s 5] [--window-ms 200]
        [--record off|on|both] [--repeat K]
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import uvloop
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from eams.datasets import data_file  # noqa: E402
from eams.scheduler.bench.kube_cycle import ExtenderConfig, KubeCycle  # noqa: E402
from eams.scheduler.bench.kube_wire import KeepAliveConnection  # noqa: E402
from eams.scheduler.record.metrics import CPU_PARTS  # noqa: E402
from tests.extender.apiserver import FakeApiServer  # noqa: E402
from tests.extender.conftest import sample, write_calibration  # noqa: E402
from tests.servers.uvicorn import ExtenderServer  # noqa: E402

AR2_P99_S = 0.250
CONFIG = ROOT / "deploy" / "k3s" / "scheduler-config.yaml"


def shipped_extender(port: int) -> ExtenderConfig:
    """The shipped ``extenders[0]`` entry, pointed at ``port``."""
    config_map = yaml.safe_load(CONFIG.read_text())
    entry = yaml.safe_load(config_map["data"]["scheduler-config.yaml"])["extenders"][0]
    return ExtenderConfig.from_entry({**entry, "urlPrefix": f"http://127.0.0.1:{port}"})


def real_objects() -> tuple[dict[str, Any], dict[str, Any]]:
    """A real node and a real pod (a Deployment's), the pod made pending for EAMS."""
    nodes = json.loads(data_file("k8s/honeycomb_eks_nodes.json").read_text())["items"]
    pods = json.loads(data_file("k8s/honeycomb_pods.json").read_text())["items"]
    pod = copy.deepcopy(next(p for p in pods if p["metadata"]["name"].startswith("controller-")))
    pod["spec"].pop("nodeName", None)
    pod["spec"]["schedulerName"] = "eams-scheduler"
    pod["status"] = {"phase": "Pending", "qosClass": pod["status"].get("qosClass", "Burstable")}
    return nodes[0], pod


def make_nodes(template: dict[str, Any], count: int) -> list[dict[str, Any]]:
    nodes = []
    for i in range(count):
        node = copy.deepcopy(template)
        name = f"node-{i:05d}"
        node["metadata"]["name"] = name
        node["metadata"]["uid"] = f"uid-{name}"
        node["metadata"]["labels"]["kubernetes.io/hostname"] = name
        nodes.append(node)
    return nodes


def make_pod(template: dict[str, Any], name: str) -> dict[str, Any]:
    meta = {**template["metadata"], "name": name, "uid": f"uid-{name}", "namespace": "bench"}
    meta.pop("resourceVersion", None)
    return {**template, "metadata": meta}


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process (``/proc/PID/stat`` fields 14, 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _ms(values: list[float]) -> tuple[float, float]:
    if not values:
        return float("nan"), float("nan")
    p50, p99 = np.percentile(np.asarray(values), [50, 99])
    return 1e3 * float(p50), 1e3 * float(p99)


async def reference(port: int, pid: int, count: int = 3000) -> dict[str, float]:
    """Serial ``GET /healthz`` on one keep-alive connection: the bare HTTP cost on this host
    now. ``p50_ms``/``p99_ms`` round trip; ``cpu_ms``: the extender's CPU per request
    (``/proc``, whose 10 ms ticks are why ``count`` is large)."""
    connection = KeepAliveConnection("127.0.0.1", port)
    times = []
    cpu0_s = _cpu_s(pid)
    for _ in range(count):
        t0 = time.perf_counter()
        status, _ = await connection.request("GET", "/healthz")
        times.append(time.perf_counter() - t0)
        assert status == 200
    cpu_s = _cpu_s(pid) - cpu0_s
    connection.close()
    p50_ms, p99_ms = _ms(times)
    return {"p50_ms": p50_ms, "p99_ms": p99_ms, "cpu_ms": 1e3 * cpu_s / count}


async def offer(
    api: FakeApiServer,
    cycle: KubeCycle,
    template: dict[str, Any],
    prefix: str,
    rate: float,
    duration_s: float,
    seed: int,
) -> int:
    """Create pods at Poisson times: the apiserver (so the extender's watch) and the scheduler's
    queue see each one at its creation. Returns how many were created."""
    rng = np.random.default_rng(seed)
    arrivals = np.cumsum(rng.exponential(1.0 / rate, size=int(rate * duration_s * 2) + 10))
    arrivals = arrivals[arrivals < duration_s]
    start = time.perf_counter()
    for i, at in enumerate(arrivals):
        delay = start + at - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        pod = make_pod(template, f"{prefix}-{i}")
        api.put("pods", pod)
        cycle.add(pod)
    return len(arrivals)


async def run_load(
    api: FakeApiServer,
    server: ExtenderServer,
    template: dict[str, Any],
    names: list[str],
    prefix: str,
    rate: float,
    duration_s: float,
) -> dict[str, Any]:
    """One open-loop run; the figures of its pods."""

    async def bind(pod: dict[str, Any], node: str) -> None:
        api.bind(pod["metadata"]["namespace"], pod["metadata"]["name"], node)

    cycle = KubeCycle(
        shipped_extender(server.port), lambda: names, bind=bind, percentage_of_nodes_to_score=100
    )
    assert server.process is not None
    cpu0_s, wall0_s = _cpu_s(server.process.pid), time.perf_counter()
    client0_s = time.process_time()
    producer = asyncio.create_task(offer(api, cycle, template, prefix, rate, duration_s, seed=1))
    scheduled = 0
    while not producer.done() or len(cycle):
        try:
            pod, created_s = await asyncio.wait_for(cycle.next_pod(), 0.05)
        except TimeoutError:
            continue
        await cycle.schedule_one(pod, created_s)
        scheduled += 1
    created = await producer
    await cycle.drain()
    await asyncio.sleep(0.3)  # let the watch deliver the last binds before reading the CPU
    cpu_s, wall_s = _cpu_s(server.process.pid) - cpu0_s, time.perf_counter() - wall0_s
    client_s = time.process_time() - client0_s
    cycle.close()
    records = cycle.records
    bound = [r for r in records if r.bound_s is not None]
    first = min(r.started_s for r in records)
    last = max(r.bound_s or r.ended_s for r in records)
    return {
        "created": created,
        "scheduled": scheduled,
        "errors": sum(len(r.errors) for r in records),
        "error_kinds": sorted(
            {e.split(":")[0] + ":" + e.split(":")[1] for r in records for e in r.errors}
        )[:3],
        "unbound": created - len(bound),
        "cycle_ms": _ms([r.extender_s for r in records]),
        "filter_ms": _ms([r.filter_s for r in records]),
        "prioritize_ms": _ms([r.prioritize_s for r in records]),
        "latency_ms": _ms([r.bound_s - r.created_s for r in bound]),
        "queue_ms": _ms([r.started_s - r.created_s for r in records]),
        "cpu_ms_per_pod": 1e3 * cpu_s / max(1, created),
        "client_cpu_ms_per_pod": 1e3 * client_s / max(1, created),
        "cpu_share": cpu_s / wall_s,
        "bound_per_s": len(bound) / max(1e-9, last - first),
    }


def _metrics(port: int) -> dict[str, float]:
    import httpx

    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
    series = {}
    for line in text.splitlines():
        if line.startswith(("eams_extender_", "eams_record_")):
            name, _, value = line.rpartition(" ")
            series[name] = float(value)
    return series


async def bench_nodes(
    count: int, args: argparse.Namespace, folder: Path, record: bool = False
) -> dict[str, Any]:
    node_template, pod_template = real_objects()
    nodes = make_nodes(node_template, count)
    names = [n["metadata"]["name"] for n in nodes]
    api = FakeApiServer()
    await api.serve()
    for node in nodes:
        api.put("nodes", node)
    cal = folder / f"cal-{count}"
    cal.mkdir(parents=True)
    for i, name in enumerate(names):
        write_calibration(cal, name, 40.0 + i % 5 * 10, 150.0 + i % 11 * 15, 0.8 + i % 3 * 0.2)
    os.environ["KUBECONFIG"] = str(api.kubeconfig(folder / f"kubeconfig-{count}"))
    log = folder / f"extender-{count}.log"
    server = ExtenderServer(log, mode="active", calibrations_dir=cal, window_ms=args.window_ms)
    server.argv += ["--watch", *args.extender_arg]
    if record:  # the decision record on (issue 19), rotated at its defaults
        server.argv += ["--record", str(folder / f"record-{count}" / "decisions.jsonl")]
        if not args.annotate:
            server.argv.append("--no-annotate")
    server.start_timeout_s = 120.0
    try:
        await asyncio.to_thread(server.start)
    except RuntimeError:
        print(log.read_text()[-3000:], file=sys.stderr)
        raise
    try:
        assert server.process is not None
        if args.pin:
            os.sched_setaffinity(server.process.pid, {0})
            os.sched_setaffinity(0, {1})
        import httpx

        async with httpx.AsyncClient(timeout=60) as http:
            samples = [sample(n, time.time(), 0.3 + 0.5 * (i % 7) / 7) for i, n in enumerate(names)]
            response = await http.post(f"{server.url}/telemetry", json={"samples": samples})
            response.raise_for_status()
            deadline = time.monotonic() + 60
            while (await http.get(f"{server.url}/readyz")).status_code != 200:
                assert time.monotonic() < deadline, (await http.get(f"{server.url}/readyz")).text
                await asyncio.sleep(0.2)
        idle0_s = _cpu_s(server.process.pid)
        await asyncio.sleep(args.idle_s)
        idle_share = (_cpu_s(server.process.pid) - idle0_s) / args.idle_s
        ref = await reference(server.port, server.process.pid)
        spies = _py_spy(args.py_spy, count, server.process.pid, args.duration_s)
        before = await asyncio.to_thread(_metrics, server.port)
        load = await run_load(
            api, server, pod_template, names, f"p{count}", args.rate, args.duration_s
        )
        for spy in spies:
            await asyncio.to_thread(spy.wait)
        metrics = await asyncio.to_thread(_metrics, server.port)
        load["record_cpu_ms"] = _record_cpu_ms(before, metrics, load["created"])
        saturated = None
        if args.saturate_s > 0:
            cpu0_s = _cpu_s(server.process.pid)
            saturated = await run_load(
                api, server, pod_template, names, f"s{count}", args.saturate_rate, args.saturate_s
            )
            if record and args.annotate:  # the rate-limited patches trail the bindings
                bound = sum(run["created"] - run["unbound"] for run in (load, saturated))
                saturated["settled"] = await _settled(server.port, bound)
                # the record's share is taken over the same span, the trailing patches in
                settled_s = _cpu_s(server.process.pid) - cpu0_s
                saturated["settled_cpu_ms_per_pod"] = 1e3 * settled_s / max(1, saturated["created"])
            after = await asyncio.to_thread(_metrics, server.port)
            saturated["record_cpu_ms"] = _record_cpu_ms(metrics, after, saturated["created"])
    finally:
        server.stop()
        await api.close()
        os.sched_setaffinity(0, set(range(os.cpu_count() or 1)))
    return {
        "nodes": count,
        "record": record,
        "ref": ref,
        "idle_share": idle_share,
        "load": load,
        "saturated": saturated,
        "metrics": metrics,
    }


def _py_spy(folder: Path | None, count: int, pid: int, duration_s: float) -> list[Any]:
    """py-spy (raw stacks, 250 Hz, ``--gil``: only the thread holding the GIL, so the samples
    are the Python work, not threads waiting on a socket) on the extender and on this process
    (the emulated kube-scheduler) for the load run: both sides of a call. Nothing without
    ``--py-spy``."""
    import subprocess

    if folder is None:
        return []
    folder.mkdir(parents=True, exist_ok=True)
    spy = str(Path(sys.executable).with_name("py-spy"))
    runs = []
    for side, target in (("extender", pid), ("scheduler", os.getpid())):
        out = folder / f"{side}-{count}.txt"
        argv = [spy, "record", "-r", "250", "-f", "raw", "--gil", "-d", f"{duration_s:.0f}"]
        argv += ["-p", str(target), "-o", str(out)]
        runs.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    return runs


def _record_cpu_ms(
    before: dict[str, float], after: dict[str, float], pods: int
) -> dict[str, float]:
    """The record's own CPU per pod between two scrapes, ms, by part
    (``eams_record_cpu_seconds_total{part}``, each thread's ``time.thread_time``); empty with
    the record off."""
    out = {}
    for part in CPU_PARTS:
        series = f'eams_record_cpu_seconds_total{{part="{part}"}}'
        if series in after:
            out[part] = 1e3 * (after[series] - before.get(series, 0.0)) / max(1, pods)
    return out


async def _settled(port: int, bound: int, timeout_s: float = 30.0) -> bool:
    """Wait until every bound pod's annotation patch is answered (the annotator sends at
    most ``MAX_PER_S`` a second, so after a saturating run its backlog trails); ``False`` when
    they were not after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        m = await asyncio.to_thread(_metrics, port)
        answered = sum(
            v for k, v in m.items() if k.startswith("eams_extender_annotation_patches_total")
        )
        if answered >= bound:
            return True
        await asyncio.sleep(0.2)
    return False


def _server_share(metrics: dict[str, float], le: str) -> float:
    """Share of 200 /prioritize answers the extender itself timed at ≤ ``le`` s (its histogram)."""
    total = within = 0.0
    for series, value in metrics.items():
        if 'path="/prioritize"' in series and 'code="200"' in series:
            if series.startswith("eams_extender_request_duration_seconds_count"):
                total = value
            elif f'le="{le}"' in series and "_bucket" in series:
                within = value
    return within / total if total else float("nan")


def report(result: dict[str, Any], args: argparse.Namespace) -> None:
    """Print one node count's figures."""
    load, ref, m = result["load"], result["ref"], result["metrics"]
    clearings = m.get("eams_extender_clearing_duration_seconds_count", 0.0)
    clearing_ms = (
        1e3 * m.get("eams_extender_clearing_duration_seconds_sum", 0.0) / max(1, clearings)
    )
    pods = m.get("eams_extender_batch_pods_sum", 0.0)
    ok = load["latency_ms"][1] <= AR2_P99_S * 1e3 and load["errors"] == 0 and not load["unbound"]
    cycle, latency = load["cycle_ms"], load["latency_ms"]
    written = m.get('eams_record_written_total{kind="placement"}')
    patched = m.get('eams_extender_annotation_patches_total{outcome="ok"}')
    record = (
        "record off"
        if not result["record"]
        else f"record on ({written or 0:.0f} placements, {patched or 0:.0f} pods annotated)"
    )
    lines = [
        f"{result['nodes']} nodes, {args.rate:g} pods/s offered for {args.duration_s:g} s,"
        f" {record}",
        f"  pods created / errors / unbound : {load['created']} / {load['errors']}"
        f" / {load['unbound']}",
        *(f"    error: {kind}" for kind in load["error_kinds"]),
        f"  extender calls per cycle p50/p99: {cycle[0]:.2f} / {cycle[1]:.2f} ms (filter"
        f" {load['filter_ms'][0]:.2f}/{load['filter_ms'][1]:.2f}, prioritize"
        f" {load['prioritize_ms'][0]:.2f}/{load['prioritize_ms'][1]:.2f}); answered by the"
        f" extender within 2.5 ms: {100 * _server_share(m, '0.0025'):.0f} %, 10 ms:"
        f" {100 * _server_share(m, '0.01'):.0f} %",
        f"  reference GET /healthz p50/p99  : {ref['p50_ms']:.2f} / {ref['p99_ms']:.2f} ms,"
        f" {ref['cpu_ms']:.3f} ms extender CPU each; cycle p50 ="
        f" {cycle[0] / ref['p50_ms']:.1f}x the healthz p50",
        f"  pod latency created→bound       : p50 {latency[0]:.1f} ms, p99 {latency[1]:.1f} ms"
        f" (queue p99 {load['queue_ms'][1]:.1f} ms); AR-2 {'ok' if ok else 'MISS'}",
        f"  extender CPU per pod (watch in) : {load['cpu_ms_per_pod']:.2f} ms"
        f" ({100 * load['cpu_share']:.0f} % of a core; idle {100 * result['idle_share']:.1f} %);"
        f" client {load['client_cpu_ms_per_pod']:.2f} ms (extender ="
        f" {load['cpu_ms_per_pod'] / load['client_cpu_ms_per_pod']:.2f}x); ="
        f" {load['cpu_ms_per_pod'] / ref['cpu_ms']:.1f} healthz requests' CPU",
        f"  clearings                       : {clearings:.0f}, {pods / max(1, clearings):.1f}"
        f" pods each, mean {clearing_ms:.2f} ms",
    ]
    if load["record_cpu_ms"]:
        lines.append(f"  the record's own CPU per pod    : {_parts(load)}")
    sat = result["saturated"]
    if sat is not None:
        lines.append(
            f"  offered {args.saturate_rate:g} pods/s for {args.saturate_s:g} s   :"
            f" {sat['bound_per_s']:.0f} pods/s bound, extender {100 * sat['cpu_share']:.0f} %"
            f" of a core, {sat['cpu_ms_per_pod']:.2f} ms CPU/pod (so"
            f" {1e3 / sat['cpu_ms_per_pod']:.0f} pods/s per core), cycle p50/p99"
            f" {sat['cycle_ms'][0]:.2f}/{sat['cycle_ms'][1]:.2f} ms, errors {sat['errors']},"
            f" client {sat['client_cpu_ms_per_pod']:.2f} ms CPU/pod"
        )
        if sat["record_cpu_ms"]:
            settled = sat.get("settled")
            until = (
                ""
                if settled is None
                else " (to the last patch answered"
                if settled
                else " (NOT every patch answered"
            )
            if until:
                until += (
                    f"; the extender's CPU to then {sat['settled_cpu_ms_per_pod']:.2f} ms a pod)"
                )
            lines.append(f"    the record's own CPU per pod  : {_parts(sat)}{until}")
    print("\n" + "\n".join(lines), flush=True)


def _parts(run: dict[str, Any]) -> str:
    """The record's CPU per pod of one run, its total and its share of the extender's over the
    same span (a saturated run's until its trailing patches were answered)."""
    parts = run["record_cpu_ms"]
    total = sum(parts.values())
    each = ", ".join(f"{part} {ms:.3f}" for part, ms in parts.items())
    extender = run.get("settled_cpu_ms_per_pod", run["cpu_ms_per_pod"])
    return f"{total:.3f} ms ({each}) = {100 * total / extender:.1f} % of the extender's"


def summary(results: list[dict[str, Any]]) -> None:
    """Print, per node count and record mode, the spread over the repeated runs: the host's
    speed drifts between runs, so the extender's CPU per pod is given with the emulated
    kube-scheduler's own beside it (the same host, the same seconds) and their ratio."""

    def spread(values: list[float], digits: int = 2) -> str:
        low, mid, high = min(values), float(np.median(values)), max(values)
        return f"{low:.{digits}f} / {mid:.{digits}f} / {high:.{digits}f}"

    print("\nover the repeated runs (min / median / max):")
    for key in sorted({(r["nodes"], r["record"]) for r in results}):
        group = [r for r in results if (r["nodes"], r["record"]) == key]
        runs = [r["load"] for r in group]
        cpu = [run["cpu_ms_per_pod"] for run in runs]
        client = [run["client_cpu_ms_per_pod"] for run in runs]
        ratio = [a / b for a, b in zip(cpu, client, strict=True)]
        per_core = [
            1e3 / r["saturated"]["cpu_ms_per_pod"] for r in group if r["saturated"] is not None
        ]
        lines = [
            f"  {key[0]} nodes, record {'on' if key[1] else 'off'}, {len(runs)} runs:",
            f"    extender CPU per pod        : {spread(cpu)} ms",
            f"    emulated kube-scheduler's   : {spread(client)} ms",
            f"    extender / kube-scheduler   : {spread(ratio)}",
            f"    calls p50 / p99 (median)    : {np.median([r['cycle_ms'][0] for r in runs]):.2f}"
            f" / {np.median([r['cycle_ms'][1] for r in runs]):.2f} ms",
            f"    pod latency p99 (max)       : {max(r['latency_ms'][1] for r in runs):.1f} ms",
            f"    errors / unbound (total)    : {sum(r['errors'] for r in runs)}"
            f" / {sum(r['unbound'] for r in runs)}",
        ]
        if per_core:
            lines.append(f"    saturating pods/s per core  : {spread(per_core, 0)}")
        if key[1]:
            own = [sum(run["record_cpu_ms"].values()) for run in runs]
            lines.append(f"    the record's own CPU per pod: {spread(own, 3)} ms")
            off = [r["load"] for r in results if (r["nodes"], r["record"]) == (key[0], False)]
            if off:
                lines += _paired(off, runs)
        print("\n".join(lines))


def _paired(off: list[dict[str, Any]], on: list[dict[str, Any]]) -> list[str]:
    """Record on against off, run by run (each pair ran back to back): the difference of the
    extender's CPU per pod, and of its ratio to the emulated kube-scheduler's, beside the
    record-off runs' own spread (max − min: the noise a difference is read against)."""
    cpu = [b["cpu_ms_per_pod"] - a["cpu_ms_per_pod"] for a, b in zip(off, on, strict=False)]
    ratio = [
        b["cpu_ms_per_pod"] / b["client_cpu_ms_per_pod"]
        - a["cpu_ms_per_pod"] / a["client_cpu_ms_per_pod"]
        for a, b in zip(off, on, strict=False)
    ]
    noise = max(r["cpu_ms_per_pod"] for r in off) - min(r["cpu_ms_per_pod"] for r in off)
    low, mid, high = min(cpu), float(np.median(cpu)), max(cpu)
    return [
        f"    on − off, pair by pair      : {low:+.2f} / {mid:+.2f} / {high:+.2f} ms CPU per pod;"
        f" ratio to kube-scheduler {min(ratio):+.2f} / {float(np.median(ratio)):+.2f} /"
        f" {max(ratio):+.2f}; record-off runs' spread {noise:.2f} ms",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", default="1000,5000")
    parser.add_argument("--rate", type=float, default=100.0)
    parser.add_argument("--duration-s", type=float, default=12.0)
    parser.add_argument("--saturate-rate", type=float, default=400.0)
    parser.add_argument("--saturate-s", type=float, default=5.0)
    parser.add_argument("--window-ms", type=float, default=200.0)
    parser.add_argument("--idle-s", type=float, default=3.0, help="idle CPU measured first")
    parser.add_argument(
        "--no-pin",
        dest="pin",
        action="store_false",
        help="do not pin the extender to core 0 and this process to core 1",
    )
    parser.add_argument(
        "--record",
        choices=["off", "on", "both"],
        default="off",
        help="the extender's decision record (--record): off, on, or both (off then on, "
        "each node count, in the same run)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="runs of each record mode per node count, interleaved (off, on, off, ...), "
        "then their spread",
    )
    parser.add_argument(
        "--no-annotate",
        dest="annotate",
        action="store_false",
        help="with the record on: no eams.io annotation patch per bound pod",
    )
    parser.add_argument(
        "--py-spy",
        type=Path,
        default=None,
        help="folder for py-spy raw stacks of both sides during the load run",
    )
    parser.add_argument(
        "--extender-arg",
        action="append",
        default=[],
        help="extra argument for eams extender serve (repeatable)",
    )
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()}")
    if args.repeat < 1:
        parser.error(f"--repeat: {args.repeat}, must be ≥ 1")
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        records = {"off": [False], "on": [True], "both": [False, True]}[args.record]
        for count in (int(c) for c in args.nodes.split(",")):
            for run in range(args.repeat):
                for record in records:
                    folder = Path(tmp) / f"{record}-{run}"
                    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
                        result = runner.run(bench_nodes(count, args, folder, record))
                    report(result, args)
                    results.append(result)
    if args.repeat > 1:
        summary(results)
    print(f"\nload average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
