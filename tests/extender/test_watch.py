"""Watch events from the API server update the extender; the list/watch loop, stepping aside
when blind and the floor taint, against the stand-in apiserver."""

from __future__ import annotations

import asyncio
import json
import logging

import httpx
import pytest

from eams.kube.names import HEADROOM_TAINT
from eams.scheduler.bench.errors import ExtenderCallError
from eams.scheduler.bench.kube_cycle import taint_toleration
from eams.scheduler.bench.kube_wire import decode_filter, decode_priorities
from eams.scheduler.extender.app import create_app
from eams.scheduler.extender.metrics import ExtenderMetrics
from eams.scheduler.extender.service import Extender
from eams.scheduler.extender.settings import Settings
from eams.scheduler.extender.watch import ClusterWatch, apply_node_event, apply_pod_event
from tests.extender.apiserver import FakeApiServer, too_large_rv
from tests.extender.conftest import args_names, pod_object, post_json, sample

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


# ---- the list/watch loop against the stand-in apiserver (tests/extender/apiserver.py) -------
# No kube-apiserver can run here: the stand-in serves the published list/watch/patch shapes
# with the real NodeList/PodList objects, and the extender's own watch threads (the kubernetes
# client, raw streams) talk to it over a socket. Answers are decoded as kube-scheduler does.


def _core(api: FakeApiServer):
    from kubernetes import client

    config = client.Configuration()
    config.host = f"http://127.0.0.1:{api.port}"
    return client.CoreV1Api(client.ApiClient(config))


@pytest.fixture
async def cluster(shared_data, calibrations_dir, clock):
    """A stand-in apiserver with three real-shaped nodes and the real PodList, and an
    in-process active extender watching it. Yields (api, client, extender, watch)."""
    api = FakeApiServer()
    await api.serve()
    template = json.loads((shared_data / "k8s" / "honeycomb_eks_nodes.json").read_text())["items"]
    for name in NAMES:
        node = json.loads(json.dumps(template[0]))
        node["metadata"]["name"] = name
        node["spec"]["taints"] = [
            {"key": "dedicated", "value": "eams", "effect": "PreferNoSchedule"}
        ]
        api.put("nodes", node)
    for pod in json.loads((shared_data / "k8s" / "honeycomb_pods.json").read_text())["items"]:
        pod = {**pod, "spec": {**pod["spec"], "nodeName": "node-a"}}
        api.put("pods", pod)
    started: list[ClusterWatch] = []

    def start(extender):
        watch = ClusterWatch(extender, asyncio.get_running_loop(), api=_core(api))
        started.append(watch)
        return watch.start()

    settings = Settings(mode="active", window_ms=200, calibrations_dir=calibrations_dir)
    app = create_app(settings, clock=clock, on_startup=start)
    lifespan = app.router.lifespan_context(app)
    await lifespan.__aenter__()
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://x")
    samples = [sample(n, clock() - 1.0, 0.6) for n in NAMES]
    await post_json(client, "/telemetry", {"samples": samples})
    extender = app.state.extender
    try:
        yield api, client, extender, started[0]
    finally:
        await client.aclose()
        await lifespan.__aexit__(None, None, None)
        await api.close()


NAMES = ["node-a", "node-b", "node-c"]


async def _ready(client) -> bool:
    return (await client.get("/readyz")).status_code == 200


