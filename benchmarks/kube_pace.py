"""VT-1 (AR-2) behind the real kube-scheduler: the EAMS profile's pace against the same
kube-scheduler without extenders, on the same pods, in the same run (issue 32).

What runs, all on loopback (``tests/servers``, the fixtures the tests use):

- etcd and kube-apiserver 1.36 from ``../shared/k8s/`` with the shipped RBAC
  (:class:`~tests.servers.kube_control_plane.ControlPlane`);
- ``--nodes`` Ready nodes of 16 cores, 64 GiB and 110 pods, created through the API
  (:func:`~tests.servers.kube_documents.create_node`: the Node, its status, admission's
  ``not-ready`` taint lifted; no kubelet and no node-lifecycle controller, so nothing changes them
  afterwards), each with a calibration (four P_idle/P_max classes, so the auction has a
  preference) and fresh telemetry for every node, one ``POST /telemetry`` of all of them every
  ``--telemetry-period-s`` (the agents post every 1 s each; readings older than 15 s are stale);
- the extender, ``eams extender serve --mode active --watch --window-ms 200 --record DIR`` acting
  as the shipped ``kube-system/eams-scheduler`` service account
  (:class:`~tests.servers.kube_extender.KubeExtender`);
- kube-scheduler 1.36.2 with the shipped configuration, only its kubeconfig and the extender's
  ``urlPrefix`` changed (:func:`~tests.servers.kube_scheduler.shipped_config`, profile
  ``eams-scheduler``), and beside it a second kube-scheduler with the same configuration minus
  ``extenders``, profile ``reference-scheduler``
  (:func:`~tests.servers.kube_scheduler.reference_config`): the reference. Both run the whole
  time; each phase's pods name one of them.

A run is six phases, each on fresh pods of the same shapes (``--shape``): the EAMS profile (the
extender asked by kube-scheduler for every pod), the gate integration (``--gates``, the default:
the same profile's pods created with the ``eams.io/market`` scheduling gate, cleared by the
extender in its 200 ms window and released pinned to their cleared node, so kube-scheduler
filters one node and calls no extender; ``scheduler/extender/gates.py``), then the reference,
at ``--rate`` pods/s offered for ``--duration-s`` (then up to ``--drain-s`` for the last
binds), then the three again at ``--saturate-rate`` for ``--saturate-s`` (``0`` skips them).
Pods are created open-loop by a load generator in a process of its own (its CPU and GIL are not
the harness's; ``LOADGEN_THREADS`` threads, one keep-alive pool, each POST started at its due
time; the creation time is this machine's monotonic clock just before the POST). Binds are timed
from a pod watch (``fieldSelector=spec.nodeName!=``: a pod enters it when it is bound) in the
harness. After a phase its pods are deleted (one collection DELETE, grace 0) before the next.

Per phase: pods/s bound (the pods bound by the end of the window over its length; for the
saturating phases, what the profile sustains), creation → bind p50/p99 (a pod never bound within
the drain counts as unbound: a percentile it falls in is reported as ``> drain``), CPU per pod
bound of each process (``/proc/PID/stat``: the extender, each kube-scheduler, kube-apiserver,
etcd, the load generator, the harness's watch), the extender's own ``/prioritize`` wall time
(its ``eams_extender_request_duration_seconds``), and for the EAMS phases how many bound pods
went to the node the auction cleared for them (the decision record's ``cleared_node`` against
the node the watch saw bound). The extender runs with ``--record`` (the check needs it) and, by
default, writes the ``eams.io/*`` annotations as it then does (a PATCH a pod: kube-apiserver and
etcd work, and a ``MODIFIED`` event to every pod watch); ``--no-annotate`` runs it without them,
as the shipped Deployment (no ``--record``) runs. The load average is printed at each phase.
A run ends with the ratios EAMS / reference and gated / reference: pods/s, and CPU a pod of
kube-scheduler and of the whole system (kube-scheduler, kube-apiserver, etcd and, for EAMS, the
extender); ``--repeat N`` runs N times on the same control plane and prints the median ratios.

Shapes (``--shape``): ``uniform`` 250m CPU / 128Mi each; ``trace`` the CPU and memory requests
of the Alibaba GPU-2023 pod list in order (``cluster_traces/``, its sizes divided by
``TRACE_SCALE``: its pods were sized for 96-core GPU servers, these nodes have 16 cores);
``job`` identical pods owned by one (suspended) Job of the phase, as a Job controller makes them.

Caveats, named with every figure: the machine has 2 cores shared by every process above (and by
other work), so the reference's pods/s is often what the load generator and kube-apiserver can
create, not kube-scheduler's ceiling (the ratios are then upper bounds of the EAMS share); the
nodes never change and no kubelet runs (a friendlier setting than a live cluster).

Usage::

    .venv/bin/python benchmarks/kube_pace.py [--nodes 1000] [--rate 100] [--duration-s 30]
        [--saturate-rate 300] [--saturate-s 20] [--shape uniform|trace|job] [--repeat 1]
        [--no-gates] [--window-ms 200] [--keep DIR] [--py-spy DIR]

Measured figures: the README's VT-1 section and ``scheduler/extender/README.md``.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import msgspec
import numpy as np
from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from eams.datasets import data_file  # noqa: E402
from eams.procstat import process_cpu_s  # noqa: E402
from eams.scheduler.bench.traces import DEFAULT_PATHS, read_gpu2023  # noqa: E402
from eams.scheduler.record import Bound, read_records  # noqa: E402
from tests.servers.kube_binaries import TARBALL, k8s_dir, unpacked  # noqa: E402
from tests.servers.kube_control_plane import ControlPlane, apiserver_client, eventually  # noqa: E402
from tests.servers.kube_documents import create_node  # noqa: E402
from tests.servers.kube_extender import (  # noqa: E402
    GateFallbackProcess,
    KubeExtender,
    TelemetryFeeder,
    write_calibration,
)
from tests.servers.kube_scheduler import (  # noqa: E402
    KubeScheduler,
    reference_config,
    shipped_config,
    with_market_wakes,
)

ACCOUNT = "kube-system/eams-scheduler"
"""What the extender and both kube-schedulers act as (the shipped service account)."""
FALLBACK_ACCOUNT = "kube-system/eams-gate-fallback"
"""What ``eams extender fallback`` acts as beside the gated phases (its shipped account)."""
EAMS = "eams-scheduler"
REFERENCE = "reference-scheduler"
GATED = "eams-gated"
"""The gate integration's phases: pods of the :data:`EAMS` profile carrying the market's gate."""
MARKET_GATE = "eams.io/market"
SYSTEM = ("kube-apiserver", "etcd", "extender")
"""The processes besides kube-scheduler whose CPU a pod is the system's (the extender only for
the EAMS and gated phases: the reference needs none)."""
PODS = "/api/v1/namespaces/default/pods"
JOBS = "/apis/batch/v1/namespaces/default/jobs"
LABEL = "pace"
NODE_RESOURCES = {"cpu": "16", "memory": "64Gi", "pods": "110"}
CALIBRATION_CLASSES_W = ((40.0, 160.0), (60.0, 250.0), (80.0, 300.0), (100.0, 420.0))
"""(P_idle, P_max) W of the four node classes, node i in class i mod 4."""
HEADROOM = 0.6
TRACE_SCALE = 16
LOADGEN_THREADS = 32
SETUP_THREADS = 16
WATCH_TIMEOUT_S = 5


# -- the world --------------------------------------------------------------------------------


def node_names(count: int) -> list[str]:
    """``pace-00000`` … in order."""
    return [f"pace-{i:05d}" for i in range(count)]


def _node_document(name: str) -> dict[str, Any]:
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    ready = {
        "type": "Ready",
        "status": "True",
        "reason": "KubeletReady",
        "message": "kubelet is posting ready status (benchmark)",
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
    }
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
    }
    return {
        "metadata": {"name": name, "labels": labels},
        "status": {
            "capacity": NODE_RESOURCES,
            "allocatable": NODE_RESOURCES,
            "conditions": [ready],
        },
    }


def make_nodes(plane: ControlPlane, names: list[str], calibrations: Path) -> float:
    """Create the Ready nodes and write their calibrations; the seconds it took."""
    started = time.monotonic()
    calibrations.mkdir(parents=True, exist_ok=True)
    for i, name in enumerate(names):
        write_calibration(calibrations, name, *CALIBRATION_CLASSES_W[i % 4])
    with plane.client(timeout_s=60) as admin, ThreadPoolExecutor(SETUP_THREADS) as pool:
        for _ in pool.map(lambda n: create_node(admin, _node_document(n)), names):
            pass
    return time.monotonic() - started


def pod_requests(shape: str, count: int) -> list[tuple[str, str]]:
    """``count`` (cpu, memory) requests of ``shape`` (module docstring), as quantities."""
    if shape in ("uniform", "job"):
        return [("250m", "128Mi")] * count
    _, rows, _ = read_gpu2023(data_file(DEFAULT_PATHS["alibaba-gpu-2023"]))
    sizes = [
        (max(10, round(cpu * 1000 / TRACE_SCALE)), max(16, round(mem / TRACE_SCALE)))
        for _, cpu, mem, _ in rows
    ]
    return [(f"{c}m", f"{m}Mi") for c, m in (sizes[i % len(sizes)] for i in range(count))]


# -- the load generator, in a process of its own ----------------------------------------------


@dataclass(frozen=True)
class Plan:
    """One phase's pods: ``names[i]`` created ``i / rate`` s after the start, with requests
    ``requests[i]``, for ``scheduler``, labelled ``pace=TAG``, owned by ``owner`` if given,
    carrying the market's scheduling gate if ``gated``."""

    tag: str
    scheduler: str
    rate: float
    names: list[str]
    requests: list[tuple[str, str]]
    owner: dict[str, Any] | None = None
    gated: bool = False


