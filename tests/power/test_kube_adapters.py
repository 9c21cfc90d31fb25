"""The manager's Kubernetes side on the real API server (``../shared/k8s``, the shipped RBAC:
the observer and the marker act as the ``eams-power-manager`` service account), fed the
reference data's node and pods: what the observer counts and which nodes a pending pod could
use, and what the marker's patches leave on the node. A node that changes between every read
and patch is the stand-in's (``tests/servers/kubeapi.py``): the real server cannot be made to
lose that race on every one of the marker's four tries."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from eams.actuators.inventory import parse_inventory
from eams.kube.names import (
    ASLEEP_TAINT,
    MARKET_GATE,
    MERGE_PATCH,
    POWER_STATE_ANNOTATION,
    STRATEGIC_MERGE_PATCH,
    WAKE_REQUEST_ANNOTATION,
)
from eams.kube.wakerequest import WakeRequest
from eams.scheduler.power.calibrations import read_folder
from eams.scheduler.power.errors import KubeApiError
from eams.scheduler.power.kube_cache import ClusterCache
from eams.scheduler.power.kube_client import KubeClient
from eams.scheduler.power.kube_marker import KubeMarker
from eams.scheduler.power.kube_observer import KubeObserver
from eams.scheduler.power.ports import SUSPECT
from tests.power.live import HOUND, calibrate, node_doc, ready_as, workload_pod
from tests.servers.kube_control_plane import ControlPlane, eventually
from tests.servers.kube_documents import clear, load, node
from tests.servers.kubeapi import kube_api

UNREACHABLE = {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}
ASLEEP = {"key": ASLEEP_TAINT, "effect": "NoSchedule"}


MANAGER = "kube-system/eams-power-manager"


@pytest.fixture
def admin(control_plane: ControlPlane) -> Iterator[httpx.Client]:
    with control_plane.client() as client:
        yield client
        clear(client, ["a", "b", "c", "x"])


def inventory(*names: str):
    nodes = {
        name: {"method": "wol", "mac": f"02:00:00:00:00:0{i}", "ssh": "root@127.0.0.1:1"}
        for i, name in enumerate(names, start=1)
    }
    nodes[names[-1]]["k3s_server"] = True
    return parse_inventory({"nodes": nodes}, Path("."), "power.yaml")


def test_the_observer_counts_workload_requests_and_the_nodes_a_pending_pod_could_use(
    k8s, tmp_path: Path, control_plane: ControlPlane, admin: httpx.Client
) -> None:
    base, pods = k8s
    asleep = ready_as(node_doc(base, "a", taints=[*base["spec"]["taints"], ASLEEP, UNREACHABLE]),
                      False)  # fmt: skip
    plain = node_doc(base, "b", cpu="3920m", taints=[])
    server = node_doc(base, "c", taints=[])
    on_b = [
        workload_pod("web", "b", "500m"),
        {**workload_pod("done", "b", "2"), "status": {"phase": "Succeeded"}},
        workload_pod(
            "init", "b", "250m", initContainers=[{"name": "i", "resources": {"requests": {
                "cpu": "1500m", "memory": "1Gi"}}}]),
    ]  # fmt: skip
    # the real node's 11 pods moved to c: its 5 DaemonSet pods do not count
    on_c = [{**pod, "spec": {**pod["spec"], "nodeName": "c"}} for pod in pods["items"]]
    pending = [
        workload_pod("tolerant", None, "1", tolerations=HOUND),
        workload_pod("picky", None, "1", nodeSelector={"kubernetes.io/hostname": "b"}),
        workload_pod("plain", None, "1"),
        # the market's gate: pending (the market releases it); another controller's: not yet
        workload_pod("gated", None, "1", schedulingGates=[{"name": MARKET_GATE}]),
        workload_pod("queued", None, "1", schedulingGates=[{"name": "kueue.x-k8s.io/admission"}]),
    ]
    for name in "abc":
        calibrate(tmp_path / "cal", name)
    calibrate(tmp_path / "cal", "unlisted")
    unlisted = node_doc(base, "x")  # x: no inventory
    # the market's wake requests: the later one wins a pod named twice; a pod no longer pending
    # (web), a malformed request (c) and a node outside the fleet (x) are ignored
    requests = [
        (asleep, WakeRequest("a", ("default/tolerant", "default/web"), 2000.0)),
        (plain, WakeRequest("b", ("default/tolerant", "default/picky"), 1000.0)),
        (unlisted, WakeRequest("x", ("default/plain",), 3000.0)),
        (server, None),
    ]
    for doc, request in requests:
        value = request.annotation() if request else '{"pods": "default/plain"}'
        doc["metadata"].setdefault("annotations", {})[WAKE_REQUEST_ANNOTATION] = value
    nodes = [asleep, plain, server, unlisted]
    load(admin, nodes, [*on_b, *on_c, *pending])
    cache = ClusterCache(KubeClient(control_plane.kubeconfig(MANAGER))).start()
    observer = KubeObserver(
        cache, inventory("a", "b", "c"), read_folder(tmp_path / "cal"),
        agent_up=lambda name: name != "a",
    )  # fmt: skip
    try:
        obs = observer.observe(1000.0)
    finally:
        cache.close()
    fleet = obs.fleet
    assert fleet.names == ("a", "b", "c")
    assert fleet.cores.tolist() == [4.0, 3.92, 4.0]
    # b: web 0.5 + init max(0.25, 1.5) = 2 cores; the finished pod does not count
    assert fleet.pods.tolist() == [0, 2, 6] and fleet.used_cores[1] == pytest.approx(2.0)
    assert fleet.used_mem_mib[1] == pytest.approx(1024.0)
    assert obs.ready.tolist() == [False, True, True]
    assert obs.marked_asleep.tolist() == [True, False, False]
    assert obs.agent_seen_s[1:].tolist() == [1000.0, 1000.0] and obs.agent_seen_s[0] != 1000.0
    assert fleet.state.tolist() == [1, 0, 0]  # a: tainted by us and NotReady → asleep
    assert fleet.no_sleep.tolist() == [False, False, True]  # c is the k3s server
    assert fleet.sleep_power_w[0] == pytest.approx(3.4) and fleet.wake_time_s[0] == 2.0
    # the sleep taints (ours, the controller's unreachable) do not keep a pod off a once
    # awake; its own type=hound:NoSchedule does, unless tolerated
    eligible = {
        name: {fleet.names[n] for n in range(fleet.size) if fleet.pending.eligible[p, n]}
        for p, name in enumerate(fleet.pending.names)
    }
    assert eligible == {
        "default/tolerant": {"a", "b", "c"},
        "default/picky": {"b"},
        "default/plain": {"b", "c"},
        "default/gated": {"b", "c"},
    }
    # pending since its PodScheduled=False transition (2026-12-01T09:00:00Z)
    since = datetime(2026, 12, 1, 9, 0, tzinfo=UTC).timestamp()
    pending_since = dict(zip(fleet.pending.names, fleet.pending.pending_since_s, strict=True))
    assert [pending_since[f"default/{p}"] for p in ("tolerant", "picky", "plain")] == [since] * 3
    wake = {p: int(n) for p, n in zip(fleet.pending.names, fleet.pending.requested(), strict=True)}
    assert wake == {"default/tolerant": 0, "default/picky": 1, "default/plain": -1,
                    "default/gated": -1}  # fmt: skip


def test_a_pod_let_go_by_another_gate_pends_from_then_not_from_its_creation(
    k8s, tmp_path: Path, control_plane: ControlPlane, admin: httpx.Client
) -> None:
    """Kueue held the pod since 2026-12-01; its ``PodScheduled=False`` condition keeps that
    time when the gate is lifted (its status stays False), so counted from it the pod would be
    due for a wake at once, skipping the grace that lets kube-scheduler place it on an awake
    node. The observer counts it pending from the first tick it saw it let go."""
    base, _ = k8s
    kueue = {"name": "kueue.x-k8s.io/admission"}
    load(admin, [node_doc(base, "b", taints=[])],
         [workload_pod("queued", None, "1", schedulingGates=[kueue])])  # fmt: skip
    calibrate(tmp_path / "cal", "b")
    cache = ClusterCache(KubeClient(control_plane.kubeconfig(MANAGER))).start()
    observer = KubeObserver(cache, inventory("b"), read_folder(tmp_path / "cal"),
                            agent_up=lambda name: True)  # fmt: skip
    created = datetime(2026, 12, 1, 9, 0, tzinfo=UTC).timestamp()  # workload_pod's condition
    try:
        assert observer.observe(created + 7200).fleet.pending.names == ()  # held two hours
        lift = {"spec": {"schedulingGates": [{"$patch": "delete", **kueue}]}}
        admin.patch("/api/v1/namespaces/default/pods/queued", json=lift,
                    headers={"Content-Type": STRATEGIC_MERGE_PATCH}).raise_for_status()  # fmt: skip
        pending = eventually(
            lambda: p if (p := observer.observe(created + 7300).fleet.pending).names else None,
            10, "the pod pending once its gate is lifted")  # fmt: skip
        assert pending.names == ("default/queued",)
        assert pending.pending_since_s.tolist() == [created + 7300]
        later = observer.observe(created + 7400).fleet.pending
        assert later.pending_since_s.tolist() == [created + 7300]
    finally:
        cache.close()


def test_the_marker_keeps_every_other_taint_and_a_cordon_that_was_there(
    k8s, control_plane: ControlPlane, admin: httpx.Client
) -> None:
    base, _ = k8s
    doc = node_doc(base, "a", taints=[*base["spec"]["taints"], UNREACHABLE])
    doc["spec"]["unschedulable"] = True  # a person cordoned it
    load(admin, [doc])
    marker = KubeMarker(KubeClient(control_plane.kubeconfig(MANAGER)))
    marker.mark_asleep("a", "idle-past-break-even empty_s=300")
    marked = node(admin, "a")
    assert [t["key"] for t in marked["spec"]["taints"]] == [
        "type", UNREACHABLE["key"], ASLEEP_TAINT
    ]  # fmt: skip
    assert marked["spec"]["unschedulable"] is True
    request = {WAKE_REQUEST_ANNOTATION: WakeRequest("a", ("default/job",), 1.0).annotation()}
    admin.patch("/api/v1/nodes/a", json={"metadata": {"annotations": request}},
                headers={"Content-Type": MERGE_PATCH}).raise_for_status()  # fmt: skip
    marker.annotate("a", "asleep", "agent silent")
    annotations = node(admin, "a")["metadata"]["annotations"]
    assert annotations[POWER_STATE_ANNOTATION] == "asleep"
    assert WAKE_REQUEST_ANNOTATION in annotations  # the market's request stands
    marker.annotate("a", SUSPECT, "wake-timeout")
    assert WAKE_REQUEST_ANNOTATION not in node(admin, "a")["metadata"]["annotations"]
    admin.patch("/api/v1/nodes/a", json={"metadata": {"annotations": request}},
                headers={"Content-Type": MERGE_PATCH}).raise_for_status()  # fmt: skip
    marker.release("a", "re-registered")
    released = node(admin, "a")
    assert WAKE_REQUEST_ANNOTATION not in released["metadata"]["annotations"]
    assert [t["key"] for t in released["spec"]["taints"]] == ["type", UNREACHABLE["key"]]
    assert released["spec"]["unschedulable"] is True  # still the person's cordon
    assert "eams.io/was-cordoned" not in released["metadata"]["annotations"]


def test_a_node_that_keeps_changing_is_not_marked_and_the_patch_is_not_forced(k8s) -> None:
    """The stand-in (module docstring): every read returns a newer resourceVersion."""
    base, _ = k8s
    versions = itertools.count()

    def changing():  # another writer changes the node between every read and patch
        doc = node_doc(base, "a", taints=[])
        doc["metadata"]["resourceVersion"] = str(next(versions))
        return doc

    with kube_api({"a": changing}) as api:
        marker = KubeMarker(KubeClient(api.kubeconfig))
        with pytest.raises(KubeApiError, match="409") as info:
            marker.mark_asleep("a", "idle")
        assert info.value.status == 409
        assert api.conflicts == 4 and not any(p.applied for p in api.patches)
