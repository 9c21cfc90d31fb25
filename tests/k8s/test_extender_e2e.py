"""End to end (issue 31): the real kube-apiserver 1.36, the real kube-scheduler 1.36 started
with the shipped ``eams-scheduler`` configuration (only its kubeconfig and the extender's
address changed), the real extender process (``eams extender serve --mode active --watch
--record``, acting as the shipped ``kube-system/eams-scheduler`` service account, so a verb the
shipped RBAC lacks fails its watch, taint patches or annotations), and emulated nodes with
calibrations and fresh telemetry.

One control plane, scheduler, extender and three nodes (``e2e-a`` the most efficient by its
calibration, then ``e2e-b``, ``e2e-c``) serve the whole module; a test adds the nodes it needs
and deletes its pods. The extender runs in ``active`` mode: the shipped Deployment starts it in
``shadow`` (neutral scores, no taint), where nothing of what these tests check happens.

Latencies are measured here, by polling the API server every 50 ms with this process's
monotonic clock (creation = just before the pod's POST), and printed (``-s`` shows them).
"""

from __future__ import annotations

import json
import re
import statistics
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from eams.kube.names import ASLEEP_TAINT, MARKET_GATE, NO_SCHEDULE
from eams.scheduler.record.annotations import CLEARED_NODE
from tests.servers.kube_control_plane import ControlPlane, eventually
from tests.servers.kube_extender import (
    GateFallbackProcess,
    KubeExtender,
    TelemetryFeeder,
    write_calibration,
)
from tests.servers.kube_node import NOT_READY, NodeEmulator, remove_taint, taints
from tests.servers.kube_scheduler import KubeScheduler, shipped_config

pytestmark = pytest.mark.integration  # a real kube-apiserver, kube-scheduler and extender

ACCOUNT = "kube-system/eams-scheduler"
FALLBACK_ACCOUNT = "kube-system/eams-gate-fallback"
SCHEDULER = "eams-scheduler"
FLOOR_TAINT = "eams.io/power-headroom-low"
PODS = "/api/v1/namespaces/default/pods"
# P_idle, P_max (W) per node: the auction prefers the node doing the most work per joule
CALIBRATIONS = {
    "e2e-a": (30.0, 90.0),
    "e2e-b": (60.0, 200.0),
    "e2e-c": (90.0, 300.0),
    "e2e-low": (20.0, 60.0),
    "e2e-asleep": (10.0, 40.0),
}
SHARED_NODES = ("e2e-a", "e2e-b", "e2e-c")
HEALTHY = 0.6  # headroom: far above the floor (0.05) and its recovery (0.10)
UNDER_FLOOR = 0.02
AR5_LIMIT_S = 5.0


@dataclass
class Cluster:
    plane: ControlPlane
    admin: httpx.Client
    extender: KubeExtender
    scheduler: KubeScheduler
    fallback: GateFallbackProcess
    feeder: TelemetryFeeder
    nodes: dict[str, NodeEmulator]

    def up(self, name: str, headroom: float, taint: dict[str, str] | None = None) -> NodeEmulator:
        """Emulate node ``name`` reporting ``headroom``; admission's not-ready taint is swapped
        for ``taint`` (one patch: the node is never untainted in between) or just removed."""
        self.feeder.set(name, headroom)
        node = NodeEmulator(self.admin, name, cpu="4", memory="8Gi", period_s=2.0).up()
        self.nodes[name] = node
        if taint is None:
            remove_taint(self.admin, name)
        else:
            eventually(lambda: swap_taint(self.admin, name, NOT_READY, taint), 10, "taint swap")
        eventually(lambda: NOT_READY not in {k for k, _ in taints(node.node())}, 10, "ready")
        return node

    def down(self, name: str) -> None:
        self.nodes.pop(name).stop()
        with self.feeder._lock:
            self.feeder.headroom.pop(name, None)

    def ensure_extender(self) -> None:
        """Start the extender again if a test killed it, and wait until it is ready and the
        fallback has seen its Lease renewed (else it would release gated pods unpinned)."""
        if self.extender.process is None or self.extender.process.poll() is not None:
            self.extender.start()
            self.feeder.post()
        eventually(self.extender.ready, 30, "the extender's /readyz")
        eventually(lambda: not self.fallback.lapsed(), 30, "the fallback seeing the Lease")


