"""The power manager's tick on a real control plane: what listing every node, pod and Lease
costs at the study's scale, and whether a watch is needed (issue 31).

``eams power manage`` (``--interval-s`` 10 by default) calls :meth:`KubeObserver.observe
<eams.scheduler.power.kube_observer.KubeObserver.observe>` once a tick: ``GET /api/v1/nodes``,
``GET /api/v1/pods`` (every namespace) and the Leases of ``kube-node-lease``, then the fleet it
builds from them. Here a real etcd + kube-apiserver 1.36 with the shipped RBAC
(``tests/servers/kube_control_plane.py``) holds ``--nodes`` Ready nodes and their Leases, made
from the real EKS node of ``k8s/honeycomb_eks_nodes.json`` (labels, addresses, nodeInfo,
images; a kubelet's status), ``--pods-per-node`` pods bound to each and ``--pending`` pending
ones, made from a real Deployment pod of ``k8s/honeycomb_pods.json`` (100m / 100Mi requested;
its Running status posted as a kubelet does, so each listed pod is ~5.7 KB of JSON with the
apiserver's managedFields). The observer runs as the ``kube-system/eams-power-manager`` service
account, every node in its inventory with the same calibration, and no agent probes
(``agent_up`` always true: those are HTTP GETs to the nodes, not the API's load).

Timed per ``observe(now)``, after ``--warmup`` untimed ones: the wall time (median, p95), the
manager's CPU (``time.process_time``: every thread of this process, nothing else runs in it
then), and the apiserver's and etcd's CPU (``/proc/PID/stat`` utime + stime, 10 ms ticks),
with the part spent in the three lists (the kubernetes client's call and ``json.loads``)
beside it. Reference in the same run: a bare httpx ``GET /api/v1/pods`` and ``json.loads`` of
it, the floor of any list of the pods. Then each cost as the share of one core at the default
10 s interval, and the verdict. ``--nodes 1000,100`` takes ~5 minutes here (``--ticks 10`` to
shorten).

Usage::

    .venv/bin/python benchmarks/power_observe.py [--nodes 1000] [--pods-per-node 10]
        [--pending 10] [--ticks 20] [--interval-s 10]

Measured here on 2026-12-06 06:48-06:53 UTC (``--nodes 1000,100``, base 0b6fde2, 2 cores shared
with other work, load 12.3 at the start, 8.2 at the end; 5 min in all, 2.4 of them creating the
1,000-node world):

- 1,000 nodes / 10,000 pods (+ 10 pending): a tick 3,970 ms wall median (p95 5,169), 3,609 ms
  of it in the three lists; manager CPU 2,360 ms median (p95 2,910): 2,052 ms in the lists
  (mean), 397 ms reading the pods and nodes into the fleet; apiserver CPU 520 ms median (p95
  1,291), etcd 30 ms. Reference: the bare pod list is 57.0 MB (5.7 KB a pod) and takes 4,102
  ms wall, 1,804 ms client CPU, 490 ms apiserver CPU — the tick is 1.0x it in wall time, 1.3x
  in client CPU. Peak RSS 620 MB. At the 10 s interval: **manager 24.5 % of a core (its lists
  20.5 %), apiserver 7.8 %, etcd 0.3 %: listing 28.6 %, the whole tick 32.6 %**, the tick 42 %
  of the interval in wall time. An earlier run the same morning (06:36 UTC, load 8.6 -> 8.8):
  9,400 ms wall median (88 % of the interval), manager 2,919 ms CPU, 37.9 % of a core in all.
- 100 nodes / 1,000 pods: 367 ms wall median (p95 986), manager CPU 221 ms (194 in the lists),
  apiserver 60 ms; the bare pod list 5.7 MB, 495 ms wall, 200 ms client CPU. At 10 s:
  **manager 2.3 %, apiserver 0.8 %: listing 2.7 %, the whole tick 3.1 % of a core**.

Verdict: at the testbed's order of magnitude (100 nodes and below) listing every tick costs
~3 % of a core and no watch is needed; at the study's 1,000 nodes / 10,000 pods it costs ~29 %
of a core (over the 10 % budget), mostly the manager decoding a 57 MB pod list, and the tick
takes 40-90 % of the interval on this host: **a watch (list once, then watch nodes, pods and
Leases) is needed at that scale**. Near linear in the pods (listing 2.7 % at 1,000, 7.0 % at
3,000 in a 300-node run of 06:45 UTC, 28.6 % at 10,000), the budget is crossed at ~4,000 pods,
~400 nodes of 10 pods.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import resource
import signal
import sys
import tempfile
import time
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
from eams.scheduler.power.calibrations import read_folder  # noqa: E402
from eams.scheduler.power.kube_client import KubeClient  # noqa: E402
from eams.scheduler.power.kube_observer import KubeObserver  # noqa: E402
from tests.power.live import calibrate  # noqa: E402
from tests.servers.kube_binaries import TARBALL, k8s_dir, unpacked  # noqa: E402
from tests.servers.kube_control_plane import ControlPlane  # noqa: E402

MANAGER = "kube-system/eams-power-manager"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
PODS = "/api/v1/namespaces/default/pods"
SERVER_FIELDS = ("uid", "resourceVersion", "creationTimestamp", "selfLink", "managedFields",
                 "generateName")  # fmt: skip
CLK_TCK = os.sysconf("SC_CLK_TCK")
SETUP_THREADS = 24


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


def _cpu_s(pid: int) -> float:
    """utime + stime of process ``pid`` (s)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def _parallel(what: str, call: Callable[[int], None], count: int, server: int) -> None:
    started, cpu0, server0 = time.monotonic(), time.process_time(), _cpu_s(server)
    pool = ThreadPoolExecutor(SETUP_THREADS)
    try:
        for _ in pool.map(call, range(count)):
            pass
    finally:  # on Ctrl-C, drop the queued calls instead of finishing them
        pool.shutdown(cancel_futures=True)
    print(f"  {what}: {count:,} in {time.monotonic() - started:.1f} s (CPU: here "
          f"{time.process_time() - cpu0:.1f} s, apiserver {_cpu_s(server) - server0:.1f} s)",
          flush=True)  # fmt: skip


