"""Watch events from the API server update the extender; the list/watch loop, stepping aside
when blind and the floor taint, on the real kube-apiserver 1.36 (``tests/servers/
kube_control_plane.py``: one per module, the shipped RBAC applied; the extender acts as its
service account ``kube-system/eams-scheduler``, so a verb the shipped role lacks fails here)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from dataclasses import dataclass
from typing import Any

import httpx
import msgspec
import pytest
from kubernetes.client.exceptions import ApiException

from eams.kube import listwatch
from eams.kube.client import core_api, load_configuration
from eams.kube.listwatch import Head, ListWatch
from eams.kube.names import HEADROOM_TAINT, STRATEGIC_MERGE_PATCH, WAKE_REQUEST_ANNOTATION
from eams.kube.wakerequest import WakeRequest
from eams.scheduler.bench.errors import ExtenderCallError
from eams.scheduler.bench.kube_cycle import taint_toleration
from eams.scheduler.bench.kube_wire import decode_filter, decode_priorities
from eams.scheduler.extender.app import create_app
from eams.scheduler.extender.metrics import ExtenderMetrics
from eams.scheduler.extender.service import Extender
from eams.scheduler.extender.settings import Settings
from eams.scheduler.extender.watch import (
    ClusterWatch,
    _Pods,
    apply_node_event,
    apply_pod_event,
)
from tests.extender.conftest import args_names, pod_object, post_json, sample
from tests.servers.kube_control_plane import ControlPlane, eventually
from tests.servers.kube_documents import MERGE, clear, create_node, create_pod, node

pytestmark = pytest.mark.anyio


async def test_node_and_pod_events(make_client, shared_data) -> None:
    client = await make_client(mode="active", window_ms=30)
    extender = client.app.state.extender
    nodes = json.loads((shared_data / "k8s" / "honeycomb_eks_nodes.json").read_text())["items"]
    apply_node_event(extender, "ADDED", nodes[0])
    name = nodes[0]["metadata"]["name"]
    assert extender.nodes.capacity(name).cpu_milli == 7910
    assert extender.nodes.capacity(name).memory_bytes == 31127824 * 1024
    # Real bound pods of that node use its capacity; a finished one stops counting.
    pods = json.loads((shared_data / "k8s" / "honeycomb_pods.json").read_text())["items"]
    for pod in pods:
        apply_pod_event(extender, "ADDED", pod)
    assert extender.nodes.used(name) == (100 + 100 + 250, 2 * 100 * 2**20, 11)
    finished = {**pods[0], "status": {**pods[0]["status"], "phase": "Succeeded"}}
    apply_pod_event(extender, "MODIFIED", finished)
    assert extender.nodes.used(name)[2] == 10
    # A pending pod of the EAMS profile joins the open window; a bad one is skipped, not fatal.
    apply_pod_event(extender, "ADDED", pod_object("pending"))
    assert extender.batcher.waiting("default/pending")
    apply_pod_event(extender, "ADDED", pod_object("broken", cpu="1K"))
    assert not extender.batcher.waiting("default/broken")
    apply_pod_event(extender, "DELETED", pod_object("pending"))
    assert not extender.batcher.waiting("default/pending")
    apply_node_event(extender, "DELETED", nodes[0])
    assert extender.nodes.capacity(name) is None


async def test_a_malformed_pod_event_is_skipped_naming_every_bad_field(make_client, caplog) -> None:
    client = await make_client(mode="active", window_ms=30)
    extender = client.app.state.extender
    metadata = {"name": "broken", "namespace": "default", "uid": 5}
    pod = {"metadata": metadata, "spec": {"containers": 5}}
    with caplog.at_level(logging.WARNING, logger="eams.scheduler.extender.watch"):
        apply_pod_event(extender, "ADDED", pod)
    assert not extender.batcher.waiting("default/broken")
    assert (
        "pod broken skipped: metadata.uid: Input should be a valid string; "
        "spec.containers: Input should be a valid list"
    ) in caplog.text


# ---- the list/watch loop on the real API server ----------------------------------------------
# The extender's own watch threads (the kubernetes client, raw streams) list and watch the
# module's kube-apiserver; the objects are the reference NodeList/PodList made real objects
# (tests/servers/kube_documents.py). Answers are decoded as kube-scheduler does.

ACCOUNT = "kube-system/eams-scheduler"  # the extender's service account (deploy/k3s/rbac.yaml)
NAMES = ["node-a", "node-b", "node-c"]
DEDICATED = {"key": "dedicated", "value": "eams", "effect": "PreferNoSchedule"}
PODS = "/api/v1/namespaces/default/pods"


def _core(plane: ControlPlane) -> Any:
    """A ``CoreV1Api`` of the real API server acting as the extender's service account."""
    return core_api(load_configuration(plane.kubeconfig(ACCOUNT)))


