"""Watch events from the API server update the extender (the list/watch loop needs a cluster)."""

from __future__ import annotations

import json
import logging

import pytest

from eams.scheduler.extender.watch import apply_node_event, apply_pod_event
from tests.extender.conftest import pod_object

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
