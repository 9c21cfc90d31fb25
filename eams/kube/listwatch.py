"""List, then watch, one Kubernetes resource: the reflector loop (client-go's, in Python).

A list gives ``metadata.resourceVersion``; ``?watch=true&resourceVersion=RV&
allowWatchBookmarks=true`` streams one ``{"type", "object"}`` per line from there
(kubernetes/website ``docs/reference/using-api/api-concepts.md``), read raw
(``_preload_content=False``) and decoded with msgspec: each line first into its type and the
object's :class:`Head` only (one pass), so an event the feed has no use for (a bound pod's
status or annotations changing: :meth:`Feed.unchanged`) is dropped before its object is cut
out; the others are handed on with the object's raw JSON. A ``BOOKMARK`` only moves the
resourceVersion on; 410 Gone (an ``ERROR`` event or a status) lists again at once; any other
failure is retried after client-go's reflector backoff (0.8 s doubling to 30 s,
``k8s.io/client-go/tools/cache/reflector.go``), reset once a watch delivers again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, Protocol

import msgspec

log = logging.getLogger(__name__)

WATCH_TIMEOUT_S = 300  # server-side watch timeout; the watch resumes from its resourceVersion
BACKOFF_INITIAL_S = 0.8  # client-go reflector: 800 ms doubling to 30 s
BACKOFF_MAX_S = 30.0


class Meta(msgspec.Struct):
    """An object's ``metadata``, the fields the feeds key on and the watch resumes from."""

    name: str = ""
    namespace: str = ""
    uid: str = ""
    resourceVersion: str = ""


class _Gate(msgspec.Struct):
    name: str | None = None


class _Spec(msgspec.Struct):
    nodeName: str = ""
    schedulingGates: list[_Gate] | None = None


class Head(msgspec.Struct):
    """What the feeds key on and the watch resumes from: an object's metadata (every object,
    bookmark and list carries it) and, for a pod, ``spec.nodeName`` (``""`` unbound, and for
    nodes) and ``spec.schedulingGates``."""

    metadata: Meta = msgspec.field(default_factory=Meta)
    spec: _Spec = msgspec.field(default_factory=_Spec)


class _EventHead(msgspec.Struct):
    type: str
    object: Head = msgspec.field(default_factory=Head)


class _Event(msgspec.Struct):
    type: str
    object: msgspec.Raw


class _List(msgspec.Struct):
    metadata: Meta = msgspec.field(default_factory=Meta)
    items: list[msgspec.Raw] = []


class _Status(msgspec.Struct):
    code: int = 0
    reason: str = ""
    message: str = ""


_decode_event = msgspec.json.Decoder(_Event).decode
_decode_event_head = msgspec.json.Decoder(_EventHead).decode
_decode_list = msgspec.json.Decoder(_List).decode
_decode_head = msgspec.json.Decoder(Head).decode
_decode_status = msgspec.json.Decoder(_Status).decode


class _Expired(Exception):
    """The watch's resourceVersion is gone (410): list again."""


class Feed(Protocol):
    """What a list and its events are handed to (the extender's node and pod feeds,
    ``eams.scheduler.extender.watch``)."""

    def listed(self, items: list[tuple[Head, bytes]]) -> None:
        """A fresh list: each object's head and raw JSON."""

    def unchanged(self, kind: str, head: Head) -> bool:
        """Whether an ``ADDED``/``MODIFIED`` event changes nothing the feed keeps, known from
        its head alone (then :meth:`event` is not called)."""

    def event(self, kind: str, head: Head, raw: bytes) -> str:
        """One ``ADDED``/``MODIFIED``/``DELETED`` object, its head and raw JSON; returns its
        key."""


