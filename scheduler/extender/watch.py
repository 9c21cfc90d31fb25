"""Feed the extender from the API server: nodes, bound pods, pending pods, and the floor taint.

In a cluster (``eams extender serve --watch``) three daemon threads list and then watch
(kubernetes/website ``docs/reference/using-api/api-concepts.md``: a list gives
``metadata.resourceVersion``; ``?watch=true&resourceVersion=RV&allowWatchBookmarks=true``
streams one ``{"type", "object"}`` per line from there) through the kubernetes Python client
(configured by :func:`eams.kube.client.load_configuration`: ``KUBECONFIG``, else the in-cluster
service account), reading the raw stream
(``_preload_content=False``) and decoding it with msgspec — the client's own model objects cost
~2 ms of CPU per pod event (issue 15):

* ``nodes``: every node (``nodeCacheCapable: true`` sends names only, so the extender keeps the
  objects: allocatable, taints, resourceVersion);
* ``bound pods``: ``spec.nodeName!=`` and not finished — their requests use node capacity; a
  pod leaving the selection (finished, deleted) frees it;
* ``pending pods``: ``spec.schedulerName=<profile>,spec.nodeName=`` — a pod joins the pending
  batch when it is created, before kube-scheduler asks about it (``batching.py``).

The list-then-watch loop (a relist on 410 Gone, client-go's backoff on any other failure)
is the Kubernetes layer's :mod:`eams.kube.listwatch`. While a watch is down or not listed yet,
the extender steps aside (``service.Extender.blind``) and ``/readyz`` says why.

Floor taints (``floor.py``, ``taints.py``): in active mode, a node under the power-headroom
floor gets the ``NoSchedule`` taint ``eams.io/power-headroom-low`` and loses it when it
recovers, counting the herding reservations of bound pods only (a clearing's own pods, still
waiting for their cycles, do not taint their node), planned after every sample, after a
binding that left its node under the floor, and once a second, patched from a worker thread
(:func:`eams.kube.patch.patch_node`, sent once: after a 409 Conflict the node is read again and
the next plan starts from it).

Market wakes (``wakes.py``): each wake request the extender makes (``Extender.on_wake_request``,
called on the loop when a pod is held for an asleep node) is written on that node as its
``eams.io/wake-request`` annotation (:mod:`eams.kube.wakerequest`) by one JSON merge patch from a
worker thread, for the power manager to execute. No resourceVersion (the annotation is the
extender's alone and a later request replaces it whole, so there is no 409 to meet); one patch
per node in flight, the newest request sent next, so an older one never lands last; a node gone
(404) is counted and dropped; any other failure is sent again :data:`WAKE_RETRY_S` later, up to
:data:`WAKE_RETRIES` times, unless a newer request for the node came meanwhile. Counted in
``eams_extender_wake_request_patches_total{result}``.

With ``--record`` the bound-pod events also go to the decision record's outcome join, and each
decided pod, once bound, gets its ``eams.io/*`` annotations (``decisions.py``) by a merge patch
from the annotator's thread (``annotator.py``, with this client's configuration).
Gated pods (``gates.py``, ``--release-gates``): each cleared pod carrying the
``eams.io/market`` scheduling gate is released by a strategic merge patch from the releaser's
thread, pinned to its cleared node in active mode, unpinned in shadow.
RBAC: nodes get/list/watch/patch, pods get/list/watch (+ patch with ``--record`` or gated pods;
``deploy/k3s/rbac.yaml``).
"""

from __future__ import annotations

import asyncio
import collections
import functools
import logging
import threading
from collections.abc import Callable
from typing import Any

import msgspec
from pydantic import ValidationError

