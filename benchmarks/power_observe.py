"""The power manager's observer on a real control plane: listing every node, pod and Lease at
each tick (what it did, the reference) against the list-then-watch cache it reads now (issue 31).

The world, the same for both: a real etcd + kube-apiserver 1.36 with the shipped RBAC
(``tests/servers/kube_control_plane.py``) holds ``--nodes`` Ready nodes and their Leases, made
from the real EKS node of ``k8s/honeycomb_eks_nodes.json``, ``--pods-per-node`` pods bound to
each and ``--pending`` pending ones, made from a real Deployment pod of ``k8s/honeycomb_pods.json``
(Running status posted as a kubelet does: ~5.7 KB a pod as listed). The manager runs as the
``kube-system/eams-power-manager`` service account, every node in its inventory with one
calibration, no agent probes (``agent_up`` always true).

**List per tick** (no churn; ``--ticks`` timed after ``--warmup``): :class:`KubeObserver
<eams.scheduler.power.kube_observer.KubeObserver>` on a view whose ``snapshot()`` lists the
nodes, pods and node Leases with the kubernetes client as ``KubeClient.list_calls()`` gives them
(``_preload_content=False``, ``json.loads``) and reads each pod with ``kube_pods.pod_info``: the
old tick. Per ``observe``: wall, this process's CPU (nothing else runs in it then; the reading
part beside it), the apiserver's and etcd's CPU (``/proc/PID/stat``, 10 ms ticks).

**Watch**, with churn from a process of its own (so that its CPU and GIL are not the manager's;
16 threads, one keep-alive pool, each request started at its due time; its achieved rate and
lateness are reported): every node's Lease renewed every 10 s, N/10 a second spread evenly (a
merge patch of ``renewTime``; the kubelet PUTs, one ``MODIFIED`` either way), every node's status
heartbeat every 300 s (``nodeStatusReportFrequency``), and ``--pod-churn`` pods a second created
(POST pending, Binding, the kubelet's Running status: 3 events) and as many deleted, oldest first
(graceful DELETE, then the kubelet's ``gracePeriodSeconds: 0``: 2 events). A ``--window-s``
window of churn without any watch; then ``ClusterCache(client).start()`` (the three initial
lists: wall, CPU, once, no churn); then the same churn for the same window with the cache
watching and ``observe()`` every ``--interval-s`` (from half an interval in). The manager's CPU:
the three ``power-watch-*`` threads' utime + stime from ``/proc/self/task/TID/stat`` over the
window, and per ``observe()`` this process's CPU less the watch threads' during the call. The
apiserver's (etcd's) CPU attributable to the watch: with the watch less without, per second of
window. At the end the cache is compared with a fresh list (every pod, every Lease's renewTime).

Usage::

    .venv/bin/python benchmarks/power_observe.py [--nodes 1000,100] [--pods-per-node 10]
        [--pending 10] [--ticks 5] [--window-s 60] [--pod-churn 10] [--interval-s 10]

Measured here on 2026-12-06 (``--nodes 1000,100``, base 19637a4, 2 cores shared with other
work), two runs: A 07:10-07:17 UTC (``uptime`` load 1.5 at the start, 4.3 after the 1,000 nodes,
2.0 at the end) and B 07:18-07:26 UTC (load 2.8, 8.0, 6.0); the 1,000 nodes took 293 / 320 s,
137 / 150 of them making the world, the 100 nodes 147 / 156 s. Shares of one core at the 10 s
interval, A / B:

- 1,000 nodes / 10,000 pods, churn 153.3 requests/s asked, 151.7-153.3 achieved (100 Lease
  renewals, 3.3 node statuses, 10 pods created and 10 deleted a second; 0 errors; start late p95
  2-73 ms), the generator 18 / 19 % of a core. **List per tick**: observe wall median 2.67 /
  3.31 s, manager CPU 2.34 / 2.47 s a tick (mean; 2.12 / 2.24 s of it the lists, ``json.loads``
  and ``pod_info``), apiserver 0.72 / 0.86 s: manager 23.4 / 24.6 % (reading the cluster 21.2 /
  22.4 %), apiserver 7.2 / 8.6 %, etcd 0.3 %. **Watch**: start-up once 3.4 / 4.4 s wall, 2.40 /
  2.32 s manager CPU, 0.54 / 0.82 s apiserver; under the churn the watch threads 4.31 / 4.03 %,
  ``observe()`` 283 / 288 ms CPU a tick (median 154 / 161, wall median 248 / 471 ms) = 2.8 / 2.9
  %, the manager 7.1 / 6.9 %; apiserver attributable +3.5 / +0.4 % (the difference of two ~46 %
  windows on a shared host: uncertain by a few %), etcd -0.3 / -0.9 % (noise: the watches are served
  from the apiserver's watch cache). **Watch / list: manager 0.31 / 0.28, apiserver 0.49 / 0.04;
  reading the cluster (manager + apiserver) 28.4 -> 7.8 % / 31.0 -> 4.4 % (0.27 / 0.14); with
  the fleet built each tick 30.5 -> 10.6 % / 33.2 -> 7.3 % (0.35 / 0.22).** The cache matched a
  fresh list 4.0 / 7.6 s after the churn stopped (the list itself takes ~3.5 s).
- 100 nodes / 1,000 pods, churn 60.3 requests/s (10 Lease renewals, 10 pods in and out a
  second), achieved, the generator 8-9 %. **List**: manager 0.22 / 0.26 s a tick (2.2 / 2.6 %;
  reading 1.9 / 2.3 %), apiserver 0.6 / 0.9 %. **Watch**: start-up 0.51 / 0.33 s wall, 0.34 /
  0.24 s manager CPU; watch threads 3.05 / 2.95 %, ``observe()`` 21 / 19 ms a tick (0.2 %),
  apiserver attributable +1.8 / +2.7 %. **Watch / list: manager 1.49 / 1.22, reading the
  cluster 2.5 -> 4.9 % / 3.2 -> 5.7 %, with the fleet 2.8 -> 5.1 % / 3.5 -> 5.9 % (1.8 / 1.7).**

Conclusion: at the study's 1,000 nodes / 10,000 pods the watch cuts reading the cluster from
~30 % of a core to 4-8 % (0.14-0.27 of listing; the manager 0.28-0.31 of it), within the 10 %
budget, for 2.3-2.4 s of manager CPU once at start-up, and the tick drops from 2.7-3.3 s to
~0.25-0.5 s wall. It pays per change instead of per tick: ~0.6 ms of the manager's CPU a pod
event and ~0.1 ms a Lease renewal (from the two sizes), so with 10 pods replaced a second at 100
nodes / 1,000 pods (1 % of them a second, harsh churn) it costs 1.7-1.8x listing, both within
budget (~5-6 % against ~3 %); the manager's side breaks even near 0.8 % of the pods replaced a
second (~8 pods/s at 1,000 pods, ~75 at 10,000).
"""

