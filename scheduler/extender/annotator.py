"""The ``eams.io/*`` annotations of bound pods, sent off the request path (issue 19).

Once a decided pod is bound, :class:`PodAnnotator` writes its decision onto it
(``PATCH /api/v1/namespaces/{ns}/pods/{name}``, ``Content-Type: application/merge-patch+json``,
the body of :func:`~eams.scheduler.record.annotation_patch` encoded by msgspec). The event loop
only queues the decision (:meth:`PodAnnotator.submit`: a dict insert, no encoding, no I/O); one
daemon thread encodes the bodies and sends them, one after another, over one keep-alive
connection pool:

* **lean**: the request goes straight to the kubernetes client's own ``urllib3.PoolManager``
  (the TLS settings and client certificate of its configuration) with the bearer token of
  ``Configuration.auth_settings()`` (refreshed by its hook, e.g. in-cluster token rotation).
  The client's generated ``patch_namespaced_pod`` costs ≈ 1.3 ms of CPU per pod (argument
  validation, serialisation, header selection); this path a fraction of it
  (``benchmarks/extender_cycle.py``, the extender README);
* **coalesced**: the queue is keyed by pod, so a pod decided again before its patch went holds
  one entry, the latest decision;
* **rate-limited**: at most ``max_per_s`` patches a second (a token bucket holding one
  second's worth), so a burst of bindings cannot flood the API server;
* **bounded**: with ``max_queue`` pods waiting a new one is dropped and counted
  (``eams_extender_annotation_patches_total{outcome="dropped"}``); nothing blocks or raises
  into the caller. Answers are counted ``ok`` or ``error`` (any status ≥ 300 or a transport
  failure; logged at most once a minute).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import msgspec
from prometheus_client import Counter

from eams.scheduler.record import PATCH_CONTENT_TYPE, Placement, annotation_patch

log = logging.getLogger(__name__)

MAX_QUEUE = 10_000
"""Pods waiting for their patch before new ones are dropped."""
MAX_PER_S = 200.0
"""Patches sent per second at most (kube-scheduler's own client is allowed 50 QPS by default;
the API server's default ``--max-mutating-requests-inflight`` is 200)."""
TIMEOUT_S = 5.0
_LOG_EVERY_S = 60.0
_encode = msgspec.json.Encoder().encode

PodPatchSender = Callable[[str, str, bytes], int]
"""``send(namespace, name, body)`` → the HTTP status of one merge patch of a pod."""


def api_sender(api_client: Any, timeout_s: float = TIMEOUT_S) -> PodPatchSender:
    """A :data:`PodPatchSender` over a ``kubernetes.client.ApiClient``'s connection pool.

    Parameters
    ----------
    api_client : kubernetes.client.ApiClient
        Its ``configuration`` gives the server URL and the credentials (bearer token through
        ``auth_settings()``; a client certificate and the CA are in its pool manager).
    timeout_s : float
        Connect and read timeout of each patch, s.

    Returns
    -------
    callable
        Raises the pool's ``urllib3.exceptions.HTTPError`` (or ``OSError``) when the request
        cannot be made; an HTTP error answer is returned as its status. (urllib3 comes with
        the kubernetes client; only its pool object is used, nothing is imported from it.)
    """
    config = api_client.configuration
    pool = api_client.rest_client.pool_manager
    host = config.host.rstrip("/")
    static = {"Content-Type": PATCH_CONTENT_TYPE, "Accept": "application/json"}
    if api_client.user_agent:
        static["User-Agent"] = api_client.user_agent

    def send(namespace: str, name: str, body: bytes) -> int:
        headers = dict(static)
        for auth in config.auth_settings().values():  # the bearer token, refreshed by its hook
            if auth.get("in") == "header" and auth.get("value"):
                headers[auth["key"]] = auth["value"]
        url = f"{host}/api/v1/namespaces/{quote(namespace, safe='')}/pods/{quote(name, safe='')}"
        response = pool.request(
            "PATCH", url, body=body, headers=headers, timeout=timeout_s, retries=False
        )
        return int(response.status)

    return send


class PodAnnotator:
    """Sends each bound pod's ``eams.io/*`` merge patch from one background thread.

    Parameters
    ----------
    send : PodPatchSender
        One patch (:func:`api_sender`).
    outcomes : prometheus_client.Counter
        ``eams_extender_annotation_patches_total``, labelled by ``outcome``: ``ok``,
        ``error``, ``dropped`` (counted here).
    max_queue : int
        Pods waiting at most (:data:`MAX_QUEUE`).
    max_per_s : float
        Patches a second at most (:data:`MAX_PER_S`).

    Raises
    ------
    ValueError
        ``max_queue`` < 1 or ``max_per_s`` ≤ 0.
    """

    def __init__(
        self,
        send: PodPatchSender,
        outcomes: Counter,
        max_queue: int = MAX_QUEUE,
        max_per_s: float = MAX_PER_S,
    ) -> None:
        if max_queue < 1 or not max_per_s > 0:
            raise ValueError(f"max_queue = {max_queue} (≥ 1), max_per_s = {max_per_s} (> 0)")
        self._send = send
        self._ok, self._error = outcomes.labels("ok"), outcomes.labels("error")
        self._dropped = outcomes.labels("dropped")
        self._max_queue, self._per_s = max_queue, float(max_per_s)
        self._waiting: dict[str, Placement] = {}  # pod key → its latest decision, in order
        self._lock = threading.Lock()  # the loop inserts, the thread pops
        self._wake = threading.Event()
        self._closed = False
        self._logged_s = -_LOG_EVERY_S
        self._thread = threading.Thread(target=self._run, name="eams-annotator", daemon=True)
        self._thread.start()

    def submit(self, decision: Placement) -> bool:
        """Queue ``decision``'s patch (replacing a waiting one of the same pod); ``False`` when
        dropped (the queue full, or closed). Never blocks, never raises."""
        key = decision.pod.key
        waiting = self._waiting
        with self._lock:
            if self._closed or (key not in waiting and len(waiting) >= self._max_queue):
                dropped = True
            else:
                dropped = False
                waiting[key] = decision
        if dropped:
            self._dropped.inc()
            return False
        self._wake.set()
        return True

    def close(self, timeout_s: float = 5.0) -> None:
        """Stop taking patches; the thread sends what waits (rate-limited) until ``timeout_s``."""
        self._closed = True
        self._wake.set()
        self._thread.join(timeout_s)

    def _run(self) -> None:
        tokens, last = self._per_s, time.monotonic()
        while True:
            self._wake.wait()
            self._wake.clear()
            while self._waiting:
                now = time.monotonic()
                tokens = min(self._per_s, tokens + (now - last) * self._per_s)
                last = now
                if tokens < 1.0:
                    time.sleep((1.0 - tokens) / self._per_s)
                    continue
                tokens -= 1.0
                self._send_one(self._pop())
            if self._closed:
                return

    def _pop(self) -> Placement:
        with self._lock:
            return self._waiting.pop(next(iter(self._waiting)))

    def _send_one(self, decision: Placement) -> None:
        pod = decision.pod
        try:
            status = self._send(pod.namespace, pod.name, _encode(annotation_patch(decision)))
            failure = None if status < 300 else f"HTTP {status}"
        except Exception as exc:  # a transport failure must not end the thread
            failure = str(exc) or type(exc).__name__
        if failure is None:
            self._ok.inc()
            return
        self._error.inc()
        now = time.monotonic()
        if now - self._logged_s >= _LOG_EVERY_S:
            self._logged_s = now
            log.warning("pod %s: eams.io annotations not written: %s", pod.key, failure)
