"""A small real HTTP server on loopback that answers the Kubernetes API calls the power
actions and the power manager make, in the published wire format, and a kubeconfig that points
at it.

No kube-apiserver can run here (ENVIRONMENT.md), so this serves ``GET /api/v1/nodes/NAME``
(a ``v1.Node``), ``GET /api/v1/nodes`` (a ``v1.NodeList``), ``GET
/api/v1/pods?fieldSelector=spec.nodeName=NAME`` and ``GET /api/v1/pods`` (a ``v1.PodList``:
every node's pods and the unbound ``pending`` ones) from JSON documents the test gives it — the
real ones in ``../shared/data/k8s`` or edits of them — to the real kubernetes Python client.
``PATCH /api/v1/nodes/NAME`` with ``application/merge-patch+json`` is applied as RFC 7386 says
(every patch of a node kept in ``patches``, in order, and applied to each later read of it);
a patch carrying a ``metadata.resourceVersion`` other than the node's is a 409 Conflict, as
the API server's optimistic concurrency answers; each applied patch changes the
resourceVersion. Another patch type is a 415. Everything else is a 404 ``Status``. A node's
document may be a callable, called at each request (a node whose Ready follows a simulator).

Example::

    with kube_api({"duckboat-01": node}, {"duckboat-01": pods}) as api:
        Cluster(api.kubeconfig).node("duckboat-01")
"""

from __future__ import annotations

import contextlib
import copy
import json
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import yaml

from tests.extender.apiserver import merge_patch  # RFC 7386, one home in the tests

Document = dict[str, Any] | Callable[[], dict[str, Any]]


@dataclass
class KubeApi:
    """A running stand-in API server: ``url``, ``kubeconfig`` (a file), the ``requests`` seen
    (path with query), and the documents it serves (change them while it runs)."""

    url: str
    kubeconfig: Path
    nodes: dict[str, Document]
    pods: dict[str, dict[str, Any]]
    requests: list[str] = field(default_factory=list)
    pending: list[dict[str, Any]] = field(default_factory=list)
    patches: list[Patch] = field(default_factory=list)
    conflicts: int = 0
    """How many patches were refused with 409 (a stale resourceVersion)."""

    def node(self, name: str) -> dict[str, Any] | None:
        """Node ``name`` as served now: its document with every patch applied, in order."""
        doc = self.nodes.get(name)
        if doc is None:
            return None
        node = copy.deepcopy(doc() if callable(doc) else doc)
        applied = [p.body for p in self.patches if p.node == name and p.applied]
        for body in applied:
            node = merge_patch(node, body)
        meta = node.setdefault("metadata", {})
        meta["resourceVersion"] = f"{meta.get('resourceVersion', '0')}.{len(applied)}"
        return node

    def patches_of(self, name: str) -> list[dict[str, Any]]:
        """The bodies of the applied patches of node ``name``, in order."""
        return [p.body for p in self.patches if p.node == name and p.applied]


@dataclass(frozen=True)
class Patch:
    """One PATCH request: the node, its Content-Type, its body, whether it was applied."""

    node: str
    content_type: str
    body: dict[str, Any]
    applied: bool


def _status(code: int, message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message,
            "code": code}  # fmt: skip


def _handler(api: KubeApi) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            return

        def _send(self, code: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            api.requests.append(self.path)
            url = urlsplit(self.path)
            parts = url.path.strip("/").split("/")
            if parts[:3] == ["api", "v1", "nodes"] and len(parts) == 4:
                doc = api.node(parts[3])
                if doc is None:
                    self._send(404, _status(404, f'nodes "{parts[3]}" not found'))
                else:
                    self._send(200, doc)
                return
            if parts == ["api", "v1", "nodes"]:
                items = [api.node(name) for name in list(api.nodes)]
                self._send(200, {"kind": "NodeList", "apiVersion": "v1", "metadata": {},
                                 "items": items})  # fmt: skip
                return
            if url.path == "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases":
                # no Leases here: a heartbeat is the Ready condition's, as the test's documents say
                self._send(200, {"kind": "LeaseList", "apiVersion": "coordination.k8s.io/v1",
                                 "metadata": {}, "items": []})  # fmt: skip
                return
            if parts == ["api", "v1", "pods"]:
                selector = parse_qs(url.query).get("fieldSelector", [""])[0]
                if selector:
                    name = selector.removeprefix("spec.nodeName=")
                    items = api.pods.get(name, {"items": []})["items"]
                else:
                    items = [p for lst in api.pods.values() for p in lst["items"]] + api.pending
                self._send(200, {"kind": "PodList", "apiVersion": "v1", "metadata": {},
                                 "items": items})  # fmt: skip
                return
            self._send(404, _status(404, f"the server could not find {url.path}"))

        def do_PATCH(self) -> None:
            api.requests.append(f"PATCH {self.path}")
            parts = urlsplit(self.path).path.strip("/").split("/")
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            kind = (self.headers.get("Content-Type") or "").split(";")[0].strip()
            if parts[:3] != ["api", "v1", "nodes"] or len(parts) != 4:
                self._send(404, _status(404, f"the server could not find {self.path}"))
                return
            name = parts[3]
            current = api.node(name)
            if current is None:
                self._send(404, _status(404, f'nodes "{name}" not found'))
                return
            if kind != "application/merge-patch+json":
                api.patches.append(Patch(name, kind, body, False))
                accepted = "accepted media types include: application/merge-patch+json"
                message = f"the body of the request was in an unknown format - {accepted}"
                self._send(415, _status(415, message))
                return
            asked = (body.get("metadata") or {}).get("resourceVersion")
            if asked is not None and asked != current["metadata"]["resourceVersion"]:
                api.patches.append(Patch(name, kind, body, False))
                api.conflicts += 1
                message = (
                    f'Operation cannot be fulfilled on nodes "{name}": the object has been '
                    "modified; please apply your changes to the latest version and try again"
                )
                self._send(409, _status(409, message))
                return
            stored = copy.deepcopy(body)
            (stored.get("metadata") or {}).pop("resourceVersion", None)
            api.patches.append(Patch(name, kind, stored, True))
            self._send(200, api.node(name) or {})

    return Handler


def write_kubeconfig(path: Path, server: str) -> Path:
    """A kubeconfig with one cluster at ``server`` and a bearer token."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "test", "cluster": {"server": server}}],
        "users": [{"name": "test", "user": {"token": "test-token"}}],
        "contexts": [{"name": "test", "context": {"cluster": "test", "user": "test"}}],
        "current-context": "test",
    }
    path.write_text(yaml.safe_dump(config))
    return path


@contextlib.contextmanager
def kube_api(
    nodes: dict[str, Document],
    pods: dict[str, dict[str, Any]] | None = None,
    pending: list[dict[str, Any]] | None = None,
) -> Iterator[KubeApi]:
    """Serve ``nodes`` (name → Node or a callable returning one), ``pods`` (node name →
    PodList) and the unbound ``pending`` pods on a free loopback port until the block ends."""
    with tempfile.TemporaryDirectory(prefix="eams-kubeapi-") as tmp:
        api = KubeApi("", Path(tmp) / "kubeconfig", nodes, pods or {}, pending=pending or [])
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(api))
        api.url = f"http://127.0.0.1:{server.server_address[1]}"
        write_kubeconfig(api.kubeconfig, api.url)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield api
        finally:
            server.shutdown()
            thread.join()
            server.server_close()