class _Asked:
    """A ``CoreV1Api`` whose list and watch calls are noted (their keyword arguments) on their
    way to the server: what the client asked, beside what the real server answered."""

    def __init__(self, api: Any) -> None:
        self.api = api
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.api, name)
        if not name.startswith("list_"):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append((name, kwargs))
            return attr(*args, **kwargs)

        return call

    def watches(self, name: str, selector: str | None = None) -> list[dict[str, Any]]:
        """The keyword arguments of the watch calls of ``name`` (with that field selector)."""
        prefix = selector or ""
        return [
            kw
            for n, kw in self.calls
            if n == name and kw.get("watch") and kw.get("field_selector", "").startswith(prefix)
        ]

    def lists(self, name: str) -> int:
        return sum(1 for n, kw in self.calls if n == name and not kw.get("watch"))


def _bind(admin: httpx.Client, name: str, node_name: str) -> None:
    """What kube-scheduler does once it has chosen: ``POST pods/NAME/binding``."""
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
               "target": {"apiVersion": "v1", "kind": "Node", "name": node_name}}  # fmt: skip
    admin.post(f"{PODS}/{name}/binding", json=binding).raise_for_status()


def _nodes(admin: httpx.Client) -> dict[str, dict[str, Any]]:
    """Every Node as the API server has it now, by name (what kube-scheduler's cache holds)."""
    answer = admin.get("/api/v1/nodes")
    answer.raise_for_status()
    return {n["metadata"]["name"]: n for n in answer.json()["items"]}


def _versions(admin: httpx.Client) -> dict[str, str]:
    return {name: n["metadata"]["resourceVersion"] for name, n in _nodes(admin).items()}


@dataclass
class Cluster:
    admin: httpx.Client
    client: httpx.AsyncClient
    extender: Extender
    watch: ClusterWatch
    api: _Asked


@pytest.fixture
async def cluster(control_plane, shared_data, calibrations_dir, clock):
    """Three nodes made from the reference NodeList's first node (with a taint of another
    party), the reference PodList bound to node-a, on the module's real API server, and an
    in-process active extender watching it as its service account."""
    template = json.loads((shared_data / "k8s" / "honeycomb_eks_nodes.json").read_text())["items"]
    pods = json.loads((shared_data / "k8s" / "honeycomb_pods.json").read_text())["items"]
    before = set(threading.enumerate())
    with control_plane.client() as admin:
        lifespan = client = None
        try:
            for name in NAMES:
                doc = json.loads(json.dumps(template[0]))
                doc["metadata"]["name"] = name
                doc["spec"]["taints"] = [DEDICATED]
                create_node(admin, doc)
            for pod in pods:
                create_pod(admin, {**pod, "spec": {**pod["spec"], "nodeName": "node-a"}})
            api = _Asked(_core(control_plane))
            started: list[ClusterWatch] = []

            def start(extender):
                watch = ClusterWatch(extender, asyncio.get_running_loop(), api=api)
                started.append(watch)
                return watch.start()

            settings = Settings(mode="active", window_ms=200, calibrations_dir=calibrations_dir)
            app = create_app(settings, clock=clock, on_startup=start)
            lifespan = app.router.lifespan_context(app)
            await lifespan.__aenter__()
            client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://x")
            samples = [sample(n, clock() - 1.0, 0.6) for n in NAMES]
            await post_json(client, "/telemetry", {"samples": samples})
            yield Cluster(admin, client, app.state.extender, started[0], api)
        finally:
            if client is not None:
                await client.aclose()
            if lifespan is not None:
                await lifespan.__aexit__(None, None, None)
            await asyncio.to_thread(_clear_and_join, admin, before)


def _clear_and_join(admin: httpx.Client, before: set[threading.Thread]) -> None:
    """Delete the test's objects; a pending pod deleted with them gives each stopped watch
    thread an event to end on (it checks its stop flag at every event), then they are joined,
    so none outlives the test's event loop."""
    with contextlib.suppress(httpx.HTTPError):
        create_pod(admin, pod_object("last-event"))
    with contextlib.suppress(httpx.HTTPError):
        clear(admin, NAMES)
    for thread in set(threading.enumerate()) - before:
        if thread.name.startswith("watch "):
            thread.join(15.0)