def pod_document(plan: Plan, i: int) -> dict[str, Any]:
    """Pod ``plan.names[i]`` as the load generator posts it."""
    cpu, memory = plan.requests[i]
    meta: dict[str, Any] = {"name": plan.names[i], "labels": {LABEL: plan.tag}}
    if plan.owner is not None:
        meta["ownerReferences"] = [plan.owner]
        meta["labels"]["job-name"] = plan.owner["name"]
    container = {
        "name": "c",
        "image": "registry.k8s.io/pause:3.10",
        "resources": {"requests": {"cpu": cpu, "memory": memory}},
    }
    spec: dict[str, Any] = {
        "schedulerName": plan.scheduler,
        "containers": [container],
        "terminationGracePeriodSeconds": 0,
    }
    if plan.gated:
        spec["schedulingGates"] = [{"name": MARKET_GATE}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


class LoadGenerator:
    """Creates a :class:`Plan`'s pods open-loop (runs in its own process, :func:`loadgen_main`)."""

    def __init__(self, url: str, token: str, ca: str) -> None:
        self.client = apiserver_client(url, token, ca, 60.0, LOADGEN_THREADS)

    def run(self, plan: Plan) -> dict[str, Any]:
        """Post every pod at its due time; ``created`` (name → monotonic s before its POST),
        ``errors`` (first few messages), ``late_p95_ms`` (start lateness) and ``elapsed_s``."""
        created: dict[str, float] = {}
        errors: list[str] = []
        late: list[float] = []
        lock = threading.Lock()
        start = time.monotonic()

        def one(i: int) -> None:
            began = time.monotonic()
            answer = self.client.post(PODS, json=pod_document(plan, i))
            with lock:
                late.append(began - start - i / plan.rate)
                if answer.is_success:
                    created[plan.names[i]] = began
                else:
                    errors.append(f"{answer.status_code} {answer.text[:200]}")

        with ThreadPoolExecutor(LOADGEN_THREADS) as pool:
            for i in range(len(plan.names)):
                wait = start + i / plan.rate - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                pool.submit(one, i)
        lateness = np.array(late) if late else np.zeros(1)
        return {
            "created": created,
            "errors": errors[:5],
            "error_count": len(errors),
            "late_p95_ms": float(np.percentile(lateness, 95) * 1e3),
            "elapsed_s": time.monotonic() - start,
        }


def loadgen_main(conn: Any, url: str, token: str, ca: str) -> None:
    """The load generator's process: each :class:`Plan` received is run and its result sent
    back; ``None`` ends it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the harness stops it
    generator = LoadGenerator(url, token, ca)
    conn.send("ready")
    while (plan := conn.recv()) is not None:
        conn.send(generator.run(plan))


# -- the binds, from a pod watch ----------------------------------------------------------------


class BindWatch:
    """Watches the pods with a node (``fieldSelector=spec.nodeName!=``) from a thread: a pod
    enters that selection when it is bound, so its first event is its bind; ``bound`` maps its
    name to (monotonic s the event arrived, node). Watches of ``WATCH_TIMEOUT_S`` seconds are
    chained by resourceVersion, so :meth:`stop` returns within that."""

    def __init__(self, plane: ControlPlane) -> None:
        self.client = plane.client(timeout_s=WATCH_TIMEOUT_S + 30)
        self.bound: dict[str, tuple[float, str]] = {}
        self.errors: list[str] = []
        self._stopping = threading.Event()
        listed = self.client.get(PODS, params={"limit": 1})
        listed.raise_for_status()
        self._version = listed.json()["metadata"]["resourceVersion"]
        self._thread = threading.Thread(target=self._run, name="bind-watch", daemon=True)
        self.tid = 0

    def start(self) -> BindWatch:
        self._thread.start()
        eventually(lambda: self.tid, 5, "the bind watch's thread")
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join()
        self.client.close()

    def _run(self) -> None:
        self.tid = threading.get_native_id()
        params = {
            "watch": "1",
            "fieldSelector": "spec.nodeName!=",
            "labelSelector": LABEL,
            "timeoutSeconds": str(WATCH_TIMEOUT_S),
            "allowWatchBookmarks": "true",
        }
        decode = msgspec.json.Decoder().decode
        while not self._stopping.is_set():
            try:
                with self.client.stream(
                    "GET", PODS, params={**params, "resourceVersion": self._version}
                ) as answer:
                    answer.raise_for_status()
                    for line in answer.iter_lines():
                        if not line:
                            continue
                        event = decode(line)
                        pod = event["object"]
                        self._version = pod["metadata"]["resourceVersion"]
                        if event["type"] == "ADDED":
                            name = pod["metadata"]["name"]
                            if name not in self.bound:
                                self.bound[name] = (time.monotonic(), pod["spec"]["nodeName"])
                        elif event["type"] == "ERROR":  # 410 Gone: start from now
                            self.errors.append(str(pod.get("message")))
                            self._version = self._relist()
            except httpx.HTTPError as error:
                self.errors.append(repr(error))
                time.sleep(0.5)

    def _relist(self) -> str:
        listed = self.client.get(PODS, params={"limit": 1})
        listed.raise_for_status()
        return str(listed.json()["metadata"]["resourceVersion"])


# -- one run ------------------------------------------------------------------------------------


@dataclass
class World:
    """What a run acts on: the control plane, the extender, both kube-schedulers, the load
    generator's pipe and the bind watch."""

    plane: ControlPlane
    extender: KubeExtender
    feeder: TelemetryFeeder
    eams: KubeScheduler
    reference: KubeScheduler
    loadgen: Any
    loadgen_pid: int
    watch: BindWatch
    nodes: int
    fallback: GateFallbackProcess | None = None
    profile_dir: Path | None = None
    phases: int = 0

    def pids(self) -> dict[str, int]:
        assert self.extender.process and self.eams.process and self.reference.process
        assert self.plane.apiserver.process and self.plane.etcd.process
        return {
            "extender": self.extender.process.pid,
            "kube-scheduler": self.eams.process.pid,
            "reference kube-scheduler": self.reference.process.pid,
            "kube-apiserver": self.plane.apiserver.process.pid,
            "etcd": self.plane.etcd.process.pid,
            "load generator": self.loadgen_pid,
        }

    def cpu(self) -> dict[str, float]:
        """CPU seconds so far of each process, and of the harness's watch thread."""
        out = {k: process_cpu_s(p) for k, p in self.pids().items()}
        out["bind watch"] = process_cpu_s("self", self.watch.tid)
        return out


@dataclass
class PhaseResult:
    """One phase's figures (module docstring); times in s, CPU in s."""

    profile: str
    rate: float
    window_s: float
    pods: int
    created: int
    create_errors: int
    late_p95_ms: float
    bound_in_window: int
    bound: int
    latencies_s: np.ndarray
    cpu_s: dict[str, float]
    cpu_pods: int
    load: tuple[float, float, float]
    honoured: int | None = None
    joined: int | None = None
    prioritize_calls: float = 0.0
    prioritize_s: float = 0.0
    clearings: float = 0.0
    pods_cleared: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def pods_per_s(self) -> float:
        """Pods bound by the end of the window over its length."""
        return self.bound_in_window / self.window_s

    def percentile_s(self, q: float) -> float:
        """The q-th percentile of creation → bind, ``inf`` when it falls on an unbound pod."""
        values = np.sort(self.latencies_s)
        rank = int(np.ceil(q / 100 * self.created)) - 1
        return float(values[rank]) if 0 <= rank < values.size else float("inf")

    def cpu_ms_per_pod(self, process: str) -> float:
        return 1e3 * self.cpu_s[process] / max(1, self.cpu_pods)

    @property
    def scheduler_key(self) -> str:
        """The kube-scheduler process that bound this phase's pods."""
        return "reference kube-scheduler" if self.profile == REFERENCE else "kube-scheduler"

    def system_ms_per_pod(self) -> float:
        """CPU ms a pod of kube-scheduler and :data:`SYSTEM` (no extender for the reference)."""
        parts = [self.scheduler_key, *SYSTEM]
        if self.profile == REFERENCE:
            parts.remove("extender")
        return sum(self.cpu_ms_per_pod(p) for p in parts)


def _counts(extender: KubeExtender) -> tuple[float, float, float, float]:
    """(calls, seconds) of ``/prioritize`` answered so far and (clearings, pods cleared) —
    the extender's own histograms ``eams_extender_request_duration_seconds`` and
    ``eams_extender_batch_pods``."""
    calls = seconds = clearings = cleared = 0.0
    for family in text_string_to_metric_families(extender.metrics()):
        for s in family.samples:
            if family.name == "eams_extender_request_duration_seconds":
                if s.labels.get("path") == "/prioritize" and s.name.endswith("_count"):
                    calls += s.value
                elif s.labels.get("path") == "/prioritize" and s.name.endswith("_sum"):
                    seconds += s.value
            elif family.name == "eams_extender_batch_pods":
                if s.name.endswith("_count"):
                    clearings += s.value
                elif s.name.endswith("_sum"):
                    cleared += s.value
    return calls, seconds, clearings, cleared


def _owner(world: World, tag: str) -> dict[str, Any]:
    """A suspended Job named ``tag`` (no Job controller runs: it makes no pods itself), as the
    owner reference of the phase's pods."""
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": tag},
        "spec": {
            "suspend": True,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
                }
            },
        },
    }
    with world.plane.client() as admin:
        made = admin.post(JOBS, json=job)
        made.raise_for_status()
    uid = made.json()["metadata"]["uid"]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": tag,
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


