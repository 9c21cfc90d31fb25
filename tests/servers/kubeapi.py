"""A stand-in for the Kubernetes API server, kept for one fault the real one
(``kube_control_plane.py``) cannot be made to show on demand: a node another writer changes
between every read and patch, so that each of the power marker's optimistic-concurrency tries
conflicts (``tests/power/test_kube_adapters.py``). Every other test runs on the real server.

It is a small real HTTP server on loopback, and a kubeconfig that points at it, answering the
marker's two calls in the published wire format, to the real kubernetes Python client:

- ``GET /api/v1/nodes/NAME``: a ``v1.Node``, from the test's document, or from a callable
  called at each request (a node that changes on its own);
- ``PATCH /api/v1/nodes/NAME`` with ``application/merge-patch+json``: applied as RFC 7386 says
  (kept in ``patches``, in order, and applied to each later read), unless it carries a
  ``metadata.resourceVersion`` other than the node's: then a 409 Conflict, as the API server's
  optimistic concurrency answers (counted in ``conflicts``); each applied patch changes the
  resourceVersion. Another patch type is a 415.

Anything else is a 404 ``Status``.

Example::

    with kube_api({"a": changing_node}) as api:
        KubeMarker(KubeClient(api.kubeconfig)).mark_asleep("a", "idle")
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
from urllib.parse import urlsplit

import yaml

from tests.extender.apiserver import merge_patch  # RFC 7386, one home in the tests

Document = dict[str, Any] | Callable[[], dict[str, Any]]


@dataclass
class KubeApi:
    """A running stand-in: ``url``, ``kubeconfig`` (a file), the node documents it serves, the
    patches asked and how many conflicted."""

    url: str
    kubeconfig: Path
    nodes: dict[str, Document]
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


def _node_name(path: str) -> str | None:
    parts = urlsplit(path).path.strip("/").split("/")
    return parts[3] if parts[:3] == ["api", "v1", "nodes"] and len(parts) == 4 else None


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

        def _node(self) -> tuple[str, dict[str, Any]] | None:
            """The node the path names and its document; None once a 404 is sent."""
            name = _node_name(self.path)
            current = api.node(name) if name else None
            if name is None or current is None:
                missing = f'nodes "{name}" not found' if name else f"cannot find {self.path}"
                self._send(404, _status(404, missing))
                return None
            return name, current

        def do_GET(self) -> None:
            found = self._node()
            if found is not None:
                self._send(200, found[1])

        def do_PATCH(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            found = self._node()
            if found is None:
                return
            name, current = found
            kind = (self.headers.get("Content-Type") or "").split(";")[0].strip()
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


def _write_kubeconfig(path: Path, server: str) -> Path:
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
def kube_api(nodes: dict[str, Document]) -> Iterator[KubeApi]:
    """Serve ``nodes`` (name → Node, or a callable returning one) on a free loopback port
    until the block ends."""
    with tempfile.TemporaryDirectory(prefix="eams-kubeapi-") as tmp:
        api = KubeApi("", Path(tmp) / "kubeconfig", nodes)
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(api))
        api.url = f"http://127.0.0.1:{server.server_address[1]}"
        _write_kubeconfig(api.kubeconfig, api.url)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield api
        finally:
            server.shutdown()
            thread.join()
            server.server_close()