from __future__ import annotations

import argparse
import copy
import json
import logging
import multiprocessing
import os
import signal
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from eams.actuators.inventory import parse_inventory  # noqa: E402
from eams.datasets import data_file  # noqa: E402
from eams.procstat import process_cpu_s  # noqa: E402
from eams.scheduler.power.calibrations import read_folder  # noqa: E402
from eams.scheduler.power.kube_cache import ClusterCache, _renew_time  # noqa: E402
from eams.scheduler.power.kube_client import KubeClient  # noqa: E402
from eams.scheduler.power.kube_observer import KubeObserver  # noqa: E402
from eams.scheduler.power.kube_pods import pod_info  # noqa: E402
from tests.power.live import calibrate  # noqa: E402
from tests.servers.kube_binaries import TARBALL, k8s_dir, unpacked  # noqa: E402
from tests.servers.kube_control_plane import ControlPlane, apiserver_client  # noqa: E402

MANAGER = "kube-system/eams-power-manager"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
PODS = "/api/v1/namespaces/default/pods"
SERVER_FIELDS = ("uid", "resourceVersion", "creationTimestamp", "selfLink", "managedFields",
                 "generateName")  # fmt: skip
MERGE = {"Content-Type": "application/merge-patch+json"}
STRATEGIC = {"Content-Type": "application/strategic-merge-patch+json"}
SETUP_THREADS = 24
CHURN_THREADS = 16
LEASE_PERIOD_S = 10.0  # the kubelet's Lease renewal (nodeLeaseDurationSeconds 40 / 4)
NODE_STATUS_PERIOD_S = 300.0  # the kubelet's nodeStatusReportFrequency


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _micro_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _templates() -> tuple[dict[str, Any], dict[str, Any]]:
    """The real EKS node and the real Deployment pod, server-set fields removed."""
    node = json.loads(data_file("k8s/honeycomb_eks_nodes.json").read_text())["items"][0]
    pods = json.loads(data_file("k8s/honeycomb_pods.json").read_text())["items"]
    pod = next(p for p in pods if p["metadata"]["name"].startswith("controller-"))
    for doc in (node, pod):
        for field in SERVER_FIELDS:
            doc["metadata"].pop(field, None)
    node["spec"].pop("taints", None)  # the study's nodes take any pod
    node["metadata"]["labels"]["beta.kubernetes.io/os"] = "linux"  # the pod's nodeSelector
    pod["metadata"]["namespace"] = "default"
    return node, pod