@contextmanager
def _py_spy(world: World, tag: str, seconds: float) -> Iterator[None]:
    """py-spy sampling the extender for ``seconds`` meanwhile (``--py-spy DIR``, py-spy on the
    PATH or beside this Python; raw collapsed stacks in ``DIR/TAG.txt``); nothing when
    ``seconds`` is 0 (the reference's phases)."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    process = world.extender.process
    if seconds <= 0 or world.profile_dir is None or process is None or not Path(spy).exists():
        yield
        return
    out = world.profile_dir / f"{tag}.txt"
    argv = [
        spy,
        "record",
        "--pid",
        str(process.pid),
        "--duration",
        str(max(1, int(seconds))),
        "--rate",
        "200",
        "--format",
        "raw",
        "--output",
        str(out),
        "--nonblocking",
    ]
    with subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as spying:
        try:
            yield
        finally:
            spying.wait(timeout=seconds + 30)


def run_phase(
    world: World,
    profile: str,
    rate: float,
    window_s: float,
    drain_s: float,
    shape: str,
    saturating: bool,
) -> PhaseResult:
    """One phase (module docstring): ``profile`` is :data:`EAMS`, :data:`GATED` or
    :data:`REFERENCE`. A saturating phase is measured up to the end of its window; the other
    waits up to ``drain_s`` more for every pod to be bound and is measured up to the last
    bind."""
    world.phases += 1
    tag = f"p{world.phases:02d}-{ {EAMS: 'eams', GATED: 'gate', REFERENCE: 'ref'}[profile] }"
    count = round(rate * window_s)
    names = [f"{tag}-{i:05d}" for i in range(count)]
    owner = _owner(world, tag) if shape == "job" else None
    scheduler = REFERENCE if profile == REFERENCE else EAMS
    requests = pod_requests(shape, count)
    plan = Plan(tag, scheduler, rate, names, requests, owner, gated=profile == GATED)
    counts0 = _counts(world.extender)
    cpu0 = world.cpu()
    with _py_spy(world, tag, window_s if profile != REFERENCE else 0):
        world.loadgen.send(plan)
        made = world.loadgen.recv()
    created: dict[str, float] = made["created"]
    bound = world.watch.bound
    start = min(created.values(), default=time.monotonic())
    end_window = start + window_s
    if saturating:
        time.sleep(max(0.0, end_window - time.monotonic()))
        cpu1, end = world.cpu(), end_window
    else:
        deadline = time.monotonic() + drain_s
        while time.monotonic() < deadline and not all(n in bound for n in created):
            time.sleep(0.1)
        cpu1 = world.cpu()
        end = max((bound[n][0] for n in created if n in bound), default=end_window)
    calls, seconds, clearings, cleared = (
        b - a for a, b in zip(counts0, _counts(world.extender), strict=True)
    )
    load = os.getloadavg()
    mine = {n: bound[n] for n in created if n in bound}
    latencies = np.array([mine[n][0] - created[n] for n in mine])
    in_window = sum(1 for t, _ in mine.values() if t <= end_window)
    cpu_pods = sum(1 for t, _ in mine.values() if t <= end)
    result = PhaseResult(
        profile,
        rate,
        window_s,
        count,
        len(created),
        made["error_count"],
        made["late_p95_ms"],
        in_window,
        len(mine),
        latencies,
        {k: cpu1[k] - cpu0[k] for k in cpu0},
        cpu_pods,
        load,
        prioritize_calls=calls,
        prioritize_s=seconds,
        clearings=clearings,
        pods_cleared=cleared,
        notes=made["errors"],
    )
    if profile != REFERENCE:
        result.honoured, result.joined = _honoured(world, tag, mine)
    _clear(world, tag, owner is not None)
    return result


def _honoured(world: World, tag: str, bound: dict[str, tuple[float, str]]) -> tuple[int, int]:
    """(bound pods on the node the auction cleared for them, bound pods the decision record
    joined), the node as the bind watch saw it against the record's ``cleared_node``; waits up
    to 20 s for the record's ``bound`` lines of the pods bound (its writer is a thread)."""
    deadline = time.monotonic() + 20
    cleared = _cleared_nodes(world.extender.record, tag)
    while time.monotonic() < deadline and not set(bound) <= set(cleared):
        time.sleep(1.0)
        cleared = _cleared_nodes(world.extender.record, tag)
    joined = [n for n in bound if n in cleared]
    return sum(bound[n][1] == cleared[n] for n in joined), len(joined)


