"""Feed the extender from the API server: nodes, pods, and a visible signal on recovery.

In a cluster (``eams extender serve --watch``) two daemon threads list-and-watch nodes and pods
through the kubernetes Python client (in-cluster service account, else ``KUBECONFIG``) and hand
each event to the event loop, where :func:`apply_node_event` / :func:`apply_pod_event` update the
:class:`~.service.Extender`: node objects fill the node cache (``nodeCacheCapable: true`` sends
names only), bound pods use node capacity, pending pods of the EAMS profile join a batch window.

Recovery (kubernetes issue 122019, pitfall P6): when a node this extender filtered recovers, the
node gets the annotation ``eams.io/headroom-recovered-at`` (RFC 3339). The patch is a Node
update — a cluster event — so kube-scheduler moves pods that the extender rejected out of its
unschedulable queue at once instead of after up to five minutes.
RBAC: nodes get/list/watch/patch, pods get/list/watch (``deploy/k3s/rbac.yaml``).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from eams.scheduler.extender.errors import BadRequest
from eams.scheduler.extender.schemas import PodObject
from eams.scheduler.extender.service import Extender
from eams.validation import describe_validation_error

log = logging.getLogger(__name__)

RECOVERED_ANNOTATION = "eams.io/headroom-recovered-at"
WATCH_TIMEOUT_S = 300  # server-side watch timeout; the loop re-lists after it
RETRY_S = 5.0


def apply_node_event(extender: Extender, kind: str, node: dict[str, Any]) -> None:
    """Apply one node watch event (``ADDED``/``MODIFIED``/``DELETED``) with the node as JSON."""
    name = (node.get("metadata") or {}).get("name")
    try:
        if kind == "DELETED":
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


class ClusterWatch:
    """The node and pod watch threads and the recovery annotator of one extender.

    Parameters
    ----------
    extender : Extender
    loop : asyncio.AbstractEventLoop
        The loop that owns ``extender``; events are applied there.
    """

    def __init__(self, extender: Extender, loop: asyncio.AbstractEventLoop) -> None:
        from kubernetes import client, config

        try:
            config.load_incluster_config()
        except config.ConfigException:
            config.load_kube_config()
        self.core = client.CoreV1Api()
        self.extender = extender
        self.loop = loop
        self._stop = threading.Event()

    def start(self) -> Callable[[], None]:
        """Start both watches and hook recoveries; returns the stop function."""
        sources = (
            (self.core.list_node, apply_node_event),
            (self.core.list_pod_for_all_namespaces, apply_pod_event),
        )
        for lister, apply in sources:
            threading.Thread(target=self._run, args=(lister, apply), daemon=True).start()
        self.extender.on_recovery = self._announce
        return self._stop.set

    def _run(
        self, lister: Callable[..., Any], apply: Callable[[Extender, str, dict], None]
    ) -> None:
        from kubernetes import watch

        serialise = self.core.api_client.sanitize_for_serialization
        while not self._stop.is_set():
            stream = watch.Watch()
            try:
                for event in stream.stream(lister, timeout_seconds=WATCH_TIMEOUT_S):
                    if self._stop.is_set():
                        stream.stop()
                        break
                    obj = serialise(event["object"])
                    self.loop.call_soon_threadsafe(apply, self.extender, event["type"], obj)
            except Exception:
                log.exception("watch of %s failed; retrying in %.0f s", lister.__name__, RETRY_S)
                self._stop.wait(RETRY_S)

    def _announce(self, node: str) -> None:
        stamp = datetime.now(UTC).isoformat(timespec="seconds")
        body = {"metadata": {"annotations": {RECOVERED_ANNOTATION: stamp}}}
        future = self.loop.run_in_executor(None, self.core.patch_node, node, body)

        def report(f: asyncio.Future[Any]) -> None:
            if f.exception():
                log.warning("annotating %s failed: %s", node, f.exception())

        future.add_done_callback(report)


def start_watch(extender: Extender) -> Callable[[], None]:
    """``create_app(on_startup=start_watch)``: run :class:`ClusterWatch` on the current loop."""
    return ClusterWatch(extender, asyncio.get_running_loop()).start()
