"""The upstream wire format: every example of kube-scheduler's ``types_test.go`` and requests
built from a real NodeList/PodList, answered in shapes Go's decoder accepts (reference §1)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from eams.scheduler.extender import schemas
from tests.extender.conftest import args_full, args_names, post_json, sample, write_calibration

pytestmark = pytest.mark.anyio

EXAMPLES = "k8s/extender_wire_format_upstream"
# Types the extender *answers* with: our serialisation must equal upstream's byte for byte.
ROUND_TRIP = {
    "ExtenderFilterResult.json": schemas.ExtenderFilterResult,
    "HostPriority.json": schemas.HostPriority,
    "ExtenderBindingArgs.json": schemas.ExtenderBindingArgs,
    "ExtenderBindingResult.json": schemas.ExtenderBindingResult,
    "ExtenderPreemptionResult.json": schemas.ExtenderPreemptionResult,
}
# Types the extender *receives*: they carry a Pod, of which only the used fields are modelled.
RECEIVED = {
    "ExtenderArgs.json": schemas.ExtenderArgs,
    "ExtenderPreemptionArgs.json": schemas.ExtenderPreemptionArgs,
}


def test_every_upstream_example_is_covered(shared_data: Path) -> None:
    files = {p.name for p in (shared_data / EXAMPLES).glob("*.json")}
    assert files == set(ROUND_TRIP) | set(RECEIVED)


@pytest.mark.parametrize("name", sorted(ROUND_TRIP))
def test_answers_serialise_exactly_as_upstream(shared_data: Path, name: str) -> None:
    text = (shared_data / EXAMPLES / name).read_text().strip()
    model = ROUND_TRIP[name].model_validate_json(text)
    assert model.model_dump_json() == text


def test_received_examples_decode(shared_data: Path) -> None:
    args = schemas.ExtenderArgs.model_validate_json(
        (shared_data / EXAMPLES / "ExtenderArgs.json").read_text()
    )
    assert args.Pod is not None and args.Pod.metadata.name == "podname"
    assert args.Pod.spec.containers is None
    assert args.Nodes is not None and args.Nodes.items[0]["metadata"]["name"] == "nodename"
    assert args.NodeNames == ["node1"]
    preempt = schemas.ExtenderPreemptionArgs.model_validate_json(
        (shared_data / EXAMPLES / "ExtenderPreemptionArgs.json").read_text()
    )
    assert preempt.NodeNameToMetaVictims["foo"].Pods[0].UID == "myuid"
    assert preempt.NodeNameToVictims["foo"].NumPDBViolations == 1


def test_score_must_be_an_integer_as_in_go() -> None:
    # Go cannot decode 7.0 into int64, nor an object into HostPriorityList (pitfall P1).
    with pytest.raises(ValidationError):
        schemas.HostPriorityList.validate_json('[{"Host": "a", "Score": 7.0}]')
    with pytest.raises(ValidationError):
        schemas.HostPriorityList.validate_json('{"HostPriorityList": []}')


async def test_upstream_args_example_is_served(shared_data: Path, make_client) -> None:
    body = (shared_data / EXAMPLES / "ExtenderArgs.json").read_bytes()
    client = await make_client(mode="active", window_ms=0, prioritize_answer="all")
    filtered = await client.post("/filter", content=body)
    assert filtered.status_code == 200
    result = schemas.ExtenderFilterResult.model_validate_json(filtered.content)
    # Both lists were sent, so both come back, each a subset of what was sent.
    assert result.NodeNames == ["node1"]
    assert result.Nodes.items == json.loads(body)["Nodes"]["items"]
    prioritized = await client.post("/prioritize", content=body)
    assert prioritized.status_code == 200
    entries = schemas.HostPriorityList.validate_json(prioritized.content)
    assert {e.Host for e in entries} == {"node1", "nodename"}
    assert all(0 <= e.Score <= 10 for e in entries)


@pytest.fixture
def real_cluster(shared_data: Path, calibrations_dir: Path) -> tuple[list[dict], dict]:
    """The real EKS NodeList (calibrated here) and a pod of the real PodList, made pending."""
    nodes = json.loads((shared_data / "k8s" / "honeycomb_eks_nodes.json").read_text())["items"]
    for i, node in enumerate(nodes):
        write_calibration(calibrations_dir, node["metadata"]["name"], 50.0 + 10 * i, 150.0 + 60 * i)
    pods = json.loads((shared_data / "k8s" / "honeycomb_pods.json").read_text())["items"]
    pod = next(p for p in pods if p["metadata"]["name"].startswith("calico-node"))
    pod = {**pod, "spec": {**pod["spec"], "schedulerName": "eams-scheduler"}}
    pod["spec"].pop("nodeName")
    return nodes, pod


async def test_real_nodelist_full_payload_echoes_the_objects(
    real_cluster, make_client, clock
) -> None:
    nodes, pod = real_cluster
    client = await make_client(mode="active", window_ms=0, prioritize_answer="all")
    names = [n["metadata"]["name"] for n in nodes]
    await post_json(client, "/telemetry", {"samples": [sample(n, clock(), 0.6) for n in names]})
    response = await post_json(client, "/filter", args_full(pod, nodes))
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error"}
    assert body["Nodes"]["items"] == nodes  # unchanged, managedFields and all
    assert body["NodeNames"] is None and body["Error"] == ""
    scores = (await post_json(client, "/prioritize", args_full(pod, nodes))).json()
    assert [e["Host"] for e in scores] == names
    assert max(e["Score"] for e in scores) == 10  # the single-pod bid winner


async def test_real_nodelist_names_only_uses_the_learnt_cache(
    real_cluster, make_client, clock
) -> None:
    nodes, pod = real_cluster
    client = await make_client(mode="active", window_ms=0)
    names = [n["metadata"]["name"] for n in nodes]
    assert (await post_json(client, "/nodes", {"items": nodes})).json() == {"accepted": 2}
    await post_json(client, "/telemetry", {"samples": [sample(n, clock(), 0.6) for n in names]})
    body = (await post_json(client, "/filter", args_names(pod, names))).json()
    assert body["NodeNames"] == names and body["Nodes"] is None
    scores = (await post_json(client, "/prioritize", args_names(pod, names))).json()
    # Node 0 is calibrated cheaper (50→150 W vs 60→210 W) at equal headroom: it wins, and is
    # the one node listed (the deciding answer: node 1 scores under 10).
    assert scores == [{"Host": names[0], "Score": 10}]


def test_priority_encoder_writes_what_go_decodes() -> None:
    encoder = schemas.HostPriorityEncoder()
    names = ["node-a", 'odd"name', "nœud-ü", "node-a2"]
    # Same list again: the cached answer bytes are reused; an int8 array is what rows hand over.
    for scores in ([10, 0, 5, 9], [1, 2, 3, 4], np.array([0, 10, 10, 7], dtype=np.int8)):
        text = encoder.encode(names, scores)
        assert json.loads(text) == [
            {"Host": n, "Score": s} for n, s in zip(names, scores, strict=True)
        ]
        assert [e.Score for e in schemas.HostPriorityList.validate_json(text)] == list(scores)
    assert encoder.encode([], []) == b"[]"


def test_the_deciding_answer_is_what_go_decodes() -> None:
    names = ["node-a", 'odd"name', "nœud-ü", "node-a2"]
    for scores, listed in (
        ([10, 0, 5, 9], ["node-a"]),
        (np.array([0, 10, 10, 7], dtype=np.int8), ['odd"name', "nœud-ü"]),  # ties: both
        ([1, 2, 3, 4], []),
    ):
        text = schemas.encode_deciding(names, scores)
        assert json.loads(text) == [{"Host": n, "Score": 10} for n in listed]
        assert [e.Host for e in schemas.HostPriorityList.validate_json(text)] == listed
    assert schemas.encode_deciding([], []) == b"[]"