def _cleared_nodes(record: Path, tag: str) -> dict[str, str | None]:
    """Pod name → ``cleared_node`` of the record's ``bound`` lines of the phase ``tag``."""
    if not record.exists():
        return {}
    return {
        r.pod.name: r.cleared_node
        for r in read_records(record).records
        if isinstance(r, Bound) and tag in r.pod.name
    }


def _clear(world: World, tag: str, job: bool) -> None:
    """Delete the phase's pods (and Job) and wait until they are gone.

    One collection DELETE (grace 0) at a time, again until none is left: kube-apiserver drops
    the connection of one that outlasts its request timeout (60 s; thousands of pods, each
    deletion fanned out to every watch) while it goes on deleting.

    Raises
    ------
    AssertionError
        Pods of the phase were left after 300 s.
    """
    selector = {"labelSelector": f"{LABEL}={tag}"}
    deadline = time.monotonic() + 300
    with world.plane.client(timeout_s=120) as admin:
        if job:
            admin.delete(f"{JOBS}/{tag}", params={"propagationPolicy": "Orphan"})
        while True:
            try:
                admin.delete(PODS, params={**selector, "gracePeriodSeconds": "0"})
                listed = admin.get(PODS, params={**selector, "limit": 1})
                if listed.is_success and not listed.json()["items"]:
                    break
            except httpx.HTTPError:
                pass  # dropped at the request timeout; the deletion goes on
            if time.monotonic() > deadline:
                raise AssertionError(f"the pods of {tag} were not all deleted within 300 s")
            time.sleep(1.0)
    time.sleep(2.0)  # the watches (kube-schedulers', the extender's) take the deletions


