"""The ``eams.io/*`` annotations of bound pods, sent off the request path (issue 19).

Once a decided pod is bound, :class:`PodAnnotator` writes its decision onto it
(``PATCH /api/v1/namespaces/{ns}/pods/{name}``, ``Content-Type: application/merge-patch+json``,
the body of :func:`~eams.scheduler.record.annotation_patch` encoded by msgspec). The event loop
only queues the decision (:meth:`PodAnnotator.submit`: a dict insert, no encoding, no I/O); one
daemon thread encodes the bodies and sends each gathered run of them as one pipelined write
over one keep-alive connection:

* **lean**: one keep-alive HTTP/1.1 connection (``keepalive.KeepAlive``: a socket, TLS from the
  kubernetes client's configuration — CA, client certificate, ``verify_ssl``,
  ``tls_server_name`` — answers read by httptools' C parser, from uvicorn[standard]), the
  bearer token of ``Configuration.auth_settings()`` (refreshed by its hook). ≈ 0.07 ms of CPU
  a patch against a loopback server, against 0.8–1.0 ms through the generated
  ``patch_namespaced_pod`` and 0.6–0.8 ms through the client's ``urllib3`` pool (whose
  pure-Python answer parsing dominates); a client with a proxy sends through that pool;
* **coalesced**: the queue is keyed by pod, so a pod decided again before its patch went holds
  one entry, the latest decision;
* **gathered**: woken by a pod's decision, the thread waits :data:`GATHER_S` for more and
  sends what came meanwhile (the loop's ``submit`` wakes it once a run, not once a pod: at
  100 bindings a second that wake-up was most of the annotator's CPU);
* **pipelined**: the run's patches (up to :data:`MAX_BATCH`) go in one ``sendall``, their
  answers read back in order (HTTP/1.1 pipelining, RFC 9112 §9.3.2; kube-apiserver's Go
  ``net/http`` answers a connection's requests in turn). One round trip a patch cost a write,
  a blocking read and a GIL hand-over each: this thread's CPU, from ``/proc`` in
  ``benchmarks/extender_cycle.py`` (load 2–5), went 0.21–0.26 → 0.06–0.07 ms a patch.
  Requests a closing server left unanswered are sent again on a new connection (a merge
  patch applied twice is applied once);
* **rate-limited**: at most ``max_per_s`` patches a second (a token bucket holding one
  second's worth), so a burst of bindings cannot flood the API server; at the limit the thread
  waits for :data:`GATHER_S`' worth of tokens and sends them as one run;
* **bounded**: with ``max_queue`` pods waiting a new one is dropped and counted
  (``eams_extender_annotation_patches_total{outcome="dropped"}``); nothing blocks or raises
  into the caller. Answers are counted ``ok`` or ``error`` (any status ≥ 300 or a transport
  failure; logged at most once a minute).

The gate releaser (``gates.py``) sends its releases through the same machinery with a body of
its own, the strategic merge patch type, no gathering delay (a release is on the pod's path to
its binding) and a hook for the failed ones.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, urlsplit

import msgspec
from prometheus_client import Counter

from eams.kube.names import MERGE_PATCH
from eams.scheduler.extender.keepalive import KeepAlive, tls_context
from eams.scheduler.record import annotation_patch
from eams.scheduler.record.metrics import ThreadCpu

log = logging.getLogger(__name__)

MAX_QUEUE = 10_000
"""Pods waiting for their patch before new ones are dropped."""
MAX_PER_S = 200.0
"""Patches sent per second at most (kube-scheduler's own client is allowed 50 QPS by default;
the API server's default ``--max-mutating-requests-inflight`` is 200)."""
TIMEOUT_S = 5.0
GATHER_S = 0.5
"""Once woken by a first patch, the thread waits this long for others before sending, so a
run of bindings costs one wake-up of it, not one each (the annotations trail the binding by
at most this much more). On the 2-core test VM a thread's wake-up costs ~0.1 ms of CPU:
0.1 → 0.5 s took this thread from 0.042 to 0.025 ms a patch at 100 bindings/s
(``benchmarks/extender_cycle.py``, 2026-12-04)."""
MAX_BATCH = int(GATHER_S * MAX_PER_S)
"""Patches pipelined in one write at most: a run of :data:`GATHER_S` at :data:`MAX_PER_S` (100,
≈ 60 kB of requests)."""
_LOG_EVERY_S = 60.0
_encode = msgspec.json.Encoder().encode

PodPatch = tuple[str, str, bytes]
"""``(namespace, name, body)``: one merge patch of a pod."""
PodPatchSender = Callable[[list[PodPatch]], list[int | Exception]]
"""``send(patches)`` → for each patch, in order, the HTTP status of its answer, or the
transport failure (``OSError``, ``httptools.HttpParserError``) that left it unanswered."""


def api_sender(
    api_client: Any, timeout_s: float = TIMEOUT_S, content_type: str = MERGE_PATCH
) -> PodPatchSender:
    """A :data:`PodPatchSender` to the API server of a ``kubernetes.client.ApiClient``.

    Parameters
    ----------
    api_client : kubernetes.client.ApiClient
        Its ``configuration`` gives the server URL and the credentials: the bearer token
        through ``auth_settings()``, the CA and a client certificate for TLS.
    timeout_s : float
        Connect and read timeout of each patch, s.
    content_type : str
        The patch type: JSON merge patch (the annotations) or strategic merge patch (the gate
        release, :data:`~eams.kube.names.STRATEGIC_MERGE_PATCH`).

    Returns
    -------
    callable
        Pipelined over one :class:`KeepAlive` connection; one after another through the
        client's own pool when it is configured with a proxy. Never raises: a patch left
        unanswered has its failure (``OSError``: ``ssl.SSLError``, a timeout,
        ``keepalive.ConnectionClosed``) in its place; an HTTP error answer is its status.
    """
    config = api_client.configuration
    target = urlsplit(config.host)
    base = target.path.rstrip("/")
    fixed = f"Host: {target.netloc}\r\nContent-Type: {content_type}\r\n"
    fixed += "Accept: application/json\r\n"
    if api_client.user_agent:
        fixed += f"User-Agent: {api_client.user_agent}\r\n"

    def auth() -> str:
        lines = ""
        for entry in config.auth_settings().values():  # the bearer token, refreshed by its hook
            if entry.get("in") == "header" and entry.get("value"):
                lines += f"{entry['key']}: {entry['value']}\r\n"
        return lines

    def path(namespace: str, name: str) -> str:
        return f"{base}/api/v1/namespaces/{quote(namespace, safe='')}/pods/{quote(name, safe='')}"

    if config.proxy:
        pool = api_client.rest_client.pool_manager

        def through_pool(patches: list[PodPatch]) -> list[int | Exception]:
            headers = dict(line.split(": ", 1) for line in (fixed + auth()).split("\r\n") if line)
            headers.pop("Host")
            statuses: list[int | Exception] = []
            for namespace, name, body in patches:
                url = f"{target.scheme}://{target.netloc}{path(namespace, name)}"
                try:
                    answer = pool.request(
                        "PATCH", url, body=body, headers=headers, timeout=timeout_s, retries=False
                    )
                    statuses.append(int(answer.status))
                except Exception as exc:  # urllib3's errors: the patch is unanswered
                    statuses.append(exc)
            return statuses

        return through_pool
    tls = target.scheme == "https"
    connection = KeepAlive(
        target.hostname or "localhost",
        target.port or (443 if tls else 80),
        tls_context(config) if tls else None,
        config.tls_server_name or target.hostname,
        timeout_s,
    )

    def send(patches: list[PodPatch]) -> list[int | Exception]:
        headers = f"HTTP/1.1\r\n{fixed}{auth()}Content-Length: "
        return connection.pipeline(
            [
                f"PATCH {path(ns, name)} {headers}{len(body)}\r\n\r\n".encode() + body
                for ns, name, body in patches
            ]
        )

    return send


class PodAnnotator:
    """Sends each bound pod's ``eams.io/*`` merge patch from one background thread (or, with
    another ``body``, any one patch per pod: the gate releases).

    Parameters
    ----------
    send : PodPatchSender
        A run of patches (:func:`api_sender`).
    outcomes : prometheus_client.Counter
        ``eams_extender_annotation_patches_total``, labelled by ``outcome``: ``ok``,
        ``error``, ``dropped`` (counted here).
    max_queue : int
        Pods waiting at most (:data:`MAX_QUEUE`).
    max_per_s : float
        Patches a second at most (:data:`MAX_PER_S`).
    cpu : prometheus_client.Counter, optional
        Where the thread adds its CPU time, s, after each run it sends
        (``eams_record_cpu_seconds_total{part="annotator"}``).
    body : callable
        ``body(item) -> dict``: the JSON body of an item's patch (:func:`annotation_patch` of a
        :class:`Placement`); an item has ``pod.key``, ``pod.namespace`` and ``pod.name``.
    gather_s : float
        How long the woken thread waits for more before sending, s (:data:`GATHER_S`).
    on_failed : callable, optional
        ``on_failed([(item, status), ...])``, from the thread, with the items whose patch
        failed (an HTTP status ≥ 300 or the transport failure); must not block.
    thread_name : str
        The sending thread's name.

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
        cpu: Counter | None = None,
        body: Callable[[Any], dict[str, Any]] = annotation_patch,
        gather_s: float = GATHER_S,
        on_failed: Callable[[list[tuple[Any, int | Exception]]], None] | None = None,
        thread_name: str = "eams-annotator",
    ) -> None:
        if max_queue < 1 or not max_per_s > 0:
            raise ValueError(f"max_queue = {max_queue} (≥ 1), max_per_s = {max_per_s} (> 0)")
        self._send = send
        self._ok, self._error = outcomes.labels("ok"), outcomes.labels("error")
        self._dropped = outcomes.labels("dropped")
        self._cpu = cpu
        self._body, self._gather_s, self._on_failed = body, gather_s, on_failed
        self._max_queue, self._per_s = max_queue, float(max_per_s)
        self._waiting: dict[str, Any] = {}  # pod key → its latest item, in order
        self._lock = threading.Lock()  # the loop inserts, the thread pops
        self._wake = threading.Event()
        self._closed = False
        self._logged_s = -_LOG_EVERY_S
        self._thread = threading.Thread(target=self._run, name=thread_name, daemon=True)
        self._thread.start()

    def submit(self, decision: Any) -> bool:
        """Queue ``decision``'s patch (a :class:`Placement`, or an item of ``body``; replacing
        a waiting one of the same pod); ``False`` when dropped (the queue full, or closed).
        Never blocks, never raises."""
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
        if not self._wake.is_set():  # set once a run: a set() with the thread waiting is dear
            self._wake.set()
        return True

    def close(self, timeout_s: float = 5.0) -> None:
        """Stop taking patches; the thread sends what waits (rate-limited) until ``timeout_s``."""
        self._closed = True
        self._wake.set()
        self._thread.join(timeout_s)

    def _run(self) -> None:
        per_s = self._per_s
        # at the rate limit, wait for a run's worth of tokens, not one: a patch at a time would
        # cost a wake-up and a round trip each (measured: 0.10 ms of CPU a patch, not 0.04)
        run = max(1, min(MAX_BATCH, int(per_s * GATHER_S)))
        gather_s = self._gather_s
        capacity = max(per_s, float(run))
        tokens, last = capacity, time.monotonic()
        cpu = None if self._cpu is None else ThreadCpu(self._cpu)
        while True:
            self._wake.wait()
            if not self._closed and gather_s > 0:
                time.sleep(gather_s)  # let the run of bindings gather
            self._wake.clear()
            while self._waiting:
                now = time.monotonic()
                tokens = min(capacity, tokens + (now - last) * per_s)
                last = now
                wanted = min(run, len(self._waiting))
                if tokens < wanted:
                    time.sleep((wanted - tokens) / per_s)
                    continue
                batch = self._pop(min(MAX_BATCH, int(tokens)))
                tokens -= len(batch)
                self._send_all(batch)
                if cpu is not None:
                    cpu.count()
            if self._closed:
                return

    def _pop(self, count: int) -> list[Any]:
        """The ``count`` oldest waiting decisions (fewer when fewer wait)."""
        waiting = self._waiting
        with self._lock:
            keys = list(itertools.islice(waiting, count))
            return [waiting.pop(key) for key in keys]

    def _send_all(self, decisions: list[Any]) -> None:
        body = self._body
        patches = [(d.pod.namespace, d.pod.name, _encode(body(d))) for d in decisions]
        try:
            statuses = self._send(patches)
        except Exception as exc:  # a sender's failure must not end the thread
            statuses = [exc] * len(patches)
        failed = [(d, s) for d, s in zip(decisions, statuses, strict=True) if not _ok(s)]
        if len(failed) < len(decisions):
            self._ok.inc(len(decisions) - len(failed))
        if not failed:
            return
        self._error.inc(len(failed))
        if self._on_failed is not None:
            self._on_failed(failed)
        now = time.monotonic()
        if now - self._logged_s >= _LOG_EVERY_S:
            self._logged_s = now
            decision, status = failed[0]
            failure = (
                f"HTTP {status}"
                if isinstance(status, int)
                else str(status) or type(status).__name__
            )
            log.warning(
                "pod %s (and %d more): patch not applied: %s",
                decision.pod.key,
                len(failed) - 1,
                failure,
            )


def _ok(status: int | Exception) -> bool:
    return isinstance(status, int) and status < 300
