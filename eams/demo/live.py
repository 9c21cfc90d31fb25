"""Demo stage 3, live: one run placed in real time by an emulated kube-scheduler.

Pods arrive at their trace times (compressed by the speedup) and join the scheduler's queue;
:class:`~eams.scheduler.bench.kube_cycle.KubeCycle` (the issue-15 emulator of kube-scheduler's
loop, shared with the extender benchmark) takes them one at a time: the in-tree filters of the
emulated cluster (:mod:`eams.demo.cluster`), then — in the EAMS run — ``POST /filter`` and
``POST /prioritize`` to the live extender with names only (``nodeCacheCapable``), the next pod
only once both answers are in; the in-tree LeastAllocated score (the harness's ``default``
plug-in) is added, and the highest total wins. The extender's weight (130, the shipped
``deploy/k3s/scheduler-config.yaml``) makes its cleared node win whenever the filters let it. The
default run has no extender: LeastAllocated alone. A pod no node can take waits among the
unschedulable pods until a cluster event (a pod ends, a node is released after a wake) moves it
back to the queue, as kube-scheduler's scheduling queue does. A bound pod loads its virtual node
and ends after its duration; the power manager, when the run has one, steps beside the loop.

Every extender answer is kept (:class:`Decision`): the candidates sent, the scores received and
the node bound, so the demo can show that its placements are the extender's.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from eams.calibrate.wallpower.spec import RunSpec, format_time_ns
from eams.demo.cluster import EmulatedCluster, bound_pod, ended_pod, pod_object
from eams.demo.errors import DemoError
from eams.demo.lag import LagLog, every
from eams.kube.names import ASLEEP_TAINT
from eams.scheduler import policies
from eams.scheduler.bench.kube_cycle import CycleRecord, ExtenderConfig, KubeCycle
from eams.scheduler.bench.kube_wire import KeepAliveConnection, decode_filter, decode_priorities
from eams.scheduler.errors import SchedulerError
from eams.scheduler.policies.base import Cluster, NodeState, Params, Workload, WorkloadPod

EXTENDER_WEIGHT = 130
"""``weight`` of the shipped extender entry (``deploy/k3s/scheduler-config.yaml``)."""
EXTENDER_TIMEOUT_S = 1.0
"""``httpTimeout`` of the shipped entry."""
NO_EXTENDER = ExtenderConfig(url_prefix="http://127.0.0.1", filter_verb=None, prioritize_verb=None)
"""kube-scheduler with no extender (the default profile): no call is ever made."""
SCHEDULER_NAMES = {"default": "default-scheduler", "eams": "eams-scheduler"}
POLL_S = 0.05
UNSCHEDULABLE_MAX_S = 300.0
"""kube-scheduler's ``podMaxInUnschedulablePodsDuration`` (5 min), trace s: a pod left among
the unschedulable pods that long goes back to the queue even without a cluster event (its
``flushUnschedulablePodsLeftover``). Without it, a pod the extender's /filter refused after the
last pod ended (no event left to come: the demo's extender runs without a watch, so its floor
taint and its recovery, node events in a cluster, never happen) would wait forever."""

CLOCK = "real seconds of the compressed run"
"""The one clock of every figure the demo states (work, energy per work, completion): the
run's own real time, in which the energy is metered; the trace played ``speedup`` × faster.
(Work in trace core-seconds over energy in real seconds would mix two clocks.)"""

log = logging.getLogger(__name__)


def extender_config(url: str) -> ExtenderConfig:
    """The shipped extender entry pointed at ``url``, calling /filter and /prioritize."""
    return ExtenderConfig(
        url_prefix=url,
        filter_verb="filter",
        prioritize_verb="prioritize",
        weight=EXTENDER_WEIGHT,
        node_cache_capable=True,
        ignorable=True,
        http_timeout_s=EXTENDER_TIMEOUT_S,
    )


class AnsweredConnection(KeepAliveConnection):
    """kube-scheduler's keep-alive connection that also keeps the last answer of each verb."""

    def __init__(self, host: str, port: int, timeout_s: float) -> None:
        super().__init__(host, port, timeout_s)
        self.last: dict[str, tuple[int, bytes]] = {}

    async def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        """As :meth:`KeepAliveConnection.post`; the answer is kept under the path's verb."""
        answer = await super().post(path, body)
        self.last[path.rsplit("/", 1)[-1]] = answer
        return answer


