"""The manager's :class:`~.ports.FleetObserver` on a real cluster: the Kubernetes API, the
calibration files, the power inventory and the nodes' agents.

Per tick: the nodes, pods and node Leases as last watched (:mod:`.kube_cache`: listed once, then
followed, not listed every tick), and each node's agent metrics URL
(:class:`~eams.calibrate.powerstates.probes.AgentProbe`, the inventory's ``agent_url``; polled in
parallel, a short timeout) — the agent answering is when it last reported. The fleet is the nodes
that are in the inventory, known to the API, calibrated and with allocatable cpu and memory; the
others are left out and named once in the log (a node without a calibration cannot be weighed, one
outside the inventory cannot be switched). Per node: allocatable ``cpu`` and ``memory``
(:func:`eams.kube.nodes.node_capacity`, ``status.capacity`` when a node publishes no
``allocatable``, as kube-scheduler reads it), the requests of the pods that keep it awake
(:mod:`.kube_pods`: no DaemonSet pods, no mirrors, no finished pods), since when it has had none
(remembered between ticks; a node first seen empty is empty since then), the Ready condition and
the kubelet's last heartbeat (:func:`eams.kube.nodes.kubelet_heartbeat_s`: a Ready read after a
short sleep is still the one from before it), the ``eams.io/asleep`` taint, the roles from the
inventory (``k3s_server``, ``pdu_owner``) and the calibration's figures (:mod:`.calibrations`).
Pending pods carry their requests and the managed nodes their static predicates admit, and the
managed node the market cleared them onto: a node's ``eams.io/wake-request`` annotation
(:mod:`eams.kube.wakerequest`, set by the extender) names its pods, and each of them that still
pends gets ``wake_node`` (a pod named on two nodes: the later request's; a pod no longer pending
is ignored). A malformed annotation is ignored, with one warning naming the node per value.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from eams.actuators.inventory import PowerInventory
from eams.calibrate.calfile import Calibration
from eams.calibrate.powerstates.figures import node_figures
from eams.calibrate.powerstates.probes import AgentProbe
from eams.kube.errors import BadObject
from eams.kube.names import ASLEEP_TAINT, WAKE_REQUEST_ANNOTATION
from eams.kube.nodes import kubelet_heartbeat_s, node_capacity, ready_condition
from eams.kube.requests import MIB
from eams.kube.taints import has_taint
from eams.kube.wakerequest import WakeRequest, parse_wake_request, pods_to_nodes
from eams.scheduler.power.kube_cache import ClusterCache
from eams.scheduler.power.kube_pods import PodInfo, admits
from eams.scheduler.power.policy_fleet import FleetState, NodePowerView, PendingPod, PowerState
from eams.scheduler.power.ports import Observation, guess_state

log = logging.getLogger("eams.power.manager")

AGENT_TIMEOUT_S = 0.5
"""Bound on one agent poll (s): a sleeping node's agent does not answer at all."""
MAX_PROBE_THREADS = 16


def _allocatable(node: dict[str, Any]) -> bool:
    capacity = node_capacity(node, f"node {(node.get('metadata') or {}).get('name')}")
    return bool(capacity.cpu_milli) and bool(capacity.memory_bytes)