from eams.kube.client import coordination_api, core_api, load_configuration
from eams.kube.gates import held_by_another_gate
from eams.kube.listwatch import Head, ListWatch
from eams.kube.names import (
    NOT_FINISHED_SELECTOR,
    NOT_FOUND,
    STRATEGIC_MERGE_PATCH,
    WAKE_REQUEST_ANNOTATION,
)
from eams.kube.patch import RawNodes, patch_node
from eams.kube.pods import PodObject, pending_selector, pod_key
from eams.kube.raw import decode_object
from eams.kube.requests import PodRequest, pod_request
from eams.kube.wakerequest import WakeRequest
from eams.scheduler.extender.annotator import api_sender
from eams.scheduler.extender.errors import BadRequest, bad_request
from eams.scheduler.extender.gates import GateReleaser
from eams.scheduler.extender.heartbeat import Heartbeat
from eams.scheduler.extender.pending import PendingDecoder
from eams.scheduler.extender.service import Extender
from eams.scheduler.extender.taints import TaintKeeper, TaintPatch
from eams.scheduler.record import decode_pod
from eams.validation import describe_validation_error

log = logging.getLogger(__name__)

TAINT_PERIOD_S = 1.0  # readings turn stale and reservations expire without an event
WAKE_RETRY_S = 1.0
"""After a failed wake-request patch (not a 404), send it again this long after (s)."""
WAKE_RETRIES = 3
"""Sends of one wake request after its first failed; the held pod's wake then times out in the
market (2 × the node's wake time) and it is cleared again."""
NODES, BOUND, PENDING = "nodes", "bound pods", "pending pods"


def apply_node_event(extender: Extender, kind: str, node: dict[str, Any]) -> None:
    """Apply one node watch event (``ADDED``/``MODIFIED``/``DELETED``) with the node as JSON."""
    name = (node.get("metadata") or {}).get("name")
    try:
        if kind == "DELETED":
            if not isinstance(name, str):
                raise BadRequest("metadata.name: missing in a DELETED node event")
            extender.nodes.forget(name)
        else:
            extender.observe_nodes([node], "node")
    except BadRequest as exc:
        log.warning("node %s skipped: %s", name, exc)


def apply_pod_event(extender: Extender, kind: str, pod: dict[str, Any]) -> None:
    """Apply one pod watch event; finished pods (Succeeded/Failed) count as deleted."""
    try:
        extender.observe_pod(PodObject.model_validate(pod), "pod", deleted=kind == "DELETED")
    except (ValidationError, BadRequest) as exc:
        why = describe_validation_error(exc) if isinstance(exc, ValidationError) else exc
        log.warning("pod %s skipped: %s", (pod.get("metadata") or {}).get("name"), why)


class _ToLoop:
    """Actions from a watch thread, run on the extender's event loop in arrival order, with one
    wake-up for however many arrived meanwhile."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._actions: collections.deque[Callable[[], None]] = collections.deque()
        self._lock = threading.Lock()
        self._scheduled = False

    def put(self, action: Callable[[], None]) -> None:
        with self._lock:
            self._actions.append(action)
            if self._scheduled:
                return
            self._scheduled = True
        self.loop.call_soon_threadsafe(self._drain)

    def _drain(self) -> None:
        with self._lock:
            self._scheduled = False
            actions, self._actions = self._actions, collections.deque()
        for action in actions:
            try:
                action()
            except Exception:
                log.exception("applying a watch event failed")


class _Feed:
    """Turns one resource's list and events into extender updates (decoded in the thread)."""

    def __init__(self, extender: Extender, to_loop: _ToLoop) -> None:
        self.extender, self.to_loop = extender, to_loop
        self.known: dict[str, tuple[str, str]] = {}  # key → (uid, node) as last applied

    def listed(self, items: list[tuple[Head, bytes]]) -> None:
        """A fresh list: apply every item, forget what the list no longer holds."""
        seen = set()
        for head, raw in items:
            seen.add(self.event("ADDED", head, raw))
        for key in [k for k in self.known if k not in seen]:
            self.event_gone(key)

    def unchanged(self, kind: str, head: Head) -> bool:
        return False

    def event(self, kind: str, head: Head, raw: bytes) -> str:
        raise NotImplementedError

    def event_gone(self, key: str) -> None:
        raise NotImplementedError


