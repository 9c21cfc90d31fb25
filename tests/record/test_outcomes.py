"""The outcome join against watch events in the published Kubernetes shape.

No API server runs here: the events are ``{"type": ..., "object": Pod}`` as ``GET
/api/v1/pods?watch=true`` sends them (API reference "Watch"), built from the real pods of
``k8s/honeycomb_pods.json`` (a ``kubectl get pods -o json``) walked through their life
(pending → bound → running → succeeded → deleted), and from the kubernetes client's own
``V1Pod`` model serialised as the client would.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from kubernetes import client as k8s

from eams.scheduler.record import (
    Bound,
    Ended,
    OutcomeJoin,
    Placement,
    PodRef,
    RecordMetrics,
    decode_pod,
)
from eams.scheduler.record.schema import Record
from tests.record.conftest import window

T0 = "2025-01-02T03:04:05Z"
T_BOUND = "2025-01-02T03:04:06Z"
T_START = "2025-01-02T03:04:08Z"
T_END = "2025-01-02T03:09:08Z"
T0_S, T_BOUND_S, T_START_S, T_END_S = 1735787045.0, 1735787046.0, 1735787048.0, 1735787348.0


@pytest.fixture
def real_pods(shared_data: Path) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = json.loads((shared_data / "k8s/honeycomb_pods.json").read_text())[
        "items"
    ]
    assert len(items) == 11
    return items


def life(pod: dict[str, Any], node: str) -> list[dict[str, Any]]:
    """Watch events of a pod's life on ``node``, from a real pod object."""
    pending = copy.deepcopy(pod)
    pending["spec"].pop("nodeName", None)
    pending["spec"]["schedulerName"] = "eams-scheduler"
    pending["status"] = {
        "phase": "Pending",
        "conditions": [{"type": "PodScheduled", "status": "False", "lastTransitionTime": T0}],
    }
    bound = copy.deepcopy(pending)
    bound["spec"]["nodeName"] = node
    bound["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": T_BOUND}
    ]
    running = copy.deepcopy(bound)
    running["status"].update(
        phase="Running",
        startTime=T_START,
        containerStatuses=[{"name": "c", "state": {"running": {"startedAt": T_START}}}],
    )
    done = copy.deepcopy(running)
    done["status"].update(
        phase="Succeeded",
        containerStatuses=[
            {"name": "c", "state": {"terminated": {"exitCode": 0, "finishedAt": T_END}}}
        ],
    )
    return [
        {"type": "ADDED", "object": pending},
        {"type": "MODIFIED", "object": bound},
        {"type": "MODIFIED", "object": running},
        {"type": "MODIFIED", "object": done},
        {"type": "DELETED", "object": done},
    ]


def decision_for(pod: dict[str, Any], cleared: str | None, mode: str = "active") -> Placement:
    meta = pod["metadata"]
    ref = PodRef(namespace=meta["namespace"], name=meta["name"], uid=meta["uid"])
    return msgspec.structs.replace(window(1, mode=mode)[0], pod=ref, cleared_node=cleared)


def test_a_pods_life_gives_one_bound_and_one_ended(real_pods: list[dict[str, Any]]) -> None:
    emitted: list[Record] = []
    join = OutcomeJoin(emitted.append, clock=lambda: 42.0)
    pod = real_pods[0]
    join.decided([decision_for(pod, "mini-2")])
    for event in life(pod, "mini-2"):
        join.observe(event)
    assert [type(r) for r in emitted] == [Bound, Ended]
    bound, ended = emitted
    assert isinstance(bound, Bound) and isinstance(ended, Ended)
    assert (bound.bound_node, bound.cleared_node, bound.honoured) == ("mini-2", "mini-2", True)
    assert bound.bound_at_s == T_BOUND_S
    assert bound.pod.uid == pod["metadata"]["uid"]
    assert (ended.phase, ended.deleted, ended.node) == ("Succeeded", False, "mini-2")
    assert (ended.started_at_s, ended.ended_at_s, ended.runtime_s) == (
        T_START_S,
        T_END_S,
        T_END_S - T_START_S,
    )


def test_a_pod_decoded_once_joins_as_its_watch_line_does(
    real_pods: list[dict[str, Any]],
) -> None:
    """The extender's watch decodes each pod once (``decode_pod``) and hands it to
    ``observe_pod``: the same records as the whole watch line through ``observe``."""
    pod = real_pods[0]
    decision = decision_for(pod, "mini-2")
    runs: list[list[Record]] = [[], []]
    for emitted, decoded in zip(runs, (False, True), strict=True):
        join = OutcomeJoin(emitted.append, clock=lambda: 42.0)
        join.decided([decision])
        for event in life(pod, "mini-2"):
            if decoded:
                join.observe_pod(event["type"], decode_pod(json.dumps(event["object"])))
            else:
                join.observe(json.dumps(event).encode())
    assert [type(r) for r in runs[1]] == [Bound, Ended]
    assert runs[0] == runs[1]


