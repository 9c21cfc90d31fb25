"""kube-scheduler's side of the extender protocol, as the harness emulates it.

Per pod (reference ``extender-protocol.md`` §2.2–2.7, kubernetes ``pkg/scheduler/extender.go``
and ``schedule_one.go``): ``POST /filter`` with ``ExtenderArgs`` (``nodeCacheCapable: true``:
``NodeNames``), decoded with Go's rules — ``NodeNames`` must be a subset of the input, ``null``
falls back to ``Nodes``, both ``null`` means no survivor, a non-empty ``Error`` or any non-200
is a failure; then ``POST /prioritize``, a bare list of ``{"Host", "Score"}`` with integer
scores, each adding ``Score × weight × 10`` to the node's total.

Failures follow the ``ignorable: true`` configuration of the shipped profile: a failed filter
lets every input node pass, a failed prioritize contributes nothing (§2.5). Every failure is
counted in :attr:`ExtenderClient.failures` by verb. The client runs httpx on a private event
loop, either in-process (``httpx.ASGITransport``) or over a real socket.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx


class ExtenderClient:
    """A synchronous emulated kube-scheduler extender client.

    Parameters
    ----------
    base_url : str
        ``urlPrefix`` (``http://127.0.0.1:PORT`` or ``http://extender`` in-process).
    app : ASGI app, optional
        Serve requests in-process through ``httpx.ASGITransport`` instead of a socket (kept as
        :attr:`app`).
    timeout_s : float
        ``httpTimeout`` per call, s (kube-scheduler default 5 s).
    """

    def __init__(self, base_url: str, app: Any = None, timeout_s: float = 5.0) -> None:
        self.app = app
        self.loop = asyncio.new_event_loop()
        transport = httpx.ASGITransport(app=app) if app is not None else None
        self.client = httpx.AsyncClient(base_url=base_url, transport=transport, timeout=timeout_s)
        self.failures = {"filter": 0, "prioritize": 0, "other": 0}

    def _post(self, path: str, body: Any) -> httpx.Response:
        content = json.dumps(body, separators=(",", ":"))
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
        self.loop.run_until_complete(self.client.aclose())
        self.loop.close()
