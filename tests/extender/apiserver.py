"""A stand-in kube-apiserver on loopback for ``benchmarks/extender_cycle.py``: the list, watch
and patch calls the extender makes, in the published API shapes, at thousands of nodes and
hundreds of pods a second without a real server's CPU in the measurement.

The tests no longer use it: they run on the real kube-apiserver
(``tests/servers/kube_control_plane.py``), which also produces the faults this stand-in once
injected (504 Too large resource version, 410 Expired; ``tests/extender/test_watch.py``).

It serves what the Kubernetes API documents (kubernetes/website
``content/en/docs/reference/using-api/api-concepts.md``: lists carry
``metadata.resourceVersion``; ``?watch=true&resourceVersion=RV`` streams one JSON
``{"type", "object"}`` event per line — ``ADDED``, ``MODIFIED``, ``DELETED``; a field selector
turns an object leaving the selection into ``DELETED``), with the objects themselves taken from
real ``NodeList``/``PodList`` dumps; the benchmark creates and binds pods by calling
:meth:`FakeApiServer.put` and :meth:`FakeApiServer.bind` on the server's loop.

Routes: ``GET /api/v1/nodes``, ``GET /api/v1/pods`` (list or watch; ``fieldSelector`` on
``spec.nodeName``, ``spec.schedulerName``, ``status.phase``, ``metadata.name``,
``metadata.namespace`` with ``=``, ``==``, ``!=``), ``GET``/``PATCH /api/v1/nodes/NAME``
(``application/merge-patch+json``; a ``metadata.resourceVersion`` in the patch must match, else
409 Conflict: the extender's floor taints), ``PATCH /api/v1/namespaces/NS/pods/NAME`` (merge
patch: the decision record's annotations).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route


def status(code: int, reason: str, message: str, **details: Any) -> dict[str, Any]:
    """A ``meta/v1`` ``Status`` object as the apiserver answers failures with."""
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        body["details"] = details
    return body


def _field(obj: dict[str, Any], path: str) -> str:
    value: Any = obj
    for part in path.split("."):
        value = (value or {}).get(part) if isinstance(value, dict) else None
    return "" if value is None else str(value)


def selects(selector: str, obj: dict[str, Any]) -> bool:
    """Whether ``obj`` matches a field selector such as ``spec.nodeName=,status.phase!=Failed``."""
    for term in filter(None, selector.split(",")):
        if "!=" in term:
            key, _, want = term.partition("!=")
            if _field(obj, key) == want:
                return False
        else:
            key, _, want = term.replace("==", "=").partition("=")
            if _field(obj, key) != want:
                return False
    return True


class _Watcher:
    def __init__(self, selector: str) -> None:
        self.selector = selector
        self.queue: asyncio.Queue[bytes | None] = asyncio.Queue()


class Resource:
    """One collection (nodes or pods) with its history of events."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.objects: dict[str, dict[str, Any]] = {}
        self.watchers: list[_Watcher] = []
        self.history: list[tuple[int, str, dict[str, Any] | None, dict[str, Any]]] = []

    def line(self, kind: str, obj: dict[str, Any]) -> bytes:
        return msgspec.json.encode({"type": kind, "object": obj}) + b"\n"

    def transition(
        self, selector: str, old: dict[str, Any] | None, new: dict[str, Any]
    ) -> str | None:
        """The event a watcher with ``selector`` sees for old → new (``None``: nothing)."""
        was = old is not None and selects(selector, old)
        now = new is not None and selects(selector, new) and not new.get("_deleted")
        if was and now:
            return "MODIFIED"
        if was:
            return "DELETED"
        return "ADDED" if now else None