class ListWatch:
    """List, then watch, one resource until stopped; relist on expiry, back off on failure.

    Parameters
    ----------
    name : str
        Shown in ``/readyz`` and the metrics (``nodes``, ``bound pods``, ``pending pods``).
    call : callable
        The client's list function (``CoreV1Api.list_node``, ``list_pod_for_all_namespaces``).
    selector : str or None
        ``fieldSelector``.
    feed : Feed
    health : callable
        ``health(down, failure)`` from the thread: ``down`` is ``None`` once listed, else why
        the watch is down; ``failure`` names a failure to count (``expired``, a status code).
    stop : threading.Event
    """

    def __init__(
        self,
        name: str,
        call: Callable[..., Any],
        selector: str | None,
        feed: Feed,
        health: Callable[[str | None, str | None], None],
        stop: threading.Event,
    ) -> None:
        self.name, self.call, self.selector, self.feed = name, call, selector, feed
        self.health, self.stop = health, stop

    def run(self) -> None:
        """The thread's body."""
        from kubernetes.client.exceptions import ApiException

        failures = 0
        while not self.stop.is_set():
            try:
                version = self._list()
                self.health(None, None)
                failures = self._watch(version, failures)
            except _Expired:
                failures += 1
                self.health(None, "expired")  # listed again at once, still up
                if failures > 1:
                    self.stop.wait(self._backoff_s(failures - 1))
            except Exception as exc:
                failures += 1
                status = exc.status if isinstance(exc, ApiException) else None
                reason = f"{status}" if status else type(exc).__name__
                detail = _status_text(exc) if isinstance(exc, ApiException) else str(exc)
                self.health(f"{reason} {detail}".strip()[:200], reason)
                log.warning("%s watch failed (%s); retrying", self.name, detail)
                self.stop.wait(self._backoff_s(failures))

    @staticmethod
    def _backoff_s(failures: int) -> float:
        return min(BACKOFF_MAX_S, BACKOFF_INITIAL_S * 2 ** max(0, failures - 1))

    def _kwargs(self) -> dict[str, Any]:
        return {"field_selector": self.selector} if self.selector else {}

    def _list(self) -> str:
        response = self.call(_preload_content=False, **self._kwargs())
        try:
            listed = _decode_list(response.data)
        finally:
            response.release_conn()
        self.feed.listed([(_decode_head(raw), bytes(raw)) for raw in listed.items])
        return listed.metadata.resourceVersion

    def _watch(self, version: str, failures: int) -> int:
        """Stream events from ``version`` until the server ends the watch; returns the failure
        count (reset once the watch delivered).

        Raises
        ------
        _Expired
            410 Gone: the version was compacted away.
        """
        feed = self.feed
        while not self.stop.is_set():
            response = self.call(
                _preload_content=False,
                watch=True,
                resource_version=version,
                allow_watch_bookmarks=True,
                timeout_seconds=WATCH_TIMEOUT_S,
                **self._kwargs(),
            )
            try:
                for line in _lines(response):
                    if self.stop.is_set():
                        return failures
                    event = _decode_event_head(line)
                    kind, head = event.type, event.object
                    if kind == "ERROR":
                        status = _decode_status(_decode_event(line).object)
                        if status.code == 410:
                            raise _Expired(status.message)
                        raise RuntimeError(f"watch ERROR {status.code} {status.message}")
                    failures = 0
                    version = head.metadata.resourceVersion or version
                    if kind == "BOOKMARK" or (kind != "DELETED" and feed.unchanged(kind, head)):
                        continue
                    feed.event(kind, head, bytes(_decode_event(line).object))
            finally:
                response.release_conn()
        return failures


def _lines(response: Any) -> Any:
    """The JSON lines of a watch stream, as bytes."""
    buffer = b""
    for chunk in response.stream(amt=None, decode_content=False):
        buffer += chunk
        while (end := buffer.find(b"\n")) >= 0:
            line, buffer = buffer[:end], buffer[end + 1 :]
            if line.strip():
                yield line


def _status_text(exc: Any) -> str:
    """The ``message`` of a ``Status`` body of an ApiException, else its reason."""
    body = getattr(exc, "body", None)
    if body:
        try:
            return _decode_status(body).message or str(exc.reason)
        except (msgspec.DecodeError, msgspec.ValidationError):
            pass
    return str(exc.reason)