def test_the_honoured_fraction_is_measured(real_pods: list[dict[str, Any]]) -> None:
    """11 real pods: 8 bound where the extender cleared them, 2 elsewhere, 1 cleared nowhere."""
    metrics = RecordMetrics()
    emitted: list[Record] = []
    join = OutcomeJoin(emitted.append, metrics)
    plan = ["mini-1"] * 8 + ["mini-2"] * 2 + [None]
    join.decided([decision_for(pod, cleared) for pod, cleared in zip(real_pods, plan, strict=True)])
    for pod in real_pods:
        for event in life(pod, "mini-1"):
            join.observe(json.dumps(event).encode())  # raw lines, as the watch stream sends
    honoured = [r.honoured for r in emitted if isinstance(r, Bound)]
    assert honoured == [True] * 8 + [False] * 2 + [None]

    def count(label: str) -> float:
        return (
            metrics.registry.get_sample_value(
                "eams_record_bindings_total", {"mode": "active", "honoured": label}
            )
            or 0.0
        )

    assert (count("yes"), count("no"), count("no_choice")) == (8, 2, 1)
    assert count("yes") / (count("yes") + count("no")) == 0.8
    assert metrics.registry.get_sample_value("eams_record_ends_total", {"phase": "Succeeded"}) == 11


def test_a_pod_bound_without_being_scored_had_no_choice(real_pods: list[dict[str, Any]]) -> None:
    """kube-scheduler skips scoring when one node alone passes its filters, and may bind a pod
    before its batch cleared: the extender's decision was never offered, so the binding is
    neither honoured nor overridden (``scored`` false, counted ``not_scored``), whether the
    binding comes after the decision or before it."""
    metrics = RecordMetrics()
    emitted: list[Record] = []
    scored = {real_pods[0]["metadata"]["uid"]}
    join = OutcomeJoin(
        emitted.append, metrics, was_scored=lambda decision: decision.pod.uid in scored
    )
    first, second, third = real_pods[:3]
    join.decided([decision_for(first, "mini-1"), decision_for(second, "mini-1")])
    for pod in (first, second, third):
        for event in life(pod, "mini-2")[:2]:  # pending, bound to mini-2
            join.observe(event)
    join.decided([decision_for(third, "mini-1")])  # cleared after it was bound
    bound = [r for r in emitted if isinstance(r, Bound)]
    assert [(b.pod.name, b.scored, b.honoured) for b in bound] == [
        (first["metadata"]["name"], True, False),
        (second["metadata"]["name"], False, None),
        (third["metadata"]["name"], False, None),
    ]

    def count(label: str) -> float | None:
        return metrics.registry.get_sample_value(
            "eams_record_bindings_total", {"mode": "active", "honoured": label}
        )

    assert (count("no"), count("not_scored"), count("yes")) == (1, 2, None)


def test_a_binding_seen_before_its_decision_waits_for_it(real_pods: list[dict[str, Any]]) -> None:
    """Shadow mode records at clearing; kube-scheduler may bind first. The annotation hook
    gets the decision and its binding once."""
    emitted: list[Record] = []
    hooked: list[tuple[Placement, Bound]] = []
    join = OutcomeJoin(emitted.append, on_bound=lambda d, b: hooked.append((d, b)))
    pod = real_pods[1]
    events = life(pod, "mini-5")
    join.observe(events[0])
    join.observe(events[1])
    assert emitted == []
    completed = join.decided([decision_for(pod, "mini-3", mode="shadow")])
    assert completed == emitted and len(emitted) == 1
    bound = emitted[0]
    assert isinstance(bound, Bound)
    assert (bound.honoured, bound.mode, bound.bound_node) == (False, "shadow", "mini-5")
    join.decided([decision_for(pod, "mini-5")])  # a later clearing does not re-emit
    assert len(emitted) == 1
    assert [(d.cleared_node, b) for d, b in hooked] == [("mini-3", bound)]


def test_a_pod_created_again_under_its_name_is_another_pod(
    real_pods: list[dict[str, Any]],
) -> None:
    emitted: list[Record] = []
    join = OutcomeJoin(emitted.append)
    pod = real_pods[2]
    join.decided([decision_for(pod, "mini-1")])
    again = copy.deepcopy(pod)
    again["metadata"]["uid"] = "another-uid"
    for event in life(again, "mini-1"):
        join.observe(event)
    assert emitted == []


def test_a_decision_without_uid_joins_by_name(real_pods: list[dict[str, Any]]) -> None:
    emitted: list[Record] = []
    join = OutcomeJoin(emitted.append)
    pod = real_pods[3]
    decision = decision_for(pod, "mini-4")
    join.decided(
        [
            msgspec.structs.replace(
                decision, pod=PodRef(namespace=decision.pod.namespace, name=decision.pod.name)
            )
        ]
    )
    for event in life(pod, "mini-4")[:2]:
        join.observe(event)
    assert len(emitted) == 1 and emitted[0].pod.uid == pod["metadata"]["uid"]  # type: ignore[union-attr]