def _parallel(what: str, call: Callable[[int], None], count: int, server: int) -> None:
    started, cpu0, server0 = time.monotonic(), time.process_time(), process_cpu_s(server)
    pool = ThreadPoolExecutor(SETUP_THREADS)
    try:
        for _ in pool.map(call, range(count)):
            pass
    finally:  # on Ctrl-C, drop the queued calls instead of finishing them
        pool.shutdown(cancel_futures=True)
    print(f"  {what}: {count:,} in {time.monotonic() - started:.1f} s (CPU: here "
          f"{time.process_time() - cpu0:.1f} s, apiserver {process_cpu_s(server) - server0:.1f} s)",
          flush=True)  # fmt: skip


def _node_names(nodes: int) -> list[str]:
    return [f"node-{i:05d}" for i in range(nodes)]


def _running(status: dict[str, Any]) -> dict[str, Any]:
    return {"status": {**status, "hostIP": "10.0.0.1"}}


def populate(admin: httpx.Client, nodes: int, per_node: int, pending: int, server: int) -> None:
    """Create the Ready nodes with their Leases, the bound pods and the pending ones."""
    node_t, pod_t = _templates()
    names = _node_names(nodes)

    def node(i: int) -> None:
        name = names[i]
        doc = copy.deepcopy(node_t)
        doc["metadata"]["name"] = name
        doc["metadata"]["labels"]["kubernetes.io/hostname"] = name
        doc["spec"]["providerID"] = f"aws:///us-east-1a/i-{i:017x}"
        status = doc.pop("status")
        created = admin.post("/api/v1/nodes", json=doc)
        created.raise_for_status()
        beat = _now()
        for condition in status["conditions"]:
            condition["lastHeartbeatTime"] = condition["lastTransitionTime"] = beat
        status["addresses"] = [{"type": "InternalIP", "address": f"10.{i >> 16}.{i >> 8 & 255}."
                                f"{i & 255}"}, {"type": "Hostname", "address": name}]  # fmt: skip
        admin.patch(f"/api/v1/nodes/{name}/status", json={"status": status},
                    headers=MERGE).raise_for_status()  # fmt: skip
        owner = {"apiVersion": "v1", "kind": "Node", "name": name,
                 "uid": created.json()["metadata"]["uid"]}  # fmt: skip
        lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                 "metadata": {"name": name, "ownerReferences": [owner]},
                 "spec": {"holderIdentity": name, "leaseDurationSeconds": 40,
                          "renewTime": _micro_now()}}  # fmt: skip
        admin.post(LEASES, json=lease).raise_for_status()

    def pod(k: int, bound: bool = True) -> None:
        doc = copy.deepcopy(pod_t)
        status = doc.pop("status")
        if bound:
            doc["metadata"]["name"] = f"work-{k:06d}"
            doc["spec"]["nodeName"] = names[k % nodes]
        else:
            doc["metadata"]["name"] = f"pending-{k:04d}"
            doc["spec"].pop("nodeName", None)
            doc["spec"]["schedulerName"] = "eams-scheduler"  # no scheduler runs: it stays
        admin.post(PODS, json=doc).raise_for_status()
        if bound:
            admin.patch(f"{PODS}/{doc['metadata']['name']}/status", json=_running(status),
                        headers=MERGE).raise_for_status()  # fmt: skip

    _parallel("nodes (create, status, Lease)", node, nodes, server)
    _parallel("bound pods (create, Running status)", pod, nodes * per_node, server)
    _parallel("pending pods", lambda k: pod(k, bound=False), pending, server)


