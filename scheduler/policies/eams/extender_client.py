"""kube-scheduler's side of the extender protocol, as the harness emulates it.

Per pod (reference ``extender-protocol.md`` §2.2–2.7, kubernetes ``pkg/scheduler/extender.go``
and ``schedule_one.go``): ``POST /filter`` with ``ExtenderArgs`` (``nodeCacheCapable: true``:
``NodeNames``), decoded with Go's rules — ``NodeNames`` must be a subset of the input, ``null``
falls back to ``Nodes``, both ``null`` means no survivor, a non-empty ``Error`` or any non-200
is a failure; then ``POST /prioritize``, a bare list of ``{"Host", "Score"}`` with integer
scores, each adding ``Score × weight × 10`` to the node's total.

Failures follow the ``ignorable: true`` configuration of the shipped profile: a failed filter
lets every input node pass, a failed prioritize contributes nothing (§2.5). Every failure is
counted in :attr:`ExtenderClient.failures` by verb. The client runs on a private event loop,
either over a real socket (httpx) or in-process: then each request is one ASGI call into the
extender's app — its whole stack, routes and verbs — without an HTTP client in between
(:func:`asgi_post`; ``httpx.ASGITransport`` cost two thirds of a 1,000-node cell's time, most of
it a failed ``import trio`` per request, issue 33).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx


async def asgi_post(app: Any, path: str, body: bytes) -> tuple[int, bytes]:
    """One ``POST path`` with a JSON ``body`` into the ASGI ``app``, as a server would hand it
    over (ASGI 3.0 HTTP scope, one body message); returns (status, body).

    Raises
    ------
    Exception
        Whatever the app raises (as ``httpx.ASGITransport`` does).
    """
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"extender"),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ],
        "client": ("127.0.0.1", 0),
        "server": ("extender", 80),
    }
    messages = [{"type": "http.request", "body": body, "more_body": False}]
    status, chunks = [0], []

    async def receive() -> dict[str, Any]:
        return messages.pop() if messages else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            status[0] = message["status"]
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await app(scope, receive, send)
    return status[0], b"".join(chunks)


class _Answer:
    """Status and body of an in-process call, read as an ``httpx.Response`` is."""

    def __init__(self, status_code: int, content: bytes) -> None:
        self.status_code = status_code
        self.content = content

    def json(self) -> Any:
        """The body, decoded."""
        return json.loads(self.content)


class ExtenderClient:
    """A synchronous emulated kube-scheduler extender client.

    Parameters
    ----------
    base_url : str
        ``urlPrefix`` (``http://127.0.0.1:PORT`` or ``http://extender`` in-process).
    app : ASGI app, optional
        Serve requests in-process (:func:`asgi_post`) instead of over a socket (kept as
        :attr:`app`).
    timeout_s : float
        ``httpTimeout`` per call, s (kube-scheduler default 5 s).
    """

    def __init__(self, base_url: str, app: Any = None, timeout_s: float = 5.0) -> None:
        self.app = app
        self.loop = asyncio.new_event_loop()
        self.client = (
            httpx.AsyncClient(base_url=base_url, timeout=timeout_s) if app is None else None
        )
        self.failures = {"filter": 0, "prioritize": 0, "other": 0}

    def _post(self, path: str, body: Any) -> httpx.Response | _Answer:
        content = json.dumps(body, separators=(",", ":")).encode()
        if self.client is None:
            return _Answer(*self.loop.run_until_complete(asgi_post(self.app, path, content)))
        headers = {"Content-Type": "application/json"}
        return self.loop.run_until_complete(
            self.client.post(path, content=content, headers=headers)
        )

    def post(self, path: str, body: Any) -> int | None:
        """POST a JSON body (``/nodes``, ``/pending``, ``/telemetry``); the status, or ``None``
        when the transport failed."""
        try:
            return self._post(path, body).status_code
        except httpx.HTTPError:
            self.failures["other"] += 1
            return None

    def filter(self, pod: dict[str, Any], names: list[str]) -> list[str]:
        """The nodes that pass the extender's filter (all of ``names`` if it failed)."""
        try:
            response = self._post("/filter", {"Pod": pod, "Nodes": None, "NodeNames": names})
            if response.status_code != 200:
                raise ValueError(f"status {response.status_code}")
            result = {k.lower(): v for k, v in response.json().items()}
            if result.get("error"):
                raise ValueError(result["error"])
            if result.get("nodenames") is not None:
                passed = list(result["nodenames"])
                if not set(passed) <= set(names):
                    raise ValueError("a filtered node is not in the input list")
                return passed
            if result.get("nodes") is not None:
                return [item["metadata"]["name"] for item in result["nodes"].get("items") or []]
            return []
        except (httpx.HTTPError, ValueError, KeyError, TypeError, AttributeError):
            self.failures["filter"] += 1
            return list(names)  # ignorable: the extender is skipped, every node passes

    def prioritize(self, pod: dict[str, Any], names: list[str]) -> dict[str, int]:
        """Summed extender score per host (empty if the call failed: no opinion)."""
        try:
            response = self._post("/prioritize", {"Pod": pod, "Nodes": None, "NodeNames": names})
            if response.status_code != 200:
                raise ValueError(f"status {response.status_code}")
            scores: dict[str, int] = {}
            for entry in response.json():
                if "Host" not in entry or "Score" not in entry:  # Go matches keys in any case
                    entry = {k.capitalize(): v for k, v in entry.items()}
                host, score = entry["Host"], entry["Score"]
                if type(score) is not int:
                    raise ValueError("Score is not an integer")
                scores[host] = scores.get(host, 0) + score
            return scores
        except (httpx.HTTPError, ValueError, KeyError, TypeError, AttributeError):
            self.failures["prioritize"] += 1
            return {}

    def close(self) -> None:
        """Close the HTTP client and its loop."""
        if self.client is not None:
            self.loop.run_until_complete(self.client.aclose())
        self.loop.close()