def populate(
    admin: httpx.Client, nodes: int, per_node: int, pending: int, server: int
) -> list[str]:
    """Create the Ready nodes with their Leases, the bound pods and the pending ones; the
    node names."""
    node_t, pod_t = _templates()
    names = [f"node-{i:05d}" for i in range(nodes)]
    merge = {"Content-Type": "application/merge-patch+json"}

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
                    headers=merge).raise_for_status()  # fmt: skip
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
            status["hostIP"] = "10.0.0.1"
            admin.patch(f"{PODS}/{doc['metadata']['name']}/status", json={"status": status},
                        headers=merge).raise_for_status()  # fmt: skip

    _parallel("nodes (create, status, Lease)", node, nodes, server)
    _parallel("bound pods (create, Running status)", pod, nodes * per_node, server)
    _parallel("pending pods", lambda k: pod(k, bound=False), pending, server)
    return names


def observer(plane: ControlPlane, names: list[str], folder: Path) -> KubeObserver:
    """The manager's observer on ``names`` (every one in the inventory, one calibration)."""
    cal = read_folder(calibrate(folder, names[0]).parent)[names[0]]
    entries = {name: {"method": "wol", "mac": f"02:00:00:{i >> 16:02x}:{i >> 8 & 255:02x}:"
                      f"{i & 255:02x}", "ssh": "root@127.0.0.1:1"}
               for i, name in enumerate(names)}  # fmt: skip
    inventory = parse_inventory({"nodes": entries}, Path("."), "power.yaml")
    client = KubeClient(plane.kubeconfig(MANAGER), timeout_s=60.0)
    return KubeObserver(client, inventory, dict.fromkeys(names, cal), agent_up=lambda n: True)


