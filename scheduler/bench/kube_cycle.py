"""kube-scheduler's scheduling loop against a live extender: one pod at a time, over HTTP.

Source: kubernetes/kubernetes ``pkg/scheduler/schedule_one.go`` (``ScheduleOne``,
``findNodesThatFitPod``, ``findNodesThatPassExtenders``, ``prioritizeNodes``, ``selectHost``,
``numFeasibleNodesToFind``) and ``pkg/scheduler/extender.go``, summarised in
``../shared/reference/extender-protocol.md`` §2.2–2.7. Per pod:

1. the pod leaves the active queue (PrioritySort: higher ``spec.priority`` first, then the
   earlier arrival);
2. in-tree Filter plugins (a caller-supplied function; none by default), then the first
   ``numFeasibleNodesToFind`` feasible nodes are kept;
3. ``POST {urlPrefix}/{filterVerb}`` with ``{"Pod": …, "Nodes": null, "NodeNames": [...]}``
   (``nodeCacheCapable: true``; ``Nodes`` with ``NodeNames: null`` otherwise), decoded as Go
   does (:mod:`.kube_wire`); a failed call of an ``ignorable`` extender lets every node pass;
4. no node left: unschedulable; one node: chosen without scoring;
5. in-tree scores (caller-supplied, already weighted) plus
   ``POST {urlPrefix}/{prioritizeVerb}``: each entry adds ``Score × weight × 10``
   (MaxNodeScore / MaxExtenderPriority); a failed call contributes nothing;
6. the highest total wins, ties broken by reservoir sampling (``selectHost``);
7. the binding cycle runs concurrently with the next pod's cycle (the bind hook is a task).

The next pod's calls start only when this pod's answers are in, over the one keep-alive
connection that Go's client reuses for serial calls. The module knows no extender internals:
it drives any extender through its HTTP protocol, so the benchmark and the demo share it.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import msgspec

from eams.kube.pods import pod_key
from eams.kube.taints import Taint, node_taints, pod_tolerations, untolerated
from eams.scheduler.bench.errors import ExtenderCallError
from eams.scheduler.bench.kube_wire import (
    DEFAULT_TIMEOUT_S,
    KeepAliveConnection,
    decode_filter,
    decode_priorities,
)

MAX_NODE_SCORE_PER_EXTENDER_POINT = 10  # MaxNodeScore 100 / MaxExtenderPriority 10
MIN_FEASIBLE_NODES_TO_FIND = 100  # schedule_one.go minFeasibleNodesToFind
MIN_FEASIBLE_NODES_PERCENTAGE = 5  # schedule_one.go minFeasibleNodesPercentageToFind

InTreeFilter = Callable[[dict[str, Any], list[str]], list[str]]
InTreeScore = Callable[[dict[str, Any], list[str]], dict[str, int]]
Binder = Callable[[dict[str, Any], str], Awaitable[None]]


def _duration_s(text: str | None) -> float:
    """A Go duration as the config file writes it (``"1s"``, ``"500ms"``, ``"1m"``)."""
    if not text:
        return DEFAULT_TIMEOUT_S
    for suffix, scale in (("ms", 0.001), ("s", 1.0), ("m", 60.0)):
        if text.endswith(suffix) and text[: -len(suffix)].replace(".", "", 1).isdigit():
            return float(text[: -len(suffix)]) * scale
    raise ValueError(f"httpTimeout: {text!r} is not a duration such as '1s'")


@dataclass(frozen=True)
class ExtenderConfig:
    """One ``extenders[]`` entry of a ``KubeSchedulerConfiguration`` (config/v1).

    Attributes
    ----------
    url_prefix : str
        ``http://host:port[/path]``.
    filter_verb, prioritize_verb : str or None
        Verbs appended to the prefix; ``None`` (or empty) means that call is not made.
    weight : int
        Multiplier of the extender's 0–10 scores.
    node_cache_capable : bool
        Names only on the wire.
    ignorable : bool
        A failed filter lets every node pass instead of failing the pod.
    http_timeout_s : float
        Per call, s (5 s when unset).
    """

    url_prefix: str
    filter_verb: str | None = "filter"
    prioritize_verb: str | None = "prioritize"
    weight: int = 1
    node_cache_capable: bool = True
    ignorable: bool = True
    http_timeout_s: float = DEFAULT_TIMEOUT_S

    @classmethod
    def from_entry(cls, entry: dict[str, Any]) -> ExtenderConfig:
        """Read an ``extenders[]`` entry (YAML keys as in config/v1 ``Extender``)."""
        return cls(
            url_prefix=entry["urlPrefix"],
            filter_verb=entry.get("filterVerb") or None,
            prioritize_verb=entry.get("prioritizeVerb") or None,
            weight=int(entry.get("weight", 0)),
            node_cache_capable=bool(entry.get("nodeCacheCapable", False)),
            ignorable=bool(entry.get("ignorable", False)),
            http_timeout_s=_duration_s(entry.get("httpTimeout")),
        )

    def path(self, verb: str) -> str:
        """The request path of ``verb`` (prefix path with trailing slashes stripped, ``/verb``)."""
        return urlsplit(self.url_prefix).path.rstrip("/") + "/" + verb


def taint_toleration(nodes: Callable[[], dict[str, dict[str, Any]]]) -> InTreeFilter:
    """The in-tree TaintToleration filter over live node objects (``spec.taints``) for a pod's
    ``spec.tolerations`` (the Kubernetes layer's rule, :func:`eams.kube.taints.untolerated`).

    Parameters
    ----------
    nodes : callable
        Node name → node object (JSON), read at every call (the watch's view).
    """

    def feasible(pod: dict[str, Any], names: list[str]) -> list[str]:
        tolerations = pod_tolerations(pod)
        objects = nodes()
        return [
            name
            for name in names
            if untolerated(tolerations, map(Taint.from_json, node_taints(objects.get(name) or {})))
            is None
        ]

    return feasible


def num_feasible_nodes_to_find(total: int, percentage: int = 0) -> int:
    """How many feasible nodes kube-scheduler looks for before it stops filtering.

    ``percentage`` is ``percentageOfNodesToScore`` (0 = adaptive: 50 − N/125, at least 5 %);
    fewer than 100 nodes, or 100 %, means all of them; otherwise at least 100.
    """
    if total < MIN_FEASIBLE_NODES_TO_FIND or percentage >= 100:
        return total
    adaptive = percentage or max(MIN_FEASIBLE_NODES_PERCENTAGE, 50 - total // 125)
    return max(MIN_FEASIBLE_NODES_TO_FIND, total * adaptive // 100)


@dataclass
class CycleRecord:
    """One pod's way through the loop; times are ``time.perf_counter()`` seconds.

    Attributes
    ----------
    key : str
        ``namespace/name``.
    node : str or None
        The chosen node; ``None`` when unschedulable or failed.
    created_s, started_s, ended_s : float
        Queued, popped, end of the scheduling cycle.
    filter_s, prioritize_s : float
        Time of each extender call, from sending the request to the whole answer read (the
        scheduler's own decoding excluded; 0 when not made).
    bound_s : float or None
        End of the bind hook.
    errors : list of str
        Failed calls (``"filter: …"``, ``"prioritize: …"``, ``"bind: …"``).
    """

    key: str
    created_s: float
    started_s: float = 0.0
    ended_s: float = 0.0
    filter_s: float = 0.0
    prioritize_s: float = 0.0
    node: str | None = None
    bound_s: float | None = None
    errors: list[str] = field(default_factory=list)

    @property
    def extender_s(self) -> float:
        """Both extender calls together, s."""
        return self.filter_s + self.prioritize_s


class KubeCycle:
    """The scheduling loop of one kube-scheduler profile with one HTTP extender.

    Parameters
    ----------
    config : ExtenderConfig
    nodes : callable
        The scheduler's node list (names) at the start of each cycle.
    in_tree_filter : callable, optional
        ``(pod, names) -> feasible names`` (in-tree Filter plugins); all pass by default.
    in_tree_score : callable, optional
        ``(pod, names) -> {name: weighted in-tree total}``; none by default.
    bind : callable, optional
        ``async bind(pod, node)``, run as a task after the cycle (the binding cycle).
    percentage_of_nodes_to_score : int
        ``percentageOfNodesToScore`` (0 = adaptive).
    seed : int
        Seeds the tie-break of ``selectHost``.
    """

    def __init__(
        self,
        config: ExtenderConfig,
        nodes: Callable[[], list[str]],
        *,
        in_tree_filter: InTreeFilter | None = None,
        in_tree_score: InTreeScore | None = None,
        bind: Binder | None = None,
        percentage_of_nodes_to_score: int = 0,
        seed: int = 0,
    ) -> None:
        url = urlsplit(config.url_prefix)
        self.config = config
        self.connection = KeepAliveConnection(
            url.hostname or "127.0.0.1", url.port or 80, config.http_timeout_s
        )
        self.nodes = nodes
        self.in_tree_filter = in_tree_filter
        self.in_tree_score = in_tree_score
        self.bind = bind
        self.percentage = percentage_of_nodes_to_score
        self.records: list[CycleRecord] = []
        self.failures: Counter[str] = Counter()
        self._queue: list[tuple[int, float, int, dict[str, Any]]] = []
        self._seq = itertools.count()
        self._arrived = asyncio.Event()
        self._binds: set[asyncio.Task[None]] = set()
        self._rng = random.Random(seed)
        self._last_names: list[str] | None = None
        self._last_tail = b""

    def add(self, pod: dict[str, Any], created_s: float | None = None) -> None:
        """Queue a pending pod (the scheduler's informer saw it); ``created_s`` defaults to now."""
        created_s = time.perf_counter() if created_s is None else created_s
        priority = int((pod.get("spec") or {}).get("priority") or 0)
        heapq.heappush(self._queue, (-priority, created_s, next(self._seq), pod))
        self._arrived.set()

    def __len__(self) -> int:
        return len(self._queue)

    async def next_pod(self) -> tuple[dict[str, Any], float]:
        """Wait for and pop the next pod (PrioritySort order) with its queue time."""
        while not self._queue:
            self._arrived.clear()
            await self._arrived.wait()
        _, created_s, _, pod = heapq.heappop(self._queue)
        return pod, created_s

    async def run(self, count: int) -> list[CycleRecord]:
        """Schedule ``count`` pods (waiting for them to arrive), then wait for their binds."""
        for _ in range(count):
            pod, created_s = await self.next_pod()
            await self.schedule_one(pod, created_s)
        await self.drain()
        return self.records

    def _nodes_json(self, names: list[str]) -> bytes:
        """``"Nodes": …, "NodeNames": …`` of a request; kept while the candidates repeat."""
        if names != self._last_names:
            tail: dict[str, Any]
            if self.config.node_cache_capable:
                tail = {"Nodes": None, "NodeNames": names}
            else:  # no node objects here: items carry the names only
                items = [{"metadata": {"name": n}} for n in names]
                tail = {"Nodes": {"metadata": {}, "items": items}, "NodeNames": None}
            self._last_names = list(names)
            self._last_tail = msgspec.json.encode(tail)[1:]
        return self._last_tail

    async def _call(self, verb: str, pod: dict[str, Any], names: list[str]) -> tuple[int, bytes]:
        pod_json = msgspec.json.encode(pod)
        body = b'{"Pod":' + pod_json + b"," + self._nodes_json(names)
        return await self.connection.post(self.config.path(verb), body)

    async def schedule_one(self, pod: dict[str, Any], created_s: float) -> CycleRecord:
        """One scheduling cycle for ``pod`` (steps 2–7 of the module docstring)."""
        meta = pod.get("metadata") or {}
        key = pod_key(meta.get("namespace"), meta.get("name"), meta.get("uid"))
        record = CycleRecord(key, created_s)
        record.started_s = time.perf_counter()
        self.records.append(record)
        names = self.nodes()
        if self.in_tree_filter is not None:
            names = self.in_tree_filter(pod, names)
        wanted = num_feasible_nodes_to_find(len(self.nodes()), self.percentage)
        if wanted < len(names):
            names = names[:wanted]
        cfg = self.config
        if names and cfg.filter_verb:
            t0 = time.perf_counter()
            try:
                status, body = await self._call(cfg.filter_verb, pod, names)
                record.filter_s = time.perf_counter() - t0
                names = decode_filter(status, body, names, cfg.node_cache_capable).passed
            except ExtenderCallError as exc:
                self.failures["filter"] += 1
                record.errors.append(f"filter: {exc}")
                record.filter_s = record.filter_s or time.perf_counter() - t0
                if not cfg.ignorable:
                    record.ended_s = time.perf_counter()
                    return record
        if len(names) > 1:
            in_tree = self.in_tree_score(pod, names) if self.in_tree_score is not None else {}
            totals = dict.fromkeys(names, 0)  # keeps the candidates' order for selectHost
            totals.update(in_tree)
            if cfg.prioritize_verb:
                t0 = time.perf_counter()
                try:
                    status, body = await self._call(cfg.prioritize_verb, pod, names)
                    record.prioritize_s = time.perf_counter() - t0
                    scale = cfg.weight * MAX_NODE_SCORE_PER_EXTENDER_POINT
                    scores = decode_priorities(status, body)
                    if scale > 0 and not in_tree and scores.keys() == totals.keys():
                        totals = scores  # the usual answer: a common positive scale ranks alike
                        if list(scores) != names:
                            totals = {n: scores[n] for n in names}
                    else:
                        for host, score in scores.items():
                            if host in totals:  # hosts not among the candidates are ignored
                                totals[host] += score * scale
                except ExtenderCallError as exc:
                    self.failures["prioritize"] += 1
                    record.errors.append(f"prioritize: {exc}")
                    record.prioritize_s = record.prioritize_s or time.perf_counter() - t0
            record.node = self._select_host(names, totals)
        elif names:
            record.node = names[0]
        record.ended_s = time.perf_counter()
        if record.node is not None and self.bind is not None:
            task = asyncio.get_running_loop().create_task(self._bind(pod, record))
            self._binds.add(task)
            task.add_done_callback(self._binds.discard)
        return record

    def _select_host(self, names: list[str], totals: dict[str, int]) -> str:
        """The highest total; ties by reservoir sampling, as ``selectHost`` does."""
        best, chosen, ties = None, names[0], 0
        for name, score in totals.items():
            if best is None or score > best:
                best, chosen, ties = score, name, 1
            elif score == best:
                ties += 1
                if self._rng.randrange(ties) == 0:
                    chosen = name
        return chosen

    async def _bind(self, pod: dict[str, Any], record: CycleRecord) -> None:
        assert self.bind is not None and record.node is not None
        try:
            await self.bind(pod, record.node)
            record.bound_s = time.perf_counter()
        except Exception as exc:  # a failed bind is the pod's outcome, not the loop's end
            self.failures["bind"] += 1
            record.errors.append(f"bind: {exc}")

    async def drain(self) -> None:
        """Wait for every bind in flight."""
        while self._binds:
            await asyncio.gather(*self._binds, return_exceptions=True)

    def close(self) -> None:
        """Close the extender connection."""
        self.connection.close()
