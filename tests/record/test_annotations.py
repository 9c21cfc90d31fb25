"""The ``eams.io/*`` annotations as a JSON merge patch (RFC 7386), in the published shape.

No API server runs here. The patch is checked against what Kubernetes accepts (annotation keys
are qualified names, values strings: apimachinery ``ValidateAnnotations``), applied to a real
pod (``k8s/honeycomb_pods.json``) with RFC 7386's own algorithm, and sent by the official
kubernetes client to a loopback HTTP server that plays the API server's PATCH: the request's
path, content type and body are what the API server would get.
"""

from __future__ import annotations

import copy
import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import msgspec
import pytest
from kubernetes import client as k8s

from eams.kube.names import CLEARED_NODE, CLEARING_PRICE, MERGE_PATCH
from eams.scheduler.record import Placement, PodRef, annotation_patch
from eams.scheduler.record.annotations import KEYS

# apimachinery/pkg/util/validation: a qualified name's optional prefix (DNS-1123 subdomain,
# ≤ 253) and its name (≤ 63).
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 §2, the MergePatch pseudo-code, as written there."""
    if isinstance(patch, dict):
        if not isinstance(target, dict):
            target = {}
        for name, value in patch.items():
            if value is None:
                target.pop(name, None)
            else:
                target[name] = merge_patch(target.get(name), value)
        return target
    return patch


@pytest.fixture
def real_pod(shared_data: Path) -> dict[str, Any]:
    pod: dict[str, Any] = json.loads((shared_data / "k8s/honeycomb_pods.json").read_text())[
        "items"
    ][8]
    return pod


def test_every_key_is_a_valid_annotation_key(placements: list[Placement]) -> None:
    annotations = annotation_patch(placements[0])["metadata"]["annotations"]
    assert tuple(annotations) == KEYS
    for key in annotations:
        prefix, _, name = key.partition("/")
        assert len(prefix) <= 253 and DNS_SUBDOMAIN.match(prefix), key
        assert len(name) <= 63 and QUALIFIED_NAME.match(name), key
    assert all(isinstance(v, str) for v in annotations.values())


def test_applied_to_a_real_pod_it_adds_the_decision_and_keeps_the_rest(
    placements: list[Placement], real_pod: dict[str, Any]
) -> None:
    decision = placements[0]
    patched = merge_patch(copy.deepcopy(real_pod), annotation_patch(decision))
    annotations = patched["metadata"]["annotations"]
    assert annotations[CLEARED_NODE] == decision.cleared_node
    assert float(annotations[CLEARING_PRICE]) == decision.price  # reads back exactly
    for key, value in real_pod["metadata"]["annotations"].items():
        assert annotations[key] == value
    rest = {k: v for k, v in patched.items() if k != "metadata"}
    assert rest == {k: v for k, v in real_pod.items() if k != "metadata"}


def test_an_unassigned_decision_removes_a_stale_cleared_node(
    placements: list[Placement], real_pod: dict[str, Any]
) -> None:
    first = merge_patch(copy.deepcopy(real_pod), annotation_patch(placements[0]))
    nowhere = msgspec.structs.replace(placements[0], cleared_node=None, price=None, bid=None)
    second = merge_patch(first, annotation_patch(nowhere))
    assert CLEARED_NODE not in second["metadata"]["annotations"]
    assert CLEARING_PRICE not in second["metadata"]["annotations"]


class _ApiServer(BaseHTTPRequestHandler):
    """PATCH /api/v1/namespaces/{ns}/pods/{name}: applies a merge patch to the stored pod."""

    pods: ClassVar[dict[str, dict[str, Any]]] = {}
    seen: ClassVar[list[dict[str, Any]]] = []

    def do_PATCH(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.seen.append(
            {"path": self.path, "type": self.headers["Content-Type"], "body": json.loads(body)}
        )
        pod = merge_patch(self.pods[self.path], json.loads(body))
        out = json.dumps(pod).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def api_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ApiServer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_the_kubernetes_client_sends_it_as_a_merge_patch(
    placements: list[Placement], real_pod: dict[str, Any], api_server: str
) -> None:
    meta = real_pod["metadata"]
    path = f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}"
    _ApiServer.pods[path] = copy.deepcopy(real_pod)
    decision = msgspec.structs.replace(
        placements[0], pod=PodRef(namespace=meta["namespace"], name=meta["name"], uid=meta["uid"])
    )
    api = k8s.CoreV1Api(k8s.ApiClient(k8s.Configuration(host=api_server)))
    patch = annotation_patch(decision)
    pod = api.patch_namespaced_pod(
        meta["name"], meta["namespace"], body=patch, _content_type=MERGE_PATCH
    )
    (request,) = _ApiServer.seen
    assert request == {"path": path, "type": MERGE_PATCH, "body": patch}
    assert pod.metadata.annotations[CLEARED_NODE] == decision.cleared_node
    assert pod.metadata.uid == meta["uid"]