async def _ready(client) -> bool:
    return (await client.get("/readyz")).status_code == 200


async def _until(predicate, timeout_s: float = 30.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not await predicate():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached in time"
        await asyncio.sleep(0.02)


async def _async(value: bool) -> bool:
    return value


async def test_the_watch_lists_then_follows_with_selectors_and_bookmarks(cluster) -> None:
    c = cluster
    await _until(lambda: _ready(c.client))
    assert set(c.extender.nodes.names()) == set(NAMES)
    assert c.extender.nodes.used("node-a")[2] == 11  # the real PodList, bound to node-a
    # what the client asks: the profile's unbound pods, bookmarks, from the list's version
    profile = "spec.schedulerName=eams-scheduler,spec.nodeName=,"
    await _until(lambda: _async(bool(c.api.watches("list_pod_for_all_namespaces", profile))))
    asked = c.api.watches("list_pod_for_all_namespaces", profile)[0]
    assert asked["allow_watch_bookmarks"] is True and int(asked["resource_version"]) > 0
    # what the server answers to it: another profile's pod is never announced (its event
    # would come before the next one's on the same watch), the profile's is, before any request
    other = pod_object("other")
    other["spec"]["schedulerName"] = "default-scheduler"
    create_pod(c.admin, other)
    create_pod(c.admin, pod_object("fresh"))
    await _until(lambda: _async(c.extender.batcher.waiting("default/fresh")))
    assert not c.extender.batcher.waiting("default/other")
    _bind(c.admin, "fresh", "node-c")  # leaves the pending selection, enters the bound one
    await _until(lambda: _async(c.extender.nodes.used("node-c")[2] == 1))
    assert not c.extender.batcher.waiting("default/fresh")
    # a pod that finished leaves the bound selection (status.phase!=Succeeded): frees node-a
    on_a = c.admin.get(PODS, params={"fieldSelector": "spec.nodeName=node-a"}).json()["items"]
    finished = on_a[0]["metadata"]["name"]
    c.admin.patch(f"{PODS}/{finished}/status", json={"status": {"phase": "Succeeded"}},
                  headers=MERGE).raise_for_status()  # fmt: skip
    await _until(lambda: _async(c.extender.nodes.used("node-a")[2] == 10))
    c.admin.delete("/api/v1/nodes/node-c").raise_for_status()
    await _until(lambda: _async(not c.extender.nodes.knows("node-c")))


def _as_kube_scheduler(filtered, prioritized, names: list[str]) -> tuple[list[str], dict]:
    """The nodes that pass and the extender's scores, as kube-scheduler keeps them with
    ``ignorable: true``: a failed filter lets every node pass, a failed prioritize adds 0."""
    try:
        passed = decode_filter(filtered.status_code, filtered.content, names).passed
    except ExtenderCallError:
        passed = list(names)
    try:
        scores = decode_priorities(prioritized.status_code, prioritized.content)
    except ExtenderCallError:
        scores = {}
    return passed, scores


async def test_a_blind_extender_steps_aside_and_recovers_with_the_watch(
    cluster, control_plane
) -> None:
    c = cluster
    await _until(lambda: _ready(c.client))
    # The API server goes away (stopped, then started again on its port and data): every
    # watch breaks and cannot list again, the extender is blind.
    await asyncio.to_thread(control_plane.apiserver.stop)
    try:
        await _until(lambda: _async(bool(c.extender.watch_health.get("nodes"))))
        down = c.extender.watch_health["nodes"]
        readyz = (await c.client.get("/readyz")).json()
        assert not readyz["ready"] and any(f"nodes: {down}" in m for m in readyz["missing"])
        pod = pod_object("p")
        filtered = await post_json(c.client, "/filter", args_names(pod, NAMES))
        prioritized = await post_json(c.client, "/prioritize", args_names(pod, NAMES))
        assert filtered.status_code == prioritized.status_code == 503
        assert prioritized.json()["Error"].startswith("eams: stepping aside: watch down (nodes: ")
        assert _as_kube_scheduler(filtered, prioritized, NAMES) == (NAMES, {})  # default placement
        metrics = (await c.client.get("/metrics")).text
        assert 'eams_extender_stepped_aside_total{path="/prioritize"} 1.0' in metrics
        assert 'eams_extender_watch_up{watch="nodes"} 0.0' in metrics
        reason = down.split(" ")[0]
        assert f'eams_extender_watch_failures_total{{reason="{reason}",watch="nodes"}}' in metrics
    finally:
        await asyncio.to_thread(control_plane.apiserver.start)
    # The API server is back: the watch lists again after its backoff, the extender serves.
    await _until(lambda: _ready(c.client), 60)
    filtered = await post_json(c.client, "/filter", args_names(pod, NAMES))
    prioritized = await post_json(c.client, "/prioritize", args_names(pod, NAMES))
    passed, scores = _as_kube_scheduler(filtered, prioritized, NAMES)
    assert passed == NAMES and scores["node-a"] == 10  # the cheapest calibration wins again
    assert 'eams_extender_watch_up{watch="nodes"} 1.0' in (await c.client.get("/metrics")).text


class _NodeListsAhead:
    """The extender's client, its node lists asking for a resourceVersion far beyond the
    server's: the real watch cache waits for it (3 s), then answers 504 Too large resource
    version, as it answers every consistent list when etcd < 3.5.13 cannot report progress
    (issue 15; etcd 3.6 here can, so the version is asked for explicitly)."""

    AHEAD = "999999999"

    def __init__(self, api: Any) -> None:
        self.api = api

    def __getattr__(self, name: str) -> Any:
        return getattr(self.api, name)

    def list_node(self, **kwargs: Any) -> Any:
        if not kwargs.get("watch"):
            kwargs["resource_version"] = self.AHEAD
        return self.api.list_node(**kwargs)


async def test_no_node_list_at_all_is_blind_too(control_plane, calibrations_dir, clock) -> None:
    settings = Settings(mode="active", window_ms=200, calibrations_dir=calibrations_dir)
    ahead = _NodeListsAhead(_core(control_plane))
    app = create_app(
        settings,
        clock=clock,
        on_startup=lambda e: ClusterWatch(e, asyncio.get_running_loop(), api=ahead).start(),
    )
    lifespan = app.router.lifespan_context(app)
    await lifespan.__aenter__()
    extender = app.state.extender
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://x"
        ) as client:
            answer = await post_json(client, "/prioritize", args_names(pod_object("p"), NAMES))
            assert answer.status_code == 503  # not listed yet: never "every node 0"
            too_large = "504 Timeout: Too large resource version: 999999999, current: "
            await _until(lambda: _async(too_large in (extender.watch_health["nodes"] or "")))
            answer = await post_json(client, "/prioritize", args_names(pod_object("p"), NAMES))
            assert answer.status_code == 503
            assert answer.json()["Error"].startswith(
                f"eams: stepping aside: watch down (nodes: {too_large}"
            )
            with pytest.raises(ExtenderCallError):
                decode_priorities(answer.status_code, answer.content)
            metrics = (await client.get("/metrics")).text
            assert 'eams_extender_watch_failures_total{reason="504",watch="nodes"}' in metrics
    finally:
        await lifespan.__aexit__(None, None, None)