# -- the churn: the kubelets' heartbeats and a workload's pods, from a process of its own -----


class Churn:
    """The load generator (runs in its own process): every node's Lease renewed every
    :data:`LEASE_PERIOD_S` and its status every :data:`NODE_STATUS_PERIOD_S`, spread evenly,
    and ``pods_per_s`` pods created (POST pending, Binding, the kubelet's Running status) and as
    many deleted (graceful DELETE, then the kubelet's ``gracePeriodSeconds: 0``), the oldest
    first, on :data:`CHURN_THREADS` threads sharing one keep-alive connection pool."""

    def __init__(self, url: str, token: str, ca: str, nodes: int, per_node: int, rate: float):
        self.client = apiserver_client(url, token, ca, 60.0, CHURN_THREADS)
        node_t, self.pod_t = _templates()
        self.status = self.pod_t.pop("status")
        self.conditions = [c["type"] for c in node_t["status"]["conditions"]]
        self.names = _node_names(nodes)
        self.rate = rate
        self.alive = deque(f"work-{k:06d}" for k in range(nodes * per_node))
        self.lock = threading.Lock()
        self.made = self.lease_at = self.status_at = 0

    def _next(self, what: str) -> int:
        with self.lock:
            value = getattr(self, what)
            setattr(self, what, value + 1)
            return value

    def lease(self) -> int:
        name = self.names[self._next("lease_at") % len(self.names)]
        patch = {"spec": {"renewTime": _micro_now()}}
        self.client.patch(f"{LEASES}/{name}", json=patch, headers=MERGE).raise_for_status()
        return 1

    def node_status(self) -> int:
        name = self.names[self._next("status_at") % len(self.names)]
        beat = _now()
        patch = {"status": {"conditions": [{"type": t, "lastHeartbeatTime": beat}
                                           for t in self.conditions]}}  # fmt: skip
        self.client.patch(f"/api/v1/nodes/{name}/status", json=patch,
                          headers=STRATEGIC).raise_for_status()  # fmt: skip
        return 1

    def create(self) -> int:
        k = self._next("made")
        name, node = f"churn-{k:06d}", self.names[k % len(self.names)]
        doc = copy.deepcopy(self.pod_t)
        doc["metadata"]["name"] = name
        doc["spec"].pop("nodeName", None)
        self.client.post(PODS, json=doc).raise_for_status()
        binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
                   "target": {"apiVersion": "v1", "kind": "Node", "name": node}}  # fmt: skip
        self.client.post(f"{PODS}/{name}/binding", json=binding).raise_for_status()
        self.client.patch(f"{PODS}/{name}/status", json=_running(self.status),
                          headers=MERGE).raise_for_status()  # fmt: skip
        with self.lock:
            self.alive.append(name)
        return 3

    def delete(self) -> int:
        with self.lock:
            name = self.alive.popleft()
        for grace in (30, 0):  # the controller's delete, then the kubelet's once stopped
            answer = self.client.request(
                "DELETE", f"{PODS}/{name}", json={"gracePeriodSeconds": grace}
            )
            answer.raise_for_status()
        return 2

    def run(self, window_s: float) -> dict[str, Any]:
        """One window of churn; what was done and how late."""
        streams = [
            (len(self.names) / LEASE_PERIOD_S, self.lease),
            (len(self.names) / NODE_STATUS_PERIOD_S, self.node_status),
            (self.rate, self.create),
            (self.rate, self.delete),
        ]
        plan = []
        for phase, (rate, call) in zip((0.0, 0.25, 0.5, 0.75), streams, strict=True):
            if rate > 0:
                plan += [((j + phase) / rate, call) for j in range(round(window_s * rate))]
        plan.sort(key=lambda entry: entry[0])
        late: list[float] = []
        done = {"requests": 0, "errors": 0}
        counts: dict[str, int] = {}
        count_lock = threading.Lock()
        start = time.monotonic()

        def one(due: float, call: Callable[[], int]) -> None:
            began = time.monotonic() - start
            try:
                requests = call()
                error = 0
            except httpx.HTTPError:
                requests, error = 1, 1
            with count_lock:
                late.append(began - due)
                done["requests"] += requests
                done["errors"] += error
                counts[call.__name__] = counts.get(call.__name__, 0) + 1

        with ThreadPoolExecutor(CHURN_THREADS) as pool:
            for due, call in plan:
                wait = start + due - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                pool.submit(one, due, call)
        elapsed = time.monotonic() - start
        lateness = np.array(late) if late else np.zeros(1)
        return {
            "elapsed_s": elapsed,
            "ops": counts,
            "requests": done["requests"],
            "errors": done["errors"],
            "late_p50_ms": float(np.median(lateness) * 1e3),
            "late_p95_ms": float(np.percentile(lateness, 95) * 1e3),
            "late_max_ms": float(lateness.max() * 1e3),
        }