# -- reporting ------------------------------------------------------------------------------------


def _ms(seconds: float) -> str:
    if seconds == float("inf"):
        return "> drain"
    return f"{seconds * 1e3:,.0f} ms" if seconds < 1 else f"{seconds:.1f} s"


def describe(r: PhaseResult) -> str:
    """One phase as a line of figures."""
    who = {
        EAMS: "EAMS profile",
        GATED: "EAMS gated (released pinned)",
        REFERENCE: "reference (no extenders)",
    }[r.profile]
    cpu = ", ".join(
        f"{name} {r.cpu_ms_per_pod(key):.1f}"
        for name, key in (
            ("kube-scheduler", r.scheduler_key),
            ("kube-apiserver", "kube-apiserver"),
            ("extender", "extender"),
            ("etcd", "etcd"),
            ("load generator", "load generator"),
            ("bind watch", "bind watch"),
        )
    )
    line = (
        f"  {who} at {r.rate:g} pods/s offered for {r.window_s:g} s: {r.created}/{r.pods} "
        f"created ({r.create_errors} errors, start late p95 {r.late_p95_ms:.0f} ms), "
        f"{r.bound} bound; {r.pods_per_s:.1f} pods/s bound in the window; creation -> bind p50 "
        f"{_ms(r.percentile_s(50))} p99 {_ms(r.percentile_s(99))}; CPU ms a pod: {cpu}"
    )
    line += f" (system {r.system_ms_per_pod():.1f})"
    if r.profile != REFERENCE:
        mean = 1e3 * r.prioritize_s / r.prioritize_calls if r.prioritize_calls else 0.0
        line += (
            f"; /prioritize {mean:.2f} ms mean over {r.prioritize_calls:,.0f} calls; "
            f"honoured {r.honoured}/{r.joined} in the record of {r.bound} bound; "
            f"{r.pods_cleared / max(r.clearings, 1):.1f} pods a clearing"
        )
    line += f"; load {' '.join(f'{x:.2f}' for x in r.load)}"
    if r.notes:
        line += f"; create errors e.g. {r.notes[0]}"
    return line