class ListTimer:
    """Wraps the client's three lists: the wall and CPU time (s) spent in them."""

    def __init__(self, client: KubeClient) -> None:
        self.spent = self.cpu = 0.0
        for name in ("list_nodes", "list_pods", "list_node_leases"):
            setattr(client, name, self._timed(getattr(client, name)))

    def _timed(self, call: Callable[[], list[dict[str, Any]]]):
        def timed() -> list[dict[str, Any]]:
            started, cpu = time.perf_counter(), time.process_time()
            try:
                return call()
            finally:
                self.spent += time.perf_counter() - started
                self.cpu += time.process_time() - cpu

        return timed


def measure(call: Callable[[], Any], runs: int, pids: dict[str, int]) -> dict[str, np.ndarray]:
    """Wall, own CPU and each pid's CPU (s) of each of ``runs`` calls."""
    out: dict[str, list[float]] = {"wall": [], "own": [], **{k: [] for k in pids}}
    for _ in range(runs):
        before = {k: _cpu_s(p) for k, p in pids.items()}
        cpu0, t0 = time.process_time(), time.perf_counter()
        call()
        out["wall"].append(time.perf_counter() - t0)
        out["own"].append(time.process_time() - cpu0)
        for k, p in pids.items():
            out[k].append(_cpu_s(p) - before[k])
    return {k: np.array(v) for k, v in out.items()}


def _ms(values: np.ndarray) -> str:
    return f"median {np.median(values) * 1e3:,.0f} ms, p95 {np.percentile(values, 95) * 1e3:,.0f}"


def run(args: argparse.Namespace, nodes: int, binaries: Path) -> None:
    pods = nodes * args.pods_per_node
    print(f"\n== {nodes:,} nodes, {pods:,} bound pods + {args.pending} pending ==", flush=True)
    with tempfile.TemporaryDirectory(prefix="eams-power-observe-") as tmp:
        root = Path(tmp)
        (root / "plane").mkdir()
        with ControlPlane(binaries, root / "plane") as plane, plane.client(timeout_s=60) as admin:
            started = time.monotonic()
            names = populate(
                admin, nodes, args.pods_per_node, args.pending, plane.apiserver.process.pid
            )
            print(f"  setup {time.monotonic() - started:.0f} s", flush=True)
            obs = observer(plane, names, root / "cal")
            lists = ListTimer(obs.client)
            pids = {"apiserver": plane.apiserver.process.pid, "etcd": plane.etcd.process.pid}
            tick = {"now": time.time()}

            def observe() -> None:
                tick["now"] += args.interval_s
                fleet = obs.observe(tick["now"]).fleet
                assert len(fleet.names) == nodes and len(fleet.pending.names) == args.pending, (
                    len(fleet.names), len(fleet.pending.names))  # fmt: skip
                assert int(fleet.pods.sum()) == pods, int(fleet.pods.sum())

            for _ in range(args.warmup):
                observe()
            lists.spent = lists.cpu = 0.0
            ticks = measure(observe, args.ticks, pids)
            list_s = (lists.spent / args.ticks, lists.cpu / args.ticks)
            with plane.client(MANAGER, timeout_s=60) as bare:
                size = len(bare.get("/api/v1/pods").content)

                def floor() -> None:
                    answer = bare.get("/api/v1/pods")
                    answer.raise_for_status()
                    json.loads(answer.content)

                ref = measure(floor, args.ref_runs, pids)
            rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        report(args, nodes, pods, ticks, ref, list_s, size, rss_mb)