async def test_the_taint_path_keeps_pods_off_a_capped_node_and_releases_it(cluster, clock) -> None:
    c = cluster
    await _until(lambda: _ready(c.client))
    versions = _versions(c.admin)
    in_tree = taint_toleration(lambda: _nodes(c.admin))
    pod = pod_object("p")
    assert in_tree(pod, NAMES) == NAMES
    # node-b nears its power cap: the extender taints it; kube-scheduler's TaintToleration
    # filter (emulated here, over the real server's nodes) keeps the pod off it without any
    # /filter call.
    await post_json(c.client, "/telemetry", {"samples": [sample("node-b", clock(), 0.02)]})
    await _until(lambda: _async(in_tree(pod, NAMES) == ["node-a", "node-c"]))
    tainted = _versions(c.admin)
    assert {n: tainted[n] for n in ("node-a", "node-c")} == {
        n: versions[n] for n in ("node-a", "node-c")
    }  # only node-b was written
    assert node(c.admin, "node-b")["spec"]["taints"] == [
        DEDICATED,
        {"key": HEADROOM_TAINT, "effect": "NoSchedule"},
    ]  # the node's other taints kept
    tolerant = {**pod, "spec": {**pod["spec"], "tolerations": [{"operator": "Exists"}]}}
    assert in_tree(tolerant, NAMES) == NAMES
    # Recovered to floor + margin: the taint comes off (a Node update: pods are requeued).
    await post_json(c.client, "/telemetry", {"samples": [sample("node-b", clock(), 0.5)]})
    await _until(lambda: _async(in_tree(pod, NAMES) == NAMES))
    assert node(c.admin, "node-b")["spec"]["taints"] == [DEDICATED]

    async def released() -> bool:
        text = (await c.client.get("/metrics")).text
        return "eams_extender_headroom_recoveries_total 1.0" in text

    await _until(released)  # the patch's answer reached the extender
    metrics = (await c.client.get("/metrics")).text
    assert 'eams_extender_taint_patches_total{action="add",outcome="ok"} 1.0' in metrics
    assert 'eams_extender_taint_patches_total{action="remove",outcome="ok"} 1.0' in metrics
    assert 'outcome="conflict"' not in metrics  # each patch carried its node's current version


