"""The gate integration's parts (``gates.py``, :mod:`eams.kube.gates`): which pods are gated
and may be pinned, which nodes a gated pod may be cleared onto, what a failed release does, and
the floor taint waiting for pinned pods. The release against the real kube-apiserver and
kube-scheduler is ``tests/k8s/test_extender_e2e.py``."""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any

import msgspec
import pytest
from prometheus_client import CollectorRegistry

from eams.kube.gates import release_patch
from eams.kube.names import MARKET_GATE
from eams.kube.pods import PodObject
from eams.scheduler.extender.candidates import StaticCandidates
from eams.scheduler.extender.gates import MAX_ATTEMPTS, GateReleaser, backoff_s
from eams.scheduler.extender.nodes import NodeCache
from eams.scheduler.extender.pending import PendingDecoder, PendingPod, pending_pod
from eams.scheduler.extender.table import NodeTable
from tests.extender.conftest import node_object, pod_object
from tests.extender.test_floor import NOW_S, POD_W, _Cluster

AFFINITY = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": "kubernetes.io/hostname", "labelSelector": {}}
        ]
    }
}
PVC = [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]
HOST_PORT = [{"containerPort": 80, "hostPort": 8080}]


def _decoded(pod: dict[str, Any]) -> PendingPod:
    """The pod as the watch's decode reads it, on its first (validated) and second (cheap)
    sight, checked alike, and alike the validated path's sizing."""
    raw = msgspec.json.encode(pod)
    decode = PendingDecoder()
    first, second = decode(raw), decode(raw)
    assert first == second
    validated = pending_pod(PodObject.model_validate_json(raw))
    assert replace(second, gated=False, pinnable=False) == validated
    return second


@pytest.mark.parametrize(
    ("gates", "extra", "gated", "pinnable"),
    [
        ((), {}, False, False),
        ((MARKET_GATE,), {}, True, True),
        (("example.com/other", MARKET_GATE), {}, True, False),  # another gate still on
        (("example.com/other",), {}, False, False),
        ((MARKET_GATE,), {"affinity": AFFINITY}, True, False),
        ((MARKET_GATE,), {"affinity": {}}, True, True),
        ((MARKET_GATE,), {"topologySpreadConstraints": [{"maxSkew": 1}]}, True, False),
        ((MARKET_GATE,), {"volumes": PVC}, True, False),
        ((MARKET_GATE,), {"volumes": [{"name": "tmp", "emptyDir": {}}]}, True, True),
        ((MARKET_GATE,), {"resourceClaims": [{"name": "gpu"}]}, True, False),
    ],
)
def test_a_pod_is_gated_and_pinnable_by_what_the_market_judges(
    gates: tuple[str, ...], extra: dict[str, Any], gated: bool, pinnable: bool
) -> None:
    pod = pod_object("p")
    if gates:
        pod["spec"]["schedulingGates"] = [{"name": g} for g in gates]
    pod["spec"].update(extra)
    decoded = _decoded(pod)
    assert (decoded.gated, decoded.pinnable) == (gated, pinnable)


def test_a_host_port_or_another_resource_is_not_pinned() -> None:
    for change in (
        lambda c: c.update(ports=HOST_PORT),
        lambda c: c["resources"]["requests"].update({"nvidia.com/gpu": "1"}),
        lambda c: c["resources"]["requests"].update({"ephemeral-storage": "1Gi"}),
    ):
        pod = _gated_json("p")
        change(pod["spec"]["containers"][0])
        assert not _decoded(pod).pinnable


def test_the_release_removes_only_the_market_gate_and_pins_by_node_name_and_uid() -> None:
    pinned = release_patch("mini-2", "uid-1")
    assert pinned["spec"]["schedulingGates"] == [{"$patch": "delete", "name": MARKET_GATE}]
    terms = pinned["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    assert terms == [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["mini-2"]}]}
    ]
    assert pinned["metadata"] == {"uid": "uid-1"}
    assert "affinity" not in release_patch(None)["spec"] and "metadata" not in release_patch(None)


def _node(name: str, **spec: Any) -> dict[str, Any]:
    node = node_object(name)
    node["spec"].update(spec)
    return node