@pytest.fixture(scope="module")
def cluster(control_plane: ControlPlane) -> Iterator[Cluster]:
    root = control_plane.root / "e2e"
    (root / "calibrations").mkdir(parents=True)
    for name, (p_idle, p_max) in CALIBRATIONS.items():
        write_calibration(root / "calibrations", name, p_idle, p_max)
    extender = KubeExtender(root, control_plane.kubeconfig(ACCOUNT), root / "calibrations",
                            root / "record")  # fmt: skip
    feeder = TelemetryFeeder(extender.url)
    scheduler = KubeScheduler(control_plane.binaries, root,
                              shipped_config(control_plane.kubeconfig(ACCOUNT), extender.url),
                              "eams-scheduler")  # fmt: skip
    fallback = GateFallbackProcess(root, control_plane.kubeconfig(FALLBACK_ACCOUNT))
    with control_plane.client() as admin:
        cluster = Cluster(control_plane, admin, extender, scheduler, fallback, feeder, {})
        try:
            extender.start()
            fallback.start()
            feeder.start()
            for name in SHARED_NODES:
                cluster.up(name, HEALTHY)
            scheduler.start()
            cluster.ensure_extender()
            yield cluster
        finally:
            feeder.stop()
            scheduler.stop()
            fallback.stop()
            extender.stop()
            for node in list(cluster.nodes.values()):
                node.stop()


@pytest.fixture
def e2e(cluster: Cluster) -> Iterator[Cluster]:
    """The module's cluster with its extender running; the test's pods deleted after it."""
    cluster.ensure_extender()
    yield cluster
    cluster.admin.delete(PODS, params={"labelSelector": "e2e", "gracePeriodSeconds": 0})


def swap_taint(admin: httpx.Client, node: str, old: str, new: dict[str, str]) -> bool:
    """Replace taint ``old`` of ``node`` by ``new`` in one merge patch carrying the
    resourceVersion it was computed from; False on a 409 (the node's heartbeat or the extender
    changed it meanwhile: the caller tries again)."""
    doc = admin.get(f"/api/v1/nodes/{node}").json()
    kept = [t for t in doc["spec"].get("taints") or [] if t["key"] not in (old, new["key"])]
    patch = {"metadata": {"resourceVersion": doc["metadata"]["resourceVersion"]},
             "spec": {"taints": [new, *kept]}}  # fmt: skip
    answer = admin.patch(f"/api/v1/nodes/{node}", json=patch,
                         headers={"Content-Type": "application/merge-patch+json"})  # fmt: skip
    if answer.status_code == 409:
        return False
    answer.raise_for_status()
    return True


def create_pod(
    admin: httpx.Client,
    name: str,
    test: str,
    node: str | None = None,
    cpu: str = "100m",
    gates: tuple[str, ...] = (),
    affinity: dict[str, Any] | None = None,
) -> float:
    """Create pod ``name`` of ``eams-scheduler`` (label ``e2e=TEST``), pinned to ``node`` by a
    nodeSelector when given, with scheduling ``gates`` and ``affinity`` when given; returns
    the monotonic time just before its POST."""
    spec: dict[str, Any] = {
        "schedulerName": SCHEDULER,
        "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                        "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}}}],
    }  # fmt: skip
    if node is not None:
        spec["nodeSelector"] = {"kubernetes.io/hostname": node}
    if gates:
        spec["schedulingGates"] = [{"name": gate} for gate in gates]
    if affinity is not None:
        spec["affinity"] = affinity
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "labels": {"e2e": test}}, "spec": spec}  # fmt: skip
    before = time.monotonic()
    admin.post(PODS, json=pod).raise_for_status()
    return before


def pods(admin: httpx.Client, test: str) -> dict[str, dict[str, Any]]:
    """The pods labelled ``e2e=TEST`` by name."""
    answer = admin.get(PODS, params={"labelSelector": f"e2e={test}"})
    answer.raise_for_status()
    return {p["metadata"]["name"]: p for p in answer.json()["items"]}