class FakeApiServer:
    """The stand-in apiserver (see the module docstring); run it with :meth:`serve`.

    Mutations (:meth:`put`, :meth:`delete`, :meth:`bind`) must be called on the server's loop.
    """

    def __init__(self) -> None:
        self.rv = 100
        self.resources = {"nodes": Resource("Node"), "pods": Resource("Pod")}
        self.port = 0
        self._server: uvicorn.Server | None = None
        self._task: asyncio.Task[None] | None = None
        routes = [
            Route("/api/v1/nodes", self._collection("nodes"), methods=["GET"]),
            Route("/api/v1/pods", self._collection("pods"), methods=["GET"]),
            Route("/api/v1/nodes/{name}", self._node, methods=["GET", "PATCH"]),
            Route("/api/v1/namespaces/{ns}/pods/{name}", self._pod_patch, methods=["PATCH"]),
        ]
        self.app = Starlette(routes=routes)

    # ---- state -------------------------------------------------------------------------------

    @staticmethod
    def key(obj: dict[str, Any]) -> str:
        meta = obj["metadata"]
        return f"{meta.get('namespace', '')}/{meta['name']}".lstrip("/")

    def put(self, resource: str, obj: dict[str, Any]) -> dict[str, Any]:
        """Create or replace an object (a new resourceVersion, events to every watcher).

        The object is copied one level deep (metadata included): do not change its nested
        parts afterwards, replace them."""
        res = self.resources[resource]
        self.rv += 1
        obj = {**obj, "metadata": {**obj.get("metadata", {}), "resourceVersion": str(self.rv)}}
        key = self.key(obj)
        old = res.objects.get(key)
        res.objects[key] = obj
        self._emit(res, old, obj)
        return obj

    def delete(self, resource: str, key: str) -> None:
        """Delete an object (``DELETED`` to every watcher that selected it)."""
        res = self.resources[resource]
        old = res.objects.pop(key, None)
        if old is not None:
            self.rv += 1
            gone = copy.deepcopy(old)
            gone["metadata"]["resourceVersion"] = str(self.rv)
            gone["_deleted"] = True
            self._emit(res, old, gone)

    def bind(self, namespace: str, name: str, node: str) -> dict[str, Any]:
        """What a ``pods/binding`` does: set ``spec.nodeName``."""
        pod = self.resources["pods"].objects[f"{namespace}/{name}"]
        return self.put("pods", {**pod, "spec": {**pod["spec"], "nodeName": node}})

    def _emit(self, res: Resource, old: dict[str, Any] | None, new: dict[str, Any]) -> None:
        res.history.append((self.rv, self.key(new), old, new))
        for watcher in res.watchers:
            kind = res.transition(watcher.selector, old, new)
            if kind is not None:
                watcher.queue.put_nowait(res.line(kind, self._public(new)))

    @staticmethod
    def _public(obj: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in obj.items() if k != "_deleted"}

    # ---- routes ------------------------------------------------------------------------------

    def _collection(self, resource: str) -> Any:
        async def handle(request: Request) -> Response:
            res = self.resources[resource]
            params = request.query_params
            selector = params.get("fieldSelector", "")
            if params.get("watch") not in ("true", "1"):
                items = [self._public(o) for o in res.objects.values() if selects(selector, o)]
                body = {
                    "kind": f"{res.kind}List",
                    "apiVersion": "v1",
                    "metadata": {"resourceVersion": str(self.rv)},
                    "items": items,
                }
                return Response(json.dumps(body), media_type="application/json")
            return self._watch(res, params, selector)

        return handle

    def _watch(self, res: Resource, params: Any, selector: str) -> Response:
        asked = params.get("resourceVersion") or "0"
        since = int(asked) if asked != "0" else self.rv
        watcher = _Watcher(selector)
        if asked == "0":  # unset or "0": synthetic ADDED events for the current state first
            for obj in res.objects.values():
                if selects(selector, obj):
                    watcher.queue.put_nowait(res.line("ADDED", self._public(obj)))
        for rv, _, old, new in res.history:
            kind = res.transition(selector, old, new) if rv > since else None
            if kind is not None:
                watcher.queue.put_nowait(res.line(kind, self._public(new)))
        timeout_s = float(params.get("timeoutSeconds") or 1800)
        res.watchers.append(watcher)

        async def stream() -> AsyncIterator[bytes]:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + timeout_s
            try:
                while True:
                    try:
                        line = await asyncio.wait_for(
                            watcher.queue.get(), max(0.0, deadline - loop.time())
                        )
                    except TimeoutError:
                        return
                    if line is None:
                        return
                    yield line
            finally:
                with contextlib.suppress(ValueError):
                    res.watchers.remove(watcher)

        return StreamingResponse(stream(), media_type="application/json")

    async def _node(self, request: Request) -> Response:
        nodes = self.resources["nodes"]
        name = request.path_params["name"]
        node = nodes.objects.get(name)
        if node is None:
            return JSONResponse(status(404, "NotFound", f'nodes "{name}" not found'), 404)
        if request.method == "GET":
            return JSONResponse(self._public(node))
        if request.headers.get("content-type", "").split(";")[0] != "application/merge-patch+json":
            return JSONResponse(status(415, "UnsupportedMediaType", "merge patch only"), 415)
        patch = json.loads(await request.body())
        want_rv = (patch.get("metadata") or {}).get("resourceVersion")
        if want_rv is not None and want_rv != node["metadata"]["resourceVersion"]:
            message = (
                f'Operation cannot be fulfilled on nodes "{name}": the object has been '
                "modified; please apply your changes to the latest version and try again"
            )
            return JSONResponse(status(409, "Conflict", message), 409)
        return JSONResponse(self._public(self.put("nodes", merge_patch(node, patch))))

    async def _pod_patch(self, request: Request) -> Response:
        """``PATCH /api/v1/namespaces/NS/pods/NAME`` (merge patch only, as the extender's
        ``eams.io/*`` annotations are sent)."""
        key = f"{request.path_params['ns']}/{request.path_params['name']}"
        pod = self.resources["pods"].objects.get(key)
        if pod is None:
            message = f'pods "{request.path_params["name"]}" not found'
            return JSONResponse(status(404, "NotFound", message), 404)
        if request.headers.get("content-type", "").split(";")[0] != "application/merge-patch+json":
            return JSONResponse(status(415, "UnsupportedMediaType", "merge patch only"), 415)
        patch = json.loads(await request.body())
        return JSONResponse(self._public(self.put("pods", merge_patch(pod, patch))))

    # ---- serving -----------------------------------------------------------------------------

    async def serve(self) -> None:
        """Start serving on a free loopback port (this loop); sets :attr:`port`."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(self.app, log_level="warning", access_log=False, lifespan="off")
        self._server = uvicorn.Server(config)
        self._task = asyncio.get_running_loop().create_task(self._server.serve(sockets=[sock]))
        while not self._server.started:
            await asyncio.sleep(0.01)

    async def close(self) -> None:
        """End every watch and stop serving."""
        for res in self.resources.values():
            for watcher in res.watchers:
                watcher.queue.put_nowait(None)
        if self._server is not None and self._task is not None:
            self._server.should_exit = True
            await self._task

    def kubeconfig(self, path: Path) -> Path:
        """Write a kubeconfig pointing at this server (plain HTTP, no credentials)."""
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "fake", "cluster": {"server": f"http://127.0.0.1:{self.port}"}}],
            "users": [{"name": "fake", "user": {}}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake"}}],
            "current-context": "fake",
        }
        path.write_text(json.dumps(config))
        return path


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch (lists are replaced whole; ``null`` removes a key)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result