class _Nodes(_Feed):
    def event(self, kind: str, head: Head, raw: bytes) -> str:
        node = decode_object(raw)
        name = str((node.get("metadata") or {}).get("name"))
        if kind == "DELETED":
            self.event_gone(name)
        else:
            self.known[name] = ("", "")
            self.to_loop.put(lambda: apply_node_event(self.extender, kind, node))
        return name

    def event_gone(self, key: str) -> None:
        self.known.pop(key, None)
        self.to_loop.put(lambda: self.extender.nodes.forget(key))


class _Pods(_Feed):
    """Pending or bound pods. ``sized`` is shared by both: a pod's request, computed when it
    was pending, is not parsed again when it turns up bound (key → (uid, request))."""

    def __init__(
        self,
        extender: Extender,
        to_loop: _ToLoop,
        pending: bool,
        sized: dict[str, tuple[str, PodRequest]],
    ) -> None:
        super().__init__(extender, to_loop)
        self.pending, self.sized = pending, sized
        self.decode_pending = PendingDecoder()

    def unchanged(self, kind: str, head: Head) -> bool:
        """A pod already applied with the same uid and node: a status update, or the
        ``eams.io/*`` annotations the extender itself wrote (dropped unread)."""
        return self.known.get(_key(head)) == (head.metadata.uid, head.spec.nodeName)

    def event(self, kind: str, head: Head, raw: bytes) -> str:
        meta = head.metadata
        key = _key(head)
        if kind == "DELETED":
            if self.pending and not head.spec.nodeName:  # deleted while pending, not bound
                self.sized.pop(key, None)
            self._to_record(kind, raw)
            self.event_gone(key)
            return key
        if self.pending and _held(head):
            if key in self.known:  # relisted: the pod it was is gone, a held one took its name
                self.sized.pop(key, None)
                self.event_gone(key)
            return key  # not the market's to clear until its controller lifts that gate
        if self.unchanged(kind, head):
            return key  # a relisted pod already applied
        self._to_record(kind, raw)
        try:
            if self.pending:
                announced = self.decode_pending(raw)
                self.sized[key] = (meta.uid, announced.request)
                self.to_loop.put(lambda: self.extender.observe_pending(announced))
            else:
                uid, request = self.sized.pop(key, ("", None))
                if request is None or uid != meta.uid:
                    with bad_request():
                        request = pod_request(PodObject.model_validate_json(raw), "pod")
                node = head.spec.nodeName
                self.to_loop.put(lambda: self.extender.observe_placed(key, node, request))
        except (ValidationError, BadRequest) as exc:
            why = describe_validation_error(exc) if isinstance(exc, ValidationError) else exc
            log.warning("pod %s skipped: %s", key, why)
            return key
        self.known[key] = (meta.uid, head.spec.nodeName)
        return key

    def _to_record(self, kind: str, raw: bytes) -> None:
        """A bound pod's binding or end to the decision record's outcome join
        (``decisions.py``), decoded here once into the few fields the join reads (not
        re-wrapped as a watch line and decoded again on the loop); nothing without
        ``--record``."""
        decisions = self.extender.decisions
        if self.pending or decisions is None:
            return
        try:
            pod = decode_pod(raw)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            log.warning("pod event not joined to the record: %s", exc)
            return
        self.to_loop.put(lambda: decisions.observe_pod(kind, pod))

    def event_gone(self, key: str) -> None:
        if self.known.pop(key, None) is None:
            return
        if self.pending:  # bound (it moves to the other watch) or deleted: no longer waits
            self.to_loop.put(lambda: self.extender.observe_unpending(key))
        else:
            self.to_loop.put(lambda: self.extender.observe_gone(key))


def _key(head: Head) -> str:
    meta = head.metadata
    return pod_key(meta.namespace, meta.name, meta.uid)


def _held(head: Head) -> bool:
    return held_by_another_gate(g.name or "" for g in head.spec.schedulingGates or ())