def await_bound(
    admin: httpx.Client, test: str, names: Iterable[str], timeout_s: float
) -> tuple[dict[str, str], dict[str, float]]:
    """Poll every 50 ms until every pod of ``names`` has a node; returns the node and the
    monotonic time its binding was first seen, per pod."""
    wanted = set(names)
    nodes: dict[str, str] = {}
    seen: dict[str, float] = {}
    deadline = time.monotonic() + timeout_s
    while len(nodes) < len(wanted):
        now = time.monotonic()
        for name, pod in pods(admin, test).items():
            if name in wanted and name not in nodes and pod["spec"].get("nodeName"):
                nodes[name], seen[name] = pod["spec"]["nodeName"], now
        if time.monotonic() > deadline:
            missing = sorted(wanted - set(nodes))
            raise AssertionError(f"not bound within {timeout_s:.0f} s: {missing}")
        time.sleep(0.05)
    return nodes, seen


def unschedulable(admin: httpx.Client, name: str) -> str | None:
    """The PodScheduled=False message of pod ``name`` once kube-scheduler has tried it and
    found one node with a taint it does not tolerate (1.36 names no key: the test checks that
    node's taints); None before."""
    pod = admin.get(f"{PODS}/{name}").json()
    assert not pod["spec"].get("nodeName"), f"{name} bound to {pod['spec']['nodeName']}"
    for cond in pod.get("status", {}).get("conditions") or []:
        message = str(cond.get("message", ""))
        if (cond["type"], cond.get("reason")) == ("PodScheduled", "Unschedulable") and (
            "1 node(s) had untolerated taint" in message
        ):
            return message
    return None


def bound_lines(record: Path) -> dict[str, dict[str, Any]]:
    """The newest ``bound`` line of the decision record per pod name."""
    found: dict[str, dict[str, Any]] = {}
    if record.is_file():
        for line in record.read_text().splitlines():
            doc = json.loads(line)
            if doc.get("kind") == "bound":
                found[doc["pod"]["name"]] = doc
    return found


def metric(text: str, name: str, **labels: str) -> float:
    """The sum of Prometheus samples ``name`` whose labels include ``labels``."""
    total = 0.0
    for line in text.splitlines():
        match = re.match(rf"{re.escape(name)}(\{{[^}}]*\}})? (\S+)$", line)
        if match and all(f'{k}="{v}"' in (match.group(1) or "") for k, v in labels.items()):
            total += float(match.group(2))
    return total


def test_pods_are_bound_to_the_node_the_extender_cleared(e2e: Cluster) -> None:
    count = 30
    names = [f"honour-{i:02d}" for i in range(count)]
    created = {name: create_pod(e2e.admin, name, "honour") for name in names}
    nodes, seen = await_bound(e2e.admin, "honour", names, 60)

    def annotated() -> dict[str, str] | None:
        found = {n: (p["metadata"].get("annotations") or {}).get(CLEARED_NODE)
                 for n, p in pods(e2e.admin, "honour").items()}  # fmt: skip
        return found if all(found.values()) else None

    cleared = eventually(annotated, 20, "every pod's eams.io/cleared-node annotation")
    honoured = [n for n in names if nodes[n] == cleared[n]]
    records = eventually(lambda: (b := bound_lines(e2e.extender.record)).keys() >= set(names)
                         and b, 20, "a bound line per pod in the decision record")  # fmt: skip
    latencies = sorted(seen[n] - created[n] for n in names)
    spread = {node: list(nodes.values()).count(node) for node in sorted(set(nodes.values()))}
    print(f"\nhonoured {len(honoured)}/{count} = {len(honoured) / count:.0%} "
          f"(record: {sum(bool(records[n]['honoured']) for n in names)}/{count} honoured, "
          f"{sum(records[n]['scored'] is True for n in names)} scored); bound per node {spread}; "
          f"creation -> bind p50 {statistics.median(latencies):.2f} s, "
          f"max {latencies[-1]:.2f} s")  # fmt: skip
    assert honoured == names, {n: (nodes[n], cleared[n]) for n in names if n not in honoured}
    assert all(records[n]["honoured"] is True for n in names)  # the extender's own join agrees
    assert set(nodes.values()) <= set(SHARED_NODES)
    assert "forbidden" not in e2e.scheduler.log()
    metrics = e2e.extender.metrics()
    assert metric(metrics, "eams_extender_watch_up") == 3  # nodes, bound pods, pending pods
    assert metric(metrics, "eams_extender_annotation_patches_total", outcome="ok") >= count
    assert metric(metrics, "eams_extender_annotation_patches_total", outcome="error") == 0