def test_a_gated_pod_is_cleared_only_onto_nodes_its_static_filters_pass() -> None:
    nodes = NodeCache(NodeTable())
    gpu = _node("gpu")
    gpu["metadata"]["labels"]["accelerator"] = "gpu"
    nodes.learn(
        [
            _node("plain"),
            gpu,
            _node("cordoned", unschedulable=True),
            _node("asleep", taints=[{"key": "eams.io/asleep", "effect": "NoSchedule"}]),
            _node("hot", taints=[{"key": "eams.io/power-headroom-low", "effect": "NoSchedule"}]),
            _node("soft", taints=[{"key": "x", "effect": "PreferNoSchedule"}]),
        ],
        "items",
    )
    static = StaticCandidates(nodes)
    plain_pod = _gated("a")
    everywhere = static.of(plain_pod)
    assert everywhere == {"plain", "gpu", "soft"}
    assert static.of(_gated("b")) is everywhere  # one object while it holds
    on_gpu = _gated_json("c")
    on_gpu["spec"]["nodeSelector"] = {"accelerator": "gpu"}
    assert static.of(_decoded(on_gpu)) == {"gpu"}
    tolerant = _gated_json("d")
    tolerant["spec"]["tolerations"] = [{"operator": "Exists"}]
    assert static.of(_decoded(tolerant)) == {
        "plain", "gpu", "soft", "cordoned", "asleep", "hot"
    }  # fmt: skip
    # a node's taints change: the kept answer is dropped
    nodes.learn([_node("plain", taints=[{"key": "k", "effect": "NoExecute"}])], "items")
    assert static.of(plain_pod) == {"gpu", "soft"}


class _Sender:
    """Answers each pod's patches with the statuses given for it, in turn, then 200 (a stand-in
    for the API server: a 500, a 422 or a dropped connection on demand is what kube-apiserver
    cannot be made to give here). Shared by every lane."""

    def __init__(self, **answers: list[int | Exception]) -> None:
        self.answers = answers
        self.sent: list[tuple[str, str, dict[str, Any]]] = []
        self.lock = threading.Lock()

    def __call__(self, patches: list[tuple[str, str, bytes]]) -> list[int | Exception]:
        statuses: list[int | Exception] = []
        with self.lock:
            for namespace, name, body in patches:
                self.sent.append((namespace, name, msgspec.json.decode(body)))
                left = self.answers.get(name) or []
                statuses.append(left.pop(0) if left else 200)
        return statuses

    def of(self, name: str) -> list[str | None]:
        """The pinned node of each patch sent for pod ``name``, in order (``None``: unpinned)."""
        with self.lock:
            return [_pin(body) for _, n, body in self.sent if n == name]


def _pin(body: dict[str, Any]) -> str | None:
    affinity = body["spec"].get("affinity")
    if affinity is None:
        return None
    term = affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    return str(term["nodeSelectorTerms"][0]["matchFields"][0]["values"][0])