async def _until(predicate, timeout_s: float = 15.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not await predicate():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached in time"
        await asyncio.sleep(0.02)


async def test_the_watch_lists_then_follows_with_selectors_and_bookmarks(cluster) -> None:
    api, client, extender, _ = cluster
    await _until(lambda: _ready(client))
    assert set(extender.nodes.names()) == set(NAMES)
    assert extender.nodes.used("node-a")[2] == 11  # the real PodList, bound to node-a
    queries = " ".join(api.watch_requests)
    assert "fieldSelector=spec.schedulerName%3Deams-scheduler%2Cspec.nodeName%3D" in queries
    assert "allowWatchBookmarks=true" in queries and "resourceVersion=" in queries
    api.bookmark("pods")  # moves the version on, changes nothing
    pending = pod_object("fresh")
    api.put("pods", pending)  # created: the watch announces it before any request
    await _until(lambda: _async(extender.batcher.waiting("default/fresh")))
    api.bind("default", "fresh", "node-c")  # leaves the pending selection, enters the bound one
    await _until(lambda: _async(extender.nodes.used("node-c")[2] == 1))
    assert not extender.batcher.waiting("default/fresh")
    api.delete("nodes", "node-c")
    await _until(lambda: _async(not extender.nodes.knows("node-c")))


async def _async(value: bool) -> bool:
    return value


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


async def test_a_blind_extender_steps_aside_and_recovers_with_the_watch(cluster) -> None:
    api, client, extender, _ = cluster
    nodes = api.resources["nodes"]
    await _until(lambda: _ready(client))
    # The apiserver's watch cache answers 504 Too large resource version (etcd < 3.5.13)
    # to every list and watch, and every open watch expires (410): the extender is blind.
    nodes.fault = too_large_rv(api.rv + 50, api.rv)
    api.expire("nodes")
    await _until(lambda: _async(bool(extender.watch_health.get("nodes"))))
    readyz = (await client.get("/readyz")).json()
    assert not readyz["ready"] and any("504" in m and "nodes" in m for m in readyz["missing"])
    pod = pod_object("p")
    filtered = await post_json(client, "/filter", args_names(pod, NAMES))
    prioritized = await post_json(client, "/prioritize", args_names(pod, NAMES))
    assert filtered.status_code == prioritized.status_code == 503
    assert prioritized.json()["Error"].startswith("eams: stepping aside: watch down (nodes: 504")
    assert _as_kube_scheduler(filtered, prioritized, NAMES) == (NAMES, {})  # default placement
    metrics = (await client.get("/metrics")).text
    assert 'eams_extender_stepped_aside_total{path="/prioritize"} 1.0' in metrics
    assert 'eams_extender_watch_up{watch="nodes"} 0.0' in metrics
    assert 'eams_extender_watch_failures_total{reason="504",watch="nodes"}' in metrics
    # The apiserver heals: the watch lists again after its backoff, the extender serves.
    nodes.fault = None
    await _until(lambda: _ready(client))
    filtered = await post_json(client, "/filter", args_names(pod, NAMES))
    prioritized = await post_json(client, "/prioritize", args_names(pod, NAMES))
    passed, scores = _as_kube_scheduler(filtered, prioritized, NAMES)
    assert passed == NAMES and scores["node-a"] == 10  # the cheapest calibration wins again
    assert 'eams_extender_watch_up{watch="nodes"} 1.0' in (await client.get("/metrics")).text


async def test_no_node_list_at_all_is_blind_too(shared_data, calibrations_dir, clock) -> None:
    api = FakeApiServer()
    await api.serve()
    api.resources["nodes"].fault = too_large_rv(500, api.rv)
    settings = Settings(mode="active", window_ms=200, calibrations_dir=calibrations_dir)
    app = create_app(
        settings,
        clock=clock,
        on_startup=lambda e: ClusterWatch(e, asyncio.get_running_loop(), api=_core(api)).start(),
    )
    lifespan = app.router.lifespan_context(app)
    await lifespan.__aenter__()
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://x"
        ) as client:
            answer = await post_json(client, "/prioritize", args_names(pod_object("p"), NAMES))
            assert answer.status_code == 503  # never "every node 0"
            with pytest.raises(ExtenderCallError):
                decode_priorities(answer.status_code, answer.content)
    finally:
        await lifespan.__aexit__(None, None, None)
        await api.close()