def test_deleted_while_pending_ends_without_binding(real_pods: list[dict[str, Any]]) -> None:
    emitted: list[Record] = []
    join = OutcomeJoin(emitted.append, clock=lambda: 99.0)
    pod = real_pods[4]
    join.decided([decision_for(pod, "mini-1")])
    pending = life(pod, "mini-1")[0]
    join.observe(pending)
    join.observe({"type": "DELETED", "object": pending["object"]})
    (ended,) = emitted
    assert isinstance(ended, Ended)
    assert (ended.deleted, ended.phase, ended.node, ended.runtime_s) == (
        True,
        "Pending",
        None,
        None,
    )
    assert ended.ended_at_s == 99.0


def test_other_schedulers_bookmarks_and_errors_are_ignored(
    real_pods: list[dict[str, Any]],
) -> None:
    emitted: list[Record] = []
    join = OutcomeJoin(emitted.append, scheduler_names={"eams-scheduler"})
    pod = real_pods[5]  # as published: schedulerName default-scheduler, bound, running
    join.decided([decision_for(pod, "duckboat-01")])
    join.observe({"type": "MODIFIED", "object": pod})
    join.observe({"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "12"}}})
    join.observe({"type": "ERROR", "object": None})
    assert emitted == []
    everyone = OutcomeJoin(emitted.append)
    everyone.decided([decision_for(pod, "duckboat-01")])
    everyone.observe({"type": "MODIFIED", "object": pod})
    assert [r.honoured for r in emitted] == [True]  # type: ignore[union-attr]


def test_the_kubernetes_clients_own_pod_model(real_pods: list[dict[str, Any]]) -> None:
    """A ``V1Pod`` serialised by the official client (camelCase keys, RFC 3339 times)."""
    from datetime import UTC, datetime

    finished = datetime(2025, 1, 2, 3, 9, 8, tzinfo=UTC)
    pod = k8s.V1Pod(
        metadata=k8s.V1ObjectMeta(name="web-1", namespace="shop", uid="u-web-1"),
        spec=k8s.V1PodSpec(
            containers=[k8s.V1Container(name="c")],
            node_name="mini-6",
            scheduler_name="eams-scheduler",
        ),
        status=k8s.V1PodStatus(
            phase="Failed",
            start_time=datetime(2025, 1, 2, 3, 4, 8, tzinfo=UTC),
            conditions=[
                k8s.V1PodCondition(
                    type="PodScheduled",
                    status="True",
                    last_transition_time=datetime(2025, 1, 2, 3, 4, 6, tzinfo=UTC),
                )
            ],
            container_statuses=[
                k8s.V1ContainerStatus(
                    name="c",
                    image="i",
                    image_id="",
                    ready=False,
                    restart_count=0,
                    state=k8s.V1ContainerState(
                        terminated=k8s.V1ContainerStateTerminated(exit_code=1, finished_at=finished)
                    ),
                )
            ],
        ),
    )
    body = k8s.ApiClient().sanitize_for_serialization(pod)
    emitted: list[Record] = []
    join = OutcomeJoin(emitted.append)
    join.decided(
        [
            msgspec.structs.replace(
                window(1)[0], pod=PodRef(namespace="shop", name="web-1", uid="u-web-1")
            )
        ]
    )
    join.observe(json.dumps({"type": "MODIFIED", "object": body}))
    bound, ended = emitted
    assert isinstance(bound, Bound) and bound.bound_at_s == T_BOUND_S
    assert isinstance(ended, Ended) and (ended.phase, ended.runtime_s) == ("Failed", 300.0)


def test_a_malformed_event_names_the_field() -> None:
    join = OutcomeJoin(lambda r: None)
    with pytest.raises(msgspec.ValidationError, match=r"\$\.object\.spec\.nodeName"):
        join.observe({"type": "MODIFIED", "object": {"spec": {"nodeName": 3}}})


def test_memory_is_bounded_the_oldest_forgotten() -> None:
    emitted: list[Record] = []
    join = OutcomeJoin(emitted.append, keep=10)
    refs = [PodRef(namespace="ns", name=f"p{i}", uid=f"u{i}") for i in range(100)]
    join.decided([msgspec.structs.replace(window(1)[0], pod=ref) for ref in refs])

    def bind(ref: PodRef) -> dict[str, Any]:
        meta = {"name": ref.name, "namespace": ref.namespace, "uid": ref.uid}
        return {"type": "MODIFIED", "object": {"metadata": meta, "spec": {"nodeName": "mini-1"}}}

    assert join.observe(bind(refs[0])) == []  # forgotten
    assert len(join.observe(bind(refs[99]))) == 1