def churn_main(conn: Any, *args: Any) -> None:
    """The load generator's process: ``("go", window_s)`` runs a window, ``None`` ends."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops it
    churn = Churn(*args)
    conn.send("ready")
    while (message := conn.recv()) is not None:
        conn.send(churn.run(message[1]))


# -- the manager's side -----------------------------------------------------------------------


class ListedView:
    """The observer's view as it was before the watch, listed at every :meth:`snapshot`: the
    three lists with the kubernetes client as :meth:`KubeClient.list_calls` gives them (raw,
    ``json.loads``) and each pod read by :func:`pod_info`; the wall and CPU time (s) spent."""

    def __init__(self, client: KubeClient) -> None:
        self.calls = client.list_calls()
        self.wall = self.cpu = 0.0

    def _items(self, name: str) -> list[dict[str, Any]]:
        response = self.calls[name](_preload_content=False)
        try:
            return json.loads(response.data)["items"]
        finally:
            response.release_conn()

    def snapshot(self) -> tuple[list[dict[str, Any]], list[Any], dict[str, str | None]]:
        started, cpu = time.perf_counter(), time.process_time()
        nodes = self._items("nodes")
        pods = [pod_info(pod) for pod in self._items("pods")]
        leases = dict(_renew_time(lease) for lease in self._items("node leases"))
        self.wall += time.perf_counter() - started
        self.cpu += time.process_time() - cpu
        return nodes, pods, leases


def manager_config(names: list[str], folder: Path) -> tuple[Any, dict[str, Any]]:
    """The manager's inventory (every node, WoL) and calibrations (one, for every node)."""
    cal = read_folder(calibrate(folder, names[0]).parent)[names[0]]
    entries = {name: {"method": "wol", "mac": f"02:00:00:{i >> 16:02x}:{i >> 8 & 255:02x}:"
                      f"{i & 255:02x}", "ssh": "root@127.0.0.1:1"}
               for i, name in enumerate(names)}  # fmt: skip
    return parse_inventory({"nodes": entries}, Path("."), "power.yaml"), dict.fromkeys(names, cal)


def _watch_threads() -> list[int]:
    return [t.native_id for t in threading.enumerate()
            if t.name.startswith("power-watch-") and t.native_id]  # fmt: skip


def _threads_cpu(tids: list[int]) -> float:
    return sum(process_cpu_s("self", tid) for tid in tids)


def measure(call: Callable[[], Any], runs: int, pids: dict[str, int]) -> dict[str, np.ndarray]:
    """Wall, this process's CPU and each pid's CPU (s) of each of ``runs`` calls."""
    out: dict[str, list[float]] = {"wall": [], "own": [], **{k: [] for k in pids}}
    for _ in range(runs):
        before = {k: process_cpu_s(p) for k, p in pids.items()}
        cpu0, t0 = time.process_time(), time.perf_counter()
        call()
        out["wall"].append(time.perf_counter() - t0)
        out["own"].append(time.process_time() - cpu0)
        for k, p in pids.items():
            out[k].append(process_cpu_s(p) - before[k])
    return {k: np.array(v) for k, v in out.items()}


