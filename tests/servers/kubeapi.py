"""A small real HTTP server on loopback that answers the two Kubernetes API reads the power
actions make, in the published wire format, and a kubeconfig that points at it.

No kube-apiserver can run here (ENVIRONMENT.md), so this serves ``GET /api/v1/nodes/NAME``
(a ``v1.Node``) and ``GET /api/v1/pods?fieldSelector=spec.nodeName=NAME`` (a ``v1.PodList``)
from JSON documents the test gives it — the real ones in ``../shared/data/k8s`` or edits of
them — to the real kubernetes Python client. Everything else is a 404 ``Status``. A node's
document may be a callable, called at each request (a node whose Ready follows a simulator).

Example::

    with kube_api({"duckboat-01": node}, {"duckboat-01": pods}) as api:
        Cluster(api.kubeconfig).node("duckboat-01")
"""

from __future__ import annotations

import contextlib
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
                doc = api.nodes.get(parts[3])
                if doc is None:
                    self._send(404, _status(404, f'nodes "{parts[3]}" not found'))
                else:
                    self._send(200, doc() if callable(doc) else doc)
                return
            if parts == ["api", "v1", "pods"]:
                selector = parse_qs(url.query).get("fieldSelector", [""])[0]
                name = selector.removeprefix("spec.nodeName=")
                items = api.pods.get(name, {"items": []})["items"]
                self._send(200, {"kind": "PodList", "apiVersion": "v1", "metadata": {},
                                 "items": items})  # fmt: skip
                return
            self._send(404, _status(404, f"the server could not find {url.path}"))

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
    nodes: dict[str, Document], pods: dict[str, dict[str, Any]] | None = None
) -> Iterator[KubeApi]:
    """Serve ``nodes`` (name → Node or a callable returning one) and ``pods`` (node name →
    PodList) on a free loopback port until the block ends."""
    with tempfile.TemporaryDirectory(prefix="eams-kubeapi-") as tmp:
        api = KubeApi("", Path(tmp) / "kubeconfig", nodes, pods or {})
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