async def test_a_batch_does_not_taint_its_node_before_its_pods_are_bound(cluster, clock) -> None:
    # A batch cleared onto node-a puts it under the floor with its own reservations. A taint
    # then would make kube-scheduler's TaintToleration filter node-a out of those very pods'
    # cycles (the clearing not honoured): node-a stays untainted until they are bound.
    c = cluster
    await _until(lambda: _ready(c.client))
    versions = _versions(c.admin)
    in_tree = taint_toleration(lambda: _nodes(c.admin))
    keeper = c.watch.keeper
    assert keeper is not None
    plans: list[list] = []
    plan = keeper.plan

    def counted() -> list:
        plans.append(plan())
        return plans[-1]

    keeper.plan = counted  # type: ignore[method-assign]
    await post_json(c.client, "/telemetry", {"samples": [sample("node-a", clock(), 0.3)]})
    pods = [pod_object(f"p{i}", cpu="2") for i in range(3)]
    for pod in pods:
        create_pod(c.admin, pod)  # the pending watch announces them before any request
    keys = [f"default/{p['metadata']['name']}" for p in pods]
    await _until(lambda: _async(all(map(c.extender.batcher.waiting, keys))))
    asked = c.admin.get(f"{PODS}/p0").json()  # as kube-scheduler sends it: uid and all
    first = await post_json(c.client, "/prioritize", args_names(asked, NAMES))  # clears all 3
    assert decode_priorities(first.status_code, first.content)["node-a"] == 10
    assert [c.extender.batcher.row(k).node for k in keys] == ["node-a"] * 3
    assert "node-a" in c.extender.floor.below(clock())  # 0.3 − 3 × 80 W · 2/7.91 / 200 W < 0.05
    seen = len(plans)
    await _until(lambda: _async(len(plans) >= seen + 2))  # the once-a-second plan ran meanwhile
    assert plans[seen:] == [[]] * (len(plans) - seen) and _versions(c.admin) == versions
    for pod in pods:  # each pod's cycle still finds its cleared node
        assert in_tree(pod, NAMES) == NAMES
    # They are bound there: their reservations count now, and the taint goes on.
    for pod in pods:
        _bind(c.admin, pod["metadata"]["name"], "node-a")
    await _until(lambda: _async(in_tree(pod_object("next"), NAMES) == ["node-b", "node-c"]))
    after = _versions(c.admin)
    assert after["node-a"] != versions["node-a"]
    assert {n: after[n] for n in ("node-b", "node-c")} == {
        n: versions[n] for n in ("node-b", "node-c")
    }  # node-a alone was written


async def test_a_conflicting_taint_patch_is_planned_again(cluster, clock) -> None:
    c = cluster
    await _until(lambda: _ready(c.client))
    stale = json.loads(json.dumps(c.extender.nodes.node("node-b")))
    stale["metadata"]["resourceVersion"] = "1"  # the extender's copy is behind the API server
    c.extender.nodes.learn([stale], "test")
    await post_json(c.client, "/telemetry", {"samples": [sample("node-b", clock(), 0.02)]})
    taints = lambda: node(c.admin, "node-b")["spec"]["taints"]  # noqa: E731
    await _until(lambda: _async(any(t["key"] == HEADROOM_TAINT for t in taints())))

    async def counted() -> bool:
        text = (await c.client.get("/metrics")).text
        return 'eams_extender_taint_patches_total{action="add",outcome="ok"} 1.0' in text

    await _until(counted)
    metrics = (await c.client.get("/metrics")).text
    # the real server refused the patch of version "1" (409), the node was read again and the
    # next plan's patch, of the current version, went through
    assert 'eams_extender_taint_patches_total{action="add",outcome="conflict"} 1.0' in metrics
    assert taints() == [DEDICATED, {"key": HEADROOM_TAINT, "effect": "NoSchedule"}]


async def test_shadow_mode_never_taints(calibrations_dir, clock) -> None:
    from kubernetes import client

    extender = Extender(Settings(mode="shadow"), {}, ExtenderMetrics(), clock)
    unused = client.CoreV1Api(client.ApiClient(client.Configuration()))  # never called
    assert ClusterWatch(extender, asyncio.get_running_loop(), api=unused).keeper is None