class KubeObserver:
    """:class:`~.ports.FleetObserver` (module docstring).

    Parameters
    ----------
    cache : ClusterCache
        Started (:meth:`~.kube_cache.ClusterCache.start`); the observer reads it, the caller
        closes it.
    inventory : PowerInventory
    calibrations : dict of str to Calibration
    agent_up : callable, optional
        ``node -> bool``, True when its agent answers; default: an
        :class:`~eams.calibrate.powerstates.probes.AgentProbe` on the inventory's
        ``agent_url``.

    Raises
    ------
    KubeApiError
        From :meth:`observe`, while a watch of the API is down.
    """

    def __init__(
        self,
        cache: ClusterCache,
        inventory: PowerInventory,
        calibrations: dict[str, Calibration],
        agent_up: Callable[[str], bool] | None = None,
    ) -> None:
        self.cache, self.inventory, self.calibrations = cache, inventory, calibrations
        self._agent_up = agent_up or self._probe
        self._probes: dict[str, AgentProbe | None] = {}
        self._empty_since: dict[str, float] = {}
        self._agent_seen: dict[str, float] = {}
        self._named: set[str] = set()
        self._bad_wakes: dict[str, str] = {}
        self._held: set[str] = set()  # pods seen held by another controller's gate
        self._let_go_s: dict[str, float] = {}  # a held pod seen pending → when (epoch s)

    def _probe(self, node: str) -> bool:
        if node not in self._probes:
            url = self.inventory.agent_url(node)
            self._probes[node] = AgentProbe(url, AGENT_TIMEOUT_S) if url else None
        probe = self._probes[node]
        return probe() if probe is not None else False

    def observe(self, now_s: float) -> Observation:
        """The fleet now (module docstring)."""
        nodes, pods, leases = self.cache.snapshot()
        docs = {str((n.get("metadata") or {}).get("name")): n for n in nodes}
        names = [
            n
            for n in docs
            if n in self.inventory.nodes and n in self.calibrations and _allocatable(docs[n])
        ]
        self._name_left_out(sorted(set(docs) - set(names)))
        with ThreadPoolExecutor(max_workers=max(1, min(MAX_PROBE_THREADS, len(names)))) as pool:
            answered = list(pool.map(self._agent_up, names))
        for name, up in zip(names, answered, strict=True):
            if up:
                self._agent_seen[name] = now_s
        on_node: dict[str, list[PodInfo]] = {n: [] for n in names}
        for pod in pods:
            if pod.workload and pod.node in on_node:
                on_node[pod.node].append(pod)
        ready = np.array([ready_condition(docs[n]) is True for n in names], dtype=bool)
        marked = np.array([has_taint(docs[n], ASLEEP_TAINT) for n in names], dtype=bool)
        state = guess_state(ready, marked)
        views = []
        for i, name in enumerate(names):
            mine = on_node[name]
            if mine:
                self._empty_since.pop(name, None)
            else:
                self._empty_since.setdefault(name, now_s)
            views.append(self._view(name, docs[name], mine, int(state[i]), now_s))
        wake_node = self._wake_requests(docs, names)
        since = self._pending_since(pods, now_s)
        pending = [
            PendingPod(
                name=p.key,
                cores=p.cores,
                mem_mib=p.mem_mib,
                pending_since_s=since[p.key],
                eligible_nodes=frozenset(n for n in names if admits(docs[n], p.doc)),
                wake_node=wake_node.get(p.key),
            )
            for p in pods
            if p.pending
        ]
        fleet = FleetState.from_views(now_s, views, pending)
        seen = np.array([self._agent_seen.get(n, math.nan) for n in names], dtype=float)
        beats = [kubelet_heartbeat_s(docs[n], leases.get(n)) for n in names]
        heartbeat = np.array([math.nan if b is None else b for b in beats], dtype=float)
        return Observation(fleet, ready, seen, marked, heartbeat)

    def _pending_since(self, pods: list[PodInfo], now_s: float) -> dict[str, float]:
        """Pending pod → since when it pends (epoch s): its own time (``kube_pods``), or, for a
        pod this observer saw held by another controller's gate, no earlier than the first
        observation after its release (its ``PodScheduled`` condition keeps the time it was
        created with: a pod held longer than the manager's grace would be due at once)."""
        for p in pods:
            if p.held:
                self._held.add(p.key)
            elif p.pending and p.key in self._held:
                self._held.discard(p.key)
                self._let_go_s[p.key] = now_s
        present = {p.key for p in pods}
        self._held &= present
        pending = {p.key: p for p in pods if p.pending}
        self._let_go_s = {k: t for k, t in self._let_go_s.items() if k in pending}
        return {
            key: max(now_s if p.pending_since_s is None else p.pending_since_s,
                     self._let_go_s.get(key, -math.inf))
            for key, p in pending.items()
        }  # fmt: skip

    def _view(self, name: str, doc: dict[str, Any], pods: list[PodInfo], state: int, now_s):
        capacity = node_capacity(doc, f"node {name}")
        entry = self.inventory.nodes[name]
        roles = {r for r, on in (("k3s-server", entry.k3s_server), ("pdu-owner", entry.pdu_owner))
                 if on}  # fmt: skip
        return NodePowerView(
            name=name,
            state=PowerState(PowerState.AWAKE if pods else state),
            allocatable_cores=(capacity.cpu_milli or 0) / 1000,
            allocatable_mem_mib=(capacity.memory_bytes or 0) / MIB,
            state_since_s=now_s,
            pod_cores=tuple(p.cores for p in pods),
            pod_mem_mib=sum(p.mem_mib for p in pods),
            empty_since_s=None if pods else self._empty_since[name],
            roles=frozenset(roles),
            **node_figures(self.calibrations[name]),
        )

    def _wake_requests(self, docs: dict[str, dict[str, Any]], names: list[str]) -> dict[str, str]:
        """Pod key → the managed node whose wake request names it (module docstring)."""
        requests: list[WakeRequest] = []
        for name in names:
            annotations = (docs[name].get("metadata") or {}).get("annotations") or {}
            text = annotations.get(WAKE_REQUEST_ANNOTATION)
            if text is None:
                continue
            try:
                requests.append(parse_wake_request(name, str(text)))
            except BadObject as exc:
                if self._bad_wakes.get(name) != text:
                    self._bad_wakes[name] = text
                    log.warning("power manager: %s: wake request ignored: %s", name, exc)
        return pods_to_nodes(requests)

    def _name_left_out(self, names: list[str]) -> None:
        new = [n for n in names if n not in self._named]
        if new:
            self._named.update(new)
            log.warning(
                "power manager: left out (not in the inventory or not calibrated): %s",
                ", ".join(new),
            )