def report(args, nodes, pods, ticks, ref, list_s, size, rss_mb) -> None:
    interval = args.interval_s
    mean = {k: float(v.mean()) for k, v in ticks.items()}
    print(f"  observe(now), {args.ticks} ticks: wall {_ms(ticks['wall'])}; "
          f"the three lists {list_s[0] * 1e3:,.0f} ms of it (mean)")  # fmt: skip
    print(f"    manager CPU {_ms(ticks['own'])}; apiserver CPU {_ms(ticks['apiserver'])}; "
          f"etcd CPU {_ms(ticks['etcd'])}")  # fmt: skip
    print(f"  reference, bare httpx GET /api/v1/pods + json.loads ({size / 1e6:.1f} MB, "
          f"{size / max(pods + args.pending, 1) / 1e3:.1f} KB a pod), {args.ref_runs} runs: "
          f"wall {_ms(ref['wall'])}; client CPU {_ms(ref['own'])}; "
          f"apiserver CPU {_ms(ref['apiserver'])}")  # fmt: skip
    print(
        f"    the tick is {mean['wall'] / ref['wall'].mean():.1f}x the pods' bare list (wall), "
        f"{mean['own'] / ref['own'].mean():.1f}x its client CPU, "
        f"{mean['apiserver'] / max(ref['apiserver'].mean(), 1e-9):.1f}x its apiserver CPU"
    )
    print(f"    manager CPU in the three lists (the client's call and json.loads) "
          f"{list_s[1] * 1e3:,.0f} ms a tick (mean), the rest (reading each pod and node, "
          f"the fleet) {(mean['own'] - list_s[1]) * 1e3:,.0f} ms")  # fmt: skip
    print(f"  this process's peak RSS so far {rss_mb:,.0f} MB (setup and earlier runs included)")
    share = {k: 100 * mean[k] / interval for k in ("own", "apiserver", "etcd")}
    listing = 100 * list_s[1] / interval + share["apiserver"] + share["etcd"]
    total = share["own"] + share["apiserver"] + share["etcd"]
    wall = 100 * mean["wall"] / interval
    print(f"  share of one core at --interval-s {interval:g}: manager {share['own']:.1f} % (its "
          f"lists {100 * list_s[1] / interval:.1f} %), apiserver {share['apiserver']:.1f} %, "
          f"etcd {share['etcd']:.1f} % (total {total:.1f} %); the tick's wall time is "
          f"{wall:.0f} % of the interval")  # fmt: skip
    needed = listing > args.budget_pct or mean["wall"] > interval / 2
    print(f"  => listing costs {listing:.1f} % of a core (the manager's lists, the apiserver, "
          f"etcd; the whole tick {total:.1f} %, {wall:.0f} % of the interval in wall time) at "
          f"{nodes:,} nodes / {pods:,} pods every {interval:g} s: a watch is "
          f"{'' if needed else 'not '}needed at this scale (budget: {args.budget_pct:g} % of a "
          "core, a tick within half the interval)")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", default="1000", help="node counts, comma-separated")
    parser.add_argument("--pods-per-node", type=int, default=10)
    parser.add_argument("--pending", type=int, default=10)
    parser.add_argument("--ticks", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--ref-runs", type=int, default=5)
    parser.add_argument(
        "--interval-s",
        type=float,
        default=10.0,
        help="the manager's tick (eams power manage --interval-s)",
    )
    parser.add_argument(
        "--budget-pct",
        type=float,
        default=10.0,
        help="share of one core above which the lists call for a watch",
    )
    args = parser.parse_args()  # fmt: skip
    tarball = k8s_dir() / TARBALL
    if not tarball.is_file():
        sys.exit(f"no control plane: {tarball} is missing ($EAMS_K8S_DIR)")
    binaries = unpacked(tarball)
    # SIGTERM as Ctrl-C: the control plane's context manager stops etcd and the apiserver
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    print(f"host: {os.cpu_count()} cores, load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    try:
        for count in (int(n) for n in args.nodes.split(",")):
            run(args, count, binaries)
    except KeyboardInterrupt:
        sys.exit("interrupted: the control plane is stopped")
    print(f"host load after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