def window(
    conn: Any,
    churner: int,
    pids: dict[str, int],
    args: argparse.Namespace,
    observe: Callable[[], Any] | None = None,
) -> dict[str, Any]:
    """One window of churn; with ``observe``, the manager's ticks every ``--interval-s``
    meanwhile (the first half an interval in) and the watch threads' CPU."""
    tids = _watch_threads()
    before = {k: process_cpu_s(p) for k, p in pids.items()}
    churn0, own0, threads0 = process_cpu_s(churner), time.process_time(), _threads_cpu(tids)
    start = time.monotonic()
    conn.send(("go", args.window_s))
    ticks: list[tuple[float, float]] = []
    due = start + args.interval_s / 2
    while observe is not None and due < start + args.window_s:
        time.sleep(max(0.0, due - time.monotonic()))
        cpu0, watch0, t0 = time.process_time(), _threads_cpu(tids), time.perf_counter()
        observe()
        wall = time.perf_counter() - t0
        ticks.append((wall, time.process_time() - cpu0 - (_threads_cpu(tids) - watch0)))
        due += args.interval_s
    stats = conn.recv()
    stats["window_s"] = time.monotonic() - start
    stats.update({k: process_cpu_s(p) - before[k] for k, p in pids.items()})
    stats["churner"] = process_cpu_s(churner) - churn0
    stats["own"] = time.process_time() - own0
    stats["watch_threads"] = _threads_cpu(tids) - threads0
    stats["ticks"] = np.array(ticks).reshape(-1, 2)
    return stats


def run(args: argparse.Namespace, nodes: int, binaries: Path) -> None:
    pods = nodes * args.pods_per_node
    print(f"\n== {nodes:,} nodes, {pods:,} bound pods + {args.pending} pending ==", flush=True)
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="eams-power-observe-") as tmp:
        root = Path(tmp)
        (root / "plane").mkdir()
        with ControlPlane(binaries, root / "plane") as plane, plane.client(timeout_s=60) as admin:
            server = plane.apiserver.process.pid
            populate(admin, nodes, args.pods_per_node, args.pending, server)
            print(f"  setup {time.monotonic() - began:.0f} s", flush=True)
            pids = {"apiserver": server, "etcd": plane.etcd.process.pid}
            inventory, cals = manager_config(_node_names(nodes), root / "cal")
            client = KubeClient(plane.kubeconfig(MANAGER), timeout_s=60.0)
            clock = {"now": time.time()}

            def tick(obs: KubeObserver, exact: bool = True) -> None:
                clock["now"] += args.interval_s
                fleet = obs.observe(clock["now"]).fleet
                assert len(fleet.names) == nodes, len(fleet.names)
                if exact:  # no churn going on: the world as made
                    assert len(fleet.pending.names) == args.pending, len(fleet.pending.names)
                    assert int(fleet.pods.sum()) == pods, int(fleet.pods.sum())

            # 1. list per tick (the reference), no churn
            view = ListedView(client)
            listing = KubeObserver(view, inventory, cals, agent_up=lambda n: True)  # type: ignore[arg-type]
            for _ in range(args.warmup):
                tick(listing)
            view.wall = view.cpu = 0.0
            listed = measure(lambda: tick(listing), args.ticks, pids)
            listed["read_cpu"] = np.array([view.cpu / args.ticks])
            listed["read_wall"] = np.array([view.wall / args.ticks])
            print(f"  list per tick measured ({time.monotonic() - began:.0f} s in)", flush=True)

            # 2. the churn's process, then a window without the watch, then one with it
            spawn = multiprocessing.get_context("spawn")
            conn, theirs = spawn.Pipe()
            churn = spawn.Process(
                target=churn_main,
                args=(theirs, plane.url, plane.identity().token, str(plane.ca), nodes,
                      args.pods_per_node, args.pod_churn),
                daemon=True,
            )  # fmt: skip
            churn.start()
            try:
                assert conn.recv() == "ready"
                base = window(conn, churn.pid, pids, args)
                print(f"  churn without the watch measured ({time.monotonic() - began:.0f} s in)",
                      flush=True)  # fmt: skip
                before = {k: process_cpu_s(p) for k, p in pids.items()}
                cpu0, t0 = time.process_time(), time.perf_counter()
                cache = ClusterCache(client).start()
                startup = {"wall": time.perf_counter() - t0, "own": time.process_time() - cpu0}
                startup.update({k: process_cpu_s(p) - before[k] for k, p in pids.items()})
                try:
                    watching = KubeObserver(cache, inventory, cals, agent_up=lambda n: True)
                    tick(watching)  # untimed: the world as listed, whole
                    watched = window(
                        conn, churn.pid, pids, args, lambda: tick(watching, exact=False)
                    )
                    caught = converge(cache, view)
                finally:
                    cache.close()  # its threads end at their next event, or fail with the plane
                    logging.getLogger("eams.kube.listwatch").setLevel(logging.ERROR)
            finally:
                if churn.is_alive():
                    conn.send(None)
                churn.join(10)
    report(args, nodes, pods, listed, base, startup, watched, caught)
    print(f"  ({time.monotonic() - began:.0f} s for {nodes:,} nodes; load "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())})", flush=True)  # fmt: skip