def profiles(args: argparse.Namespace) -> tuple[str, ...]:
    """The phases of each mode, in order: EAMS, gated (``--gates``), reference."""
    return (EAMS, GATED, REFERENCE) if args.gates else (EAMS, REFERENCE)


def ratios(e: PhaseResult, r: PhaseResult) -> dict[str, float]:
    """``e`` against the reference ``r``: pods/s bound, kube-scheduler's and the system's CPU
    a pod."""
    return {
        "pods/s": e.pods_per_s / max(r.pods_per_s, 1e-9),
        "kube-scheduler CPU": e.cpu_ms_per_pod(e.scheduler_key)
        / max(r.cpu_ms_per_pod(r.scheduler_key), 1e-9),
        "system CPU": e.system_ms_per_pod() / max(r.system_ms_per_pod(), 1e-9),
    }


def one_run(world: World, args: argparse.Namespace) -> dict[str, PhaseResult]:
    """The run's phases (:func:`profiles` at each mode; no saturating ones with
    ``--saturate-s 0``), printed as they end."""
    out: dict[str, PhaseResult] = {}
    modes = [("paced", args.rate, args.duration_s, False)]
    if args.saturate_s > 0:
        modes.append(("saturating", args.saturate_rate, args.saturate_s, True))
    for mode, rate, window_s, saturating in modes:
        for profile in profiles(args):
            result = run_phase(world, profile, rate, window_s, args.drain_s, args.shape, saturating)
            out[f"{mode} {profile}"] = result
            print(describe(result), flush=True)
            if profile == GATED and world.fallback is not None:
                print(f"  fallback (AR-5): {len(world.fallback.released())} gated pods released "
                      f"unpinned so far, the extender's Lease lapsed {world.fallback.lapses()} "
                      "times", flush=True)  # fmt: skip
    for mode in ("paced", "saturating"):
        for profile in profiles(args)[:-1]:
            if f"{mode} {profile}" not in out:
                continue
            e, r = out[f"{mode} {profile}"], out[f"{mode} {REFERENCE}"]
            against = ratios(e, r)
            print(
                f"  => {mode}: {profile} / reference pods/s bound {e.pods_per_s:.1f} / "
                f"{r.pods_per_s:.1f} = {against['pods/s']:.2f}x; p99 "
                f"{_ms(e.percentile_s(99))} / {_ms(r.percentile_s(99))}; CPU a pod "
                f"kube-scheduler {against['kube-scheduler CPU']:.2f}x, system "
                f"{against['system CPU']:.2f}x",
                flush=True,
            )
    return out