async def test_the_taint_path_keeps_pods_off_a_capped_node_and_releases_it(cluster, clock) -> None:
    api, client, _, _ = cluster
    await _until(lambda: _ready(client))
    objects = api.resources["nodes"].objects
    in_tree = taint_toleration(lambda: objects)
    pod = pod_object("p")
    assert in_tree(pod, NAMES) == NAMES
    # node-b nears its power cap: the extender taints it; kube-scheduler's TaintToleration
    # filter (emulated here) keeps the pod off it without any /filter call.
    await post_json(client, "/telemetry", {"samples": [sample("node-b", clock(), 0.02)]})
    await _until(lambda: _async(in_tree(pod, NAMES) == ["node-a", "node-c"]))
    name, patch = api.patches[-1]
    assert name == "node-b" and patch["metadata"]["resourceVersion"]  # optimistic concurrency
    assert {"key": "dedicated", "value": "eams", "effect": "PreferNoSchedule"} in objects["node-b"][
        "spec"
    ]["taints"]  # the node's other taints kept
    tolerant = {**pod, "spec": {**pod["spec"], "tolerations": [{"operator": "Exists"}]}}
    assert in_tree(tolerant, NAMES) == NAMES
    # Recovered to floor + margin: the taint comes off (a Node update: pods are requeued).
    await post_json(client, "/telemetry", {"samples": [sample("node-b", clock(), 0.5)]})
    await _until(lambda: _async(in_tree(pod, NAMES) == NAMES))
    assert objects["node-b"]["spec"]["taints"] == [
        {"key": "dedicated", "value": "eams", "effect": "PreferNoSchedule"}
    ]

    async def released() -> bool:
        return "eams_extender_headroom_recoveries_total 1.0" in (await client.get("/metrics")).text

    await _until(released)  # the patch's answer reached the extender
    metrics = (await client.get("/metrics")).text
    assert 'eams_extender_taint_patches_total{action="add",outcome="ok"} 1.0' in metrics
    assert 'eams_extender_taint_patches_total{action="remove",outcome="ok"} 1.0' in metrics


async def test_a_batch_does_not_taint_its_node_before_its_pods_are_bound(cluster, clock) -> None:
    # A batch cleared onto node-a puts it under the floor with its own reservations. A taint
    # then would make kube-scheduler's TaintToleration filter node-a out of those very pods'
    # cycles (the clearing not honoured): node-a stays untainted until they are bound.
    api, client, extender, watch = cluster
    await _until(lambda: _ready(client))
    objects = api.resources["nodes"].objects
    in_tree = taint_toleration(lambda: objects)
    await post_json(client, "/telemetry", {"samples": [sample("node-a", clock(), 0.3)]})
    pods = [pod_object(f"p{i}", cpu="2") for i in range(3)]
    for pod in pods:
        api.put("pods", pod)  # the pending watch announces them before any request
    keys = [f"default/{p['metadata']['name']}" for p in pods]
    await _until(lambda: _async(all(map(extender.batcher.waiting, keys))))
    first = await post_json(client, "/prioritize", args_names(pods[0], NAMES))  # clears all 3
    assert decode_priorities(first.status_code, first.content)["node-a"] == 10
    assert [extender.batcher.row(k).node for k in keys] == ["node-a"] * 3
    assert "node-a" in extender.floor.below(clock())  # 0.3 − 3 × 80 W · 2/7.91 / 200 W < 0.05
    await asyncio.sleep(1.5)  # the once-a-second plan ran meanwhile
    assert watch.keeper.plan() == [] and not api.patches
    for pod in pods:  # each pod's cycle still finds its cleared node
        assert in_tree(pod, NAMES) == NAMES
    # They are bound there: their reservations count now, and the taint goes on.
    for pod in pods:
        api.bind("default", pod["metadata"]["name"], "node-a")
    await _until(lambda: _async(in_tree(pod_object("next"), NAMES) == ["node-b", "node-c"]))
    assert [name for name, _ in api.patches] == ["node-a"]