class _Loop:
    """The tests' event loop: what the sending threads hand over runs at once under a lock;
    what is asked for later waits in ``due`` until :meth:`run_due` (the delays kept)."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.due: list[tuple[float, Any]] = []

    def now(self, action: Any) -> None:
        with self.lock:
            action()

    def later(self, delay_s: float, action: Any) -> None:
        with self.lock:
            self.due.append((delay_s, action))

    def run_due(self) -> list[float]:
        with self.lock:
            due, self.due = self.due, []
            for _, action in due:
                action()
        return [d for d, _ in due]


def _releaser(sender: _Sender, clock: list[float] | None = None) -> tuple[GateReleaser, _Loop]:
    now = clock or [NOW_S]
    loop = _Loop()
    releaser = GateReleaser(
        lambda: sender, CollectorRegistry(), loop.now, loop.later, lambda: now[0]
    )
    return releaser, loop


def _count(releaser: GateReleaser, outcome: str) -> float:
    return releaser.outcomes.labels(outcome)._value.get()


def _gated_json(name: str) -> dict[str, Any]:
    pod = pod_object(name)
    pod["spec"]["schedulingGates"] = [{"name": MARKET_GATE}]
    return pod


def _gated(name: str) -> PendingPod:
    return _decoded(_gated_json(name))


def _until(condition: Any, what: str) -> None:
    """Wait (10 s at most) for the sending threads to get ``condition()`` true."""
    for _ in range(1000):
        if condition():
            return
        threading.Event().wait(0.01)
    raise AssertionError(f"not within 10 s: {what}")


def test_a_failed_release_is_sent_again_pinned_then_unpinned_with_growing_waits() -> None:
    sender = _Sender(a=[500, 503], b=[422], c=[422, 422], gone=[404])
    releaser, loop = _releaser(sender)
    for name in ("a", "b", "c", "gone"):
        releaser.release(_gated(name), "mini-1")
    _until(lambda: len(loop.due) == 3 and _count(releaser, "gone") == 1, "the first failures")
    delays = loop.run_due()  # a's and b's and c's second releases
    _until(lambda: len(loop.due) == 1 and _count(releaser, "refused") == 1, "the second")
    delays += loop.run_due()  # a's third
    _until(lambda: len(sender.sent) == 8 and _count(releaser, "ok") == 2, "a's third release")
    releaser.close()
    assert sender.of("a") == ["mini-1", "mini-1", None]  # as it was once, then unpinned
    assert sender.of("b") == ["mini-1", None]  # the pin refused: unpinned at once
    assert sender.of("c") == ["mini-1", None]  # refused twice: it ends there
    assert sender.of("gone") == ["mini-1"]
    assert sorted(delays) == [0.0, 0.0, 0.2, 0.4]
    assert _count(releaser, "gone") == 1 and _count(releaser, "refused") == 1
    assert all(body["metadata"]["uid"] == f"uid-{name}" for _, name, body in sender.sent)


def test_a_release_failing_every_time_is_abandoned_and_a_bound_pod_is_not_sent_again() -> None:
    sender = _Sender(a=[503] * MAX_ATTEMPTS, b=[503])
    releaser, loop = _releaser(sender)
    releaser.release(_gated("a"), "mini-1")
    for attempt in range(1, MAX_ATTEMPTS):
        _until(lambda: len(loop.due) == 1, f"failure {attempt}")
        assert loop.run_due() == [backoff_s(attempt)]
    _until(lambda: _count(releaser, "abandoned") == 1, "the last failure")
    assert loop.due == []
    releaser.release(_gated("b"), "mini-1")
    _until(lambda: len(loop.due) == 1, "b's failure")
    releaser.bound("default/b")  # bound meanwhile: the retry is not sent
    loop.run_due()
    releaser.close()
    assert sender.of("b") == ["mini-1"]
    assert backoff_s(1) == 0.2 and backoff_s(20) == 30.0


def test_pinned_pods_hold_the_floor_taint_off_their_node_until_bound() -> None:
    clock = [NOW_S]
    releaser, _ = _releaser(_Sender(), clock)
    cluster = _Cluster({"node-x": 0.6})
    cluster.keeper.holding = releaser.holding
    for pod in ("ns/p1", "ns/p2", "ns/p3"):  # one batch, pinned onto node-x
        cluster.herd.reserve("node-x", pod, POD_W, NOW_S)
        releaser.release(replace(_gated("x"), key=pod), "node-x")
    for pod in ("ns/p1", "ns/p2"):  # bound: 0.6 − 0.4 is under the floor 0.3
        cluster.herd.bind(pod)
        releaser.bound(pod)
    assert cluster.floor.to_taint(NOW_S) == {"node-x"}
    assert cluster.plan() == []  # p3, pinned there, is not bound yet
    releaser.bound("ns/p3")
    assert cluster.plan() == [("node-x", "add")]
    # a pinned pod never bound stops holding the taint off after PIN_HOLD_S
    releaser.release(replace(_gated("y"), key="ns/p4"), "node-y")
    assert releaser.holding() == {"node-y"}
    clock[0] += 31.0
    assert releaser.holding() == set()
    releaser.close()


class _Releases:
    """Records what the extender releases (the releaser's threads are tested above)."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str | None]] = []

    def release(self, pod: PendingPod, node: str | None, decision: Any = None) -> None:
        self.sent.append((pod.key, node))

    def bound(self, key: str) -> None:
        pass


def test_a_pin_is_checked_against_the_node_as_it_is_at_release(tmp_path: Any) -> None:
    from eams.calibrate.calfile import load_calibration
    from eams.scheduler.extender.metrics import ExtenderMetrics
    from eams.scheduler.extender.service import Extender
    from eams.scheduler.extender.settings import Settings
    from eams.telemetry import TelemetrySample
    from tests.extender.conftest import sample, write_calibration

    lines = {"cheap": (30.0, 90.0), "dear": (60.0, 260.0)}  # the market prefers cheap
    calibrations = {
        name: load_calibration(write_calibration(tmp_path, name, idle_w, max_w))
        for name, (idle_w, max_w) in lines.items()
    }
    for mode, taint, expected in (
        ("active", None, "cheap"),
        ("active", {"key": "example.com/maintenance", "effect": "NoSchedule"}, None),
        ("shadow", None, None),
    ):
        extender = Extender(Settings(mode=mode), calibrations, ExtenderMetrics(), lambda: NOW_S)
        extender.observe_nodes([node_object(n) for n in lines], "node")
        extender.ingest([TelemetrySample.from_json(sample(n, NOW_S, 0.6)) for n in lines])
        releases = _Releases()
        extender.releaser = releases  # type: ignore[assignment]
        pod = replace(_gated("p"), candidates=extender.static_candidates.of(_gated("p")))
        if taint is not None:  # tainted after the pod was seen, before its clearing
            extender.observe_nodes([_node("cheap", taints=[taint])], "node")
        rows = extender._clear([pod])
        assert rows[0].node == "cheap"  # cleared over the candidates as they were seen
        assert releases.sent == [("default/p", expected)], (mode, taint)
