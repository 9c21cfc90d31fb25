"""The gate integration's parts (``gates.py``, :mod:`eams.kube.gates`): which pods are gated
and may be pinned, which nodes a gated pod may be cleared onto, what a failed release does, and
the floor taint waiting for pinned pods. The release against the real kube-apiserver and
kube-scheduler is ``tests/k8s/test_extender_e2e.py``."""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any

import msgspec
import numpy as np
import pytest
from prometheus_client import CollectorRegistry

from eams.kube.gates import release_patch
from eams.kube.names import MARKET_GATE
from eams.kube.pods import PodObject
from eams.scheduler.extender.candidates import StaticCandidates
from eams.scheduler.extender.gates import ATTEMPTS, GateReleaser
from eams.scheduler.extender.nodes import NodeCache
from eams.scheduler.extender.pending import PendingDecoder, PendingPod, pending_pod
from eams.scheduler.extender.rows import Cleared, Columns
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


def _both_paths(pod: dict[str, Any]) -> PendingPod:
    """The pod as the watch's cheap decode sizes it, checked equal to the validated path."""
    raw = msgspec.json.encode(pod)
    decoded = PendingDecoder()
    decoded(raw)  # the first decode of a shape takes the validated path; the second the cheap
    cheap = decoded(raw)
    assert cheap == pending_pod(PodObject.model_validate_json(raw))
    return cheap


@pytest.mark.parametrize(
    ("gates", "extra", "gated", "pinnable"),
    [
        ((), {}, False, True),
        ((MARKET_GATE,), {}, True, True),
        (("example.com/other", MARKET_GATE), {}, True, True),
        (("example.com/other",), {}, False, True),
        ((MARKET_GATE,), {"affinity": AFFINITY}, True, False),
        ((MARKET_GATE,), {"affinity": {}}, True, True),
        ((MARKET_GATE,), {"topologySpreadConstraints": [{"maxSkew": 1}]}, True, False),
    ],
)
def test_a_pod_is_gated_and_pinnable_alike_on_both_decode_paths(
    gates: tuple[str, ...], extra: dict[str, Any], gated: bool, pinnable: bool
) -> None:
    pod = pod_object("p")
    if gates:
        pod["spec"]["schedulingGates"] = [{"name": g} for g in gates]
    pod["spec"].update(extra)
    decoded = _both_paths(pod)
    assert (decoded.gated, decoded.pinnable) == (gated, pinnable)


def test_the_release_removes_only_the_market_gate_and_pins_by_node_name() -> None:
    pinned = release_patch("mini-2")
    assert pinned["spec"]["schedulingGates"] == [{"$patch": "delete", "name": MARKET_GATE}]
    terms = pinned["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    assert terms == [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["mini-2"]}]}
    ]
    assert "affinity" not in release_patch(None)["spec"]


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
    plain_pod = _both_paths(pod_object("a"))
    everywhere = static.of(plain_pod)
    assert everywhere == {"plain", "gpu", "soft"}
    assert static.of(_both_paths(pod_object("b"))) is everywhere  # one object while it holds
    on_gpu = pod_object("c")
    on_gpu["spec"]["nodeSelector"] = {"accelerator": "gpu"}
    assert static.of(_both_paths(on_gpu)) == {"gpu"}
    tolerant = pod_object("d")
    tolerant["spec"]["tolerations"] = [{"operator": "Exists"}]
    assert static.of(_both_paths(tolerant)) == {"plain", "gpu", "soft", "cordoned", "asleep", "hot"}
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


class _Loop:
    """Runs what the releasing threads hand over at once, under a lock (the tests' event loop)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()

    def __call__(self, action: Any) -> None:
        with self.lock:
            action()


def _releaser(
    sender: _Sender, clock: list[float] | None = None
) -> tuple[GateReleaser, list[PendingPod]]:
    retried: list[PendingPod] = []
    now = clock or [NOW_S]
    on_loop = _Loop()
    releaser = GateReleaser(
        lambda: sender, CollectorRegistry(), retried.append, on_loop, lambda: now[0]
    )
    return releaser, retried


def _count(releaser: GateReleaser, outcome: str) -> float:
    return releaser.outcomes.labels(outcome)._value.get()


def _gated(name: str) -> PendingPod:
    pod = pod_object(name)
    pod["spec"]["schedulingGates"] = [{"name": MARKET_GATE}]
    return _both_paths(pod)


def _sent_after(sender: _Sender, count: int) -> list[tuple[str, str, dict[str, Any]]]:
    for _ in range(200):
        if len(sender.sent) >= count:
            break
        threading.Event().wait(0.01)
    return sender.sent


def test_a_failed_release_is_cleared_again_and_a_refused_pin_goes_unpinned() -> None:
    sender = _Sender(a=[500], b=[422])
    releaser, retried = _releaser(sender)
    pod_a, pod_b = _gated("a"), _gated("b")
    assert releaser.release(pod_a, "mini-1")
    assert releaser.release(pod_b, "mini-2")
    sent = _sent_after(sender, 3)
    releaser.close()
    assert retried == [pod_a]  # the 500: back to the batch, to be cleared again
    assert sorted((name, "affinity" in body["spec"]) for _, name, body in sent) == [
        ("a", True),
        ("b", False),  # the 422: the pin refused, released unpinned
        ("b", True),
    ]
    assert _count(releaser, "retried") == 2 and _count(releaser, "ok") == 1


def test_a_release_failing_every_time_keeps_the_gate_and_a_gone_pod_is_dropped() -> None:
    sender = _Sender(a=[503] * ATTEMPTS, gone=[404])
    releaser, retried = _releaser(sender)
    pod = _gated("a")
    for _ in range(ATTEMPTS):  # the extender clears it again after each failure
        retried.clear()
        releaser.release(pod, "mini-1")
        _sent_after(sender, len(sender.sent) + 1)
    releaser.release(_gated("gone"), "mini-1")
    _sent_after(sender, ATTEMPTS + 1)
    releaser.close()
    assert retried == []  # the last failure is not retried
    assert _count(releaser, "abandoned") == 1 and _count(releaser, "gone") == 1


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


def test_rows_are_released_pinned_in_active_mode_unpinned_in_shadow_and_ungated_left() -> None:
    sender = _Sender()
    releaser, _ = _releaser(sender)
    columns = Columns(["mini-1", "mini-2"])
    scores = np.zeros(2, dtype=np.int8)
    gated, plain = _gated("g"), _both_paths(pod_object("plain"))
    rows = [
        Cleared(p.key, node, 1.0, NOW_S, False, scores, columns, p)
        for p, node in ((gated, "mini-2"), (plain, "mini-1"), (_gated("nowhere"), None))
    ]
    shadow = _gated("shadow")
    assert releaser.release_rows(rows) == ["default/g"]
    assert releaser.release_rows([replace(rows[0], pod=shadow.key, source=shadow)], pin=False) == []
    sent = _sent_after(sender, 3)
    releaser.close()
    assert sorted((name, "affinity" in body["spec"]) for _, name, body in sent) == [
        ("g", True),
        ("nowhere", False),  # cleared nowhere: kube-scheduler decides
        ("shadow", False),
    ]