class ClusterWatch:
    """The three watches and the taint keeper of one extender.

    Parameters
    ----------
    extender : Extender
    loop : asyncio.AbstractEventLoop
        The loop that owns ``extender``; every update is applied there.
    api : kubernetes.client.CoreV1Api, optional
        A client; by default :func:`eams.kube.client.load_configuration`'s.
    """

    def __init__(
        self, extender: Extender, loop: asyncio.AbstractEventLoop, api: Any = None
    ) -> None:
        if api is None:
            api = core_api(load_configuration())
        self.core = api
        self.node_api = RawNodes(api)
        self.extender = extender
        self.loop = loop
        self.to_loop = _ToLoop(loop)
        self._stop = threading.Event()
        s = extender.settings
        self.keeper = (
            TaintKeeper(extender.floor, extender.nodes, extender.clock)
            if s.taint_floor and extender.active
            else None
        )
        self._plan_scheduled = False
        self._tick: asyncio.TimerHandle | None = None
        self.heartbeat: Heartbeat | None = None
        self._wakes_asked: dict[str, WakeRequest] = {}  # node → newest request asked
        self._wakes_due: dict[str, tuple[WakeRequest, int]] = {}  # not yet sent, its attempt
        self._wakes_sending: set[str] = set()  # nodes with a patch in flight
        pending = pending_selector(s.scheduler_name)
        sized: dict[str, tuple[str, PodRequest]] = {}
        self.watches = [
            (NODES, api.list_node, None, _Nodes(extender, self.to_loop)),
            (BOUND, api.list_pod_for_all_namespaces, f"spec.nodeName!=,{NOT_FINISHED_SELECTOR}",
             _Pods(extender, self.to_loop, pending=False, sized=sized)),
            (PENDING, api.list_pod_for_all_namespaces, pending,
             _Pods(extender, self.to_loop, pending=True, sized=sized)),
        ]  # fmt: skip

    def start(self) -> Callable[[], None]:
        """Start the watches (each is down until it has listed); returns the stop function."""
        for name, call, selector, feed in self.watches:
            self._set_health(name, "not listed yet", None)
            watch = ListWatch(name, call, selector, feed, self._health(name), self._stop)
            threading.Thread(target=watch.run, name=f"watch {name}", daemon=True).start()
        if self.keeper is not None:
            self.extender.on_floor_change = self.schedule_plan
            self._tick = self.loop.call_later(TAINT_PERIOD_S, self._on_tick)
        self.extender.on_wake_request = self.request_wake
        if self.extender.decisions is not None:
            self.extender.decisions.attach_api(self.core.api_client)
        if self.extender.settings.release_gates:
            self._start_releaser()
            self.heartbeat = Heartbeat(self.extender, self.loop, coordination_api(self.core))
            self.heartbeat.start()
        return self.stop

    def _start_releaser(self) -> None:
        """Release the gated pods the market clears (``gates.py``), pinned to their nodes; the
        floor taint waits for the pinned pods not bound yet."""
        extender = self.extender
        releaser = extender.releaser = GateReleaser(
            lambda: api_sender(self.core.api_client, content_type=STRATEGIC_MERGE_PATCH),
            extender.metrics.registry,
            self.to_loop.put,
            self.loop.call_later,
            extender.clock,
        )
        if self.keeper is not None:
            self.keeper.holding = releaser.holding

    def stop(self) -> None:
        """Stop the watches, the taint keeper, the Lease's renewals and the gate releaser
        (sending what waits)."""
        self._stop.set()
        if self.heartbeat is not None:
            self.heartbeat.stop()
        if self.extender.releaser is not None:
            self.extender.releaser.close()
        if self._tick is not None:
            self._tick.cancel()

    def _health(self, name: str) -> Callable[[str | None, str | None], None]:
        def report(down: str | None, failure: str | None) -> None:
            self.to_loop.put(lambda: self._set_health(name, down, failure))

        return report

    def _set_health(self, name: str, down: str | None, failure: str | None) -> None:
        self.extender.watch_health[name] = down
        metrics = self.extender.metrics
        metrics.watch_up.labels(name).set(0 if down else 1)
        if failure is not None:
            metrics.watch_failures.labels(name, failure).inc()
        if down is None and name == NODES:
            self.schedule_plan()

    # ---- floor taints ------------------------------------------------------------------------

    def schedule_plan(self) -> None:
        """Plan the taints once the loop is free (however many changes asked meanwhile)."""
        if self.keeper is not None and not self._plan_scheduled:
            self._plan_scheduled = True
            self.loop.call_soon(self._plan)

    def _on_tick(self) -> None:
        self.schedule_plan()
        self._tick = self.loop.call_later(TAINT_PERIOD_S, self._on_tick)

    def _plan(self) -> None:
        self._plan_scheduled = False
        if self.keeper is None or self.extender.watch_health.get(NODES):
            return  # without the node objects there is nothing to patch against
        for patch in self.keeper.plan():
            future = self.loop.run_in_executor(None, self._send, patch)
            future.add_done_callback(functools.partial(self._answered, patch))

    def _send(self, patch: TaintPatch) -> tuple[bool, dict[str, Any]]:
        """Send one patch: ``(True, patched node)``, or ``(False, current node)`` after a 409
        Conflict (the node changed since the extender's copy; the next plan starts from it)."""
        sent = patch_node(
            self.node_api, patch.node, lambda _: patch.body, node=patch.read, retries=0
        )
        return sent.applied, sent.node

    def _answered(
        self, patch: TaintPatch, future: asyncio.Future[tuple[bool, dict[str, Any]]]
    ) -> None:
        assert self.keeper is not None
        metrics = self.extender.metrics
        error = future.exception()
        if error is not None:
            self.keeper.answered(patch, None)
            metrics.taints.labels(patch.action, "error").inc()
            log.warning("node %s: headroom taint %s failed: %s", patch.node, patch.action, error)
            return
        applied, node = future.result()
        self.keeper.answered(patch, node)
        metrics.taints.labels(patch.action, "ok" if applied else "conflict").inc()
        if not applied:
            self.schedule_plan()
            return
        if patch.action == "remove":
            metrics.recoveries.inc()
        log.info("node %s: headroom taint %s", patch.node, patch.action)

    # ---- market wake requests ----------------------------------------------------------------

    def request_wake(self, request: WakeRequest) -> None:
        """``Extender.on_wake_request`` (on the loop, never blocks): write ``request`` on its
        node (module docstring)."""
        self._wakes_asked[request.node] = request
        self._wakes_due[request.node] = (request, 0)
        if request.node not in self._wakes_sending:
            self._send_wake(request.node)

    def _send_wake(self, node: str) -> None:
        request, attempt = self._wakes_due.pop(node)
        self._wakes_sending.add(node)
        body = {"metadata": {"annotations": {WAKE_REQUEST_ANNOTATION: request.annotation()}}}
        future = self.loop.run_in_executor(None, self.node_api.patch_node, node, body)
        future.add_done_callback(functools.partial(self._wake_answered, request, attempt))

    def _wake_answered(self, request: WakeRequest, attempt: int, future: asyncio.Future) -> None:
        node = request.node
        self._wakes_sending.discard(node)
        error = future.exception()
        status = getattr(error, "status", None)
        result = "ok" if error is None else "not_found" if status == NOT_FOUND else "error"
        self.extender.metrics.wake_request_patches.labels(result).inc()
        if error is None:
            log.info("node %s: wake request written (%d pods)", node, len(request.pods))
        else:
            log.warning("node %s: wake request not written (try %d): %s", node, attempt + 1, error)
        if node in self._wakes_due:
            self._send_wake(node)
        elif result == "error" and attempt < WAKE_RETRIES:
            self.loop.call_later(WAKE_RETRY_S, self._retry_wake, request, attempt + 1)

    def _retry_wake(self, request: WakeRequest, attempt: int) -> None:
        node = request.node
        if self._stop.is_set() or self._wakes_asked.get(node) is not request:
            return  # stopped, or a newer request for the node was sent or is on its way
        if node not in self._wakes_sending and node not in self._wakes_due:
            self._wakes_due[node] = (request, attempt)
            self._send_wake(node)


def start_watch(extender: Extender) -> Callable[[], None]:
    """``create_app(on_startup=start_watch)``: run :class:`ClusterWatch` on the current loop."""
    return ClusterWatch(extender, asyncio.get_running_loop()).start()