def pinned_to(pod: dict[str, Any]) -> list[str] | None:
    """The nodes a pod's required node affinity names by ``metadata.name`` (the gate release's
    pin), ``None`` when it has no such term."""
    required = (((pod["spec"].get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})  # fmt: skip
    for term in required.get("nodeSelectorTerms") or []:
        for field in term.get("matchFields") or []:
            if field["key"] == "metadata.name":
                return list(field["values"])
    return None


def test_gated_pods_are_cleared_together_and_bound_where_the_market_pinned_them(
    e2e: Cluster,
) -> None:
    """The gate integration (issue 32): pods carrying the eams.io/market gate are cleared by
    the market in its window, released pinned to their cleared node with their eams.io/*
    annotations in the same patch, and bound there by kube-scheduler without a /prioritize
    call."""
    count = 12
    names = [f"gated-{i:02d}" for i in range(count)]
    before = e2e.extender.metrics()
    for name in names:
        create_pod(e2e.admin, name, "gated", gates=("eams.io/market",))
    nodes, _ = await_bound(e2e.admin, "gated", names, 60)

    def annotated() -> dict[str, dict[str, Any]] | None:
        found = pods(e2e.admin, "gated")
        keys = ("eams.io/cleared-node", "eams.io/clearing-id")
        ready = all(all((p["metadata"].get("annotations") or {}).get(k) for k in keys)
                    for p in found.values())  # fmt: skip
        return found if ready else None

    found = eventually(annotated, 20, "every pod's eams.io/* annotations")
    records = eventually(lambda: (b := bound_lines(e2e.extender.record)).keys() >= set(names)
                         and b, 20, "a bound line per pod in the decision record")  # fmt: skip
    after = e2e.extender.metrics()
    clearings = {n: found[n]["metadata"]["annotations"]["eams.io/clearing-id"] for n in names}
    batch_sizes = sorted((list(clearings.values()).count(c) for c in set(clearings.values())),
                         reverse=True)  # fmt: skip
    print(f"\ngated: bound per node {sorted(nodes.values())}, batch sizes {batch_sizes}")
    for name in names:
        pod = found[name]
        assert not pod["spec"].get("schedulingGates"), name
        assert pinned_to(pod) == [nodes[name]], (name, pod["spec"].get("affinity"))
        assert pod["metadata"]["annotations"]["eams.io/cleared-node"] == nodes[name]
        assert records[name]["honoured"] is True and records[name]["scored"] is True
    assert batch_sizes[0] >= 2, "no two gated pods were cleared together"
    released = metric(after, "eams_extender_gate_releases_total", outcome="pinned") - metric(
        before, "eams_extender_gate_releases_total", outcome="pinned"
    )
    assert released == count
    assert metric(after, "eams_extender_gate_releases_total", outcome="error") == 0
    asked = "eams_extender_recommendations_total"
    assert metric(after, asked) == metric(before, asked), "kube-scheduler asked the extender"
    annotated = "eams_extender_annotation_patches_total"  # the annotations went with the release
    assert metric(after, annotated) == metric(before, annotated)


def test_a_pod_another_gate_holds_waits_for_it_and_one_the_market_cannot_judge_goes_unpinned(
    e2e: Cluster,
) -> None:
    """A pod another controller's gate still holds (Kueue's admission, a quota) is not the
    market's yet: it is neither cleared nor released while that gate is on (it reserves no
    capacity, and its controller may still narrow its placement); once the gate is lifted it is
    cleared, pinned and released as any gated pod. A pod with inter-pod affinity is released
    unpinned, for kube-scheduler and the extender to place as any pod."""

    def releases(metrics: str) -> float:
        return sum(metric(metrics, "eams_extender_gate_releases_total", outcome=outcome)
                   for outcome in ("pinned", "unpinned"))  # fmt: skip

    before = e2e.extender.metrics()
    create_pod(e2e.admin, "two-gates", "gates", gates=("eams.io/market", "example.com/quota"))
    spread = {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 1,
                    "podAffinityTerm": {
                        "topologyKey": "kubernetes.io/hostname",
                        "labelSelector": {"matchLabels": {"e2e": "gates"}},
                    },
                }
            ]
        }
    }
    create_pod(e2e.admin, "with-affinity", "gates", gates=("eams.io/market",), affinity=spread)
    nodes, _ = await_bound(e2e.admin, "gates", ["with-affinity"], 60)
    assert pinned_to(pods(e2e.admin, "gates")["with-affinity"]) is None
    assert nodes["with-affinity"] in SHARED_NODES
    # two-gates arrived first: had the market taken it, it would have been released by now
    assert releases(e2e.extender.metrics()) - releases(before) == 1
    held = pods(e2e.admin, "gates")["two-gates"]
    assert [g["name"] for g in held["spec"]["schedulingGates"]] == [
        "eams.io/market", "example.com/quota"]  # fmt: skip
    assert pinned_to(held) is None and not held["spec"].get("nodeName")
    patch = {"spec": {"schedulingGates": [{"$patch": "delete", "name": "example.com/quota"}]}}
    e2e.admin.patch(f"{PODS}/two-gates", json=patch,
                    headers={"Content-Type": "application/strategic-merge-patch+json"},
                    ).raise_for_status()  # fmt: skip
    nodes, _ = await_bound(e2e.admin, "gates", ["two-gates"], 60)
    assert pinned_to(pods(e2e.admin, "gates")["two-gates"]) == [nodes["two-gates"]]
    assert nodes["two-gates"] in SHARED_NODES