@contextmanager
def world_up(binaries: Path, root: Path, nodes: int, args: argparse.Namespace) -> Iterator[World]:
    """Everything of the module docstring started in ``root``, and stopped after."""
    (root / "plane").mkdir(parents=True)
    with ControlPlane(binaries, root / "plane") as plane:
        took = make_nodes(plane, node_names(nodes), root / "calibrations")
        print(f"  {nodes:,} Ready nodes made in {took:.0f} s", flush=True)
        kubeconfig = plane.kubeconfig(ACCOUNT)
        extender = KubeExtender(root, kubeconfig, root / "calibrations", root / "record")
        if not args.annotate:
            extender.argv.append("--no-annotate")
        extender.argv += ["--window-ms", f"{args.window_ms:g}"]  # the last one given counts
        feeder = TelemetryFeeder(extender.url, period_s=args.telemetry_period_s)
        feeder.headroom.update(dict.fromkeys(node_names(nodes), HEADROOM))
        config = shipped_config(kubeconfig, extender.url)
        if args.filter:  # the opt-in of market wakes: a /filter call per pod too
            with_market_wakes(config)
        else:
            extender.argv.append("--no-market-wakes")
        eams = KubeScheduler(binaries, root, config, EAMS)
        reference = KubeScheduler(
            binaries, root, reference_config(kubeconfig, REFERENCE), REFERENCE
        )
        spawn = multiprocessing.get_context("spawn")
        conn, theirs = spawn.Pipe()
        loadgen = spawn.Process(
            target=loadgen_main,
            daemon=True,
            args=(theirs, plane.url, plane.identity().token, str(plane.ca)),
        )
        fallback = (
            GateFallbackProcess(root, plane.kubeconfig(FALLBACK_ACCOUNT)) if args.gates else None
        )
        watch = None
        try:
            extender.start()
            feeder.start()
            feeder.post()
            eventually(extender.ready, 120, "the extender's /readyz")
            if fallback is not None:  # the active install runs it beside the gated pods
                fallback.start()
            eams.start()
            reference.start()
            loadgen.start()
            assert conn.recv() == "ready"
            assert loadgen.pid is not None
            watch = BindWatch(plane).start()
            world = World(
                plane,
                extender,
                feeder,
                eams,
                reference,
                conn,
                loadgen.pid,
                watch,
                nodes,
                fallback,
                args.py_spy,
            )
            yield world
        finally:
            if watch is not None:
                watch.stop()
            if loadgen.is_alive():
                conn.send(None)
                loadgen.join(10)
            feeder.stop()
            for server in (eams, reference, extender, fallback):
                if server is not None:
                    server.stop()