@dataclass(frozen=True)
class Decision:
    """One pod the extender scored, and where it went.

    Attributes
    ----------
    pod : str
    at_s : float
        Epoch s of the answer.
    candidates : tuple of str
        The nodes sent to /prioritize (after the in-tree filters and /filter).
    scores : dict of str to int
        The extender's 0–10 scores.
    node : str
        The node bound.
    gated : dict of str to str
        Nodes that were not candidates and why (``asleep``: tainted by the power manager;
        ``no_fit``: NodeResourcesFit or cordoned; ``headroom_floor``: in the extender's
        /filter ``FailedNodes``; ``filter``: missing from its answer otherwise).
    cores : float
    duration_ref_s : float
        The pod's run time at speed 1, trace s.
    default_node : str or None
        Where LeastAllocated alone would have put it among the same candidates.
    age_s : dict of str to (float or None)
        Per candidate, the age of its newest own-agent sample (s): when its agent last read
        its ``/proc/stat`` and published.
    """

    pod: str
    at_s: float
    candidates: tuple[str, ...]
    scores: dict[str, int]
    node: str
    gated: dict[str, str]
    cores: float
    duration_ref_s: float
    default_node: str | None
    age_s: dict[str, float | None]


@dataclass
class LiveRun:
    """One run placed live: where its telemetry is, its window, its work and its decisions.

    Attributes
    ----------
    label : str
    telemetry_dir : Path
    start_ns, end_ns : int
        The run's arrival window, epoch ns: from the first pod's scheduled arrival to the
        last's (or once the transitions then in flight have ended:
        :func:`eams.demo.runs.close_window`), where the offered load ρ holds (after it the
        cluster drains, at a load that tends to 0 whatever ρ was). Its energy and work are the
        run's figures, as in the benchmark's AR-3 figure (:mod:`eams.scheduler.bench.metrics`,
        ``energy_per_work_window_j_per_core_s``).
    run_s : float
        The whole run's length (s): to the last pod's end and the nodes settled.
    work_core_s : float
        Reference core-seconds the pods did inside the window (each pod's work × the share of
        its run time inside it), in real seconds of the compressed run (:data:`CLOCK`: the
        trace's work ÷ the speedup), the clock the energy is metered on.
    completion_s : ndarray
        Each pod's arrival → end, real seconds of the compressed run (:data:`CLOCK`).
    cycles : int
        Scheduling cycles (a pod retried after a cluster event counts again).
    prioritize_calls : int
        /prioritize calls the cycle made (0 in the default run; kube-scheduler scores no node
        when only one passes the filters).
    extender_prioritize : int or None
        /prioritize requests the extender itself counted during the run (its ``/metrics``);
        ``None`` in runs without it.
    unscored_binds : int
        Pods bound without a /prioritize call: one node passed the filters (kube-scheduler
        then binds it without scoring), or, in the default run, every pod.
    binds : dict of str to str
        Pod → node.
    unanswered : list of str
        Pods the extender never answered a /filter for (the call failed or outlasted
        kube-scheduler's ``httpTimeout``, every time it was scheduled): bound by the in-tree
        path alone, as kube-scheduler does with an ignorable extender; absent from the
        extender's record. Empty in runs without it.
    call_errors : list of str
        The failed extender calls' reasons (a few, in order).
    decisions : list of Decision
    transitions : dict of str to int
        ``sleep``, ``wake`` and ``refused`` the power manager carried out, and its failed
        transitions (:data:`eams.demo.power.FAILURES`: ``failed``, ``suspend_failed``,
        ``wake_failed``, ``suspect``); all 0 without one.
    suspect_nodes : list of str
        Nodes the power manager left asleep and suspect at some point of the run.
    lag : dict
        How late the live loop ran against its schedule (:meth:`eams.demo.lag.LagLog.summary`:
        per kind p50, p95 and max, the margin, ``exceeded``).
    """

    label: str
    telemetry_dir: Path
    start_ns: int = 0
    end_ns: int = 0
    run_s: float = 0.0
    work_core_s: float = 0.0
    completion_s: np.ndarray = field(default_factory=lambda: np.zeros(0))
    cycles: int = 0
    prioritize_calls: int = 0
    extender_prioritize: int | None = None
    unscored_binds: int = 0
    binds: dict[str, str] = field(default_factory=dict)
    unanswered: list[str] = field(default_factory=list)
    call_errors: list[str] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)
    transitions: dict[str, int] = field(default_factory=dict)
    suspect_nodes: list[str] = field(default_factory=list)
    lag: dict[str, Any] = field(default_factory=dict)

    @property
    def window_s(self) -> float:
        """Length of the arrival window (s)."""
        return (self.end_ns - self.start_ns) / 1e9

    @property
    def spec(self) -> RunSpec:
        """The run for the wall-power check, built directly: the output folder may hold a
        ``,`` or ``?`` that a SPEC string would split on. Its text is the equivalent
        ``jsonl:DIR?start=..&end=..&work_core_s=..&label=..`` (shown in the report)."""
        start, end = (format_time_ns(t, "microseconds") for t in (self.start_ns, self.end_ns))
        window = f"start={start}&end={end}"
        return RunSpec(
            text=f"jsonl:{self.telemetry_dir}?{window}&work_core_s={self.work_core_s:.6f}"
            f"&label={self.label}",
            kind="jsonl",
            paths=tuple(sorted(self.telemetry_dir.glob("*.jsonl"))),
            start_ns=self.start_ns,
            end_ns=self.end_ns,
            work_core_s=self.work_core_s,
            label=self.label,
        )