def converge(cache: ClusterCache, view: ListedView) -> str:
    """Whether the cache holds what a fresh list does once the churn stopped."""
    started = time.monotonic()
    for _ in range(5):
        nodes, pods, leases = view.snapshot()
        c_nodes, c_pods, c_leases = cache.snapshot()
        same = ({p.key for p in pods} == {p.key for p in c_pods} and leases == c_leases
                and len(nodes) == len(c_nodes))  # fmt: skip
        if same:
            waited = time.monotonic() - started
            return (f"the cache held what a fresh list holds ({len(pods):,} pods, every Lease's "
                    f"renewTime) {waited:.1f} s after the churn stopped")  # fmt: skip
        time.sleep(1.0)
    return "THE CACHE DIFFERED FROM A FRESH LIST after the churn stopped"


def _ms(values: np.ndarray) -> str:
    return (f"median {np.median(values) * 1e3:,.0f} ms, p95 {np.percentile(values, 95) * 1e3:,.0f}"
            f", mean {values.mean() * 1e3:,.0f}")  # fmt: skip


def _pct(cpu_s: float, per_s: float) -> float:
    return 100 * cpu_s / per_s


def report(args, nodes, pods, listed, base, startup, watched, caught) -> None:
    interval = args.interval_s
    target = nodes / LEASE_PERIOD_S + nodes / NODE_STATUS_PERIOD_S + 5 * args.pod_churn
    print(
        f"  LIST per tick ({args.ticks} ticks, no churn): observe wall {_ms(listed['wall'])} "
        f"(the lists + pod_info {listed['read_wall'][0] * 1e3:,.0f} ms mean); manager CPU "
        f"{_ms(listed['own'])} (lists + json.loads + pod_info {listed['read_cpu'][0] * 1e3:,.0f}"
        f" ms mean); apiserver CPU {_ms(listed['apiserver'])}; etcd {_ms(listed['etcd'])}"
    )
    for name, w in (("without the watch", base), ("with the watch", watched)):
        print(
            f"  churn {name}: {w['requests'] / w['window_s']:.1f} requests/s achieved (target "
            f"{target:.1f}: {nodes / LEASE_PERIOD_S:g} Lease renewals/s, "
            f"{nodes / NODE_STATUS_PERIOD_S:.2f} node status/s, {args.pod_churn:g} pods/s "
            f"created x 3 requests and deleted x 2) over {w['window_s']:.1f} s, ops {w['ops']}, "
            f"{w['errors']} errors, start late p50/p95/max {w['late_p50_ms']:.0f}/"
            f"{w['late_p95_ms']:.0f}/{w['late_max_ms']:.0f} ms; generator CPU "
            f"{_pct(w['churner'], w['window_s']):.0f} % of a core; apiserver "
            f"{_pct(w['apiserver'], w['window_s']):.1f} %, "
            f"etcd {_pct(w['etcd'], w['window_s']):.1f} %"
        )
    print(
        f"  WATCH start-up (the three initial lists, once): {startup['wall'] * 1e3:,.0f} ms wall, "
        f"manager CPU {startup['own'] * 1e3:,.0f} ms, apiserver {startup['apiserver'] * 1e3:,.0f}"
        f" ms, etcd {startup['etcd'] * 1e3:,.0f} ms"
    )
    ticks = watched["ticks"]
    threads = _pct(watched["watch_threads"], watched["window_s"])
    api_w = _pct(watched["apiserver"], watched["window_s"]) - _pct(
        base["apiserver"], base["window_s"]
    )
    etcd_w = _pct(watched["etcd"], watched["window_s"]) - _pct(base["etcd"], base["window_s"])
    print(
        f"  WATCH under churn ({watched['window_s']:.0f} s): the three power-watch-* threads "
        f"{watched['watch_threads']:.2f} s CPU (/proc/self/task/TID/stat) = {threads:.2f} % of a "
        f"core; observe() {len(ticks)} ticks: wall {_ms(ticks[:, 0])}, CPU {_ms(ticks[:, 1])} "
        f"(this process's CPU less the watch threads'); the whole manager process "
        f"{_pct(watched['own'], watched['window_s']):.2f} %"
    )
    print(
        f"    apiserver attributable (with - without the watch, same churn): {api_w:+.2f} % of a "
        f"core, etcd {etcd_w:+.2f} %; {caught}"
    )
    l_mgr, l_read = _pct(listed["own"].mean(), interval), _pct(listed["read_cpu"][0], interval)
    l_api = _pct(listed["apiserver"].mean(), interval)
    w_mgr = threads + _pct(ticks[:, 1].mean(), interval)
    l_etcd = _pct(listed["etcd"].mean(), interval)
    print(
        f"  share of one core at --interval-s {interval:g}: LIST manager {l_mgr:.1f} % (reading "
        f"the cluster {l_read:.1f} %, the fleet {l_mgr - l_read:.1f} %), apiserver {l_api:.1f} %,"
        f" etcd {l_etcd:.1f} %; WATCH manager {w_mgr:.2f} % (watch threads {threads:.2f} %, "
        f"observe {w_mgr - threads:.2f} %), apiserver {api_w:+.2f} %, etcd {etcd_w:+.2f} %"
    )
    read_l, read_w = l_read + l_api, threads + api_w
    all_l, all_w = l_mgr + l_api, w_mgr + api_w
    print(
        f"  ratio watch / list: manager {w_mgr / l_mgr:.2f}, apiserver {api_w / l_api:+.2f}; "
        f"reading the cluster (the manager's + the apiserver's) {read_w / read_l:.2f}; all "
        f"(manager + apiserver) {all_w / all_l:.2f}"
    )
    verdict = "within" if read_w <= args.budget_pct else "OVER"
    print(
        f"  => at {nodes:,} nodes / {pods:,} pods every {interval:g} s: reading the cluster costs "
        f"{read_l:.1f} % of a core listed every tick, {read_w:.1f} % watched under "
        f"~{target:.0f} writes/s of churn (watch / list {read_w / read_l:.2f}; {verdict} the "
        f"{args.budget_pct:g} % budget); with the fleet built each tick, manager + apiserver "
        f"{all_l:.1f} % -> {all_w:.1f} %; the watch's start-up "
        f"{startup['own'] + startup['apiserver']:.1f} s of CPU once"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", default="1000,100", help="node counts, comma-separated")
    parser.add_argument("--pods-per-node", type=int, default=10)
    parser.add_argument("--pending", type=int, default=10)
    parser.add_argument("--ticks", type=int, default=5, help="list-per-tick ticks timed")
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--window-s", type=float, default=60.0, help="each churn window")
    parser.add_argument("--pod-churn", type=float, default=10.0,
                        help="pods created per second, and as many deleted")  # fmt: skip
    parser.add_argument(
        "--interval-s",
        type=float,
        default=10.0,
        help="the manager's tick (eams power manage --interval-s)",
    )
    parser.add_argument("--budget-pct", type=float, default=10.0,
                        help="share of one core reading the cluster may take")  # fmt: skip
    args = parser.parse_args()
    tarball = k8s_dir() / TARBALL
    if not tarball.is_file():
        sys.exit(f"no control plane: {tarball} is missing ($EAMS_K8S_DIR)")
    binaries = unpacked(tarball)
    # SIGTERM as Ctrl-C: the control plane's context manager stops etcd and the apiserver
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    started = time.monotonic()
    print(f"host: {os.cpu_count()} cores, load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    try:
        for count in (int(n) for n in args.nodes.split(",")):
            run(args, count, binaries)
    except KeyboardInterrupt:
        sys.exit("interrupted: the control plane is stopped")
    print(f"host load after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"{time.monotonic() - started:.0f} s in all")  # fmt: skip


if __name__ == "__main__":
    main()
