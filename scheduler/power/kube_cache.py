"""The cluster as the power manager's observer reads it: nodes, pods and the kubelets' Leases,
kept current by list-then-watch (:class:`eams.kube.listwatch.ListWatch`, one thread each)
instead of listed at every tick.

Listing every pod each tick costs what the cluster's size costs: at 1,000 nodes and 10,000 pods
(``benchmarks/power_observe.py``, 6 Dec, busy host) a tick's three lists took 2.05 s of the
manager's CPU and 0.52 s of the API server's, 28.6 % of a core at the default 10 s interval
(100 nodes: 2.7 %). A watch pays per change instead: a pod is parsed
(:func:`~.kube_pods.pod_info`) once per event, not once per tick. Watched under a kubelet-like
churn (every Lease renewed every 10 s, 10 pods created and 10 deleted a second; same benchmark,
6 Dec) it costs 4.0-4.3 % of a core in the watch threads and 0.4-3.5 % in the API server at
1,000 nodes (reading the cluster 0.14-0.27 of listing, after 2.3-2.4 s of CPU once to start),
but 3 % and 2-3 % at 100 nodes (1.7-1.8x listing there: ~0.6 ms a pod event).

:meth:`ClusterCache.start` returns once every resource has been listed (client-go's
``WaitForCacheSync``). :meth:`ClusterCache.snapshot` refuses, with the reason, while a watch is
down — a failed watch is retried with the reflector's backoff and relisted on 410 Gone — so the
manager decides nothing on a view that may be stale, as it decided nothing when a list failed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import msgspec

from eams.kube.errors import BadObject
from eams.kube.listwatch import Head, ListWatch
from eams.scheduler.power.errors import KubeApiError
from eams.scheduler.power.kube_client import KubeClient
from eams.scheduler.power.kube_pods import PodInfo, pod_info

log = logging.getLogger("eams.power.manager")

SYNC_TIMEOUT_S = 60.0
"""How long :meth:`ClusterCache.start` waits for the first lists (s)."""


class _Store:
    """One resource's objects by ``namespace/name``, each as ``parse`` reads its JSON: the
    :class:`~eams.kube.listwatch.Feed` of its watch (every event counts). An object ``parse``
    refuses is left out and logged: the API server never publishes one."""

    def __init__(self, kind: str, parse: Callable[[dict[str, Any]], Any]) -> None:
        self.kind, self.parse = kind, parse
        self.items: dict[str, Any] = {}
        self.lock = threading.Lock()
        self.synced = False
        self.down: str | None = "not listed yet"

    @staticmethod
    def _key(head: Head) -> str:
        meta = head.metadata
        return f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name

    def _read(self, raw: bytes) -> Any:
        try:
            return self.parse(msgspec.json.decode(raw))
        except (BadObject, msgspec.DecodeError) as exc:
            log.warning("power manager: a %s the API server published was left out: %s",
                        self.kind, exc)  # fmt: skip
            return None

    def listed(self, items: list[tuple[Head, bytes]]) -> None:
        fresh = {self._key(head): self._read(raw) for head, raw in items}
        with self.lock:
            self.items = {k: v for k, v in fresh.items() if v is not None}

    def unchanged(self, kind: str, head: Head) -> bool:
        return False

    def event(self, kind: str, head: Head, raw: bytes) -> str:
        key = self._key(head)
        value = None if kind == "DELETED" else self._read(raw)
        with self.lock:
            if value is None:
                self.items.pop(key, None)
            else:
                self.items[key] = value
        return key

    def health(self, down: str | None, failure: str | None) -> None:
        self.down = down
        self.synced = self.synced or down is None

    def values(self) -> list[Any]:
        with self.lock:
            return list(self.items.values())


def _renew_time(lease: dict[str, Any]) -> tuple[str, str | None]:
    meta, spec = lease.get("metadata") or {}, lease.get("spec") or {}
    return str(meta.get("name")), spec.get("renewTime")


class ClusterCache:
    """Nodes, pods and node Leases, watched (module docstring).

    Parameters
    ----------
    client : KubeClient
        Its API client makes the list and watch calls.

    Raises
    ------
    KubeApiError
        From :meth:`start` (a resource not listed within :data:`SYNC_TIMEOUT_S`, with why) and
        :meth:`snapshot` (a watch down).
    """

    def __init__(self, client: KubeClient) -> None:
        self.server = client.server
        self._stores = {
            "nodes": _Store("node", lambda doc: doc),
            "pods": _Store("pod", pod_info),
            "node leases": _Store("lease", _renew_time),
        }
        calls = client.list_calls()
        self._stop = threading.Event()
        self._threads = [self._thread(name, calls[name], store)
                         for name, store in self._stores.items()]  # fmt: skip

    def _thread(self, name: str, call: Callable[..., Any], store: _Store) -> threading.Thread:
        watch = ListWatch(name, call, None, store, store.health, self._stop)
        thread_name = f"power-watch-{name.replace(' ', '-')}"
        return threading.Thread(target=watch.run, name=thread_name, daemon=True)

    def start(self, timeout_s: float = SYNC_TIMEOUT_S) -> ClusterCache:
        """Start the watches; return once each resource has been listed."""
        for thread in self._threads:
            thread.start()
        deadline = time.monotonic() + timeout_s
        while not all(store.synced for store in self._stores.values()):
            if time.monotonic() > deadline:
                self.close()
                raise KubeApiError(f"the Kubernetes API at {self.server}: {self._why()}")
            self._stop.wait(0.05)
        return self

    def close(self) -> None:
        """Stop the watches (each ends within one server round trip)."""
        self._stop.set()

    def _why(self) -> str:
        return "; ".join(f"{name}: {store.down}" for name, store in self._stores.items()
                         if store.down is not None)  # fmt: skip

    def snapshot(self) -> tuple[list[dict[str, Any]], list[PodInfo], dict[str, str | None]]:
        """Every node (``v1.Node`` JSON), every pod (:class:`~.kube_pods.PodInfo`) and each
        node's Lease ``renewTime`` by node name, as last watched."""
        if any(store.down is not None for store in self._stores.values()):
            raise KubeApiError(f"the Kubernetes API at {self.server}: watch down ({self._why()})")
        leases = dict(self._stores["node leases"].values())
        return self._stores["nodes"].values(), self._stores["pods"].values(), leases