class _Recording:
    """A :class:`~eams.kube.listwatch.Feed` that keeps what it is handed and
    calls a pod unchanged when its uid and node are those it last saw (as the pod feeds do)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, dict]] = []  # kind, name, node, object
        self.skipped: list[tuple[str, str, str]] = []  # kind, name, resourceVersion
        self.seen: dict[str, tuple[str, str]] = {}
        self.lists = 0

    def listed(self, items) -> None:
        self.lists += 1
        for head, raw in items:
            self.event("ADDED", head, raw)

    def unchanged(self, kind, head) -> bool:
        same = self.seen.get(head.metadata.name) == (head.metadata.uid, head.spec.nodeName)
        if same:
            self.skipped.append((kind, head.metadata.name, head.metadata.resourceVersion))
        return same

    def event(self, kind, head, raw) -> str:
        self.seen[head.metadata.name] = (head.metadata.uid, head.spec.nodeName)
        self.events.append((kind, head.metadata.name, head.spec.nodeName, json.loads(raw)))
        return head.metadata.name


def _run(watch: ListWatch) -> threading.Thread:
    thread = threading.Thread(target=watch.run, daemon=True)
    thread.start()
    return thread


async def test_an_event_that_changes_nothing_kept_is_dropped_from_its_head(control_plane) -> None:
    """A bound pod's annotation patch (the extender's own ``eams.io/*``) comes back on the
    watch as ``MODIFIED`` with the same uid and node: the feed is asked from the event's head
    alone and never handed the object; the binding and the deletion are handed on whole."""
    feed, stop = _Recording(), threading.Event()
    core = _core(control_plane)
    selector = "metadata.namespace=default"
    watch = ListWatch("pods", core.list_pod_for_all_namespaces, selector, feed,
                      lambda *a: None, stop)  # fmt: skip
    with control_plane.client() as admin:
        try:
            create_pod(admin, pod_object("job-1"))
            _run(watch)
            await _until(lambda: _async(len(feed.events) == 1))  # listed
            _bind(admin, "job-1", "node-a")
            patch = {"metadata": {"annotations": {"eams.io/cleared-node": "node-a"}}}
            annotated = admin.patch(f"{PODS}/job-1", json=patch, headers=MERGE)
            annotated.raise_for_status()
            admin.delete(f"{PODS}/job-1", params={"gracePeriodSeconds": 0}).raise_for_status()
            await _until(lambda: _async(len(feed.events) == 3))
        finally:
            stop.set()
            clear(admin, [])
    assert [(kind, name, node) for kind, name, node, _ in feed.events] == [
        ("ADDED", "job-1", ""),
        ("MODIFIED", "job-1", "node-a"),
        ("DELETED", "job-1", "node-a"),
    ]
    rv = annotated.json()["metadata"]["resourceVersion"]
    assert feed.skipped[0] == ("MODIFIED", "job-1", rv)  # the annotation patch, not decoded whole
    # and the deletion's first step on the real server (deletionTimestamp set: same uid, node)
    assert [kind for kind, _, _ in feed.skipped[1:]] == ["MODIFIED"]
    assert feed.events[2][3]["metadata"]["deletionTimestamp"]
    assert feed.events[2][3]["metadata"]["annotations"]["eams.io/cleared-node"] == "node-a"


def _bare_pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "pause"}]}}  # fmt: skip


class _Writes(_Recording):
    """A feed that, on its first list, calls ``then()`` in the watch's thread: between the
    list and the watch from the list's version."""

    def __init__(self, then) -> None:
        super().__init__()
        self.then = then

    def listed(self, items) -> None:
        super().listed(items)
        if self.lists == 1:
            self.then()


class _InitialEvents(_Asked):
    """:class:`_Asked` whose watch calls ask for the initial events and the ``BOOKMARK`` that
    closes them (``sendInitialEvents``): a real bookmark at once, where the periodic one comes
    about once a minute (none before a short watch's timeout, checked on 1.36 here)."""

    def __getattr__(self, name: str) -> Any:
        call = super().__getattr__(name)
        if not name.startswith("list_"):
            return call

        def initial(*args: Any, **kwargs: Any) -> Any:
            if kwargs.get("watch"):
                kwargs.update(send_initial_events=True, resource_version_match="NotOlderThan")
            return call(*args, **kwargs)

        return initial


async def test_a_bookmark_moves_the_watch_on_past_changes_it_does_not_show(
    control_plane, monkeypatch
) -> None:
    """The server's ``BOOKMARK`` moves the watch's version on and changes nothing: the next
    watch (a 3 s timeout here) resumes from it, past a pod outside the selection created after
    the list (no event for it, no list again; the initial events repeat what was listed and are
    dropped as unchanged)."""
    monkeypatch.setattr(listwatch, "WATCH_TIMEOUT_S", 3)
    asked, stop = _InitialEvents(_core(control_plane)), threading.Event()
    with control_plane.client() as admin:
        created: list[int] = []

        def other() -> None:
            answer = admin.post(PODS, json=_bare_pod("bm-other"))
            answer.raise_for_status()
            created.append(int(answer.json()["metadata"]["resourceVersion"]))

        feed = _Writes(other)
        selector = "metadata.name=bm-watched"
        watch = ListWatch("pods", asked.list_pod_for_all_namespaces, selector, feed,
                          lambda *a: None, stop)  # fmt: skip
        try:
            create_pod(admin, pod_object("bm-watched"))
            _run(watch)
            watches = lambda: asked.watches("list_pod_for_all_namespaces")  # noqa: E731
            await _until(lambda: _async(len(watches()) >= 2), 20)
        finally:
            stop.set()
            clear(admin, [])
    first, resumed = watches()[:2]
    assert first["allow_watch_bookmarks"] is True and first["field_selector"] == selector
    assert int(first["resource_version"]) < created[0] <= int(resumed["resource_version"])
    assert asked.lists("list_pod_for_all_namespaces") == 1
    assert [(kind, name) for kind, name, _, _ in feed.events] == [("ADDED", "bm-watched")]
    assert {(kind, name) for kind, name, _ in feed.skipped} == {("ADDED", "bm-watched")}


async def test_a_watch_from_a_version_the_server_no_longer_has_lists_again(control_plane) -> None:
    """410 Expired, from the real server: between the list and the watch, a change and the API
    server restarted (same port and data); its new watch cache starts after the list's
    version, so the watch from it gets an ``ERROR`` 410 event, and the loop lists again at
    once (still up; counted ``expired``) and follows from there."""
    reports: list[tuple[str | None, str | None]] = []
    stop = threading.Event()
    core = _core(control_plane)

    def restart() -> None:
        with control_plane.client() as admin:
            create_pod(admin, pod_object("exp-moved"))  # etcd's revision passes the list's
            moved = int(admin.get(f"{PODS}/exp-moved").json()["metadata"]["resourceVersion"])
        control_plane.apiserver.stop()
        control_plane.apiserver.start()
        with control_plane.client() as admin:

            def expired() -> bool:
                params = {"watch": "true", "resourceVersion": str(moved - 1), "timeoutSeconds": "1"}
                return '"code":410' in admin.get(PODS, params=params).text

            eventually(expired, 30, "the restarted server's watch cache")

    feed = _Writes(restart)
    health = lambda down, failure: reports.append((down, failure))  # noqa: E731
    watch = ListWatch("pods", core.list_pod_for_all_namespaces, "metadata.namespace=default",
                      feed, health, stop)  # fmt: skip
    with control_plane.client() as admin:
        try:
            create_pod(admin, pod_object("exp-1"))
            _run(watch)
            await _until(lambda: _async(feed.lists == 2), 60)
            create_pod(admin, pod_object("exp-2"))
            await _until(lambda: _async(("ADDED", "exp-2") in [e[:2] for e in feed.events]))
        finally:
            stop.set()
            clear(admin, [])
    assert reports[:3] == [(None, None), (None, "expired"), (None, None)]
    listed = [name for kind, name, _, _ in feed.events if kind == "ADDED"]
    assert listed == ["exp-1", "exp-1", "exp-moved", "exp-2"]  # the second list holds both


class _FailsOnce:
    """The extender's node API, but its first patch fails with a 500: a stand-in for a server
    failure the real one does not make on demand."""

    def __init__(self, nodes: Any) -> None:
        self.nodes, self.failed = nodes, False

    def patch_node(self, name: str, body: dict[str, Any]) -> dict[str, Any]:
        if not self.failed:
            self.failed = True
            raise ApiException(status=500, reason="stand-in failure")
        return dict(self.nodes.patch_node(name, body))


async def test_a_wake_request_is_written_on_its_node_newest_last(cluster) -> None:
    """The market's wake requests (``Extender.on_wake_request``, called on the loop as
    ``wakes.py`` does) are written on their node as ``eams.io/wake-request`` by the extender's
    service account: two in a row land newest last; a node that is gone is counted and dropped;
    a failed patch is sent again; a request that is over (no pods) removes the annotation."""
    c = cluster
    await _until(lambda: _ready(c.client))

    def annotation(name: str) -> str | None:
        return (node(c.admin, name)["metadata"].get("annotations") or {}).get(
            WAKE_REQUEST_ANNOTATION
        )

    async def patched(**counts: int) -> bool:
        text = (await c.client.get("/metrics")).text
        return all(
            f'eams_extender_wake_request_patches_total{{result="{result}"}} {n:.1f}' in text
            for result, n in counts.items()
        )

    first = WakeRequest("node-b", ("default/p",), 1000.0)
    second = WakeRequest("node-b", ("default/p", "default/q"), 1000.0)
    c.extender.on_wake_request(first)
    c.extender.on_wake_request(second)
    c.extender.on_wake_request(WakeRequest("ghost", ("default/r",), 1000.0))
    await _until(lambda: patched(ok=2, not_found=1))
    assert annotation("node-b") == second.annotation()
    assert annotation("node-a") is None and annotation("node-c") is None
    c.watch.node_api = _FailsOnce(c.watch.node_api)  # type: ignore[assignment]
    third = WakeRequest("node-c", ("default/s",), 1001.0)
    c.extender.on_wake_request(third)
    await _until(lambda: patched(ok=3, error=1))
    assert annotation("node-c") == third.annotation()
    c.extender.on_wake_request(WakeRequest("node-b", (), 1000.0))  # over: the annotation goes
    await _until(lambda: patched(ok=4, error=1))
    assert annotation("node-b") is None and annotation("node-c") == third.annotation()


KUEUE_GATE = {"name": "kueue.x-k8s.io/admission"}


async def test_a_pod_another_gate_holds_stays_out_of_the_batch_until_it_is_lifted(
    cluster,
) -> None:
    """A pod Kueue (or any other controller) still holds at its scheduling gate is not the
    market's: the pending watch leaves it out, and its MODIFIED event when the gate is lifted
    (same uid, still unbound) is not dropped as unchanged: it joins the batch then."""
    c = cluster
    await _until(lambda: _ready(c.client))
    held = pod_object("queued")
    held["spec"]["schedulingGates"] = [KUEUE_GATE]
    create_pod(c.admin, held)
    create_pod(c.admin, pod_object("after"))  # later on the same watch: queued's event is done
    await _until(lambda: _async(c.extender.batcher.waiting("default/after")))
    assert not c.extender.batcher.waiting("default/queued")
    lift = {"spec": {"schedulingGates": [{"$patch": "delete", **KUEUE_GATE}]}}
    strategic = {"Content-Type": STRATEGIC_MERGE_PATCH}
    c.admin.patch(f"{PODS}/queued", json=lift, headers=strategic).raise_for_status()
    await _until(lambda: _async(c.extender.batcher.waiting("default/queued")))


class _Loop:
    """Runs a feed's actions at once (the watch thread and the event loop are one here)."""

    def put(self, action) -> None:
        action()


@dataclass
class _PendingSeen:
    """What a pending-pod feed reads and calls on the extender (no decision record)."""

    waiting: set[str]
    decisions: None = None

    def observe_pending(self, pod) -> None:
        self.waiting.add(pod.key)

    def observe_unpending(self, key: str) -> None:
        self.waiting.discard(key)


async def test_a_relisted_name_now_held_by_another_gate_leaves_the_batch() -> None:
    """Stand-in (the feed alone, fed heads and raw JSON as the list gives them): the watch was
    down while a pending pod was deleted and another of the same name, held by Kueue's gate,
    was created — a relist the real server shows only with the watch stopped at that moment.
    The old pod leaves the batch and its size is forgotten; the held one does not join."""
    seen, sized = _PendingSeen(set()), {}
    feed = _Pods(seen, _Loop(), pending=True, sized=sized)  # type: ignore[arg-type]

    def listed(*pods: dict[str, Any]) -> None:
        raws = [json.dumps(p).encode() for p in pods]
        feed.listed([(msgspec.json.decode(raw, type=Head), raw) for raw in raws])

    listed(pod_object("web-0"))
    assert seen.waiting == {"default/web-0"} and "default/web-0" in sized
    successor = pod_object("web-0")
    successor["metadata"]["uid"] = "uid-web-0-successor"
    successor["spec"]["schedulingGates"] = [KUEUE_GATE]
    listed(successor)
    assert seen.waiting == set() and sized == {}
    successor["spec"]["schedulingGates"] = []
    listed(successor)  # its controller let it go
    assert seen.waiting == {"default/web-0"}