async def test_a_conflicting_taint_patch_is_planned_again(cluster, clock) -> None:
    api, client, extender, _ = cluster
    await _until(lambda: _ready(client))
    stale = json.loads(json.dumps(extender.nodes.node("node-b")))
    stale["metadata"]["resourceVersion"] = "1"  # the extender's copy is behind the apiserver
    extender.nodes.learn([stale], "test")
    await post_json(client, "/telemetry", {"samples": [sample("node-b", clock(), 0.02)]})
    taints = lambda: api.resources["nodes"].objects["node-b"]["spec"]["taints"]  # noqa: E731
    await _until(lambda: _async(any(t["key"] == HEADROOM_TAINT for t in taints())))
    metrics = (await client.get("/metrics")).text
    assert 'eams_extender_taint_patches_total{action="add",outcome="conflict"} 1.0' in metrics


async def test_shadow_mode_never_taints(shared_data, calibrations_dir, clock) -> None:
    extender = Extender(Settings(mode="shadow"), {}, ExtenderMetrics(), clock)
    assert (
        ClusterWatch(extender, asyncio.get_running_loop(), api=_core(FakeApiServer())).keeper
        is None
    )


class _Recording:
    """A :class:`~eams.kube.listwatch.Feed` that keeps what it is handed and
    calls a pod unchanged when its uid and node are those it last saw (as the pod feeds do)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, dict]] = []  # kind, name, node, object
        self.skipped: list[tuple[str, str]] = []
        self.seen: dict[str, tuple[str, str]] = {}

    def listed(self, items) -> None:
        for head, raw in items:
            self.event("ADDED", head, raw)

    def unchanged(self, kind, head) -> bool:
        same = self.seen.get(head.metadata.name) == (head.metadata.uid, head.spec.nodeName)
        if same:
            self.skipped.append((kind, head.metadata.name))
        return same

    def event(self, kind, head, raw) -> str:
        self.seen[head.metadata.name] = (head.metadata.uid, head.spec.nodeName)
        self.events.append((kind, head.metadata.name, head.spec.nodeName, json.loads(raw)))
        return head.metadata.name


async def test_an_event_that_changes_nothing_kept_is_dropped_from_its_head() -> None:
    """A bound pod's annotation patch (the extender's own ``eams.io/*``) comes back on the
    watch as ``MODIFIED`` with the same uid and node: the feed is asked from the event's head
    alone and never handed the object; the binding and the deletion are handed on whole."""
    import threading

    from eams.kube.listwatch import ListWatch

    api = FakeApiServer()
    await api.serve()
    feed, stop = _Recording(), threading.Event()
    core = _core(api)
    watch = ListWatch("pods", core.list_pod_for_all_namespaces, None, feed, lambda *a: None, stop)
    thread = threading.Thread(target=watch.run, daemon=True)
    try:
        api.put("pods", pod_object("job-1"))
        thread.start()
        await _until(lambda: _async(len(feed.events) == 1))  # listed
        await _until(lambda: _async(len(api.watch_requests) == 1))  # watching
        api.bind("default", "job-1", "node-a")
        patch = {"metadata": {"annotations": {"eams.io/cleared-node": "node-a"}}}
        pod = api.resources["pods"].objects["default/job-1"]
        api.put("pods", {**pod, "metadata": {**pod["metadata"], **patch["metadata"]}})
        api.delete("pods", "default/job-1")
        await _until(lambda: _async(len(feed.events) == 3))
    finally:
        stop.set()
        await api.close()
    assert [(kind, name, node) for kind, name, node, _ in feed.events] == [
        ("ADDED", "job-1", ""),
        ("MODIFIED", "job-1", "node-a"),
        ("DELETED", "job-1", "node-a"),
    ]
    assert feed.skipped == [("MODIFIED", "job-1")]  # the annotation patch, never decoded whole
    assert feed.events[2][3]["metadata"]["annotations"]["eams.io/cleared-node"] == "node-a"