def parser() -> argparse.ArgumentParser:
    """The command line (module docstring); ``benchmarks/vt1_latency.py`` takes it too."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=100.0, help="pods/s of the paced phases")
    parser.add_argument("--duration-s", type=float, default=30.0)
    parser.add_argument(
        "--drain-s",
        type=float,
        default=60.0,
        help="how long a paced phase waits for its last binds",
    )
    parser.add_argument("--saturate-rate", type=float, default=300.0)
    parser.add_argument("--saturate-s", type=float, default=20.0, help="0: no saturating phases")
    parser.add_argument("--shape", choices=("uniform", "trace", "job"), default="uniform")
    parser.add_argument("--telemetry-period-s", type=float, default=5.0)
    parser.add_argument(
        "--window-ms",
        type=float,
        default=200.0,
        help="the extender's batch window W (the study's 200 ms); a gated pod waits up to W",
    )
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument(
        "--annotate",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="the extender writes the eams.io/* annotations onto each bound pod (its default "
        "with --record; the shipped Deployment runs without --record, so without them)",
    )
    parser.add_argument(
        "--filter",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="kube-scheduler also calls the extender's /filter (filterVerb, the opt-in of "
        "market wakes); default: the shipped profile, prioritize only, the extender with "
        "--no-market-wakes",
    )
    parser.add_argument(
        "--gates",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also run the gate integration's phases (pods with the eams.io/market gate)",
    )
    parser.add_argument("--keep", type=Path, help="keep the logs and record in this folder")
    parser.add_argument(
        "--py-spy",
        type=Path,
        help="sample the extender with py-spy during each EAMS phase, into DIR",
    )
    return parser


def measure(args: argparse.Namespace) -> list[dict[str, PhaseResult]]:
    """Run ``--repeat`` runs on one world (:func:`world_up`), printing their figures and the
    median ratios EAMS / reference; each run's phases by ``"MODE PROFILE"`` (``"paced
    eams-scheduler"``, ``"saturating reference-scheduler"``, …).

    Raises
    ------
    FileNotFoundError
        The control plane's tarball is missing (``$EAMS_K8S_DIR``).
    """
    tarball = k8s_dir() / TARBALL
    if not tarball.is_file():
        raise FileNotFoundError(f"no control plane: {tarball} is missing ($EAMS_K8S_DIR)")
    if args.py_spy is not None:
        args.py_spy.mkdir(parents=True, exist_ok=True)
    binaries = unpacked(tarball)
    print(
        f"host: {os.cpu_count()} cores, load {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
        f"{args.nodes:,} nodes, shape {args.shape}, telemetry every "
        f"{args.telemetry_period_s:g} s",
        flush=True,
    )
    root = Path(tempfile.mkdtemp(prefix="eams-kube-pace-"))
    runs = []
    try:
        with world_up(binaries, root, args.nodes, args) as world:
            for k in range(args.repeat):
                print(f"== run {k + 1}/{args.repeat} ==", flush=True)
                runs.append(one_run(world, args))
    finally:
        if args.keep is not None:
            shutil.copytree(root, args.keep, dirs_exist_ok=True)
        shutil.rmtree(root, ignore_errors=True)
    for mode in ("paced", "saturating"):
        for profile in profiles(args)[:-1]:
            found = [
                ratios(run[f"{mode} {profile}"], run[f"{mode} {REFERENCE}"])
                for run in runs
                if f"{mode} {profile}" in run
            ]
            for what in found[0] if found else ():
                values = [f[what] for f in found]
                print(
                    f"median {profile} / reference {what}, {mode}, over {len(values)} run(s): "
                    f"{statistics.median(values):.2f}x ({', '.join(f'{v:.2f}' for v in values)})"
                )
    print(f"host load after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    return runs


def main(argv: list[str] | None = None) -> int:
    """The command: :func:`measure`; exit 1 when it cannot run or is interrupted."""
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        measure(parser().parse_args(argv))
    except FileNotFoundError as error:
        print(error, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted: everything is stopped", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