def kept_off(e2e: Cluster, test: str, node: str, free: int) -> str:
    """Pods ``TEST-pinned`` (pinned to ``node``) and ``free`` unpinned ``TEST-free-i``: the free
    ones bind, none to ``node``, and kube-scheduler marks the pinned one Unschedulable; returns
    its message."""
    create_pod(e2e.admin, f"{test}-pinned", test, node=node)
    others = [f"{test}-free-{i}" for i in range(free)]
    for name in others:
        create_pod(e2e.admin, name, test)
    nodes, _ = await_bound(e2e.admin, test, others, 30)
    assert node not in nodes.values(), nodes
    return eventually(lambda: unschedulable(e2e.admin, f"{test}-pinned"), 30,
                      "kube-scheduler's verdict on the pinned pod")  # fmt: skip


def test_the_floor_taint_keeps_pods_off_and_its_removal_requeues_them(e2e: Cluster) -> None:
    low = e2e.up("e2e-low", UNDER_FLOOR)
    try:
        eventually(lambda: (FLOOR_TAINT, "NoSchedule") in taints(low.node()), 15,
                   "the extender's floor taint on e2e-low")  # fmt: skip
        message = kept_off(e2e, "floor", "e2e-low", free=5)
        assert taints(low.node()) == {(FLOOR_TAINT, "NoSchedule")}  # the untolerated one

        raised = time.monotonic()
        e2e.feeder.set("e2e-low", HEALTHY)
        # when each was first seen, polling every 20 ms: the pod, then the node (a pod seen
        # bound with its node read after it still tainted would be a binding through the taint)
        removed = bound = None
        while bound is None:
            assert time.monotonic() - raised < 30, f"taint removed at {removed}, pod not bound"
            now = time.monotonic()
            node = e2e.admin.get(f"{PODS}/floor-pinned").json()["spec"].get("nodeName")
            if removed is None and (FLOOR_TAINT, "NoSchedule") not in taints(low.node()):
                removed = now
            if node is not None:
                assert removed is not None, "bound while the node still had the floor taint"
                bound = now
            time.sleep(0.02)
        print(f"\nunschedulable: {message}\nheadroom raised -> taint removed "
              f"{removed - raised:.2f} s; taint removed -> pod bound (requeue) "
              f"{bound - removed:.3f} s (0: within one 20 ms poll)")  # fmt: skip
        pinned = {"floor-pinned": node}
        assert pinned == {"floor-pinned": "e2e-low"}
        metrics = e2e.extender.metrics()
        for action in ("add", "remove"):
            assert metric(metrics, "eams_extender_taint_patches_total", action=action,
                          outcome="ok") >= 1, action  # fmt: skip
        assert metric(metrics, "eams_extender_taint_patches_total", outcome="error") == 0
    finally:
        e2e.admin.delete(PODS, params={"labelSelector": "e2e=floor", "gracePeriodSeconds": 0})
        e2e.down("e2e-low")