def work_inside(ran: Iterable[tuple[float, float, float]], start_s: float, end_s: float) -> float:
    """Work done in [``start_s``, ``end_s``] by pods that ran (work, from, to): each pod's work
    × the share of its run time inside the window (a pod runs at its node's constant speed, so
    its work is spread evenly over its run), in the work's unit. As
    :func:`eams.scheduler.bench.metrics.window_work`, on the demo's clock."""
    done = 0.0
    for work, from_s, to_s in ran:
        inside_s = min(to_s, end_s) - max(from_s, start_s)
        if inside_s > 0:
            done += work * inside_s / (to_s - from_s)
    return done


PowerStep = Callable[[float], Awaitable[None]]
"""The power manager's step at epoch time ``now_s`` (one policy decision, its actions)."""


class LiveLoop:
    """The scheduling loop of one run (module docstring).

    Parameters
    ----------
    cluster : EmulatedCluster
    harness : Cluster
        The harness's view of the testbed (the LeastAllocated plug-in scores on it).
    workload : Workload
    speedup : float
    config : ExtenderConfig
        :data:`NO_EXTENDER` or :func:`extender_config`.
    scheduler : str
        ``default`` or ``eams`` (the pods' ``spec.schedulerName``).
    outcomes : callable or None
        Called with a list of v1 Pods, each pod once bound and once ended, in that order
        (from one worker thread, off the loop): the extender's pod-watch twin
        (:meth:`~eams.demo.services.ExtenderServer.post_pods`); ``None``: nobody is told.
    """

    def __init__(
        self,
        cluster: EmulatedCluster,
        harness: Cluster,
        workload: Workload,
        speedup: float,
        config: ExtenderConfig,
        scheduler: str,
        outcomes: Callable[[list[dict[str, Any]]], None] | None = None,
    ) -> None:
        self.cluster, self.harness, self.workload = cluster, harness, workload
        self.outcomes = outcomes
        self._bound_pods: dict[str, dict[str, Any]] = {}
        self._tell = ThreadPoolExecutor(1, "eams-demo-outcomes") if outcomes else None
        self.speedup = speedup
        self.least_allocated = policies.load("default").make(harness, Params(), 0)
        self.cycle = KubeCycle(
            config,
            cluster.names,
            in_tree_filter=cluster.feasible,
            in_tree_score=self._in_tree_score,
            percentage_of_nodes_to_score=100,
        )
        self.answers: AnsweredConnection | None = None
        if config.prioritize_verb:
            old = self.cycle.connection
            self.answers = AnsweredConnection(old.host, old.port, old.timeout_s)
            self.cycle.connection = self.answers
        self.scheduler = SCHEDULER_NAMES[scheduler]
        self.pending: dict[str, float] = {}  # pod → pending since (epoch s)
        # pod → (pod object, created at, parked at (monotonic s))
        self._unschedulable: dict[str, tuple[dict[str, Any], float, float]] = {}
        self._index = {name: j for j, name in enumerate(workload.names)}
        self._arrived_s: dict[str, float] = {}
        self._ended_s: dict[str, float] = {}
        self._ran_s: dict[str, tuple[float, float, float]] = {}
        """Pod → (its trace work in reference core-s, bound, due to end (epoch s))."""
        self.binds: dict[str, str] = {}
        self.decisions: list[Decision] = []
        self.cycles = 0
        self.lag = LagLog()
        """How late arrivals, manager ticks and ends came (:mod:`eams.demo.lag`)."""
        self.started_s = math.nan
        """When the run began (its first arrival's schedule), monotonic s."""
        self.steps: list[tuple[float, float]] = []
        """Each power-manager step's (began, ended), monotonic s."""
        self.on_progress: Callable[[float], None] = lambda done: None
        """Called with the fraction of pods ended, after each end."""

    # ---- scores -------------------------------------------------------------------------

    def _pod(self, pod: dict[str, Any]) -> WorkloadPod:
        return WorkloadPod.of(self.workload, self._index[pod["metadata"]["name"]])

    def _state(self) -> NodeState:
        cores, mem, count = self.cluster.allocation()
        n = self.harness.size
        return NodeState(self.harness, cores, mem, count, np.zeros(n), np.ones(n, dtype=bool))

    def _in_tree_score(self, pod: dict[str, Any], names: list[str]) -> dict[str, int]:
        """NodeResourcesFit LeastAllocated (weight 1), 0–100 per candidate."""
        index = {n: i for i, n in enumerate(self.harness.names)}
        nodes = np.array([index[n] for n in names], dtype=np.int64)
        scores = self.least_allocated.score(self._pod(pod), nodes, self._state())
        return {n: int(s) for n, s in zip(names, scores, strict=True)}

    # ---- the run --------------------------------------------------------------------------

    async def run(self, power: PowerStep | None, period_s: float, timeout_s: float) -> None:
        """Offer every pod at its time, schedule until all have ended, stepping ``power``
        every ``period_s`` (called with epoch s).

        Raises
        ------
        DemoError
            Pods still pending or running after ``timeout_s`` (names a few).
        """
        loop = asyncio.get_running_loop()
        start = self.started_s = time.monotonic()
        producer = loop.create_task(self._offer(start))
        stepper = loop.create_task(self._step(power, period_s)) if power is not None else None
        try:
            while len(self._ended_s) < self.workload.size:
                if time.monotonic() - start > timeout_s:
                    left = sorted(set(self.workload.names) - set(self._ended_s))
                    raise DemoError(
                        f"{len(left)} pods had not ended {timeout_s:.0f} s into the run "
                        f"(e.g. {', '.join(left[:3])}); {len(self.pending)} still pending"
                    )
                self._flush_leftover()
                try:
                    pod, created_s = await asyncio.wait_for(self.cycle.next_pod(), POLL_S)
                except TimeoutError:
                    continue
                await self._schedule(pod, created_s)
        finally:
            producer.cancel()
            if stepper is not None:
                stepper.cancel()
            self.cycle.close()
            if self._tell is not None:  # every outcome told before the run's record is read
                await asyncio.to_thread(self._tell.shutdown, True)
            self.lag.ticks("tick", self.steps, period_s)

    async def _offer(self, start: float) -> None:
        w = self.workload
        for j, name in enumerate(w.names):
            due = start + float(w.arrival_s[j]) / self.speedup
            delay = due - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            self.lag.note("arrival", due, time.monotonic())
            work = float(w.cpu[j] * w.duration_s[j])
            pod = pod_object(name, float(w.cpu[j]), float(w.mem_mib[j]), work, self.scheduler)
            self._arrived_s[name] = time.monotonic()
            self.pending[name] = time.time()  # the power manager's clock: epoch s
            self.cycle.add(pod)

    async def _step(self, power: PowerStep, period_s: float) -> None:
        """Step ``power`` on a deadline grid (:func:`eams.demo.lag.every`): a step's own time
        and a late wake-up are not added to every later interval, as a ``sleep(period_s)``
        after each step would add them (on a busy host the manager then looked ever less
        often than its timers assume)."""

        async def once() -> None:
            await power(time.time())

        await every(period_s, once, lambda began, ended: self.steps.append((began, ended)))

    def requeue(self) -> None:
        """A cluster event (a pod ended, a node was released): every unschedulable pod goes
        back to the queue (kube-scheduler's ``MoveAllToActiveOrBackoffQueue``)."""
        waiting, self._unschedulable = self._unschedulable, {}
        for pod, created_s, _ in waiting.values():
            self.cycle.add(pod, created_s)

    def _flush_leftover(self) -> None:
        """Pods unschedulable for :data:`UNSCHEDULABLE_MAX_S` (trace s) back to the queue."""
        oldest = time.monotonic() - UNSCHEDULABLE_MAX_S / self.speedup
        for name, (pod, created_s, parked_s) in list(self._unschedulable.items()):
            if parked_s <= oldest:
                del self._unschedulable[name]
                self.cycle.add(pod, created_s)

    async def _schedule(self, pod: dict[str, Any], created_s: float) -> None:
        name = pod["metadata"]["name"]
        self.cycles += 1
        if self.answers is not None:
            self.answers.last.clear()
        record = await self.cycle.schedule_one(pod, created_s)
        if record.node is None:
            self._unschedulable[name] = (pod, created_s, time.monotonic())
            return
        self._note(pod, record)
        j = self._index[name]
        bound = self.cluster.bind(pod, record.node, float(self.workload.duration_s[j]))
        self.binds[name] = record.node
        work = float(self.workload.work_core_s[j])
        self._ran_s[name] = (work, bound.bound_at_s, bound.ends_at_s)
        self.pending.pop(name, None)
        if self._tell is not None:
            self._bound_pods[name] = bound_pod(pod, record.node, time.time())
            self._tell.submit(self._told, self._bound_pods[name])
        loop = asyncio.get_running_loop()
        loop.call_later(
            bound.ends_at_s - time.time(), self._end, record.node, name, bound.ends_at_s
        )

    def _told(self, pod: dict[str, Any]) -> None:
        assert self.outcomes is not None
        try:
            self.outcomes([pod])
        except DemoError as exc:  # the record misses this outcome; the run goes on
            log.warning("%s", exc)

    def _end(self, node: str, name: str, due_s: float) -> None:
        self.lag.note("end", due_s, time.time())
        self.cluster.end(node, name)
        if self._tell is not None:
            self._tell.submit(self._told, ended_pod(self._bound_pods.pop(name), time.time()))
        self._ended_s[name] = time.monotonic()
        self.requeue()
        self.on_progress(len(self._ended_s) / self.workload.size)

    def pending_pods(self) -> dict[str, tuple[float, float, float, float]]:
        """Pods waiting for a node now: name → (cores, MiB, pending since (epoch s), run
        time at speed 1 in real s). Safe to call from another thread (a copy)."""
        w, out = self.workload, {}
        for name, since in self.pending.copy().items():
            j = self._index[name]
            runtime_s = float(w.duration_s[j]) / self.speedup
            out[name] = (float(w.cpu[j]), float(w.mem_mib[j]), since, max(runtime_s, 1e-3))
        return out

    def _note(self, pod: dict[str, Any], record: CycleRecord) -> None:
        """Keep the extender's answer for a pod it scored (module docstring)."""
        if self.answers is None or "prioritize" not in self.answers.last:
            return
        assert record.node is not None
        try:
            scores = decode_priorities(*self.answers.last["prioritize"])
        except SchedulerError:
            return  # a failed call scores nothing: kube-scheduler placed it without
        every = self.cluster.names()
        after_tree = set(self.cluster.feasible(pod, every))
        refused: set[str] = set()
        if "filter" in self.answers.last:
            try:
                outcome = decode_filter(*self.answers.last["filter"], sorted(after_tree))
                refused = set(outcome.failed) | set(outcome.unresolvable)
            except SchedulerError:
                pass  # a failed filter lets every node pass (ignorable)
        gated = {}
        for node in every:
            if node in scores:
                continue
            if node not in after_tree:
                gated[node] = "asleep" if self._asleep(node) else "no_fit"
            else:  # the extender's /filter keeps nodes off only under its headroom floor
                gated[node] = "headroom_floor" if node in refused else "filter"
        candidates = tuple(scores)
        in_tree = self._in_tree_score(pod, list(candidates)) if candidates else {}
        default = max(in_tree, key=lambda n: in_tree[n]) if in_tree else None
        wp = self._pod(pod)
        now = time.time()
        seen = {n.spec.name: n.last_read_s for n in self.cluster.testbed.nodes}
        self.decisions.append(
            Decision(
                pod=pod["metadata"]["name"],
                at_s=now,
                candidates=candidates,
                scores=scores,
                node=record.node,
                gated=gated,
                cores=wp.cpu,
                duration_ref_s=wp.duration_s,
                default_node=default,
                age_s={n: _age_s(now, seen[n]) for n in candidates},
            )
        )

    def _asleep(self, node: str) -> bool:
        objects = self.cluster.objects()
        taints = objects[node]["spec"]["taints"]
        return any(t.get("key") == ASLEEP_TAINT for t in taints)

    def result(self, run: LiveRun) -> LiveRun:
        """Fill ``run`` with what the loop did (work in ``run``'s window, completions, cycles,
        answers); ``run.start_ns`` and ``run.end_ns`` set first."""
        window_s = (run.start_ns / 1e9, run.end_ns / 1e9)
        run.work_core_s = work_inside(self._ran_s.values(), *window_s) / self.speedup
        run.completion_s = np.array([self._ended_s[n] - self._arrived_s[n] for n in self._ended_s])
        run.cycles = self.cycles
        run.prioritize_calls = sum(1 for r in self.cycle.records if r.prioritize_s > 0)
        run.unscored_binds = sum(
            1 for r in self.cycle.records if r.node is not None and r.prioritize_s == 0
        )
        run.binds = dict(self.binds)
        if self.answers is not None:
            answered = {r.key.rsplit("/", 1)[-1] for r in self.cycle.records if r.filter_s and
                        not any(e.startswith("filter:") for e in r.errors)}  # fmt: skip
            run.unanswered = sorted(set(self.binds) - answered)
            run.call_errors = [e for r in self.cycle.records for e in r.errors][:5]
        run.decisions = list(self.decisions)
        return run


def _age_s(now_s: float, seen_s: float | None) -> float | None:
    """Seconds since ``seen_s``; ``None`` when never seen."""
    return None if seen_s is None else now_s - seen_s