def test_an_asleep_node_gets_no_pods(e2e: Cluster) -> None:
    asleep = {"key": ASLEEP_TAINT, "effect": NO_SCHEDULE}
    node = e2e.up("e2e-asleep", HEALTHY, taint=asleep)  # the most efficient node of all
    try:
        kept_off(e2e, "asleep", "e2e-asleep", free=10)
        assert taints(node.node()) == {(ASLEEP_TAINT, NO_SCHEDULE)}

        # the control: the taint alone held the pod, which binds once the node wakes
        remove_taint(e2e.admin, "e2e-asleep", ASLEEP_TAINT)
        woken = time.monotonic()
        pinned, seen = await_bound(e2e.admin, "asleep", ["asleep-pinned"], 30)
        assert pinned == {"asleep-pinned": "e2e-asleep"}
        # and it is the node the auction wants: only the taint kept the other pods off it
        after = [f"asleep-after-{i}" for i in range(3)]
        for name in after:
            create_pod(e2e.admin, name, "asleep")
        nodes, _ = await_bound(e2e.admin, "asleep", after, 30)
        print(
            f"\nasleep taint removed -> pinned pod bound {seen['asleep-pinned'] - woken:.2f} s;"
            f" pods created after it bound to {sorted(nodes.values())}"
        )
        assert set(nodes.values()) == {"e2e-asleep"}
    finally:
        e2e.admin.delete(PODS, params={"labelSelector": "e2e=asleep", "gracePeriodSeconds": 0})
        e2e.down("e2e-asleep")


def test_ar5_with_the_extender_killed_pods_bind_by_the_default_path_within_5_s(
    e2e: Cluster,
) -> None:
    e2e.extender.kill()
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{e2e.extender.url}/healthz")  # nothing listens at the extender's address
    count = 20
    names = [f"ar5-{i:02d}" for i in range(count)]
    created = {name: create_pod(e2e.admin, name, "ar5") for name in names}
    nodes, seen = await_bound(e2e.admin, "ar5", names, 30)
    latencies = sorted(seen[n] - created[n] for n in names)
    print(f"\nAR-5, extender killed: creation -> bind p50 {statistics.median(latencies):.2f} s, "
          f"max {latencies[-1]:.2f} s over {count} pods")  # fmt: skip
    assert latencies[-1] <= AR5_LIMIT_S, latencies
    assert set(nodes.values()) <= set(SHARED_NODES)


def test_ar5_gated_pods_with_the_extender_killed_are_released_by_the_fallback_within_5_s(
    e2e: Cluster,
) -> None:
    # the module's gated tests ran with the fallback up and every pod pinned where the market
    # cleared it: it released nothing while the extender renewed its Lease
    assert e2e.fallback.released() == []
    e2e.extender.kill()  # no clean stop: the Lease just stops being renewed
    killed = time.monotonic()
    count = 10
    names = [f"ar5-gated-{i:02d}" for i in range(count)]
    created = {name: create_pod(e2e.admin, name, "ar5-gated", gates=(MARKET_GATE,))
               for name in names}  # fmt: skip
    nodes, seen = await_bound(e2e.admin, "ar5-gated", names, 30)
    latencies = sorted(seen[n] - created[n] for n in names)
    print(f"\nAR-5, gated pods, extender killed: creation -> bind p50 "
          f"{statistics.median(latencies):.2f} s, max {latencies[-1]:.2f} s over {count} pods "
          f"(the first {min(seen.values()) - killed:.2f} s after the kill)")  # fmt: skip
    assert latencies[-1] <= AR5_LIMIT_S, latencies
    assert set(nodes.values()) <= set(SHARED_NODES)
    for pod in pods(e2e.admin, "ar5-gated").values():
        assert "affinity" not in pod["spec"]  # released unpinned: kube-scheduler chose
    assert sorted(e2e.fallback.released()) == [f"default/{n}" for n in names]
